#include "kef/nystrom_model.hpp"

#include <algorithm>
#include <sstream>

#include "kef/error.hpp"

namespace kef {

namespace {
// Evaluation rows per chunk: the features are (rows·D) x (orders·m·D), kept to about 2 MB.
Index eval_chunk(const DerivativeBasis& basis) {
  return derivative_chunk_rows(basis.points.cols(), basis.atom_count());
}
}  // namespace

NystromModel::NystromModel(KernelPtr kernel, BaseMeasurePtr base, DerivativeBasis basis, Vector coefficients,
                           std::string method)
    : kernel_(std::move(kernel)),
      base_(std::move(base)),
      basis_(std::move(basis)),
      coefficients_(std::move(coefficients)),
      method_(std::move(method)) {
  if (!basis_.atoms.empty()) throw Error("nystrom model: the basis must keep every atom");
  if (coefficients_.size() != basis_.atom_count())
    throw ModelFileError("nystrom model: " + std::to_string(coefficients_.size()) + " coefficients for " +
                         std::to_string(basis_.atom_count()) + " basis functions");
  check_derivative_basis(*kernel_, basis_, "nystrom model");
}

void NystromModel::check_input(const Matrix& X) const {
  if (X.cols() != dim())
    throw DataError("nystrom model: data has " + std::to_string(X.cols()) + " columns, the model dimension " +
                    std::to_string(dim()));
}

Vector NystromModel::log_unnormalized(const Matrix& X) const {
  return log_ratio_to_base(X) + base_->log_density(X);
}

Vector NystromModel::log_ratio_to_base(const Matrix& X) const {
  check_input(X);
  Vector out(X.rows());
  const Index chunk = eval_chunk(basis_);
  for (Index r = 0; r < X.rows(); r += chunk) {
    const Index len = std::min(chunk, X.rows() - r);
    out.segment(r, len) = derivative_basis_values(*kernel_, basis_, X.middleRows(r, len)) * coefficients_;
  }
  return out;
}

void NystromModel::evaluate_derivatives(const Matrix& X, Matrix& score, Matrix* laplacian) const {
  check_input(X);
  const Index N = X.rows(), D = X.cols();
  score.resize(N, D);
  if (laplacian) laplacian->resize(N, D);
  const Index chunk = eval_chunk(basis_);
  Matrix first, second, q1, q2;
  for (Index r = 0; r < N; r += chunk) {
    const Index len = std::min(chunk, N - r);
    const Matrix Xc = X.middleRows(r, len);
    derivative_basis_features(*kernel_, basis_, Xc, first, laplacian ? &second : nullptr);
    base_->derivatives(Xc, q1, q2);
    const Vector g = first * coefficients_;  // (i, n) order = column-major len x D
    score.middleRows(r, len) = Eigen::Map<const Matrix>(g.data(), len, D) + q1;
    if (laplacian) {
      const Vector h = second * coefficients_;
      laplacian->middleRows(r, len) = Eigen::Map<const Matrix>(h.data(), len, D) + q2;
    }
  }
}

Matrix NystromModel::score(const Matrix& X) const {
  Matrix s;
  evaluate_derivatives(X, s, nullptr);
  return s;
}

void NystromModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  evaluate_derivatives(X, score, &laplacian);
}

std::string NystromModel::describe() const {
  std::ostringstream os;
  os << method_ << " kernel exponential family: derivative basis of order";
  for (int o : basis_.orders) os << ' ' << o;
  os << " at " << basis_.points.rows() << " points (" << basis_.atom_count() << " functions), kernel "
     << kernel_->type_name() << ", base measure " << base_->type_name();
  return os.str();
}

void NystromModel::save(ModelWriter& writer) const {
  writer.manifest().set("dim", static_cast<std::int64_t>(dim()));
  writer.manifest().set("method", method_);
  writer.manifest().set("points", static_cast<std::int64_t>(basis_.points.rows()));
  writer.manifest().set("orders", std::vector<double>(basis_.orders.begin(), basis_.orders.end()));
  for (const auto& [k, v] : fit_info_) writer.manifest().set(k, v);
  for (const auto& [k, v] : fit_counts_) writer.manifest().set(k, v);
  writer.write_component("kernel", *kernel_);
  writer.write_component("base_measure", *base_);
  writer.write_array("points", basis_.points);
  writer.write_array("coefficients", coefficients_);
}

ModelPtr NystromModel::load(const ModelReader& reader, Registry& registry) {
  KernelPtr kernel = reader.read_kernel("kernel", registry);
  BaseMeasurePtr base = reader.read_base_measure("base_measure", registry);
  const Config& m = reader.manifest();
  if (!m.has("orders")) reader.fail("model.toml has no `orders`");
  DerivativeBasis basis;
  for (double o : m.numbers("orders")) {
    if (o != 1.0 && o != 2.0) reader.fail("model.toml `orders` must be [1] or [1, 2]");
    basis.orders.push_back(static_cast<int>(o));
  }
  if (basis.orders != std::vector<int>{1} && basis.orders != std::vector<int>{1, 2})
    reader.fail("model.toml `orders` must be [1] or [1, 2]");
  const std::string method = m.has("method") ? m.string("method") : "nystrom";
  basis.points = reader.read_array("points");
  const Matrix c = reader.read_array("coefficients");
  if (c.cols() != 1) reader.fail("coefficients.npy must be a vector");
  if (c.rows() != basis.atom_count())
    reader.fail("coefficients.npy has " + std::to_string(c.rows()) + " values for " +
                std::to_string(basis.atom_count()) + " basis functions (orders x points x dimension)");
  if (!basis.points.allFinite() || !c.allFinite())
    reader.fail("non-finite values in points.npy or coefficients.npy");
  base->check_dimension(basis.points.cols());
  if (!kernel->capabilities().cross_derivatives ||
      (basis.orders.size() == 2 && !kernel->capabilities().cross_second_derivatives))
    reader.fail("kernel " + kernel->type_name() + " lacks the mixed derivatives this model's basis needs");
  return std::make_shared<NystromModel>(kernel, base, std::move(basis), c.col(0), method);
}

}  // namespace kef
