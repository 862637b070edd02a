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

#include <algorithm>
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

#include "kef/conditional_sampling.hpp"
#include "kef/context.hpp"
#include "kef/model_rows.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/model_archive.hpp"
#include "kef/pipeline.hpp"
#include "kef/plugin_permissions.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"
#ifdef KEF_PYTHON_MPI
#include "mpi_communicator.hpp"
#endif

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
  kef::ModelRows rows;  // log density and score of rows in data units, what `kef score` computes
  std::string name;          // the directory it was loaded from, or its [[model]] name (progress labels)
  std::string what;          // for messages: "the model at DIR", "model NAME (kef.fit)"

  PyModel(kef::SavedModel s, std::string n, std::string w)
      : saved(std::move(s)),
        rows(saved),
        name(std::move(n)),
        what(std::move(w)) {}
  kef::Index dim() const { return saved.model->dim(); }
};

std::string type_name(const py::handle& obj) { return py::str(py::type::of(obj).attr("__name__")); }

// A NumPy argument, checked and read in place: float64, 2-D, C or Fortran order, non-empty, finite,
// with `dim` (>= 0) columns when a model's dimension is known. Nothing is copied or converted.
struct ArrayArg {
  py::array array;  // keeps the NumPy array alive
  const double* data = nullptr;
  kef::Index rows = 0, cols = 0;
  bool fortran = false;  // column-major (kef's own layout): usable in place

  double at(kef::Index i, kef::Index j) const { return fortran ? data[j * rows + i] : data[i * cols + j]; }
  // Rows [first, first + count) as kef's column-major matrix (a copy of those rows only).
  kef::Matrix rows_block(kef::Index first, kef::Index count) const {
    if (fortran)
      return Eigen::Map<const kef::Matrix, 0, Eigen::OuterStride<>>(data + first, count, cols,
                                                                    Eigen::OuterStride<>(rows));
    return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        data + first * cols, count, cols);
  }
};

ArrayArg checked_array(const py::handle& obj, const std::string& arg, kef::Index dim = -1,
                       const std::string& model = std::string()) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(arg + ": expected a numpy.ndarray of float64, got " + type_name(obj));
  ArrayArg a;
  a.array = py::reinterpret_borrow<py::array>(obj);
  if (!a.array.dtype().is(py::dtype::of<double>()))
    throw py::type_error(arg + ": expected dtype float64, got " + std::string(py::str(a.array.dtype())) +
                         "; kef does not convert silently: pass " + arg + ".astype(numpy.float64)");
  if (a.array.ndim() != 2)
    throw kef::DataError(arg + ": expected a 2-D array (rows x columns), got " +
                         std::to_string(a.array.ndim()) + " dimension(s)" +
                         (a.array.ndim() == 1 ? "; one column: " + arg + ".reshape(-1, 1)" : ""));
  const bool c_order = (a.array.flags() & py::array::c_style) != 0;
  const bool f_order = (a.array.flags() & py::array::f_style) != 0;
  if (!c_order && !f_order)
    throw kef::DataError(arg + ": not contiguous (a strided view, strides " +
                         std::to_string(a.array.strides(0)) + ", " + std::to_string(a.array.strides(1)) +
                         "); pass numpy.ascontiguousarray(" + arg + ")");
  a.rows = static_cast<kef::Index>(a.array.shape(0));
  a.cols = static_cast<kef::Index>(a.array.shape(1));
  // An array that is both (one row or one column) is read as Fortran order: the same bytes.
  a.fortran = f_order;
  if (a.rows == 0 || a.cols == 0)
    throw kef::DataError(arg + ": empty array (" + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                         ")");
  if (dim >= 0 && a.cols != dim)
    throw kef::DataError(arg + ": has " + std::to_string(a.cols) + " columns, " + model + " has dimension " +
                         std::to_string(dim));
  a.data = static_cast<const double*>(a.array.data());
  // A scan in memory order; only when it finds something, the first non-finite value in row order.
  const std::size_t total = static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols);
  bool finite = true;
  for (std::size_t k = 0; k < total && finite; ++k) finite = std::isfinite(a.data[k]);
  if (!finite)
    for (kef::Index i = 0; i < a.rows; ++i)
      for (kef::Index j = 0; j < a.cols; ++j)
        if (!std::isfinite(a.at(i, j))) {
          std::ostringstream v;
          v << a.at(i, j);
          throw kef::DataError(arg + ": row " + std::to_string(i) + ", column " + std::to_string(j) + " is " +
                               v.str() + " (expected finite values)");
        }
  return a;
}

