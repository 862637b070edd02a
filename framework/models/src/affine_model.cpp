#include "affine_model.hpp"

#include <cmath>
#include <memory>

#include "data_units_model.hpp"
#include "kef/conditional_model.hpp"
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

// The conditional facet of a model fitted in z coordinates, seen in data units. The map is block-
// diagonal (kef/data_transform.hpp): z_x = A_x x + c_x, z_y = A_y y + c_y, so
//   log p~(y | x) = log p~_z(z_y | z_x) + log|det A_y|,   ∇_y = A_yᵀ ∇_{z_y},
// and the normaliser over y is unchanged (the Jacobian is inside the density).
class DataUnitsConditional final : public ConditionalModel {
 public:
  DataUnitsConditional(const ConditionalModel& inner, const DataTransform& t)
      : inner_(inner),
        Ax_(t.input_map()),
        Ay_(t.target_map()),
        cx_(t.roles.inputs_of(t.offset.transpose()).transpose()),
        cy_(t.roles.targets_of(t.offset.transpose()).transpose()),
        log_det_y_(t.target_log_abs_det()) {}

  Index input_dim() const override { return inner_.input_dim(); }
  Index target_dim() const override { return inner_.target_dim(); }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override {
    return inner_.log_unnormalized(zx(X), zy(Y)).array() + log_det_y_;
  }
  Matrix score(const Matrix& X, const Matrix& Y) const override { return inner_.score(zx(X), zy(Y)) * Ay_; }
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score,
                           Matrix& laplacian) const override {
    if (!Ay_.isDiagonal())
      throw Error(
          "conditional model: the Laplacian in y through a non-diagonal (whitened) target map needs the "
          "full Hessian in y, which the conditional facet does not give");
    Matrix sz, lz;
    inner_.score_and_laplacian(zx(X), zy(Y), sz, lz);
    const Eigen::RowVectorXd a = Ay_.diagonal().transpose();
    score = sz.array().rowwise() * a.array();
    laplacian = lz.array().rowwise() * a.array().square();
  }
  Matrix sample(const Matrix& X, RandomStream& rng) const override {
    return (inner_.sample(zx(X), rng).rowwise() - cy_.transpose()) * Ay_.inverse().transpose();
  }
  std::optional<Vector> log_normalizer(const Matrix& X) const override {
    return inner_.log_normalizer(zx(X));
  }

 private:
  Matrix zx(const Matrix& X) const { return (X * Ax_.transpose()).rowwise() + cx_.transpose(); }
  Matrix zy(const Matrix& Y) const { return (Y * Ay_.transpose()).rowwise() + cy_.transpose(); }
  const ConditionalModel& inner_;  // owned by the DataUnitsModel's inner model
  Matrix Ax_, Ay_;
  Vector cx_, cy_;
  double log_det_y_;
};

// A model fitted in coordinates z = A x + offset, seen in data units x (kef/data_transform.hpp).
class DataUnitsModel final : public Model {
 public:
  DataUnitsModel(ModelPtr inner, DataTransform t) : inner_(std::move(inner)), t_(std::move(t)) {
    diagonal_ = t_.matrix.isDiagonal();
    if (const ConditionalModel* c = inner_->conditional()) {
      if (!t_.roles.conditional())
        throw Error("model " + inner_->type_name() +
                    " is conditional, and its data transform records no target columns");
      conditional_ = std::make_unique<DataUnitsConditional>(*c, t_);
    }
  }

  // The inner model's facets; the Laplacian through a non-diagonal map needs the full Hessian.
  FacetSet facets() const override {
    FacetSet f = inner_->facets();
    if (!diagonal_ && !inner_->has_hessian()) f = f.minus(Facet::Laplacian);
    return f;
  }
  const ConditionalModel* conditional() const override { return conditional_.get(); }

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
  std::unique_ptr<DataUnitsConditional> conditional_;
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

bool is_conditional_log_likelihood_metric(const std::string& name) {
  static const std::string kSuffix = "conditional_log_likelihood";
  return name.size() >= kSuffix.size() && name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
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
      // A conditional log-likelihood log p(y | x) changes by the target block's log|det A_y| only
      // (p(y | x) = p_z(z_y | z_x) |det A_y|; design.md, Column roles).
      out.emplace_back(name, value + (is_conditional_log_likelihood_metric(name) ? transform.target_log_abs_det()
                                                                                  : transform.log_abs_det));
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
