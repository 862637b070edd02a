// kef._kef: the C++ half of the Python package. It wraps the in-memory pipeline entry point
// (kef/pipeline.hpp: run_pipeline on a caller's matrix), saved models (load_saved_model, save_model),
// one evaluator on models in memory (evaluate_model, what `kef eval` runs) and a model's sampler (what
// `kef sample` runs). kef/__init__.py builds the TOML tables from Python dicts and the public API.
//
// Arrays: float64, 2-D, C or Fortran order, finite; anything else is refused with an exception naming
// the argument, never converted silently (kef.sklearn converts with scikit-learn's check_array first). The GIL is released around every fit, evaluation, sampling
// and row loop, so other Python threads run meanwhile.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kef/aggregated_test_figure.hpp"
#include "kef/aggregated_test_report.hpp"
#include "kef/conditional_sampling.hpp"
#include "kef/fit_defaults.hpp"
#include "kef/bandwidth_rule.hpp"
#include "kef/kernel_tests.hpp"
#include "kef/linalg.hpp"
#include "kef/output_dir.hpp"
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
  // An unpickled model's files as pickled, so that pickling it again gives the same bytes (a model
  // saved after a fit records its fit's keys, which a reloaded model no longer has).
  std::vector<std::pair<std::string, std::string>> pickled_files;

  PyModel(kef::SavedModel s, std::string n, std::string w)
      : saved(std::move(s)),
        rows(saved),
        name(std::move(n)),
        what(std::move(w)) {}
  kef::Index dim() const { return saved.model->dim(); }
};

std::string type_name(const py::handle& obj) { return py::str(py::type::of(obj).attr("__name__")); }

// `quiet=None`: the module-wide default kef.quiet.
bool resolve_quiet(const py::object& quiet) {
  if (!quiet.is_none()) return py::bool_(quiet);
  return py::bool_(py::module_::import("kef").attr("quiet"));
}

// A count argument: a Python or NumPy integer (not a bool, not a float: threads=1.5 is refused, never
// truncated) in [low, high]. ConfigError naming the argument.
long long checked_count(const py::handle& value, const std::string& arg, long long low, long long high) {
  const bool integer = !py::isinstance<py::bool_>(value) &&
                       (py::isinstance<py::int_>(value) ||
                        py::isinstance(value, py::module_::import("numpy").attr("integer")));
  if (!integer)
    throw kef::ConfigError(arg + ": expected an integer, got " + std::string(py::repr(value)) + " (" +
                           type_name(value) + ")");
  long long v = 0;
  try {
    v = py::int_(py::reinterpret_borrow<py::object>(value)).cast<long long>();
  } catch (const py::cast_error&) {
    throw kef::ConfigError(arg + ": " + std::string(py::repr(value)) + " is out of range");
  }
  if (v < low || v > high)
    throw kef::ConfigError(arg + ": expected an integer in [" + std::to_string(low) + ", " + std::to_string(high) +
                           "], got " + std::to_string(v));
  return v;
}

// Worker threads: 0 (all cores) or a positive count.
int checked_threads(const py::handle& value) { return static_cast<int>(checked_count(value, "threads", 0, 4096)); }

std::uint64_t checked_seed(const py::handle& value) {
  return static_cast<std::uint64_t>(checked_count(value, "seed", 0, std::numeric_limits<long long>::max()));
}

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
  // By equivalence, not identity: an array that crossed a process boundary (joblib, pickle) carries an
  // equal dtype object of its own. Equivalence also refuses float64 of the other byte order.
  auto& api = py::detail::npy_api::get();
  if (!api.PyArray_EquivTypes_(a.array.dtype().ptr(), py::dtype::of<double>().ptr()))
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
        from_file ? kef::Config::parse_file(source) : kef::Config::parse_generated(toml, source);
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
py::tuple sample_unconditional(const PyModel& m, long long n, std::uint64_t seed, int threads, bool quiet,
                               long long chains, long long warmup, long long leapfrog_steps, double step_size) {
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

void print_stderr(const std::string& line) {
  py::module_::import("sys").attr("stderr").attr("write")(line + "\n");
}

py::array sample(const PyModel& m, const py::handle& n_arg, const py::handle& seed_arg, const py::object& given,
                 const py::handle& threads_arg, const py::object& quiet_arg, const py::handle& chains,
                 const py::handle& warmup, const py::handle& leapfrog_steps, double step_size) {
  // An integer here; its range is checked where `kef sample` checks it (the messages are the command's).
  const long long n = checked_count(n_arg, "n", std::numeric_limits<long long>::min(),
                                    std::numeric_limits<long long>::max());
  const std::uint64_t seed = checked_seed(seed_arg);
  const int threads = checked_threads(threads_arg);
  const bool quiet = resolve_quiet(quiet_arg);
  if (!given.is_none()) {
    py::tuple r = sample_given(m, given, n, seed, threads, quiet);
    if (!quiet)
      print_stderr(std::string("[kef] drawn with the model's ") +
                   (r[1].cast<bool>() ? "approximate conditional sampler: draws from its learned q(y | x), not "
                                        "exact draws from its density"
                                      : "exact conditional sampler"));
    return r[0].cast<py::array>();
  }
  py::tuple r = sample_unconditional(m, n, seed, threads, quiet, checked_count(chains, "chains", 1, 1000000),
                                     checked_count(warmup, "warmup", 0, 1000000000),
                                     checked_count(leapfrog_steps, "leapfrog_steps", 1, 1000000), step_size);
  if (!r[1].is_none() && !quiet) print_stderr("[kef] " + r[1].cast<std::string>());
  return r[0].cast<py::array>();
}

// Model.save: `kef run`'s publishing rule for a saved model (kef/output_dir.hpp): written into a staging
// directory beside the target, then moved into place in one rename; the target may be absent, an
// empty directory or a saved kef model, anything else is refused and left untouched.
void save(const PyModel& m, const fs::path& dir, const py::object& quiet_arg) {
  kef::Registry& reg = registry(resolve_quiet(quiet_arg));
  py::gil_scoped_release release;
  kef::check_output_target(dir, kef::OutputKind::SavedModel);
  const fs::path staging = kef::make_staging_dir(dir);
  try {
    kef::save_model(*m.saved.model, staging, m.saved.transform, &reg);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  kef::publish_staging_dir(staging, dir, kef::PublishMethod::Automatic, kef::OutputKind::SavedModel);
}

// Pickling: the saved model's files (model.toml and its .npy arrays, byte for byte) and the model's
// name, so that a copy computes bitwise what the original does. The files go through a private
// temporary directory on both sides.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kef-pickle-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw kef::Error(pattern + ": cannot create a temporary directory (" + std::strerror(errno) + ")");
    path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_bytes(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) throw kef::Error(file.string() + ": cannot read");
  return text.str();
}

py::tuple get_state(const PyModel& m) {
  py::dict files;
  if (!m.pickled_files.empty()) {
    for (const auto& [name, bytes] : m.pickled_files) files[py::str(name)] = py::bytes(bytes);
  } else {
    TempDir tmp;
    const fs::path dir = tmp.path / "model";
    {
      py::gil_scoped_release release;
      kef::save_model(*m.saved.model, dir, m.saved.transform, &registry(true));
    }
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const fs::path& f : paths)
      files[py::str(fs::relative(f, dir).generic_string())] = py::bytes(read_bytes(f));
  }
  return py::make_tuple(1, files, m.name, m.what);
}

