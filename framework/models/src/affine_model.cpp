#include "affine_model.hpp"

#include <cmath>

#include "kef/data_units_model.hpp"
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

// A model fitted in coordinates z = A x + offset, seen in data units x (kef/data_transform.hpp).
class DataUnitsModel final : public Model {
 public:
  DataUnitsModel(ModelPtr inner, DataTransform t) : inner_(std::move(inner)), t_(std::move(t)) {
    diagonal_ = t_.matrix.isDiagonal();
  }

  Index dim() const override { return inner_->dim(); }
  std::string type_name() const override { return inner_->type_name(); }

  Vector log_unnormalized(const Matrix& X) const override {
    return inner_->log_unnormalized(t_.to_model(X)).array() + t_.log_abs_det;
  }

  // ∇_x = Aᵀ ∇_z; with rows as samples that is S_z A.
  Matrix score(const Matrix& X) const override { return inner_->score(t_.to_model(X)) * t_.matrix; }

  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override {
    const Matrix Z = t_.to_model(X);
    if (diagonal_) {
      Matrix sz, lz;
      inner_->score_and_laplacian(Z, sz, lz);
      const Eigen::RowVectorXd a = t_.matrix.diagonal().transpose();
      score = sz.array().rowwise() * a.array();
      laplacian = lz.array().rowwise() * a.array().square();
      return;
    }
    if (!inner_->has_hessian())
      throw Error("model " + inner_->type_name() + " fitted " + t_.model_space() +
                  ", in data units: second derivatives need the model's full Hessian, which it does not "
                  "give; evaluate second-derivative metrics in model coordinates (kef eval does)");
    score = inner_->score(Z) * t_.matrix;
    laplacian.resize(X.rows(), X.cols());
    for (Index n = 0; n < X.rows(); ++n)
      laplacian.row(n) =
          (t_.matrix.transpose() * inner_->hessian(Z.row(n).transpose()) * t_.matrix).diagonal().transpose();
  }

  bool has_hessian() const override { return inner_->has_hessian(); }
  Matrix hessian(const Vector& x) const override {
    const Matrix z = t_.to_model(x.transpose());
    return t_.matrix.transpose() * inner_->hessian(z.row(0).transpose()) * t_.matrix;
  }

  std::optional<double> log_normalizer() const override { return inner_->log_normalizer(); }
  bool bounded_support() const override { return inner_->bounded_support(); }
  std::vector<bool> in_support(const Matrix& X) const override { return inner_->in_support(t_.to_model(X)); }

  bool can_sample() const override { return inner_->can_sample(); }
  Matrix sample(Index n, RandomStream& rng) const override { return t_.to_data(inner_->sample(n, rng)); }

  std::string describe() const override {
    return inner_->describe() + " (fitted " + t_.model_space() + ", seen in data units)";
  }

 private:
  ModelPtr inner_;
  DataTransform t_;
  bool diagonal_ = true;
};

}  // namespace

ModelPtr make_data_units_model(ModelPtr model, const DataTransform& transform) {
  if (transform.identity()) return model;
  if (transform.matrix.rows() != model->dim())
    throw ModelFileError("data transform of dimension " + std::to_string(transform.matrix.rows()) +
                         " for a model of dimension " + std::to_string(model->dim()));
  return std::make_shared<DataUnitsModel>(std::move(model), transform);
}

bool is_log_likelihood_metric(const std::string& name) {
  const auto dot = name.rfind('.');
  const std::string base = dot == std::string::npos ? name : name.substr(dot + 1);
  static const std::string kSuffix = "_log_likelihood";
  return base == "log_likelihood" ||
         (base.size() > kSuffix.size() &&
          base.compare(base.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0);
}

std::vector<std::pair<std::string, double>> metrics_in_data_units(
    const std::vector<std::pair<std::string, double>>& metrics, const DataTransform& transform,
    std::vector<std::pair<std::string, std::string>>* spaces) {
  std::vector<std::pair<std::string, double>> out;
  if (spaces) spaces->clear();
  const std::string model_space = transform.model_space();
  for (const auto& [name, value] : metrics) {
    if (transform.identity()) {
      out.emplace_back(name, value);
      if (spaces) spaces->emplace_back(name, "data");
    } else if (is_log_likelihood_metric(name)) {
      out.emplace_back(name, value + transform.log_abs_det);
      out.emplace_back(name + "_" + model_space, value);
      if (spaces) {
        spaces->emplace_back(name, "data");
        spaces->emplace_back(name + "_" + model_space, model_space);
      }
    } else {
      out.emplace_back(name, value);
      if (spaces) spaces->emplace_back(name, model_space);
    }
  }
  return out;
}

ModelPtr make_affine_model(ModelPtr inner, const Matrix& A, const Vector& c) {
  return std::make_shared<AffineModel>(std::move(inner), A, c);
}

}  // namespace kef
