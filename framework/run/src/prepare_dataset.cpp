// The [data] table: splitting, shuffling and standardisation (the `file` source: file_source.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

#include "affine_model.hpp"
#include "file_source.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/lite_model.hpp"
#include "kef/pipeline.hpp"
#include "kef/column_summary.hpp"
#include "kef/communicator.hpp"
#include "kef/random.hpp"
#include "kef/training_rows.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

Index split_count(const Config& split, const char* key, Index n) {
  if (!split.has(key)) return 0;
  double v = split.number(key);
  // Integers are counts, floats fractions of the rows.
  if (split.holds_integer(key)) {
    if (v < 0 || v >= static_cast<double>(n))
      split.fail(key, "count out of range (expected 0 <= count < " + std::to_string(n) + " rows, got " +
                          std::to_string(static_cast<Index>(v)) + ")");
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
void check_finite_statistics(const TrainingRows& train, Index count, const Vector& mean, const Vector& spread,
                             const std::vector<std::string>& columns, const std::string& where) {
  for (Index d = 0; d < train.cols(); ++d) {
    if (std::isfinite(mean[d]) && std::isfinite(spread[d])) continue;
    const auto [row, largest] = largest_magnitude(train, d, count);
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

// A training split left in the data file (kef/training_rows.hpp) seen through the standardize/whiten
// map: each row read is mapped by the same function as the held splits (DataTransform::to_model), so
// a consumer sees the bits it would see in the held, mapped split.
class MappedRows final : public TrainingRows {
 public:
  MappedRows(TrainingRowsPtr inner, DataTransform transform) : inner_(std::move(inner)), transform_(std::move(transform)) {}
  Index rows() const override { return inner_->rows(); }
  Index cols() const override { return inner_->cols(); }
  Matrix range(Index begin, Index end) const override { return transform_.to_model(inner_->range(begin, end)); }
  Matrix pick(const std::vector<Index>& positions) const override { return transform_.to_model(inner_->pick(positions)); }

 private:
  TrainingRowsPtr inner_;
  DataTransform transform_;
};

// Applies z = A x + c to every split and records the map, so that saved models carry it and are
// used in data units (kef/data_transform.hpp); the splits are mapped by the very function that maps
// a saved model's input, so a raw row reaches the model bitwise as the pipeline's did.
void record_transform(Dataset& out, const char* kind, const Matrix& A, const Vector& c) {
  const bool named = static_cast<Index>(out.columns.size()) == A.rows();
  out.transform = make_data_transform(kind, A, c, named ? out.columns : std::vector<std::string>{});
  set_column_roles(out.transform, out.roles);
  for (Matrix* m : {&out.train, &out.validation, &out.test})
    if (m->rows() > 0) *m = out.transform.to_model(*m);
  if (out.train_rows) out.train_rows = std::make_shared<MappedRows>(out.train_rows, out.transform);
}

std::string column_name(const std::vector<std::string>& columns, Index d) {
  return static_cast<std::size_t>(d) < columns.size() ? columns[static_cast<std::size_t>(d)]
                                                      : positional_column_name(d);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Steps that change which variables there are, or add noise, leave no exact density to compare with.
void refuse_with_truth(const Config& data, const SourceData& raw, const char* key) {
  if (raw.truth)
    data.fail(key,
              "this source has an exact density of its own columns, which the step would make wrong "
              "(it is meant for data files)");
}

Matrix without_columns(const Matrix& X, const std::vector<Index>& keep) {
  Matrix out(X.rows(), static_cast<Index>(keep.size()));
  for (std::size_t k = 0; k < keep.size(); ++k) out.col(static_cast<Index>(k)) = X.col(keep[k]);
  return out;
}

// `exclude = [...]`: the named columns are removed from every split before anything else happens.
// `kept`, when given, receives the indices of the columns left (all of them when nothing is excluded).
void exclude_columns(const Config& data, SourceData& raw, PreprocessingReport& report,
                     std::vector<Index>* kept = nullptr) {
  if (kept) {
    kept->clear();
    for (std::size_t k = 0; k < raw.columns.size(); ++k) kept->push_back(static_cast<Index>(k));
  }
  if (!data.has("exclude")) return;
  const std::vector<std::string> names = data.strings("exclude");
  if (names.empty()) return;
  refuse_with_truth(data, raw, "exclude");
  std::vector<bool> drop(raw.columns.size(), false);
  for (const auto& name : names) {
    auto it = std::find(raw.columns.begin(), raw.columns.end(), name);
    if (it == raw.columns.end())
      data.fail("exclude",
                "no column \"" + name + "\" in the data (its columns: " + joined(raw.columns) + ")");
    const auto k = static_cast<std::size_t>(it - raw.columns.begin());
    if (drop[k]) data.fail("exclude", "column \"" + name + "\" is listed twice");
    drop[k] = true;
  }
  std::vector<Index> keep;
  std::vector<std::string> kept_names;
  for (std::size_t k = 0; k < drop.size(); ++k)
    if (!drop[k]) {
      keep.push_back(static_cast<Index>(k));
      kept_names.push_back(raw.columns[k]);
    }
  if (keep.empty()) data.fail("exclude", "excludes every column of the data");
  auto apply = [&](Matrix& X) {
    if (X.cols() == static_cast<Index>(drop.size())) X = without_columns(X, keep);
  };
  apply(raw.samples);
  for (auto* m : {&raw.train, &raw.validation, &raw.test})
    if (*m) apply(**m);
  raw.columns = kept_names;
  report.excluded = names;
  if (kept) *kept = keep;
}

// `targets = [...]`: the target columns y by name (positional names x0, x1, ... for data without a
// header, as `columns` and `exclude` name them), resolved after `exclude` against the columns left.
ColumnRoles resolve_targets(const Config& data, const SourceData& raw, const PreprocessingReport& report,
                            Index dim) {
  if (!data.has("targets")) return {};
  const std::vector<std::string> names = data.strings("targets");
  std::vector<std::string> columns;
  for (Index d = 0; d < dim; ++d) columns.push_back(column_name(raw.columns, d));
  std::vector<Index> targets;
  for (const auto& name : names) {
    if (std::find(report.excluded.begin(), report.excluded.end(), name) != report.excluded.end())
      data.fail("targets", "column \"" + name + "\" is removed by `exclude`; a target must stay in the data");
    auto it = std::find(columns.begin(), columns.end(), name);
    if (it == columns.end())
      data.fail("targets", "no column \"" + name + "\" in the data (its columns: " + joined(columns) + ")");
    const auto k = static_cast<Index>(it - columns.begin());
    if (std::find(targets.begin(), targets.end(), k) != targets.end())
      data.fail("targets", "column \"" + name + "\" is listed twice");
    targets.push_back(k);
  }
  if (names.empty()) data.fail("targets", "lists no column (remove the key for unconditional data)");
  if (static_cast<Index>(targets.size()) == dim)
    data.fail("targets", "names every column of the data (" + joined(columns) +
                             "); a conditional density p(y | x) needs at least one input column x");
  return make_column_roles(std::move(targets), dim);
}

// Row counts of the test and validation splits. The "counts" rule takes `test` and `validation` as
// integers (rows) or fractions of all n rows, rounded to the nearest row (halves away from zero:
// 0.1 of 1599 rows is 160). The "dkef" rule is DKEF's code: test = floor(n/10), then validation =
// min(floor(rest/10), 1000) of the rest (159 and 144 of 1599 rows).
std::pair<Index, Index> split_sizes(const Config& split, Index n, PreprocessingReport& report) {
  report.split_rule = split.string("rule");
  if (report.split_rule == "dkef") {
    for (const char* k : {"test", "validation"})
      if (split.has(k)) split.fail(k, "rule = \"dkef\" fixes the test and validation sizes; remove this key");
    const Index n_test = n / 10;
    const Index n_val = std::min<Index>((n - n_test) / 10, 1000);
    return {n_test, n_val};
  }
  const Index n_test = split.has("test") ? split_count(split, "test", n)
                                         : static_cast<Index>(std::llround(0.1 * static_cast<double>(n)));
  return {n_test, split_count(split, "validation", n)};
}

// Median of the gaps between the sorted unique values of x (NaN when there are fewer than 2 values);
// an even number of gaps averages the two middle ones.
double median_unique_gap(const Vector& x) {
  std::vector<double> v(x.data(), x.data() + x.size());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> gaps(v.size() - 1);
  for (std::size_t i = 0; i + 1 < v.size(); ++i) gaps[i] = v[i + 1] - v[i];
  std::sort(gaps.begin(), gaps.end());
  const std::size_t m = gaps.size();
  return m % 2 == 1 ? gaps[m / 2] : 0.5 * (gaps[m / 2 - 1] + gaps[m / 2]);
}

// `dequantize = true`: every value of column d gets U(−1, 1)·g_d added, g_d the median gap between the
// column's sorted unique training values (DKEF's protocol for the wine data sets, where it takes g_d
// from all rows). Each split draws from its own stream, column by column, so the noise depends on the
// seed only.
void dequantize(const Config& data, Dataset& out, const RandomStream& rng) {
  const Index D = out.train.cols();
  Vector gap(D);
  for (Index d = 0; d < D; ++d) {
    gap[d] = median_unique_gap(out.train.col(d));
    if (!std::isfinite(gap[d]))
      throw DataError(data.where("dequantize") + ": column " + column_name(out.columns, d) +
                      " has a single value in the training split, so it has no gap to dequantise with");
    out.preprocessing.dequantized.push_back({column_name(out.columns, d), gap[d]});
  }
  const std::pair<const char*, Matrix*> splits[] = {
      {"train", &out.train}, {"validation", &out.validation}, {"test", &out.test}};
  for (const auto& [name, X] : splits) {
    RandomStream r = rng.derive(std::string("dequantize.") + name);
    for (Index d = 0; d < D; ++d)
      for (Index n = 0; n < X->rows(); ++n) (*X)(n, d) += (2.0 * r.uniform() - 1.0) * gap[d];
  }
}

// Correlation matrix of the columns of X (population moments); a constant column correlates with
// nothing (its row and column are 0, the diagonal 1).
Matrix column_correlations(const Matrix& X) {
  const Matrix centred = X.rowwise() - X.colwise().mean();
  const Matrix cov = centred.transpose() * centred / static_cast<double>(X.rows());
  const Vector sd = cov.diagonal().cwiseMax(0.0).cwiseSqrt();
  Matrix C = Matrix::Zero(X.cols(), X.cols());
  for (Index i = 0; i < X.cols(); ++i)
    for (Index j = 0; j < X.cols(); ++j)
      C(i, j) = i == j ? 1.0 : (sd[i] > 0 && sd[j] > 0 ? cov(i, j) / (sd[i] * sd[j]) : 0.0);
  return C;
}

// `drop_correlated = c`: while some pair of columns has |correlation| > c on the training split, the
// first column (in column order) that has such a partner is dropped from every split, and the
// correlations are recomputed (DKEF's clean_data, which it runs on all rows of Parkinsons).
void drop_correlated(const Config& data, Dataset& out) {
  const double threshold = data.number("drop_correlated");
  if (!(threshold > 0.0 && threshold < 1.0))
    data.fail("drop_correlated",
              "expected a correlation threshold in (0, 1), got " + std::to_string(threshold));
  if (out.train.rows() < 2) data.fail("drop_correlated", "needs at least 2 training rows");
  for (;;) {
    const Matrix C = column_correlations(out.train);
    Index drop = -1, partner = -1;
    for (Index i = 0; i < C.rows() && drop < 0; ++i)
      for (Index j = 0; j < C.cols(); ++j)
        if (j != i && std::abs(C(i, j)) > threshold) {
          drop = i;
          partner = j;
          break;
        }
    if (drop < 0) return;
    // The rule drops the first column of the pair; a target is never dropped (p(y | x) is about it),
    // and a target correlated with an input is a property of the data worth keeping.
    if (out.roles.is_target(drop))
      data.fail("drop_correlated",
                "would drop target column " + column_name(out.columns, drop) + " (correlation " +
                    std::to_string(C(drop, partner)) + " with column " + column_name(out.columns, partner) +
                    " on the training split); a target listed in `targets` cannot be dropped: raise the "
                    "threshold, or `exclude` the correlated input");
    out.roles = out.roles.without_column(drop);
    out.preprocessing.dropped.push_back(
        {column_name(out.columns, drop), column_name(out.columns, partner), C(drop, partner)});
    std::vector<Index> keep;
    for (Index k = 0; k < out.train.cols(); ++k)
      if (k != drop) keep.push_back(k);
    for (Matrix* X : {&out.train, &out.validation, &out.test}) *X = without_columns(*X, keep);
    if (static_cast<std::size_t>(drop) < out.columns.size())
      out.columns.erase(out.columns.begin() + static_cast<std::ptrdiff_t>(drop));
  }
}

// The host's own [data] keys besides the split (exclude, dequantize, ...), checked for kind and range.
void check_preprocessing_keys(const Config& data) {
  for (const char* k : {"shuffle", "standardize", "whiten", "dequantize"})
    if (data.has(k)) (void)data.boolean(k);  // a wrong type fails here, citing the key
  if (data.has("exclude")) (void)data.strings("exclude");
  if (data.has("targets")) (void)data.strings("targets");
  if (data.has("drop_correlated")) (void)data.number("drop_correlated");
  const bool scaled = (data.has("standardize") && data.boolean("standardize")) ||
                      (data.has("whiten") && data.boolean("whiten"));
  if (data.has("statistics_rows") && !scaled)
    data.fail("statistics_rows", "applies to `standardize` and `whiten`, and neither is set");
  if (data.has("statistics_rows") && data.integer("statistics_rows") < 2)
    data.fail("statistics_rows",
              "expected at least 2 rows, got " + std::to_string(data.integer("statistics_rows")));
}

// Training rows the standardize/whiten statistics use: the first `statistics_rows` of the (shuffled)
// training split, or all of them.
Index statistics_row_count(const Config& data, Index train_rows) {
  if (!data.has("statistics_rows")) return train_rows;
  return std::min<Index>(train_rows, data.integer("statistics_rows"));
}

// The symmetric whitening map C^{-1/2} of a covariance (of all columns, or of one role's block).
// Singularity is judged on the correlation matrix R = S^{-1} C S^{-1} (S = diag(sd)), so that columns
// of very different units (Parkinsons: a jitter in 1e-5 s beside a test time in days, variances 1e-9
// and 3e3) are not mistaken for collinear ones. When C's own eigenvalues spread over more than 1e8,
// the symmetric eigensolver's absolute error (eps·|C|) would swamp the small ones, so the map is built
// from R instead: A0 = Λ^{-1/2} Qᵀ S^{-1} (R = QΛQᵀ) whitens, and C^{-1/2} = (A0ᵀA0)^{1/2} is its
// polar factor V Σ Vᵀ (A0 = UΣVᵀ), which a Jacobi SVD computes to relative accuracy for a
// column-scaled A0.
Matrix whitening_map(const Matrix& cov, const Config& data, const std::string& block) {
  const auto singular = [&] {
    return DataError(data.where("whiten") + ": the training covariance" +
                     (block.empty() ? std::string() : " of the " + block) +
                     " is singular; drop collinear columns");
  };
  const Vector sd = cov.diagonal().cwiseMax(0.0).cwiseSqrt();
  if (!(sd.minCoeff() > 0)) throw singular();
  const Vector inv_sd = sd.cwiseInverse();
  const Matrix R = inv_sd.asDiagonal() * cov * inv_sd.asDiagonal();
  Eigen::SelfAdjointEigenSolver<Matrix> er(R);
  if (er.eigenvalues().minCoeff() <= 1e-12 * std::max(1.0, er.eigenvalues().maxCoeff())) throw singular();
  Eigen::SelfAdjointEigenSolver<Matrix> es(cov);
  if (es.eigenvalues().minCoeff() > 1e-8 * es.eigenvalues().maxCoeff())
    return es.eigenvectors() * es.eigenvalues().cwiseInverse().cwiseSqrt().asDiagonal() *
           es.eigenvectors().transpose();
  const Matrix A0 = er.eigenvalues().cwiseInverse().cwiseSqrt().asDiagonal() * er.eigenvectors().transpose() *
                    inv_sd.asDiagonal();
  Eigen::JacobiSVD<Matrix, Eigen::ColPivHouseholderQRPreconditioner> svd(A0, Eigen::ComputeFullV);
  return svd.matrixV() * svd.singularValues().asDiagonal() * svd.matrixV().transpose();
}

// A caller's matrix as a source's rows: the checks a data file gets (finite values, one name per
// column, at least one row), with positional names x0, x1, ... when it has none.
SourceData checked_in_memory_data(const InMemoryData& in) {
  const Eigen::Map<const Matrix> X = in.matrix();
  const Index N = X.rows(), D = X.cols();
  if (N == 0 || D == 0)
    throw DataError("in-memory data: the matrix is " + std::to_string(N) + " x " + std::to_string(D) +
                    " (expected at least one row and one column)");
  SourceData raw;
  if (in.columns.empty()) {
    for (Index d = 0; d < D; ++d) raw.columns.push_back(positional_column_name(d));
  } else {
    if (static_cast<Index>(in.columns.size()) != D)
      throw DataError("in-memory data: " + std::to_string(in.columns.size()) + " column names (" +
                      joined(in.columns) + ") for a matrix of " + std::to_string(D) + " columns");
    for (std::size_t k = 0; k < in.columns.size(); ++k) {
      if (in.columns[k].empty())
        throw DataError("in-memory data: column " + std::to_string(k) + " has an empty name");
      if (std::find(in.columns.begin(), in.columns.begin() + static_cast<std::ptrdiff_t>(k), in.columns[k]) !=
          in.columns.begin() + static_cast<std::ptrdiff_t>(k))
        throw DataError("in-memory data: column name \"" + in.columns[k] + "\" appears twice");
    }
    raw.columns = in.columns;
  }
  for (Index d = 0; d < D; ++d)
    for (Index n = 0; n < N; ++n)
      if (!std::isfinite(X(n, d))) {
        std::ostringstream got;
        got << X(n, d);
        throw DataError("in-memory data: row " + std::to_string(n) + " (0-based), column " +
                        raw.columns[static_cast<std::size_t>(d)] +
                        ": non-finite value (expected a finite number, got " + got.str() + ")");
      }
  raw.samples = X;
  raw.truth = in.truth;  // its dimension is checked with the splits
  return raw;
}

}  // namespace

namespace {

void register_core(PluginRegistrar& r) {
  ComponentInfo info;
  info.type = "file";
  info.summary =
      "Samples from a CSV (header row, unless header = false) or NPY file, or separate train/validation/test "
      "files";
  info.keys = {
      KeySpec::string("path", "data file (.csv or .npy), split by `split`").optional(),
      KeySpec::string("train", "training file (instead of `path`)").optional(),
      KeySpec::string("validation", "validation file (with `train`)").optional(),
      KeySpec::string("test", "test file (with `train`)").optional(),
      KeySpec::strings("columns",
                       "columns to use, by header name (NPY, or CSV with header = false: x0, x1, ...); "
                       "default all"),
      KeySpec::boolean("header",
                       "a CSV file's first line names its columns; false: every line is data and the "
                       "columns are named x0, x1, ... (a first line of numbers only is refused unless "
                       "this is false)",
                       true),
  };
  r.add_data_source(info,
                    [](const Config& cfg, const BuildContext&) { return make_file_source(cfg); });
  ComponentInfo model;
  model.type = "lite";
  model.summary =
      "Saved inducing-point model (lite, dkef): kernel, base measure, inducing_points.npy, alpha.npy";
  r.add_model_loader(model, &LiteModel::load);
}

// Installed when libkef loads, so that every Registry can add them (Registry::add_core_components)
// without an upward dependency of the host layer on this one.
const bool core_installed = (detail::install_core_components("kef core", &register_core), true);

}  // namespace

void register_core_components(Registry& registry) {
  (void)core_installed;
  registry.add_core_components();
}

const KeyList& data_host_key_specs() {
  // No defaults here: each step reads has(), so a resolved config lists only what was asked for.
  static const KeyList keys = {
      KeySpec::table("split", "test/validation rows and the split rule"),
      KeySpec::boolean("shuffle", "shuffle the rows before splitting (default true)", true).optional(),
      KeySpec::boolean("standardize", "map each column to mean 0, variance 1 (training statistics)", false)
          .optional(),
      KeySpec::boolean("whiten",
                       "map the columns to identity covariance (training statistics); with "
                       "`targets`, the inputs and the targets each alone",
                       false)
          .optional(),
      KeySpec::strings("exclude", "columns removed before anything else"),
      KeySpec::boolean("dequantize", "add U(-1, 1) times each column's median gap", false).optional(),
      KeySpec::number("drop_correlated", "drop the first column of every pair correlated above this")
          .optional(),
      KeySpec::integer("statistics_rows", "training rows the standardize/whiten statistics use").optional(),
      KeySpec::boolean("read_by_rows",
                       "in a distributed run, leave the training split in the file when every consumer "
                       "can read it by rows (false: every process holds it; faster for DKEF, more memory)",
                       true)
          .optional(),
      KeySpec::strings(
          "targets",
          "target columns y of a conditional density p(y | x), by name (x0, x1, ... for data "
          "without a header); the other columns are the inputs x. Default: none (unconditional)"),
  };
  return keys;
}

std::vector<std::string> data_host_keys() {
  std::vector<std::string> names;
  for (const KeySpec& k : data_host_key_specs()) names.push_back(k.name);
  return names;
}

namespace {

// Everything after loading, the same for every source (a file, a synthetic source, a caller's matrix):
// `rng` is the run's "data" stream, so shuffles and noise do not depend on where the rows came from.
// The train, validation and test splits of a source that gave its rows in one piece (in memory or
// in a file): sized by [data.split], shuffled by the data stream unless `shuffle = false`, the last
// rows the test set and the ones before it validation (DKEF's protocol).
void split_rows(const Config& data, const SourceData& raw, const RandomStream& rng, const FileRows* file,
                const std::vector<Index>& kept, PreprocessingReport& report, Dataset& out) {
  const Index n = file ? file->rows : raw.samples.rows();
  if (n == 0) throw DataError(data.where("type") + ": the source produced no rows");
  Config split = data.table("split");
  split.validate({KeySpec::number("test", "test rows: a fraction in [0, 1) or an integer count", 0.1),
                  KeySpec::number("validation", "validation rows: fraction or count", 0.0),
                  KeySpec::string("rule",
                                  "counts: `test` and `validation` as given; dkef: test = floor(10% of "
                                  "the rows), validation = min(floor(10% of the rest), 1000)",
                                  std::string("counts"))
                      .one_of({"counts", "dkef"})});
  const auto [n_test, n_val] = split_sizes(split, n, report);
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
  if (file && file->by_rows) {
    // Each process checks its own consecutive share of the file's rows (the lowest failing process's
    // error is the first bad row in file order, as one process would report it), reads the validation
    // and test rows whole, and leaves the training rows in the file for the consumers to read.
    const Communicator& comm = *file->by_rows;
    const Index first = n * comm.rank() / comm.size(), last = n * (comm.rank() + 1) / comm.size();
    if (last > first) visit_table_rows(file->path, file->columns, RowRange{first, last - first}, [](Index, const double*) {});
    out.validation = read_file_rows(*file, kept, {idx.begin() + n_train, idx.begin() + n_train + n_val});
    out.test = read_file_rows(*file, kept, {idx.begin() + n_train + n_val, idx.end()});
    out.train.resize(0, static_cast<Index>(kept.size()));
    idx.resize(static_cast<std::size_t>(n_train));  // the training positions' file rows, now the split's map
    out.train_rows = make_training_rows(*file, kept, std::move(idx));
  } else if (file) {
    const auto D = static_cast<Index>(kept.size());
    out.train.resize(n_train, D);
    out.validation.resize(n_val, D);
    out.test.resize(n_test, D);
    read_splits(*file, idx, kept, {&out.train, &out.validation, &out.test});
  } else {
    out.train = take_rows(raw.samples, idx, 0, n_train);
    out.validation = take_rows(raw.samples, idx, n_train, n_val);
    out.test = take_rows(raw.samples, idx, n_train + n_val, n_test);
  }
}

// `standardize` (each column to mean 0, sd 1) or `whiten` (to identity covariance; block-diagonal in
// the inputs and targets of conditional data) by the training split's statistics: the affine map
// is recorded in the dataset's transform and applied to the truth, when known.
void standardize_or_whiten(const Config& data, Dataset& out, bool standardize) {
  // The statistics are read in blocks of the training split's first rows (kef/column_summary.hpp),
  // held or left in the data file alike.
  const TrainingRowsPtr train = out.training();
  const Index D = train->cols();
  if (train->rows() < 2)
    data.fail(standardize ? "standardize" : "whiten", "needs at least 2 training rows");
  const Index n_stats = out.preprocessing.statistics_rows = statistics_row_count(data, train->rows());
  const ColumnSummary stats = summarize_columns(*train, 4096, n_stats);
  const Vector mean = stats.mean;
  Matrix A;
  if (standardize) {
    const Vector sd = stats.sd(0);  // the population sd: divisor n
    check_finite_statistics(*train, n_stats, mean, sd, out.columns, data.where("standardize"));
    for (Index d = 0; d < D; ++d)
      if (!(sd[d] > 0))
        throw DataError(data.where("standardize") + ": column " +
                        (static_cast<std::size_t>(d) < out.columns.size()
                             ? out.columns[static_cast<std::size_t>(d)]
                             : std::to_string(d)) +
                        " is constant in the training split and cannot be standardised");
    A = sd.cwiseInverse().asDiagonal();
  } else {
    const Matrix cov = stats.scatter / static_cast<double>(n_stats);
    check_finite_statistics(*train, n_stats, mean, cov.diagonal(), out.columns, data.where("whiten"));
    if (!out.roles.conditional()) {
      A = whitening_map(cov, data, "");
    } else {
      // Block-diagonal: x and y are whitened each alone (kef/data_transform.hpp says why).
      A = Matrix::Zero(D, D);
      for (const auto& [block, label] :
           {std::pair{out.roles.inputs(D), "inputs"}, std::pair{out.roles.targets, "targets"}}) {
        const Matrix W = whitening_map(block_of(cov, block), data, label);
        for (std::size_t i = 0; i < block.size(); ++i)
          for (std::size_t j = 0; j < block.size(); ++j)
            A(block[i], block[j]) = W(static_cast<Index>(i), static_cast<Index>(j));
      }
    }
  }
  Vector c = -A * mean;
  record_transform(out, standardize ? "standardize" : "whiten", A, c);
  if (out.truth) out.truth = make_affine_model(out.truth, A, c);
}

Dataset prepare_loaded(Config data, SourceData raw, const RandomStream& rng, const FileRows* file = nullptr) {
  data.fill_defaults();
  PreprocessingReport report;
  std::vector<Index> kept;
  exclude_columns(data, raw, report, &kept);

  Dataset out;
  out.roles = resolve_targets(data, raw, report,
                              raw.train ? raw.train->cols()
                                        : (file ? static_cast<Index>(kept.size()) : raw.samples.cols()));
  for (Index t : out.roles.targets) report.targets.push_back(column_name(raw.columns, t));
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
    split_rows(data, raw, rng, file, kept, report, out);
  }
  check_dims(out);
  out.preprocessing = report;
  if (data.has("dequantize") && data.boolean("dequantize")) {
    refuse_with_truth(data, raw, "dequantize");
    dequantize(data, out, rng);
  }
  if (data.has("drop_correlated")) {
    refuse_with_truth(data, raw, "drop_correlated");
    drop_correlated(data, out);
  }

  const bool standardize = data.has("standardize") && data.boolean("standardize");
  const bool whiten = data.has("whiten") && data.boolean("whiten");
  if (standardize && whiten) data.fail("whiten", "choose one of `standardize` and `whiten`");
  if (standardize || whiten) {
    standardize_or_whiten(data, out, standardize);
  } else if (static_cast<Index>(out.columns.size()) == out.train.cols()) {
    out.transform.columns = out.columns;
  }
  if (!standardize && !whiten) set_column_roles(out.transform, out.roles);
  return out;
}

}  // namespace

bool data_readable_by_rows(const Config& data, std::string& why_not) {
  if (data.has("read_by_rows") && !data.boolean("read_by_rows")) {
    why_not = "[data] read_by_rows = false";
    return false;
  }
  if (!reads_by_split(data)) {
    why_not = "the data are not one file split by `split`";
    return false;
  }
  // standardize and whiten read their statistics in blocks and map each row as it is read.
  for (const char* k : {"dequantize"})
    if (data.has(k) && data.boolean(k)) {
      why_not = std::string("`") + k + "` needs the whole training split";
      return false;
    }
  if (data.has("drop_correlated")) {
    why_not = "`drop_correlated` needs the whole training split";
    return false;
  }
  return true;
}

Dataset prepare_dataset(Registry& registry, const Config& data_table, std::uint64_t seed,
                        const Communicator* read_by_rows) {
  if (read_by_rows) {
    std::string why_not;
    if (!data_readable_by_rows(data_table, why_not)) throw Error("prepare_dataset: cannot read by rows: " + why_not);
  }
  Config data = data_table;
  check_preprocessing_keys(data);
  RandomStream rng(seed, "data");
  BuildContext ctx{-1, &registry, &rng};
  DataSourcePtr source = registry.make_data_source(data, ctx, data_host_keys());
  if (reads_by_split(data)) {
    SourceData header;
    FileRows file = file_rows_of(data, header);
    file.by_rows = read_by_rows;
    return prepare_loaded(data, std::move(header), rng, &file);
  }
  RandomStream load_rng = rng.derive("source");
  return prepare_loaded(data, source->load(load_rng), rng);
}

Dataset prepare_dataset(Registry& registry, const Config& data_table, const InMemoryData& in,
                        std::uint64_t seed) {
  Config data = data_table;
  check_preprocessing_keys(data);
  RandomStream rng(seed, "data");
  if (data.type()) {
    // The source is replaced by the caller's matrix; building it (without loading) still checks its
    // keys, so a pipeline file runs unchanged on in-memory data and a typo is still an error.
    BuildContext ctx{-1, &registry, &rng};
    (void)registry.make_data_source(data, ctx, data_host_keys());
  } else {
    data.validate(data_host_key_specs());
  }
  SourceData raw = checked_in_memory_data(in);
  raw.provenance = "in-memory matrix (" + std::to_string(in.matrix().rows()) + " x " +
                   std::to_string(in.matrix().cols()) + ")" +
                   (data.type() ? ", replacing [data] type = \"" + *data.type() + "\"" : std::string());
  return prepare_loaded(data, std::move(raw), rng);
}

}  // namespace kef