std::shared_ptr<PyModel> set_state(const py::tuple& state) {
  if (state.size() != 4 || state[0].cast<int>() != 1)
    throw kef::ModelFileError("unpickling a kef.Model: not a state this kef wrote (expected version 1)");
  TempDir tmp;
  const fs::path dir = tmp.path / "model";
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::string>> pickled;
  for (const auto& item : state[1].cast<py::dict>()) {
    const fs::path rel(item.first.cast<std::string>());
    if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
      throw kef::ModelFileError("unpickling a kef.Model: file name " + rel.string() + " leaves its directory");
    fs::create_directories((dir / rel).parent_path());
    std::ofstream f(dir / rel, std::ios::binary);
    const std::string bytes = item.second.cast<std::string>();
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw kef::Error((dir / rel).string() + ": cannot write");
    pickled.emplace_back(rel.generic_string(), bytes);
  }
  kef::Registry& reg = registry(true);
  kef::SavedModel saved;
  try {
    py::gil_scoped_release release;
    saved = kef::load_saved_model(dir, reg);
  } catch (const kef::ModelFileError& e) {
    // A component whose plugin this kef has not loaded: the saved model's [origins] names it, and
    // load_saved_model's message says which plugin and file; here that is a missing plugin.
    const kef::Config manifest = kef::Config::parse_file((dir / "model.toml").string());
    if (manifest.has("origins")) {
      const kef::Config origins = manifest.table("origins");
      for (const std::string& key : origins.keys()) {
        const kef::Config o = origins.table(key);
        if (o.has("interface") && o.has("type") && !reg.find(o.string("interface"), o.string("type")))
          throw kef::PluginError(std::string("unpickling a kef.Model: ") + e.what());
      }
    }
    throw;
  }
  auto model = std::make_shared<PyModel>(std::move(saved), state[2].cast<std::string>(), state[3].cast<std::string>());
  model->pickled_files = std::move(pickled);
  return model;
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
  in.evaluator = kef::Config::parse_generated(evaluator_toml, "kef.evaluate");
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

// ---------------------------------------------------------------------------------------------------
// Declarations (what `kef plugins --describe` prints), for kef.sklearn's parameters.

py::object default_value(const kef::DefaultValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          return py::none();
        else
          return py::cast(x);
      },
      v);
}

py::dict component_dict(const kef::ComponentInfo& info) {
  py::list keys;
  for (const kef::KeySpec& k : info.keys) {
    py::dict key;
    key["name"] = k.name;
    key["kind"] = kef::to_string(k.kind);
    key["doc"] = k.doc;
    key["default"] = default_value(k.default_value);
    key["required"] = k.required;
    key["choices"] = k.choices;
    keys.append(key);
  }
  py::list parts;
  for (const kef::PartSpec& part : info.parts)
    parts.append(py::dict(py::arg("name") = part.name, py::arg("interface") = part.interface,
                          py::arg("required") = part.required, py::arg("doc") = part.doc));
  py::dict d;
  d["type"] = info.type;
  d["summary"] = info.summary;
  d["keys"] = keys;
  d["parts"] = parts;
  d["uses_kernel"] = info.uses_kernel;
  d["uses_base_measure"] = info.uses_base_measure;
  d["log_density"] = info.facets.has(kef::Facet::LogDensity);
  d["conditional"] = info.facets.has(kef::Facet::ConditionalDensity);
  d["normalized"] = info.facets.has(kef::Facet::NormalizedDensity);
  d["score"] = info.facets.has(kef::Facet::Score);
  d["laplacian"] = info.facets.has(kef::Facet::Laplacian);
  return d;
}

py::list components(const std::string& interface) {
  py::list out;
  for (const kef::ComponentInfo& info : registry(true).components(interface)) out.append(component_dict(info));
  return out;
}

// kef/fit_defaults.hpp for an estimator type: [(table, key, value)].
py::list fit_defaults(const std::string& estimator, const std::vector<std::string>& given_tables,
                      const std::vector<std::string>& given_keys, long long train_rows) {
  const kef::ComponentInfo* info = registry(true).find("estimator", estimator);
  if (!info) throw kef::ConfigError("estimator: unknown type `" + estimator + "`");
  py::list out;
  for (const kef::DefaultSetting& d : kef::fit_defaults(*info, given_tables, given_keys, train_rows))
    out.append(py::make_tuple(d.table, d.key, default_value(d.value)));
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Kernel tests (kef/kernel_tests.hpp): the command's computation on arrays, its JSON report as a dict.

std::string bandwidth_text(const py::handle& value, const std::string& arg) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (!py::isinstance<py::bool_>(value) &&
      (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value) ||
       py::isinstance(value, py::module_::import("numpy").attr("number")))) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>());
    return text;
  }
  throw kef::ConfigError(arg + ": expected \"median\", \"bkl\" or a positive number, got " +
                         std::string(py::repr(value)));
}