// A NumPy argument as a kef::Matrix (a copy: kef's model and evaluator interfaces take an owning
// column-major Matrix).
kef::Matrix to_matrix(const py::handle& obj, const std::string& arg, kef::Index dim = -1,
                      const std::string& model = std::string()) {
  const ArrayArg a = checked_array(obj, arg, dim, model);
  return a.rows_block(0, a.rows);
}

py::array to_numpy(const kef::Matrix& m) {
  py::array_t<double, py::array::f_style> out({m.rows(), m.cols()});
  std::memcpy(out.mutable_data(), m.data(), sizeof(double) * static_cast<std::size_t>(m.size()));
  return out;
}

// X as a run's data: a Fortran-order array is read in place (InMemoryData::values), a C-order one is
// copied once into kef's column-major layout. `arg` must outlive the run.
kef::InMemoryData in_memory_data(const ArrayArg& arg, const std::vector<std::string>& columns) {
  kef::InMemoryData data;
  if (arg.fortran) {
    data.values = arg.data;
    data.values_rows = arg.rows;
    data.values_cols = arg.cols;
  } else {
    data.samples = arg.rows_block(0, arg.rows);
  }
  data.columns = columns;
  return data;
}

// What rank 0 sends the other processes at the end of a distributed call: for a file run the text of the
// results.json it wrote (the others need not share its file system); nothing for an in-memory run,
// whose results every process holds.
struct FileRun {
  kef::RunSummary summary;
  std::string results;  // results.json's text (rank 0 reads it)
};
std::string shared_text(const FileRun& r) { return r.results; }
void take_shared(FileRun& r, const std::vector<std::string>& all) { r.results = all[0]; }
std::string shared_text(const kef::RunResult&) { return std::string(); }
void take_shared(kef::RunResult&, const std::vector<std::string>&) {}

// `body(options)` (called with the GIL released) on one process (comm_handle < 0) or on the processes
// of an mpi4py communicator (comm_handle = comm.py2f(), its Fortran handle). With processes: rank 0
// alone shows progress; afterwards one closing exchange carries every process's outcome and rank 0's
// shared_text, so a failure on any process raises the error of the lowest failing rank on every
// process (as `mpirun kef run` exits alike on every process), and no process can be left waiting in a
// second collective.
template <class Result, class Body>
Result on_processes(long long comm_handle, kef::RunOptions& options, Body&& body) {
  if (comm_handle < 0) {
    py::gil_scoped_release release;
    return body(options);
  }
#ifdef KEF_PYTHON_MPI
  py::gil_scoped_release release;
  if (!kef_mpi::mpi_ready())
    throw kef::ConfigError(
        "comm: MPI is not initialised in this process (or already finalised); import mpi4py.MPI and pass "
        "one of its communicators, e.g. comm=MPI.COMM_WORLD");
  kef_mpi::MpiCommunicator processes(MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle)));
  options.communicator = &processes;
  if (processes.rank() != 0) options.quiet = true;
  Result result{};
  std::exception_ptr error;
  std::string payload;
  try {
    result = body(options);
    if (processes.rank() == 0) payload = shared_text(result);
  } catch (...) {
    error = std::current_exception();
    processes.set_failure(error);
  }
  // Throws the lowest failing rank's error on every process; otherwise every process gets rank 0's text.
  take_shared(result, kef::exchange(processes, kef::CollectiveStep::finish, payload, error));
  return result;
#else
  throw kef::ConfigError(
      "comm: this kef was built without MPI (KEF_WITH_MPI off or MPI not found), so it "
      "cannot share a run between processes; call without comm=");
