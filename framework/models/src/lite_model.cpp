#include "kef/lite_model.hpp"

#include <sstream>

#include "kef/error.hpp"

namespace kef {

namespace {
// Evaluation is chunked so that the (N·D) x M stacks stay small for any N.
constexpr Index kChunk = 1024;
}  // namespace

LiteModel::LiteModel(KernelPtr kernel, BaseMeasurePtr base, Matrix inducing, Vector alpha)
    : kernel_(std::move(kernel)),
      base_(std::move(base)),
      inducing_(std::move(inducing)),
      alpha_(std::move(alpha)) {
  if (alpha_.size() != inducing_.rows())
    throw ModelFileError("lite model: " + std::to_string(alpha_.size()) + " coefficients for " +
                         std::to_string(inducing_.rows()) + " inducing points");
}

void LiteModel::check_input(const Matrix& X) const {
  if (X.cols() != dim())
    throw DataError("lite model: data has " + std::to_string(X.cols()) + " columns, the model dimension " +
                    std::to_string(dim()));
}

Vector LiteModel::log_unnormalized(const Matrix& X) const {
  return log_ratio_to_base(X) + base_->log_density(X);
}

// In chunks, so that a kernel's default gram_times (which forms K) holds at most kChunk x M of it.
Vector LiteModel::log_ratio_to_base(const Matrix& X) const {
  check_input(X);
  Vector out(X.rows());
  for (Index r = 0; r < X.rows(); r += kChunk) {
    const Index len = std::min(kChunk, X.rows() - r);
    out.segment(r, len) = kernel_->gram_times(X.middleRows(r, len), inducing_, alpha_);
  }
  return out;
}

// One chunked pass computes the score, and the Hessian diagonal when `laplacian` is given.
void LiteModel::evaluate_derivatives(const Matrix& X, Matrix& score, Matrix* laplacian) const {
  check_input(X);
  const Index N = X.rows(), D = X.cols();
  const int order = laplacian ? 2 : 1;
  score.resize(N, D);
  if (laplacian) laplacian->resize(N, D);
  KernelStacks st;
  Matrix q1, q2;
  for (Index r = 0; r < N; r += kChunk) {
    const Index len = std::min(kChunk, N - r);
    const Matrix Xc = X.middleRows(r, len);
    kernel_->derivatives(Xc, inducing_, order, st);
    base_->derivatives(Xc, q1, q2);
    Vector g = st.d1 * alpha_;  // (d, n) order = column-major len x D
    score.middleRows(r, len) = Eigen::Map<const Matrix>(g.data(), len, D) + q1;
    if (laplacian) {
      Vector h = st.d2 * alpha_;
      laplacian->middleRows(r, len) = Eigen::Map<const Matrix>(h.data(), len, D) + q2;
    }
  }
}

Matrix LiteModel::score(const Matrix& X) const {
  Matrix s;
  evaluate_derivatives(X, s, nullptr);
  return s;
}

void LiteModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  evaluate_derivatives(X, score, &laplacian);
}

std::optional<double> LiteModel::log_ratio_lower_bound() const {
  if (!kernel_->capabilities().bounded_unit) return std::nullopt;
  return alpha_.cwiseMin(0.0).sum();
}

std::string LiteModel::describe() const {
  std::ostringstream os;
  os << "lite kernel exponential family: " << inducing_.rows() << " inducing points, kernel "
     << kernel_->type_name() << ", base measure " << base_->type_name();
  return os.str();
}

void LiteModel::save(ModelWriter& writer) const {
  writer.manifest().set("dim", static_cast<std::int64_t>(dim()));
  writer.manifest().set("inducing_points", static_cast<std::int64_t>(inducing_.rows()));
  for (const auto& [k, v] : fit_info_) writer.manifest().set(k, v);
  for (const auto& [k, v] : fit_counts_) writer.manifest().set(k, v);
  writer.write_component("kernel", *kernel_);
  writer.write_component("base_measure", *base_);
  writer.write_array("inducing_points", inducing_);
  writer.write_array("alpha", alpha_);
}

ModelPtr LiteModel::load(const ModelReader& reader, Registry& registry) {
  KernelPtr kernel = reader.read_kernel("kernel", registry);
  BaseMeasurePtr base = reader.read_base_measure("base_measure", registry);
  Matrix Z = reader.read_array("inducing_points");
  Matrix a = reader.read_array("alpha");
  if (a.cols() != 1) reader.fail("alpha.npy must be a vector");
  if (a.rows() != Z.rows())
    reader.fail("alpha.npy has " + std::to_string(a.rows()) + " values for " + std::to_string(Z.rows()) +
                " inducing points");
  if (!Z.allFinite() || !a.allFinite()) reader.fail("non-finite values in inducing_points.npy or alpha.npy");
  base->check_dimension(Z.cols());
  return std::make_shared<LiteModel>(kernel, base, Z, a.col(0));
}

}  // namespace kef