py::object json_dict(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

kef::KernelTestOptions test_options(const py::handle& bandwidth, const py::handle& permutations,
                                    const py::handle& seed, const py::handle& threads) {
  kef::KernelTestOptions o;
  o.bandwidth = bandwidth_text(bandwidth, "bandwidth");
  o.permutations = checked_count(permutations, "permutations", 0, 100000000);
  o.seed = checked_seed(seed);
  o.threads = checked_threads(threads);
  o.bandwidth_key = "bandwidth";
  o.bandwidth_y_key = "bandwidth_y";
  o.scales_key = "scales";
  o.threads_key = "threads";
  return o;
}

py::object two_sample_test(const py::handle& X, const py::handle& Y, const py::handle& bandwidth,
                           const std::vector<double>& scales, const py::handle& permutations, const py::handle& seed,
                           const py::handle& threads) {
  kef::KernelTestOptions o = test_options(bandwidth, permutations, seed, threads);
  o.scales = scales;
  kef::check_kernel_test_options(o, true);
  const kef::Matrix x = to_matrix(X, "X"), y = to_matrix(Y, "Y");
  kef::Registry& reg = registry(true);
  std::string text;
  {
    py::gil_scoped_release release;
    text = kef::two_sample_test_json(reg, {&x, "X", ""}, {&y, "Y", ""}, o);
  }
  return json_dict(text);
}

py::object independence_test(const py::handle& X, const py::handle& Y, const py::handle& bandwidth,
                             const py::object& bandwidth_y, const py::handle& permutations, const py::handle& seed,
                             const py::handle& threads) {
  kef::KernelTestOptions o = test_options(bandwidth, permutations, seed, threads);
  if (!bandwidth_y.is_none()) o.bandwidth_y = bandwidth_text(bandwidth_y, "bandwidth_y");
  kef::check_kernel_test_options(o, false);
  const kef::Matrix x = to_matrix(X, "X"), y = to_matrix(Y, "Y");
  kef::Registry& reg = registry(true);
  std::string text;
  {
    py::gil_scoped_release release;
    text = kef::independence_test_json(reg, {&x, "X", ""}, {&y, "Y", ""}, o);
  }
  return json_dict(text);
}

py::object witness(const py::handle& X, const py::handle& Y, const py::handle& points, const py::handle& bandwidth,
                   bool integrate, double tau2, double level, const py::handle& seed, const py::handle& threads) {
  kef::WitnessRequest r;
  r.bandwidth = bandwidth_text(bandwidth, "bandwidth");
  r.integrate = integrate;
  if (!(tau2 >= 1e-12 && tau2 <= 1e12))
    throw kef::ConfigError("tau2: expected a number in [1e-12, 1e12], got " + std::to_string(tau2));
  if (!(level >= 1e-6 && level <= 1.0 - 1e-6))
    throw kef::ConfigError("level: expected a probability in (0, 1), got " + std::to_string(level));
  r.tau2 = tau2;
  r.level = level;
  r.seed = checked_seed(seed);
  r.threads = checked_threads(threads);
  r.bandwidth_key = "bandwidth";
  r.integrate_key = "integrate_lengthscale";
  r.threads_key = "threads";
  kef::check_witness_request(r);
  const kef::Matrix x = to_matrix(X, "X"), y = to_matrix(Y, "Y"), g = to_matrix(points, "points");
  kef::WitnessReport report;
  {
    py::gil_scoped_release release;
    report = kef::witness_json({&x, "X", ""}, {&y, "Y", ""}, g, r);
  }
  py::object d = json_dict(report.json);
  auto column = [](const kef::Vector& v) {
    py::array_t<double> out(v.size());
    std::memcpy(out.mutable_data(), v.data(), sizeof(double) * static_cast<std::size_t>(v.size()));
    return out;
  };
  d["mean"] = column(report.posterior.mean);
  d["lower"] = column(report.posterior.lower);
  d["upper"] = column(report.posterior.upper);
  d["sd"] = column(report.posterior.sd);
  return d;
}

py::object causal_discovery(const py::handle& data, const py::object& columns, double alpha,
                            const py::handle& bandwidth, const py::handle& permutations,
                            const py::object& max_given, const py::handle& seed, const py::handle& threads) {
  kef::CausalRequest r;
  r.bandwidth = bandwidth_text(bandwidth, "bandwidth");
  kef::parse_bandwidth_rule(r.bandwidth, "bandwidth");
  if (!(alpha >= 1e-12 && alpha <= 1.0 - 1e-12))
    throw kef::ConfigError("alpha: expected a level in (0, 1), got " + std::to_string(alpha));
  r.alpha = alpha;
  r.permutations = checked_count(permutations, "permutations", 0, 1000000);
  r.max_given = max_given.is_none() ? -1 : checked_count(max_given, "max_given", 0, 1000);
  r.seed = checked_seed(seed);
  r.threads = checked_threads(threads);
  r.bandwidth_key = "bandwidth";
  r.threads_key = "threads";
  const kef::Matrix x = to_matrix(data, "data");
  std::vector<std::string> names;
  if (columns.is_none())
    for (kef::Index j = 0; j < x.cols(); ++j) names.push_back("x" + std::to_string(j + 1));
  else
    names = columns.cast<std::vector<std::string>>();
  kef::Registry& reg = registry(true);
  std::string text;
  {
    py::gil_scoped_release release;
    text = kef::causal_discovery_json(reg, {&x, "data", ""}, names, r);
  }
  return json_dict(text);
}

// The aggregated tests (kef/aggregated_test_report.hpp): the command's computation and JSON report.
// The options shared by mmdagg, hsicagg and ksdagg, counts checked as the command checks its flags;
// everything else by the library's own checks, which name the keywords (flag_names off).
kef::AggregateRequest aggregate_request(double alpha, const py::handle& bootstrap_draws,
                                        const py::handle& level_draws, const py::handle& bisection_steps,
                                        const py::handle& seed, const py::handle& threads) {
  kef::AggregateRequest r;
  kef::AggregateOptions& o = r.options;
  o.alpha = alpha;
  o.bootstrap_draws = checked_count(bootstrap_draws, "bootstrap_draws", 1, 100000000);
  o.level_draws = checked_count(level_draws, "level_draws", 1, 100000000);
  o.bisection_steps = checked_count(bisection_steps, "bisection_steps", 1, 1000);
  r.seed = checked_seed(seed);
  r.threads = checked_threads(threads);
  r.threads_key = "threads";
  return r;
}

// plot=: the figure's path (str or os.PathLike), or None. Checked before the test runs, drawn from the
// report after it (kef/aggregated_test_figure.hpp), and named in the returned report as the command
// names it in its --json.
std::optional<fs::path> aggregate_plot_path(const py::handle& plot) {
  if (plot.is_none()) return std::nullopt;
  if (!py::isinstance<py::str>(plot) && !py::hasattr(plot, "__fspath__"))
    throw py::type_error("plot: expected a path (str or os.PathLike) or None, got " + type_name(plot));
  const fs::path path = plot.cast<fs::path>();
  kef::check_aggregated_test_figure_file(path, "plot");
  return path;
}

py::object aggregate_report(const std::string& text, const std::optional<fs::path>& plot) {
  if (plot) {
    py::gil_scoped_release release;
    kef::write_aggregated_test_figure(*plot, text, "plot");
  }
  py::object report = json_dict(text);
  if (plot) report["plot"] = plot->string();
  return report;
}

py::object mmdagg(const py::handle& X, const py::handle& Y, const std::string& kernels,
                  const py::handle& number_bandwidths, const std::string& weights, const std::string& approximation,
                  double alpha, const py::handle& bootstrap_draws, const py::handle& level_draws,
                  const py::handle& bisection_steps, const py::handle& seed, const py::handle& threads,
                  const py::handle& plot) {
  kef::AggregateRequest r = aggregate_request(alpha, bootstrap_draws, level_draws, bisection_steps, seed, threads);
  kef::AggregateOptions& o = r.options;
  o.bandwidths = checked_count(number_bandwidths, "number_bandwidths", 1, 1000);
  o.kernels = kernels;
  o.weights = weights;
  if (approximation != "auto" && approximation != "permutations")
    throw kef::ConfigError("approximation: expected \"auto\" (the wild bootstrap for samples of equal size, else "
                           "permutations) or \"permutations\", got \"" + approximation + "\"");
  o.permutations = approximation == "permutations";
  kef::check_aggregate_options(o, kef::AggregateKind::Mmd);
  const std::optional<fs::path> figure = aggregate_plot_path(plot);
  const kef::Matrix x = to_matrix(X, "X"), y = to_matrix(Y, "Y");
  std::string text;
  {
    py::gil_scoped_release release;
    text = kef::aggregated_two_sample_json({&x, "X", ""}, {&y, "Y", ""}, r);
  }
  return aggregate_report(text, figure);
}

py::object hsicagg(const py::handle& X, const py::handle& Y, double alpha, const py::handle& bootstrap_draws,
                   const py::handle& level_draws, const py::handle& bisection_steps, double hsic_power,
                   const py::handle& hsic_lower, const py::handle& hsic_upper, const py::handle& seed,
                   const py::handle& threads, const py::handle& plot) {
  kef::AggregateRequest r = aggregate_request(alpha, bootstrap_draws, level_draws, bisection_steps, seed, threads);
  kef::AggregateOptions& o = r.options;
  o.hsic_power = hsic_power;
  o.hsic_lower = static_cast<int>(checked_count(hsic_lower, "hsic_lower", -1000, 1000));
  o.hsic_upper = static_cast<int>(checked_count(hsic_upper, "hsic_upper", -1000, 1000));
  kef::check_aggregate_options(o, kef::AggregateKind::Hsic);
  const std::optional<fs::path> figure = aggregate_plot_path(plot);
  const kef::Matrix x = to_matrix(X, "X"), y = to_matrix(Y, "Y");
  std::string text;
  {
    py::gil_scoped_release release;
    text = kef::aggregated_independence_json({&x, "X", ""}, {&y, "Y", ""}, r);
  }
  return aggregate_report(text, figure);
}

// KSDAgg of the rows of X against the model's score at them, both in data units (Model.score).
py::object ksdagg(const py::handle& model, const py::handle& X, const py::handle& number_bandwidths,
                  const std::string& weights, double alpha, const py::handle& bootstrap_draws,
                  const py::handle& level_draws, const py::handle& bisection_steps, const py::handle& seed,
                  const py::handle& threads, const py::handle& plot) {
  if (!py::isinstance<PyModel>(model))
    throw py::type_error("model: expected a kef.Model, got " + type_name(model));
  const PyModel& m = model.cast<const PyModel&>();
  kef::AggregateRequest r = aggregate_request(alpha, bootstrap_draws, level_draws, bisection_steps, seed, threads);
  kef::AggregateOptions& o = r.options;
  o.bandwidths = checked_count(number_bandwidths, "number_bandwidths", 1, 1000);
  o.weights = weights;
  kef::check_aggregate_options(o, kef::AggregateKind::Ksd);
  if (m.saved.model->conditional() != nullptr || m.saved.transform.roles.conditional())
    throw kef::ConfigError("model: " + m.what + " is a conditional density p(y | x) (columns: " +
                           kef::conditional_columns_text(m.saved, m.saved.model->conditional()) +
                           "); KSDAgg tests a density of whole rows");
  kef::require_facets(*m.saved.model, kef::Facet::Score, "kef.ksdagg", m.name);
  const std::optional<fs::path> figure = aggregate_plot_path(plot);
  const kef::Matrix x = to_matrix(X, "X", m.dim(), m.what);
  std::string text;
  {
    py::gil_scoped_release release;
    const kef::Matrix scores = m.rows.score(x);
    kef::check_finite(scores, "kef.ksdagg: the score of " + m.what + " at the rows of X");
    text = kef::aggregated_goodness_of_fit_json({&x, "X", ""}, scores, m.name, r);
  }
  return aggregate_report(text, figure);
}

// KSDAgg of the rows of X against given score values at them (a density kef has no model for, whose
// score the caller knows): the same library test and report as ksdagg, with "model" empty.
py::object ksdagg_scores(const py::handle& X, const py::handle& scores, const py::handle& number_bandwidths,
                         const std::string& weights, double alpha, const py::handle& bootstrap_draws,
                         const py::handle& level_draws, const py::handle& bisection_steps,
                         const py::handle& seed, const py::handle& threads) {
  kef::AggregateRequest r = aggregate_request(alpha, bootstrap_draws, level_draws, bisection_steps, seed, threads);
  kef::AggregateOptions& o = r.options;
  o.bandwidths = checked_count(number_bandwidths, "number_bandwidths", 1, 1000);
  o.weights = weights;
  kef::check_aggregate_options(o, kef::AggregateKind::Ksd);
  const kef::Matrix x = to_matrix(X, "X");
  const kef::Matrix s = to_matrix(scores, "scores");  // finite, as every array argument
  if (s.rows() != x.rows() || s.cols() != x.cols())
    throw kef::DataError("scores: " + std::to_string(s.rows()) + " x " + std::to_string(s.cols()) +
                         ", expected X's shape " + std::to_string(x.rows()) + " x " + std::to_string(x.cols()) +
                         " (the score at each row of X)");
  std::string text;
  {
    py::gil_scoped_release release;
    text = kef::aggregated_goodness_of_fit_json({&x, "X", ""}, s, "", r);
  }
  return json_dict(text);
}

// kef's exception classes, one Python class each, under kef._kef.Error; kef/__init__.py re-exports
// them. Registered base first: pybind11 tries the most recently registered translator first. A bad
// key or value (ConfigError) and bad data (DataError) are also ValueErrors, Python's convention for
// an argument of the right type with a wrong value; OutOfMemoryError is also a MemoryError.
void bind_errors(py::module_& m) {
  static py::exception<kef::Error> error(m, "Error");
  static py::exception<kef::ConfigError> config_error(m, "ConfigError",
                                                      py::make_tuple(error, py::handle(PyExc_ValueError)));
  static py::exception<kef::DataError> data_error(m, "DataError",
                                                  py::make_tuple(error, py::handle(PyExc_ValueError)));
  static py::exception<kef::PluginError> plugin_error(m, "PluginError", error.ptr());
  static py::exception<kef::ModelFileError> model_file_error(m, "ModelFileError", error.ptr());
  static py::exception<kef::NumericalError> numerical_error(m, "NumericalError", error.ptr());
  static py::exception<kef::OutOfMemoryError> out_of_memory_error(
      m, "OutOfMemoryError", py::make_tuple(error, py::handle(PyExc_MemoryError)));
  error.doc() = "Base class of kef's errors; the message is kef's, naming the key, file, row or argument.";
  config_error.doc() = "A bad key, value or argument (also a ValueError).";
  data_error.doc() = "Bad data: shape, non-finite values, too few rows (also a ValueError).";
  plugin_error.doc() = "A plugin failed, or a component's plugin is not loaded (the message names it).";
  model_file_error.doc() = "A saved model that cannot be read (the message names the file).";
  numerical_error.doc() = "A computation that failed numerically (non-finite result, singular system).";
  out_of_memory_error.doc() =
      "A run whose memory estimate exceeds the limit (the available memory, or the pipeline's "
      "memory_limit_gb), or an allocation that failed; the message names the step, the size and the key "
      "that sets it (also a MemoryError).";
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
    } catch (const kef::OutOfMemoryError& e) {
      out_of_memory_error(e.what());
    } catch (const kef::Error& e) {
      error(e.what());
    } catch (const std::bad_alloc&) {
      // An allocation that failed outside a step that names itself: still kef's one out-of-memory
      // kind, with the size the allocation wrappers recorded (kef/allocator.hpp), not a bare MemoryError.
      out_of_memory_error(kef::out_of_memory_error("kef").what());
    }
  });

}

