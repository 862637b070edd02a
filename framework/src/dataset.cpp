// The [data] table: the built-in `file` source, splitting, shuffling and standardisation.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "affine_model.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/lite_model.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

// Paths in a pipeline file are relative to the file's own directory.
fs::path resolve_path(const Config& cfg, const std::string& p) {
  fs::path path(p);
  if (path.is_absolute()) return path;
  fs::path base = fs::path(cfg.source()).parent_path();
  return base / path;
}

class FileSource final : public DataSource {
 public:
  explicit FileSource(const Config& cfg) : cfg_(cfg) {
    columns_ = cfg.strings("columns");
    if (cfg.has("path") == (cfg.has("train") || cfg.has("test") || cfg.has("validation")))
      cfg.fail(cfg.has("path") ? "path" : "",
               "give either `path` (split by `split`) or explicit `train` / `validation` / `test` files");
    if (cfg.has("train") && cfg.has("split"))
      cfg.fail("split", "`split` applies to `path`; explicit train/validation/test files are not split");
  }

  SourceData load(RandomStream&) override {
    SourceData out;
    auto read = [&](const char* key) {
      fs::path p = resolve_path(cfg_, cfg_.string(key));
      if (!fs::exists(p)) throw DataError(cfg_.where(key) + ": no such file " + p.string());
      TableData t = read_table(p, columns_);
      if (out.columns.empty()) {
        out.columns = t.columns;
      } else if (t.columns.size() != out.columns.size()) {
        throw DataError(p.string() + ": has " + std::to_string(t.columns.size()) +
                        " columns, the training file has " + std::to_string(out.columns.size()));
      }
      out.provenance += (out.provenance.empty() ? "" : ", ") + p.string();
      return t.values;
    };
    if (cfg_.has("path")) {
      out.samples = read("path");
    } else {
      out.train = read("train");
      if (cfg_.has("validation")) out.validation = read("validation");
      if (cfg_.has("test")) out.test = read("test");
    }
    return out;
  }

 private:
  Config cfg_;
  std::vector<std::string> columns_;
};

Index split_count(const Config& split, const char* key, Index n) {
  if (!split.has(key)) return 0;
  double v = split.number(key);
  // Integers are counts, floats fractions of the rows.
  if (split.holds_integer(key)) {
    if (v < 0 || v >= static_cast<double>(n))
      split.fail(key, "count out of range (expected 0 <= count < " + std::to_string(n) +
                          " rows, got " + std::to_string(static_cast<Index>(v)) + ")");
    return static_cast<Index>(v);
  }
  if (!(v >= 0 && v < 1))
    split.fail(key, "fraction out of range (expected 0 <= fraction < 1, got " + std::to_string(v) + ")");
  return static_cast<Index>(std::llround(v * static_cast<double>(n)));
}

Matrix take_rows(const Matrix& X, const std::vector<Index>& idx, Index begin, Index count) {
  Matrix out(count, X.cols());
  for (Index i = 0; i < count; ++i) out.row(i) = X.row(idx[static_cast<std::size_t>(begin + i)]);
  return out;
}

void check_dims(const Dataset& d) {
  const Index D = d.train.cols();
  auto check = [&](const Matrix& m, const char* name) {
    if (m.rows() > 0 && m.cols() != D)
      throw DataError(std::string("data: the ") + name + " split has " + std::to_string(m.cols()) +
                      " columns, the training split has " + std::to_string(D));
  };
  check(d.validation, "validation");
  check(d.test, "test");
  if (d.truth && d.truth->dim() != D)
    throw DataError("data: the source's true density has dimension " + std::to_string(d.truth->dim()) +
                    ", the samples have " + std::to_string(D));
}

// The training statistics of standardize/whiten must be finite: a value such as 1e200 makes the sum
// of squares overflow, the spread become inf and every standardised value 0, silently (kef 0.2).
// `spread` is the standard deviation (standardize) or the covariance diagonal (whiten).
void check_finite_statistics(const Matrix& train, const Vector& mean, const Vector& spread,
                             const std::vector<std::string>& columns, const std::string& where) {
  for (Index d = 0; d < train.cols(); ++d) {
    if (std::isfinite(mean[d]) && std::isfinite(spread[d])) continue;
    Index row = 0;
    const double largest = train.col(d).cwiseAbs().maxCoeff(&row);
    const std::string column = static_cast<std::size_t>(d) < columns.size()
                                   ? "column " + columns[static_cast<std::size_t>(d)]
                                   : "column " + std::to_string(d);
    std::ostringstream value;
    value << largest;
    throw DataError(where + ": " + column + ": the training " +
                    (std::isfinite(mean[d]) ? std::string("spread") : std::string("mean")) +
                    " overflows (expected values whose squares are finite, got |x| = " + value.str() +
                    " in training row " + std::to_string(row) +
                    "); check the column for a sentinel or corrupted value, or rescale it");
  }
}

}  // namespace

void register_core_components(Registry& registry) {
  registry.register_builtin("kef core", [](PluginRegistrar& r) {
    ComponentInfo info;
    info.type = "file";
    info.summary = "Samples from a CSV (header row) or NPY file, or separate train/validation/test files";
    info.keys = {
        KeySpec::string("path", "data file (.csv or .npy), split by `split`").optional(),
        KeySpec::string("train", "training file (instead of `path`)").optional(),
        KeySpec::string("validation", "validation file (with `train`)").optional(),
        KeySpec::string("test", "test file (with `train`)").optional(),
        KeySpec::strings("columns", "columns to use, by header name (NPY: x0, x1, ...); default all"),
    };
    r.add_data_source(info, [](const Config& cfg, const BuildContext&) {
      return std::make_unique<FileSource>(cfg);
    });
    ComponentInfo model;
    model.type = "lite";
    model.summary = "Saved inducing-point model (lite, dkef): kernel, base measure, inducing_points.npy, alpha.npy";
    r.add_model_loader(model, &LiteModel::load);
  });
}

