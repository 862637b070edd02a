// kef._kef: the C++ half of the Python package (issue 16). It wraps the in-memory pipeline entry point
// (kef/pipeline.hpp: run_pipeline on a caller's matrix), saved models (load_saved_model, save_model),
// one evaluator on models in memory (evaluate_model, what `kef eval` runs) and a model's sampler (what
// `kef sample` runs). kef/__init__.py builds the TOML tables from Python dicts and the public API.
//
// Arrays: float64, 2-D, C or Fortran order, finite; anything else is refused with an exception naming
// the argument, never converted silently. The GIL is released around every fit, evaluation, sampling
// and row loop, so other Python threads run meanwhile.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kef/context.hpp"
#include "kef/data_units_model.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/model_archive.hpp"
#include "kef/pipeline.hpp"
#include "kef/plugin_permissions.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace {

// The registry of loads, saves and evaluations: the built-in components and the plugins of the
// command's search path (KEF_PLUGIN_PATH, then lib/kef/plugins next to the libkef this module links).
// Created on first use and never destroyed: models made by plugins keep their libraries loaded, and
// unloading them at interpreter exit, in an unspecified order, would gain nothing.
kef::Registry& registry(bool quiet) {
  static kef::Registry* r = [quiet] {
    auto* reg = new kef::Registry;
    kef::register_core_components(*reg);
    reg->load_plugins(kef::plugin_search_path({}));
    std::vector<fs::path> loaded;
    for (const auto& p : reg->plugins())
      if (p.status == kef::PluginRecord::Status::Loaded) loaded.push_back(p.path);
    if (!quiet)
      for (const auto& w : kef::plugin_permission_warnings(loaded))
        std::cerr << "[kef] warning: " << w << "\n";
    return reg;
  }();
  return *r;
}

// A model: as fitted (model coordinates) with the map from data units, and the same in data units.
struct PyModel {
  kef::SavedModel saved;
  kef::ModelPtr data_units;  // make_data_units_model(saved.model, saved.transform)
  std::string name;          // the directory it was loaded from, or its [[model]] name (progress labels)
  std::string what;          // for messages: "the model at DIR", "model NAME (kef.fit)"

  PyModel(kef::SavedModel s, std::string n, std::string w)
      : saved(std::move(s)),
        data_units(kef::make_data_units_model(saved.model, saved.transform)),
        name(std::move(n)),
        what(std::move(w)) {}
  kef::Index dim() const { return saved.model->dim(); }
};

std::string type_name(const py::handle& obj) { return py::str(py::type::of(obj).attr("__name__")); }

// A NumPy argument as a kef::Matrix (copied: kef's interfaces take an owning column-major Matrix).
// `dim` >= 0 checks the column count against a model's dimension.
kef::Matrix to_matrix(const py::handle& obj, const std::string& arg, kef::Index dim = -1,
                      const std::string& model = std::string()) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(arg + ": expected a numpy.ndarray of float64, got " + type_name(obj));
  auto a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().is(py::dtype::of<double>()))
    throw py::type_error(arg + ": expected dtype float64, got " + std::string(py::str(a.dtype())) +
                         "; kef does not convert silently: pass " + arg + ".astype(numpy.float64)");
  if (a.ndim() != 2)
    throw kef::DataError(arg + ": expected a 2-D array (rows x columns), got " + std::to_string(a.ndim()) +
                         " dimension(s)" + (a.ndim() == 1 ? "; one column: " + arg + ".reshape(-1, 1)" : ""));
  const bool c_order = (a.flags() & py::array::c_style) != 0;
  const bool f_order = (a.flags() & py::array::f_style) != 0;
  if (!c_order && !f_order)
    throw kef::DataError(arg + ": not contiguous (a strided view, strides " + std::to_string(a.strides(0)) +
                         ", " + std::to_string(a.strides(1)) + "); pass numpy.ascontiguousarray(" + arg +
                         ")");
  const auto rows = static_cast<kef::Index>(a.shape(0));
  const auto cols = static_cast<kef::Index>(a.shape(1));
  if (rows == 0 || cols == 0)
    throw kef::DataError(arg + ": empty array (" + std::to_string(rows) + " x " + std::to_string(cols) + ")");
  if (dim >= 0 && cols != dim)
    throw kef::DataError(arg + ": has " + std::to_string(cols) + " columns, " + model + " has dimension " +
                         std::to_string(dim));
  const auto* data = static_cast<const double*>(a.data());
  kef::Matrix m(rows, cols);
  if (f_order)
    std::memcpy(m.data(), data, sizeof(double) * static_cast<std::size_t>(rows * cols));
  else
    m = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(data, rows,
                                                                                                 cols);
  for (kef::Index j = 0; j < cols; ++j)
    for (kef::Index i = 0; i < rows; ++i)
      if (!std::isfinite(m(i, j))) {
        std::ostringstream v;
        v << m(i, j);
        throw kef::DataError(arg + ": row " + std::to_string(i) + ", column " + std::to_string(j) + " is " +
                             v.str() + " (expected finite values)");
      }
  return m;
}