// flat table: the Model class's properties and methods with their numpydoc docstrings, read as one
// reference page.
void bind_model(py::module_& m) {
  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", R"doc(A fitted density model, in data units.

Returned by :func:`kef.fit`, :func:`kef.run` (``return_models=True``) and :func:`kef.load`. Its
methods compute what the ``kef`` command computes on the same saved model: ``log_density`` and
``score`` as ``kef score``, ``sample`` as ``kef sample``. Models pickle and deep-copy through their
saved-model files (bitwise the same model).

Examples
--------
>>> model = kef.fit(X, estimator="lite", kernel={"type": "gaussian", "sigma": 1.0},
...                 base_measure="gaussian", seed=1)   # doctest: +SKIP
>>> model.log_density(X[:5]).shape                      # doctest: +SKIP
(5,)
)doc")
      .def_property_readonly("dim", &PyModel::dim, "int: the number of data columns the model is defined on.")
      .def_property_readonly(
          "type", [](const PyModel& p) { return p.saved.model->type_name(); },
          "str: the model's type (``lite``, ``maf``, ...), as model.toml records it.")
      .def_property_readonly(
          "name", [](const PyModel& p) { return p.name; },
          "str: the directory it was loaded from, or its pipeline name.")
      .def_property_readonly(
          "columns", [](const PyModel& p) { return p.saved.transform.columns; },
          "list of str: the data's column names (empty when saved without them).")
      .def_property_readonly(
          "preprocessing", [](const PyModel& p) { return p.saved.transform.kind; },
          "str: the map from data units to the model's coordinates (``identity``, ``standardize``, ...).")
      .def_property_readonly(
          "log_normalizer", [](const PyModel& p) { return p.saved.model->log_normalizer(); },
          "float or None: log Z in the model's coordinates when known exactly.")
      .def_property_readonly(
          "can_sample", [](const PyModel& p) { return p.saved.model->can_sample(); },
          "bool: whether the model has an exact sampler (otherwise ``sample`` runs HMC).")
      .def("log_density", &log_density, py::arg("X"), py::arg("normalized") = false,
           R"doc(Log density of each row of X, in data units.

Parameters
----------
X : numpy.ndarray of float64, shape (n_rows, dim)
    C or Fortran order, finite.
normalized : bool, default False
    False: the unnormalised log p~(x) (kef's models rarely know log Z). True: log p(x), for models
    whose normaliser is exact (refused otherwise).

Returns
-------
numpy.ndarray of float64, shape (n_rows,)
    Bitwise what ``kef score`` writes for the same rows.

Raises
------
TypeError
    X is not a float64 NumPy array.
kef.DataError
    Wrong shape or column count, or a non-finite value (named by row and column).
kef.ConfigError
    ``normalized=True`` on a model without an exact normaliser.

Examples
--------
>>> model.log_density(X_test)        # doctest: +SKIP
)doc")
      .def("score", &score, py::arg("X"), R"doc(Score (gradient of the log density) of each row of X.

Parameters
----------
X : numpy.ndarray of float64, shape (n_rows, dim)

Returns
-------
numpy.ndarray of float64, shape (n_rows, dim)
    ∇ log p~(x) in data units (for a conditional model, ∇_y log p~(y | x)).

Raises
------
TypeError, kef.DataError
    As for :meth:`log_density`.

Examples
--------
>>> model.score(X_test)              # doctest: +SKIP
)doc")
      .def_property_readonly(
          "conditional",
          [](const PyModel& p) {
            return p.saved.model->conditional() != nullptr || p.saved.transform.roles.conditional();
          },
          "bool: whether the model is a conditional density p(y | x).")
      .def_property_readonly(
          "column_roles",
          [](const PyModel& p) { return kef::conditional_columns_text(p.saved, p.saved.model->conditional()); },
          "str: which columns are inputs x and which targets y.")
      .def("sample", &sample, py::arg("n"), py::arg("seed") = 0, py::kw_only(), py::arg("given") = py::none(),
           py::arg("threads") = 0, py::arg("quiet") = py::none(), py::arg("chains") = 4, py::arg("warmup") = 500,
           py::arg("leapfrog_steps") = 10, py::arg("step_size") = 0.1,
           R"doc(Draws from the model, in data units.

The model's exact sampler when it has one, HMC otherwise: as ``kef sample MODEL_DIR`` with the same
seed and options, bitwise.

Parameters
----------
n : int
    Number of draws (per row of ``given``), at least 1.
seed : int, default 0
threads : int, default 0
    Worker threads (0: all cores); results do not depend on it.
quiet : bool or None
    Silence progress on stderr (None: ``kef.quiet``).
given : numpy.ndarray of float64, optional
    Conditional models only: the inputs x, one row each (input columns, data units).
chains, warmup, leapfrog_steps, step_size
    HMC's settings, for models without an exact sampler.

Returns
-------
numpy.ndarray of float64, shape (n, dim)
    With ``given``: (rows of given × n, dim), full rows in the data's column order.

Raises
------
kef.ConfigError
    A bad count (``threads=1.5``, ``n=0``), or a conditional model without ``given``.

Examples
--------
>>> model.sample(1000, seed=2)       # doctest: +SKIP
)doc")
      .def("save", &save, py::arg("directory"), py::kw_only(), py::arg("quiet") = py::none(),
           R"doc(Writes the model to a directory, as ``kef run`` writes its models.

The files (model.toml and .npy arrays) are written into a staging directory beside the target and
moved into place in one rename. The target may be absent, an empty directory or a saved kef model
(replaced as a whole); any other directory is refused and left untouched.

Parameters
----------
directory : str or os.PathLike
quiet : bool or None
    Silence plugin warnings (None: ``kef.quiet``).

Raises
------
kef.ConfigError
    The target exists and is not a saved kef model (or is a symbolic link or a file).

Examples
--------
>>> model.save("my-model"); kef.load("my-model")     # doctest: +SKIP
)doc")
      .def("__repr__",
           [](const PyModel& p) {
             return "<kef.Model " + p.saved.model->type_name() + " dim=" + std::to_string(p.dim()) + " (" + p.name +
                    ")>";
           })
      .def(py::pickle(&get_state, &set_state));

}

// flat table: the kernel tests' signatures and numpydoc docstrings.
void bind_kernel_tests(py::module_& m) {
  m.def("two_sample_test", &two_sample_test, py::arg("X"), py::arg("Y"), py::kw_only(),
        py::arg("bandwidth") = "median", py::arg("scales") = std::vector<double>{}, py::arg("permutations") = 1000,
        py::arg("seed") = 0, py::arg("threads") = 0,
        R"doc(Kernel two-sample test (MMD): do the rows of X and Y come from the same distribution?

The computation of ``kef test two-sample X Y --json``: bitwise the same numbers for the same seed.

Parameters
----------
X, Y : numpy.ndarray of float64, shapes (n, d) and (m, d)
    At least 2 rows each, the same columns.
bandwidth : str or float, default "median"
    The Gaussian kernel's σ: ``"median"`` (median distance of the pooled sample), ``"bkl"`` (Bayesian
    kernel learning), ``"bkl_multiscale"`` (a Gaussian mixture kernel learned from ``scales``) or a
    positive number.
scales : list of float, optional
    With ``"bkl_multiscale"``: the starting length scales.
permutations : int, default 1000
    Permutations of the permutation p-value (0: none, its p-values are None).
seed : int, default 0
threads : int, default 0

Returns
-------
dict
    ``statistic`` (``mmd2_unbiased``, ``mmd2_biased``), ``p_value`` (``permutation``,
    ``permutation_biased``, ``gamma``), ``gamma`` (the null's fit), ``bandwidth`` (σ and how it was
    chosen), and the samples' shapes.

Raises
------
kef.ConfigError
    A bad bandwidth, count or seed.
kef.DataError
    Samples of different dimensions, fewer than 2 rows, non-finite values.

Examples
--------
>>> r = kef.two_sample_test(X, Y, seed=1)                 # doctest: +SKIP
>>> r["p_value"]["permutation"]                           # doctest: +SKIP
)doc");
  m.def("independence_test", &independence_test, py::arg("X"), py::arg("Y"), py::kw_only(),
        py::arg("bandwidth") = "median", py::arg("bandwidth_y") = py::none(), py::arg("permutations") = 1000,
        py::arg("seed") = 0, py::arg("threads") = 0,
        R"doc(Kernel independence test (HSIC): are the paired rows x_i of X and y_i of Y independent?

The computation of ``kef test independence X Y --json``: bitwise the same numbers for the same seed.

Parameters
----------
X, Y : numpy.ndarray of float64, shapes (n, p) and (n, q)
    Paired rows, at least 4.
bandwidth : str or float, default "median"
    Gaussian σ on X (and on Y unless ``bandwidth_y``): ``"median"``, ``"bkl"`` or a positive number.
bandwidth_y : str or float, optional
permutations : int, default 1000
seed : int, default 0
threads : int, default 0

Returns
-------
dict
    ``statistic`` (``hsic_biased``, ``hsic_unbiased``), ``p_value`` (``permutation``, ``gamma``),
    ``gamma``, ``bandwidth`` (``x`` and ``y``).

Raises
------
kef.ConfigError, kef.DataError

Examples
--------
>>> kef.independence_test(X, Y, seed=0)["p_value"]["gamma"]   # doctest: +SKIP
)doc");
  m.def("witness", &witness, py::arg("X"), py::arg("Y"), py::arg("points"), py::kw_only(),
        py::arg("bandwidth") = "median", py::arg("integrate_lengthscale") = false, py::arg("tau2") = 1.0,
        py::arg("level") = 0.8, py::arg("seed") = 0, py::arg("threads") = 0,
        R"doc(The Bayesian witness function μ_P − μ_Q of two samples: where do they differ?

The computation of ``kef test witness X Y --grid POINTS --json``, bitwise.

Parameters
----------
X, Y : numpy.ndarray of float64, shapes (n, d) and (m, d)
points : numpy.ndarray of float64, shape (k, d)
    Where to evaluate the witness.
bandwidth : str or float, default "median"
    Gaussian ℓ: ``"median"``, ``"bkl"`` or a positive number.
integrate_lengthscale : bool, default False
    With ``"bkl"``: integrate over ℓ (the mixture over BKL's HMC draws) instead of its mode.
tau2 : float, default 1.0
    τ², the embedding likelihood's noise variance.
level : float, default 0.8
    Probability of the central credible band.
seed : int, default 0
threads : int, default 0

Returns
-------
dict
    The command's report (``bandwidth``, ``band_excludes_zero``, ``max_abs_mean``, ``max_sd``, ...)
    and arrays ``mean``, ``lower``, ``upper``, ``sd`` (one value per point).

Raises
------
kef.ConfigError, kef.DataError

Examples
--------
>>> w = kef.witness(X, Y, np.linspace(-3, 3, 50).reshape(-1, 1))   # doctest: +SKIP
)doc");
  m.def("causal_discovery", &causal_discovery, py::arg("data"), py::kw_only(), py::arg("columns") = py::none(),
        py::arg("alpha") = 0.05, py::arg("bandwidth") = "median", py::arg("permutations") = 200,
        py::arg("max_given") = py::none(), py::arg("seed") = 0, py::arg("threads") = 0,
        R"doc(Causal structure of the columns of data: the PC algorithm with HSIC tests on GP residuals.

The computation of ``kef test causal DATA --json``, bitwise.

Parameters
----------
data : numpy.ndarray of float64, shape (n, p)
columns : list of str, optional
    The variables' names (default x1, ..., xp).
alpha : float, default 0.05
    Level of each independence test.
bandwidth : str or float, default "median"
permutations : int, default 200
    HSIC permutations per test (0: the Gamma approximation).
max_given : int, optional
    Largest conditioning set (default: no limit).
seed : int, default 0
threads : int, default 0

Returns
-------
dict
    ``cpdag`` and ``skeleton`` (as text), ``tests``, ``regressions``, ``orientation_conflicts``.

Raises
------
kef.ConfigError, kef.DataError

Examples
--------
>>> kef.causal_discovery(D, columns=["a", "b", "c"])["cpdag"]   # doctest: +SKIP
)doc");
}

// The numpydoc text the aggregated tests' functions share, written once: the level correction's
// options, the figure's option and the fields of the report's single tests.
constexpr const char* kAggregateDrawsDoc = R"doc(alpha : float, default 0.05
    The level, in (0, 1).
bootstrap_draws : int, default 2000
    B1, the simulated statistics that give each single test's p-value and quantile. The smallest
    p-value, 1/(B1 + 1), must be at most alpha times the smallest weight.
level_draws : int, default 2000
    B2, the simulated statistics of the level correction.
bisection_steps : int, default 50
    B3, the bisection steps of the level correction.
seed : int, default 0
threads : int, default 0
    Worker threads (0: all cores); the result does not depend on it.
)doc";
constexpr const char* kAggregateReportDoc = R"doc(``aggregate``: the decision ``reject``, the level correction ``level_correction`` (u), the
    settings, and ``single_tests``, one dict per kernel and bandwidth with ``kernel``, ``bandwidth``,
    ``weight``, ``statistic``, ``quantile``, ``p_value``, ``threshold`` (u times the weight) and
    ``reject`` (``p_value <= threshold``).
)doc";