std::vector<std::string> data_host_keys() { return {"split", "shuffle", "standardize", "whiten"}; }

Dataset prepare_dataset(Registry& registry, const Config& data_table, std::uint64_t seed) {
  Config data = data_table;
  for (const char* k : {"shuffle", "standardize", "whiten"})
    if (data.has(k)) (void)data.boolean(k);  // a wrong type fails here, citing the key
  RandomStream rng(seed, "data");
  BuildContext ctx{-1, &registry, &rng};
  DataSourcePtr source = registry.make_data_source(data, ctx, data_host_keys());
  RandomStream load_rng = rng.derive("source");
  SourceData raw = source->load(load_rng);
  data.fill_defaults();

  Dataset out;
  out.columns = raw.columns;
  out.truth = raw.truth;
  out.provenance = raw.provenance;
  if (raw.train) {
    out.train = *raw.train;
    if (raw.validation) out.validation = *raw.validation;
    if (raw.test) out.test = *raw.test;
    if (!raw.validation) out.validation.resize(0, out.train.cols());
    if (!raw.test) out.test.resize(0, out.train.cols());
  } else {
    const Index n = raw.samples.rows();
    if (n == 0) throw DataError(data.where("type") + ": the source produced no rows");
    Config split = data.table("split");
    split.validate({KeySpec::number("test", "test rows: a fraction in [0, 1) or an integer count", 0.1),
                    KeySpec::number("validation", "validation rows: fraction or count", 0.0)});
    const Index n_test = split.has("test") ? split_count(split, "test", n)
                                           : static_cast<Index>(std::llround(0.1 * static_cast<double>(n)));
    const Index n_val = split_count(split, "validation", n);
    if (n_test + n_val >= n)
      split.fail("", "test (" + std::to_string(n_test) + ") + validation (" + std::to_string(n_val) +
                         ") rows leave no training rows out of " + std::to_string(n));
    std::vector<Index> idx(static_cast<std::size_t>(n));
    std::iota(idx.begin(), idx.end(), Index{0});
    bool shuffle = data.has("shuffle") ? data.boolean("shuffle") : true;
    if (shuffle) {
      RandomStream srng = rng.derive("shuffle");
      for (Index i = n - 1; i > 0; --i)
        std::swap(idx[static_cast<std::size_t>(i)],
                  idx[static_cast<std::size_t>(srng.uniform_int(static_cast<std::uint64_t>(i + 1)))]);
    }
    // Protocol of the DKEF paper: the last rows are the test set, the ones before it validation.
    const Index n_train = n - n_test - n_val;
    out.train = take_rows(raw.samples, idx, 0, n_train);
    out.validation = take_rows(raw.samples, idx, n_train, n_val);
    out.test = take_rows(raw.samples, idx, n_train + n_val, n_test);
  }
  check_dims(out);

  const bool standardize = data.has("standardize") && data.boolean("standardize");
  const bool whiten = data.has("whiten") && data.boolean("whiten");
  if (standardize && whiten) data.fail("whiten", "choose one of `standardize` and `whiten`");
  if (standardize || whiten) {
    const Index D = out.train.cols();
    if (out.train.rows() < 2) data.fail(standardize ? "standardize" : "whiten", "needs at least 2 training rows");
    Vector mean = out.train.colwise().mean().transpose();
    Matrix centred = out.train.rowwise() - mean.transpose();
    Matrix A;
    if (standardize) {
      Vector sd = (centred.array().square().colwise().sum() / static_cast<double>(out.train.rows())).sqrt();
      check_finite_statistics(out.train, mean, sd, out.columns, data.where("standardize"));
      for (Index d = 0; d < D; ++d)
        if (!(sd[d] > 0))
          throw DataError(data.where("standardize") + ": column " +
                          (static_cast<std::size_t>(d) < out.columns.size() ? out.columns[static_cast<std::size_t>(d)] : std::to_string(d)) +
                          " is constant in the training split and cannot be standardised");
      A = sd.cwiseInverse().asDiagonal();
    } else {
      Matrix cov = centred.transpose() * centred / static_cast<double>(out.train.rows());
      check_finite_statistics(out.train, mean, cov.diagonal(), out.columns, data.where("whiten"));
      Eigen::SelfAdjointEigenSolver<Matrix> es(cov);
      if (es.eigenvalues().minCoeff() <= 1e-12 * std::max(1.0, es.eigenvalues().maxCoeff()))
        throw DataError(data.where("whiten") +
                        ": the training covariance is singular; drop collinear columns");
      A = es.eigenvectors() * es.eigenvalues().cwiseInverse().cwiseSqrt().asDiagonal() *
          es.eigenvectors().transpose();
    }
    Vector c = -A * mean;
    auto apply = [&](Matrix& m) {
      if (m.rows() > 0) m = (m * A.transpose()).rowwise() + c.transpose();
    };
    apply(out.train);
    apply(out.validation);
    apply(out.test);
    if (out.truth) out.truth = make_affine_model(out.truth, A, c);
  }
  return out;
}

}  // namespace kef