py::array to_numpy(const kef::Matrix& m) {
  py::array_t<double, py::array::f_style> out({m.rows(), m.cols()});
  std::memcpy(out.mutable_data(), m.data(), sizeof(double) * static_cast<std::size_t>(m.size()));
  return out;
}
py::array to_numpy(const kef::Vector& v) {
  py::array_t<double> out(v.size());
  std::memcpy(out.mutable_data(), v.data(), sizeof(double) * static_cast<std::size_t>(v.size()));
  return out;
}

// Values a model returns are checked as `kef score` checks them: no silent NaN.
void require_finite(const kef::Matrix& values, const PyModel& model, const std::string& what) {
  for (kef::Index i = 0; i < values.rows(); ++i)
    if (!values.row(i).allFinite())
      throw kef::NumericalError(model.what + ": the model's " + what + " is not finite at row " +
                                std::to_string(i) + " of X");
}

// kef.run / kef.fit on an in-memory matrix: (results JSON, [(name, model)], summary table, log).
py::tuple run_in_memory(const std::string& toml, const std::string& source, const py::handle& X,
                        const std::vector<std::string>& columns, const std::vector<std::string>& overrides,
                        int threads, bool quiet, bool write, const std::string& output_dir, bool from_file) {
  kef::InMemoryData data;
  data.samples = to_matrix(X, "X");
  data.columns = columns;
  kef::RunOptions options;
  options.overrides = overrides;
  options.threads = threads;
  options.quiet = quiet;
  if (!output_dir.empty()) options.output_dir = output_dir;
  kef::RunResult r;
  {
    py::gil_scoped_release release;
    const kef::Config config =
        from_file ? kef::Config::parse_file(source) : kef::Config::parse_string(toml, source);
    r = kef::run_pipeline(config, data, options, write);
  }
  py::list models;
  for (std::size_t i = 0; i < r.fitted.size(); ++i) {
    kef::SavedModel saved{r.fitted[i].second, r.data.transform};
    const std::string& name = r.fitted[i].first;
    models.append(py::make_tuple(
        name, std::make_shared<PyModel>(std::move(saved), name, "model " + name + " (" + source + ")")));
  }
  return py::make_tuple(r.results_json, models, r.table, r.log,
                        r.output_dir ? py::cast(r.output_dir->string()) : py::none());
}

// kef.run on a pipeline file: `kef run FILE` exactly; returns (results.json's text, output directory).
py::tuple run_file(const std::string& path, const std::vector<std::string>& overrides, int threads,
                   bool quiet, const std::string& output_dir) {
  kef::RunOptions options;
  options.overrides = overrides;
  options.threads = threads;
  options.quiet = quiet;
  if (!output_dir.empty()) options.output_dir = output_dir;
  kef::RunSummary s;
  {
    py::gil_scoped_release release;
    s = kef::run_pipeline(path, options);
  }
  std::ifstream f(s.output_dir / "results.json");
  if (!f) throw kef::DataError((s.output_dir / "results.json").string() + ": cannot read the run's results");
  std::stringstream text;
  text << f.rdbuf();
  return py::make_tuple(text.str(), s.output_dir.string(), s.table);
}