std::string aggregate_plot_doc(const std::string& panels, const std::string& x) {
  return "plot : str, os.PathLike or None, default None\n"
         "    A PNG of the single tests to write (``--plot`` of the command): one panel per " + panels + ", the\n"
         "    statistic and its threshold (the (1 - u w)-quantile) against " + x + ", the rejecting tests\n"
         "    marked. Its directory is checked before the test runs; the report then names it under ``plot``.\n";
}

// flat table: the aggregated tests' signatures and numpydoc docstrings.
void bind_aggregated_tests(py::module_& m) {
  static const std::string mmdagg_doc =
      std::string(R"doc(MMDAgg: the aggregated kernel two-sample test, with no bandwidth to choose.

One MMD test per kernel and bandwidth of a collection, the level corrected for the multiple testing
(Schrab, Kim, Guedj and Gretton), so the combined test keeps level alpha. The computation of
``kef test two-sample X Y --aggregate --json``: bitwise the same report for the same options and seed.

Parameters
----------
X, Y : numpy.ndarray of float64, shapes (n, d) and (m, d)
    At least 2 rows each, the same columns.
kernels : str, default "laplace_gaussian"
    The kernel collection: ``"gaussian"``, ``"laplace"``, ``"imq"``, ``"matern_P.5_l1"`` or
    ``"matern_P.5_l2"`` (P = 0..4), or a group: ``"laplace_gaussian"``, ``"all_matern_l1"``,
    ``"all_matern_l2"``, ``"all_matern_l1_l2"``, ``"all"``.
number_bandwidths : int, default 10
    Bandwidths per kernel (at least 2), geometric between half the smallest and twice the largest
    inter-sample distance.
weights : str, default "uniform"
    The level's share per bandwidth: ``"uniform"``, ``"decreasing"``, ``"increasing"`` or
    ``"centred"``.
approximation : str, default "auto"
    ``"auto"``: the wild bootstrap for samples of equal size, else permutations; or
    ``"permutations"``.
)doc") + std::string(kAggregateDrawsDoc) + aggregate_plot_doc("kernel family", "the bandwidth") + R"doc(
Returns
-------
dict
    The report of ``kef test two-sample --aggregate --json``: ``test``, the samples' shapes, ``seed`` and
    )doc" + std::string(kAggregateReportDoc) + R"doc(
Raises
------
kef.ConfigError
    A bad option, named (``alpha``, ``bootstrap_draws``, ``kernels``, ``weights``,
    ``number_bandwidths``, ``approximation``, ``threads``, ...).
kef.DataError
    Samples of different dimensions, fewer than 2 rows, non-finite values.

Examples
--------
>>> r = kef.mmdagg(X, Y, seed=1)                                # doctest: +SKIP
>>> r["aggregate"]["reject"], len(r["aggregate"]["single_tests"])   # doctest: +SKIP
)doc";
  m.def("mmdagg", &mmdagg, py::arg("X"), py::arg("Y"), py::kw_only(), py::arg("kernels") = "laplace_gaussian",
        py::arg("number_bandwidths") = 10, py::arg("weights") = "uniform", py::arg("approximation") = "auto",
        py::arg("alpha") = 0.05, py::arg("bootstrap_draws") = 2000, py::arg("level_draws") = 2000,
        py::arg("bisection_steps") = 50, py::arg("seed") = 0, py::arg("threads") = 0,
        py::arg("plot") = py::none(),
        mmdagg_doc.c_str());
  static const std::string hsicagg_doc =
      std::string(R"doc(HSICAgg: the aggregated kernel independence test, with no bandwidth to choose.

Are the paired rows x_i of X and y_i of Y independent? One HSIC test per pair of Gaussian bandwidths on
X and on Y, the level corrected for the multiple testing. The computation of
``kef test independence X Y --aggregate --json``: bitwise the same report for the same options and
seed.

Parameters
----------
X, Y : numpy.ndarray of float64, shapes (n, p) and (n, q)
    Paired rows, at least 4.
)doc") + std::string(kAggregateDrawsDoc) + R"doc(hsic_power : float, default 2.0
    Each sample's bandwidths are ``hsic_power ** i`` times its median distance, for i from
    hsic_lower to hsic_upper; above 1.
hsic_lower, hsic_upper : int, default -2 and 2
    The range of i (hsic_upper > hsic_lower).
)doc" + aggregate_plot_doc("bandwidth of Y", "X's bandwidth") + R"doc(
Returns
-------
dict
    The report of ``kef test independence --aggregate --json``: ``test``, the samples' shapes, ``seed`` and
    ``aggregate``: the decision ``reject``, the level correction ``level_correction`` (u), the
    settings, and ``single_tests``, one dict per pair of bandwidths with ``kernel``, ``bandwidth`` (X's),
    ``bandwidth_y``, ``weight``, ``statistic``, ``quantile``, ``p_value``, ``threshold`` (u times the weight) and
    ``reject`` (``p_value <= threshold``).

Raises
------
kef.ConfigError
    A bad option, named (``alpha``, ``bootstrap_draws``, ``hsic_power``, ``hsic_lower``, ...).
kef.DataError
    Unpaired rows, fewer than 4 rows, non-finite values.

Examples
--------
>>> kef.hsicagg(X, Z, seed=0)["aggregate"]["reject"]        # doctest: +SKIP
)doc";
  m.def("hsicagg", &hsicagg, py::arg("X"), py::arg("Y"), py::kw_only(), py::arg("alpha") = 0.05,
        py::arg("bootstrap_draws") = 2000, py::arg("level_draws") = 2000, py::arg("bisection_steps") = 50,
        py::arg("hsic_power") = 2.0, py::arg("hsic_lower") = -2, py::arg("hsic_upper") = 2, py::arg("seed") = 0,
        py::arg("threads") = 0, py::arg("plot") = py::none(),
        hsicagg_doc.c_str());
  static const std::string ksdagg_doc =
      std::string(R"doc(KSDAgg: the aggregated kernel Stein discrepancy test of a model against samples.

Do the rows of X come from the model's density? The model's score at the rows (:meth:`kef.Model.score`,
in data units) and IMQ kernels at a collection of bandwidths, the level corrected for the multiple
testing (Schrab, Guedj and Gretton), so no normalising constant and no bandwidth are needed. The same
test as the evaluator ``ksdagg`` (``kef.evaluate(model, X, "ksdagg")``, which works in the model's
coordinates and reports only the decision) with every single test reported; its draws come from the
seed's stream ``goodness-of-fit.aggregate``, so for a given seed the two need not decide alike draw
for draw.

Parameters
----------
model : kef.Model
    An unconditional model with a score.
X : numpy.ndarray of float64, shape (n, model.dim)
    At least 2 rows.
number_bandwidths : int, default 10
    IMQ bandwidths (at least 2), geometric from 1/d to max(2, the largest distance)/d.
weights : str, default "uniform"
    ``"uniform"``, ``"decreasing"``, ``"increasing"`` or ``"centred"``.
)doc") + std::string(kAggregateDrawsDoc) + aggregate_plot_doc("kernel family", "the bandwidth") + R"doc(
Returns
-------
dict
    ``test`` (``"goodness-of-fit"``), ``x`` (the shape of X), ``seed``, ``model`` (its name) and
    )doc" + std::string(kAggregateReportDoc) + R"doc(
Raises
------
TypeError
    model is not a kef.Model.
kef.ConfigError
    A bad option, named; a conditional model, or one without a score.
kef.DataError
    Wrong column count, fewer than 2 rows, non-finite values.
kef.NumericalError
    The model's score is not finite at a row of X.

Examples
--------
>>> kef.ksdagg(model, X_test, seed=3)["aggregate"]["reject"]   # doctest: +SKIP
)doc";
  m.def("ksdagg", &ksdagg, py::arg("model"), py::arg("X"), py::kw_only(), py::arg("number_bandwidths") = 10,
        py::arg("weights") = "uniform", py::arg("alpha") = 0.05, py::arg("bootstrap_draws") = 2000,
        py::arg("level_draws") = 2000, py::arg("bisection_steps") = 50, py::arg("seed") = 0,
        py::arg("threads") = 0, py::arg("plot") = py::none(),
        ksdagg_doc.c_str());
  m.def("ksdagg_scores", &ksdagg_scores, py::arg("X"), py::arg("scores"), py::kw_only(),
        py::arg("number_bandwidths") = 10, py::arg("weights") = "uniform", py::arg("alpha") = 0.05,
        py::arg("bootstrap_draws") = 2000, py::arg("level_draws") = 2000, py::arg("bisection_steps") = 50,
        py::arg("seed") = 0, py::arg("threads") = 0,
        R"doc(KSDAgg from score values: the test of :func:`kef.ksdagg` for a density given by its score.

Do the rows of X come from the density p whose score ∇ log p at them is ``scores``? For a density
kef has no model of (a restricted Boltzmann machine, a closed-form target), the caller computes the
score at the rows and passes it; the test, its options and its report are those of
:func:`kef.ksdagg`.

Parameters
----------
X : numpy.ndarray of float64, shape (n, d)
    At least 2 rows.
scores : numpy.ndarray of float64, shape (n, d)
    ∇ log p at each row of X, finite.
number_bandwidths, weights, alpha, bootstrap_draws, level_draws, bisection_steps, seed, threads
    As for :func:`kef.ksdagg`.

Returns
-------
dict
    The report of :func:`kef.ksdagg`, with ``model`` the empty string.

Raises
------
kef.ConfigError
    A bad option, named.
kef.DataError
    scores not of X's shape, fewer than 2 rows, non-finite values.

Examples
--------
>>> X = np.random.default_rng(0).normal(size=(200, 2))
>>> kef.ksdagg_scores(X, -X, seed=1)["aggregate"]["reject"]   # X against N(0, I)   # doctest: +SKIP
)doc");
}

}  // namespace

PYBIND11_MODULE(_kef, m) {
  m.doc() = "kef's C++ core (see the package kef for the API)";
  m.attr("__version__") = kef::version();

  bind_errors(m);
  bind_model(m);
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
  m.def("_threads", &checked_threads, "threads, checked: an integer >= 0 (ConfigError otherwise)");
  m.def("_seed", &checked_seed, "seed, checked: an integer >= 0 (ConfigError otherwise)");
  m.def("_components", &components, "the declarations of every registered component of an interface");
  m.def("_fit_defaults", &fit_defaults, "kef/fit_defaults.hpp: [(table, key, value)] for an estimator");

  bind_kernel_tests(m);
  bind_aggregated_tests(m);
}