#endif
}

// kef.run / kef.fit on an in-memory matrix: (results JSON, [(name, model)], summary table, log).
py::tuple run_in_memory(const std::string& toml, const std::string& source, const py::handle& X,
                        const std::vector<std::string>& columns, const std::vector<std::string>& overrides,
                        int threads, bool quiet, bool write, const std::string& output_dir, bool from_file,
                        long long comm) {
  const ArrayArg x = checked_array(X, "X");
  const kef::InMemoryData data = in_memory_data(x, columns);
  kef::RunOptions options;
  options.overrides = overrides;
  options.threads = threads;
  options.quiet = quiet;
  if (!output_dir.empty()) options.output_dir = output_dir;
  kef::RunResult r = on_processes<kef::RunResult>(comm, options, [&](const kef::RunOptions& o) {
    const kef::Config config =
        from_file ? kef::Config::parse_file(source) : kef::Config::parse_string(toml, source);
    return kef::run_pipeline(config, data, o, write);
  });
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

// kef.run on a pipeline file: `kef run FILE` exactly; returns (results.json's text, output directory,
// summary table). With processes, rank 0 reads results.json and sends its text to the others (they
// need not share its file system).
py::tuple run_file(const std::string& path, const std::vector<std::string>& overrides, int threads,
                   bool quiet, const std::string& output_dir, long long comm) {
  kef::RunOptions options;
  options.overrides = overrides;
  options.threads = threads;
  options.quiet = quiet;
  if (!output_dir.empty()) options.output_dir = output_dir;
  FileRun out = on_processes<FileRun>(comm, options, [&](const kef::RunOptions& o) {
    FileRun r;
    r.summary = kef::run_pipeline(path, o);
    const kef::Communicator& c = o.communicator ? *o.communicator : kef::single_process();
    if (c.rank() == 0) {
      std::ifstream f(r.summary.output_dir / "results.json");
      if (!f)
        throw kef::DataError((r.summary.output_dir / "results.json").string() +
                             ": cannot read the run's results");
      std::stringstream text;
      text << f.rdbuf();
      r.results = text.str();
    }
    return r;
  });
  return py::make_tuple(out.results, out.summary.output_dir.string(), out.summary.table);
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
  const ArrayArg x = checked_array(X, "X");
  const kef::InMemoryData data = in_memory_data(x, columns);
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

// `block_values(rows)` on X's rows in the blocks `kef score` uses (kef::for_model_row_blocks), each
// block copied into a kef matrix and its values written into a new (N, width) array (1-D when
// `vector`): beyond X and the result, one block's memory, and the command's bits. Checked as `kef
// score` checks its output: no silent NaN.
template <class BlockValues>
py::array by_row_blocks(const PyModel& m, const ArrayArg& x, kef::Index width, bool vector,
                        const std::string& what, BlockValues&& block_values) {
  py::array out = vector ? py::array(py::array_t<double>(x.rows))
                         : py::array(py::array_t<double, py::array::f_style>({x.rows, width}));
  double* dst = static_cast<double*>(out.mutable_data());
  kef::Index bad_row = -1;
  {
    py::gil_scoped_release release;
    kef::for_model_row_blocks(x.rows, [&](kef::Index first, kef::Index count) {
      if (bad_row >= 0) return;
      const kef::Matrix values = block_values(x.rows_block(first, count));
      for (kef::Index i = 0; i < count && bad_row < 0; ++i)
        if (!values.row(i).allFinite()) bad_row = first + i;
      for (kef::Index j = 0; j < width; ++j)  // column j of the block into column j of the result
        std::memcpy(dst + j * x.rows + first, values.col(j).data(),
                    sizeof(double) * static_cast<std::size_t>(count));
    });
  }
  if (bad_row >= 0)
    throw kef::NumericalError(m.what + ": the model's " + what + " is not finite at row " +
                              std::to_string(bad_row) + " of X");
  return out;
}

// log_density and score take whole rows, as `kef score` does: for a conditional model x and y are the
// columns of its roles, and the values are log p~(y | x) and ∇_y log p~(y | x).
py::array log_density(const PyModel& m, const py::handle& X, bool normalized) {
  const ArrayArg x = checked_array(X, "X", m.dim(), m.what);
  if (normalized && !m.rows.has_exact_normalizer())
    throw kef::ConfigError(
        "normalized=True: " + m.what + " (" + m.saved.model->type_name() + ") has no known normalising constant" +
        (m.rows.conditional() ? " Z(x); use log_density(X) for log p~(y | x), or estimate the conditional "
                                "log-likelihood with kef.conditional_log_likelihood(model, X)"
                              : "; use log_density(X) for log p~, or estimate the log-likelihood with "
                                "kef.log_likelihood(model, X)"));
  return by_row_blocks(m, x, 1, true, "log density", [&](const kef::Matrix& rows) {
    kef::Matrix values(rows.rows(), 1);
    values.col(0) = m.rows.log_density(rows, normalized);
    return values;
  });
}

py::array score(const PyModel& m, const py::handle& X) {
  const ArrayArg x = checked_array(X, "X", m.dim(), m.what);
  return by_row_blocks(m, x, m.rows.score_columns(), false, "score",
                       [&](const kef::Matrix& rows) { return m.rows.score(rows); });
}

// `kef sample MODEL_DIR` (the hmc sampler): the model's exact sampler when it has one, HMC otherwise, in
// the model's coordinates, mapped to data units. Returns (draws, HMC summary or None).
py::tuple sample(const PyModel& m, long long n, std::uint64_t seed, int threads, bool quiet, long long chains,
                 long long warmup, long long leapfrog_steps, double step_size) {
  if (n < 1) throw kef::ConfigError("n: expected a positive number of samples, got " + std::to_string(n));
  if (m.saved.model->conditional() != nullptr || m.saved.transform.roles.conditional())
    throw kef::ConfigError("kef.Model.sample: " + m.what + " is a conditional density p(y | x) (columns: " +
                           kef::conditional_columns_text(m.saved, m.saved.model->conditional()) +
                           "); give the inputs to draw y for: model.sample(n, given=X), X with one row per x "
                           "(the input columns, in data units)");
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

// Model.sample(n, given=X) on a conditional model: n draws of y for each row x of `given` (the input
// columns, data units), as `kef sample MODEL_DIR --given X` draws them with the same seed. Returns
// (full rows in the data's column order, whether the sampler is approximate).
py::tuple sample_given(const PyModel& m, const py::handle& given, long long n, std::uint64_t seed,
                       int threads, bool quiet) {
  const kef::Matrix x = to_matrix(given, "given");
  kef::ConditionalDraws draws;
  {
    py::gil_scoped_release release;
    auto shown = quiet ? kef::make_silent_progress() : kef::make_stderr_progress();
    kef::Context context = kef::Context(seed, threads, shown.get(), "threads").child("sample");
    draws = kef::sample_conditional(m.saved, x, static_cast<kef::Index>(n), context, "given", "n", m.what);
  }
  return py::make_tuple(to_numpy(draws.rows), draws.approximate);
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
      .def_property_readonly("conditional",
                             [](const PyModel& p) {
                               return p.saved.model->conditional() != nullptr ||
                                      p.saved.transform.roles.conditional();
                             })
      .def_property_readonly("column_roles",
                             [](const PyModel& p) {
                               return kef::conditional_columns_text(p.saved, p.saved.model->conditional());
                             })
      .def("_sample", &sample)
      .def("_sample_given", &sample_given)
      .def("_save", &save);

  // The row block of log_density, score and `kef score` (tests size inputs to span several).
  m.attr("_row_block") = kef::kModelRowBlock;
  m.attr("_with_mpi") =
#ifdef KEF_PYTHON_MPI
      true;
#else
      false;
#endif

  m.def("_run_in_memory", &run_in_memory);
  m.def("_run_file", &run_file);
  m.def("_load", &load);
  m.def("_validate", &validate);
  m.def("_evaluate", &evaluate);
}