// kef.validate: every check a run makes before its first fit (`kef validate`), on the file's data or X.
void validate(const std::string& path, const py::handle& X, const std::vector<std::string>& columns,
              const std::vector<std::string>& overrides, bool quiet) {
  kef::RunOptions options;
  options.overrides = overrides;
  options.quiet = quiet;
  if (X.is_none()) {
    py::gil_scoped_release release;
    kef::validate_pipeline(path, options);
    return;
  }
  kef::InMemoryData data;
  data.samples = to_matrix(X, "X");
  data.columns = columns;
  py::gil_scoped_release release;
  kef::validate_pipeline(kef::Config::parse_file(path), data, options);
}

std::shared_ptr<PyModel> load(const std::string& dir, bool quiet) {
  kef::Registry& reg = registry(quiet);
  kef::SavedModel saved;
  {
    py::gil_scoped_release release;
    saved = kef::load_saved_model(dir, reg);
  }
  return std::make_shared<PyModel>(std::move(saved), dir, "the model at " + dir);
}

py::array log_density(const PyModel& m, const py::handle& X, bool normalized) {
  const kef::Matrix x = to_matrix(X, "X", m.dim(), m.what);
  std::optional<double> log_z;
  if (normalized) {
    log_z = m.saved.model->log_normalizer();
    if (!log_z)
      throw kef::ConfigError(
          "normalized=True: " + m.what + " (" + m.saved.model->type_name() +
          ") has no known normalising constant; use log_density(X) for log p~, or estimate "
          "the log-likelihood with kef.log_likelihood(model, X)");
  }
  kef::Matrix values(x.rows(), 1);
  {
    py::gil_scoped_release release;
    values.col(0) = m.data_units->log_unnormalized(x);
    if (log_z) values.col(0).array() -= *log_z;
  }
  require_finite(values, m, "log density");
  return to_numpy(kef::Vector(values.col(0)));
}

py::array score(const PyModel& m, const py::handle& X) {
  const kef::Matrix x = to_matrix(X, "X", m.dim(), m.what);
  kef::Matrix values;
  {
    py::gil_scoped_release release;
    values = m.data_units->score(x);
  }
  require_finite(values, m, "score");
  return to_numpy(values);
}

// `kef sample MODEL_DIR` (the hmc sampler): the model's exact sampler when it has one, HMC otherwise, in
// the model's coordinates, mapped to data units. Returns (draws, HMC summary or None).
py::tuple sample(const PyModel& m, long long n, std::uint64_t seed, int threads, bool quiet, long long chains,
                 long long warmup, long long leapfrog_steps, double step_size) {
  if (n < 1) throw kef::ConfigError("n: expected a positive number of samples, got " + std::to_string(n));
  kef::require_unconditional(m.saved, m.name, "kef.Model.sample");
  kef::HmcOptions options;
  options.chains = chains;
  options.warmup = warmup;
  options.leapfrog_steps = leapfrog_steps;
  options.step_size = step_size;
  options.context = m.what + " (kef.Model.sample)";
  kef::HmcDiagnostics diag;
  kef::Matrix X;
  {
    py::gil_scoped_release release;
    auto shown = quiet ? kef::make_silent_progress() : kef::make_stderr_progress();
    options.progress = shown.get();
    // The root context of `kef sample`; HMC draws from its child "sample", RandomStream(seed, "sample").
    kef::Context context = kef::Context(seed, threads, shown.get(), "threads").child("sample");
    X = m.saved.transform.to_data(
        kef::draw_samples(*m.saved.model, n, context.rng(), options, context, &diag));
  }
  return py::make_tuple(to_numpy(X), diag.ran ? py::cast(diag.summary()) : py::none());
}

