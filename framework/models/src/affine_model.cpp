#include "affine_model.hpp"

#include <cmath>

#include "kef/error.hpp"

namespace kef {

namespace {

class AffineModel final : public Model {
 public:
  AffineModel(ModelPtr inner, const Matrix& A, const Vector& c)
      : inner_(std::move(inner)), A_(A), c_(c), A_inv_(A.inverse()) {
    diagonal_ = A_.isDiagonal();
    log_abs_det_ = std::log(std::abs(A_.determinant()));
  }

  Index dim() const override { return inner_->dim(); }
  std::string type_name() const override { return inner_->type_name(); }

  Vector log_unnormalized(const Matrix& Y) const override {
    return inner_->log_unnormalized(to_x(Y)).array() - log_abs_det_;
  }

  Matrix score(const Matrix& Y) const override {
    // ∇_y = A⁻ᵀ ∇_x; with rows as samples that is S_x A⁻¹.
    return inner_->score(to_x(Y)) * A_inv_;
  }

  void score_and_laplacian(const Matrix& Y, Matrix& score, Matrix& laplacian) const override {
    const Matrix X = to_x(Y);
    if (diagonal_) {
      Matrix sx, lx;
      inner_->score_and_laplacian(X, sx, lx);
      const Eigen::RowVectorXd inv = A_inv_.diagonal().transpose();
      score = sx.array().rowwise() * inv.array();
      laplacian = lx.array().rowwise() * inv.array().square();
      return;
    }
    if (!inner_->has_hessian())
      throw Error("whitened truth: the source's density gives no full Hessian, so second "
                  "derivatives in whitened coordinates are unavailable");
    score = inner_->score(X) * A_inv_;
    laplacian.resize(Y.rows(), Y.cols());
    for (Index n = 0; n < Y.rows(); ++n) {
      Matrix H = A_inv_.transpose() * inner_->hessian(X.row(n).transpose()) * A_inv_;
      laplacian.row(n) = H.diagonal().transpose();
    }
  }

  bool has_hessian() const override { return inner_->has_hessian(); }
  Matrix hessian(const Vector& y) const override {
    Vector x = A_inv_ * (y - c_);
    return A_inv_.transpose() * inner_->hessian(x) * A_inv_;
  }

  std::optional<double> log_normalizer() const override { return inner_->log_normalizer(); }
  bool bounded_support() const override { return inner_->bounded_support(); }
  std::vector<bool> in_support(const Matrix& Y) const override { return inner_->in_support(to_x(Y)); }

  bool can_sample() const override { return inner_->can_sample(); }
  Matrix sample(Index n, RandomStream& rng) const override {
    Matrix X = inner_->sample(n, rng);
    return (X * A_.transpose()).rowwise() + c_.transpose();
  }

  std::string describe() const override {
    return inner_->describe() + (diagonal_ ? ", standardised" : ", whitened");
  }

 private:
  Matrix to_x(const Matrix& Y) const {
    return (Y.rowwise() - c_.transpose()) * A_inv_.transpose();
  }

  ModelPtr inner_;
  Matrix A_;
  Vector c_;
  Matrix A_inv_;
  bool diagonal_ = true;
  double log_abs_det_ = 0;
};

}  // namespace

ModelPtr make_affine_model(ModelPtr inner, const Matrix& A, const Vector& c) {
  return std::make_shared<AffineModel>(std::move(inner), A, c);
}

}  // namespace kef