void save(const PyModel& m, const std::string& dir, bool quiet) {
  kef::Registry& reg = registry(quiet);
  py::gil_scoped_release release;
  kef::save_model(*m.saved.model, dir, m.saved.transform, &reg);
}

// One evaluator (TOML table `evaluator_toml`: type and keys) on `model` with X as the held-out rows.
// Returns ([(metric, value)], [(metric, space)], notes).
py::tuple evaluate(const PyModel& m, const py::handle& X, const std::string& evaluator_toml,
                   const std::shared_ptr<PyModel>& other, std::uint64_t seed, int threads, bool quiet) {
  const kef::Matrix x = to_matrix(X, "X", m.dim(), m.what);
  kef::Registry& reg = registry(quiet);
  kef::ModelEvalInput in;
  in.model = &m.saved;
  in.model_name = m.name;
  in.other = other ? &other->saved : nullptr;
  in.other_name = other ? other->name : std::string();
  in.against_name = "against";
  in.against_hint = "against=MODEL";
  in.rows = &x;
  in.provenance = "X";
  in.evaluator = kef::Config::parse_string(evaluator_toml, "kef.evaluate");
  in.seed = seed;
  in.threads = threads;
  in.threads_key = "threads";
  in.quiet = quiet;
  in.command = "kef.evaluate";
  std::vector<std::pair<std::string, std::string>> spaces;
  kef::EvaluationResult r;
  {
    py::gil_scoped_release release;
    r = kef::evaluate_model(reg, in, &spaces);
  }
  return py::make_tuple(r.metrics, spaces, r.notes);
}

}  // namespace

PYBIND11_MODULE(_kef, m) {
  m.doc() = "kef's C++ core (see the package kef for the API)";
  m.attr("__version__") = kef::version();

  // kef's exception classes, one Python class each, under kef._kef.Error; kef/__init__.py re-exports
  // them. Registered base first: pybind11 tries the most recently registered translator first.
  static py::exception<kef::Error> error(m, "Error");
  static py::exception<kef::ConfigError> config_error(m, "ConfigError", error.ptr());
  static py::exception<kef::DataError> data_error(m, "DataError", error.ptr());
  static py::exception<kef::PluginError> plugin_error(m, "PluginError", error.ptr());
  static py::exception<kef::ModelFileError> model_file_error(m, "ModelFileError", error.ptr());
  static py::exception<kef::NumericalError> numerical_error(m, "NumericalError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kef::ConfigError& e) {
      config_error(e.what());
    } catch (const kef::DataError& e) {
      data_error(e.what());
    } catch (const kef::PluginError& e) {
      plugin_error(e.what());
    } catch (const kef::ModelFileError& e) {
      model_file_error(e.what());
    } catch (const kef::NumericalError& e) {
      numerical_error(e.what());
    } catch (const kef::Error& e) {
      error(e.what());
    }
  });

  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model")
      .def_property_readonly("dim", &PyModel::dim)
      .def_property_readonly("type", [](const PyModel& p) { return p.saved.model->type_name(); })
      .def_property_readonly("name", [](const PyModel& p) { return p.name; })
      .def_property_readonly("columns", [](const PyModel& p) { return p.saved.transform.columns; })
      .def_property_readonly("preprocessing", [](const PyModel& p) { return p.saved.transform.kind; })
      .def_property_readonly("log_normalizer",
                             [](const PyModel& p) { return p.saved.model->log_normalizer(); })
      .def_property_readonly("can_sample", [](const PyModel& p) { return p.saved.model->can_sample(); })
      .def("log_density", &log_density, py::arg("X"), py::arg("normalized") = false)
      .def("score", &score, py::arg("X"))
      .def("_sample", &sample)
      .def("_save", &save);

  m.def("_run_in_memory", &run_in_memory);
  m.def("_run_file", &run_file);
  m.def("_load", &load);
  m.def("_validate", &validate);
  m.def("_evaluate", &evaluate);
}
