#pragma once
// Small densities with exact log p~ and score for the HMC and MMD tests.
#include <atomic>
#include <cmath>
#include <functional>
#include <string>

#include "kef/base_measure.hpp"
#include "kef/error.hpp"
#include "kef/model.hpp"

namespace kef::test {

// N(mean, cov); can_sample() only when `exact` (to test both paths of draw_samples).
class GaussianModel : public Model {
 public:
  GaussianModel(Vector mean, Matrix cov, bool exact = false)
      : mean_(std::move(mean)), cov_(std::move(cov)), prec_(cov_.inverse()), chol_(cov_.llt().matrixL()), exact_(exact) {}
  Index dim() const override { return mean_.size(); }
  std::string type_name() const override { return "test/gaussian"; }
  Vector log_unnormalized(const Matrix& X) const override {
    const Matrix C = X.rowwise() - mean_.transpose();
    return -0.5 * (C * prec_).cwiseProduct(C).rowwise().sum();
  }
  Matrix score(const Matrix& X) const override { return -(X.rowwise() - mean_.transpose()) * prec_; }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = score(X);
    l = (-prec_.diagonal()).transpose().replicate(X.rows(), 1);
  }
  bool can_sample() const override { return exact_; }
  Matrix sample(Index n, RandomStream& rng) const override {
    return (rng.normal_matrix(n, dim()) * chol_.transpose()).rowwise() + mean_.transpose();
  }
  std::string describe() const override { return "test Gaussian"; }
  const Vector& mean() const { return mean_; }
  const Matrix& cov() const { return cov_; }
  // HMC may start from draws of this measure (as for a fitted lite model's q0).
  void set_base_measure(BaseMeasurePtr base) { base_ = std::move(base); }
  const BaseMeasure* base_measure() const override { return base_.get(); }

 private:
  Vector mean_;
  Matrix cov_, prec_, chol_;
  bool exact_;
  BaseMeasurePtr base_;
};

// 1-D: w·N(m1, s²) + (1 − w)·N(m2, s²), no exact sampler.
class MixtureModel : public Model {
 public:
  MixtureModel(double w, double m1, double m2, double s) : w_(w), m1_(m1), m2_(m2), s_(s) {}
  Index dim() const override { return 1; }
  std::string type_name() const override { return "test/mixture"; }
  Vector log_unnormalized(const Matrix& X) const override {
    Vector out(X.rows());
    for (Index i = 0; i < X.rows(); ++i) {
      const double a = std::log(w_) + lc(X(i, 0), m1_), b = std::log(1 - w_) + lc(X(i, 0), m2_);
      const double hi = std::max(a, b);
      out[i] = hi + std::log(std::exp(a - hi) + std::exp(b - hi));
    }
    return out;
  }
  Matrix score(const Matrix& X) const override {
    Matrix out(X.rows(), 1);
    for (Index i = 0; i < X.rows(); ++i) {
      const double x = X(i, 0);
      const double a = std::log(w_) + lc(x, m1_), b = std::log(1 - w_) + lc(x, m2_);
      const double r1 = 1.0 / (1.0 + std::exp(b - a));  // responsibility of component 1
      out(i, 0) = (r1 * (m1_ - x) + (1 - r1) * (m2_ - x)) / (s_ * s_);
    }
    return out;
  }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = score(X);
    l = Matrix::Zero(X.rows(), 1);  // unused by these tests
  }
  std::string describe() const override { return "test mixture"; }

 private:
  double lc(double x, double m) const { return -0.5 * (x - m) * (x - m) / (s_ * s_); }
  double w_, m1_, m2_, s_;
};

// A standard normal restricted to |x_d| < bound: log p~ and the score are NaN outside, which HMC must
// treat as rejected proposals (divergences), never as an error.
class BoxedNormal : public Model {
 public:
  BoxedNormal(Index dim, double bound) : dim_(dim), bound_(bound) {}
  Index dim() const override { return dim_; }
  std::string type_name() const override { return "test/boxed"; }
  Vector log_unnormalized(const Matrix& X) const override {
    Vector out = -0.5 * X.rowwise().squaredNorm();
    for (Index i = 0; i < X.rows(); ++i)
      if (X.row(i).cwiseAbs().maxCoeff() >= bound_) out[i] = std::nan("");
    return out;
  }
  Matrix score(const Matrix& X) const override {
    Matrix out = -X;
    for (Index i = 0; i < X.rows(); ++i)
      if (X.row(i).cwiseAbs().maxCoeff() >= bound_) out.row(i).setConstant(std::nan(""));
    return out;
  }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = score(X);
    l = Matrix::Constant(X.rows(), dim_, -1.0);
  }
  std::string describe() const override { return "test boxed normal"; }

 private:
  Index dim_;
  double bound_;
};

// N(0, I) that throws kef::NumericalError (like the generalised normal's derivative check) when any
// row of a batch leaves the box |x_d| < bound, as a component refusing a point would; counts calls
// that threw, so a test can tell that the sampler met the error.
class ThrowingOutsideBox : public Model {
 public:
  ThrowingOutsideBox(Index dim, double bound) : dim_(dim), bound_(bound) {}
  Index dim() const override { return dim_; }
  std::string type_name() const override { return "test/throwing"; }
  Vector log_unnormalized(const Matrix& X) const override {
    check(X, "log density");
    return -0.5 * X.rowwise().squaredNorm();
  }
  Matrix score(const Matrix& X) const override {
    check(X, "first derivatives");
    return -X;
  }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = score(X);
    l = Matrix::Constant(X.rows(), dim_, -1.0);
  }
  std::string describe() const override { return "test normal that throws outside a box"; }
  mutable std::atomic<int> throws{0};

 private:
  void check(const Matrix& X, const char* what) const {
    for (Index i = 0; i < X.rows(); ++i)
      if (!(X.row(i).cwiseAbs().maxCoeff() < bound_)) {
        ++throws;
        throw NumericalError(std::string("test/throwing: ") + what + ": non-finite value inf");
      }
  }
  Index dim_;
  double bound_;
};

// A model whose exact sampler returns fixed rows (the brute-force MMD check needs the samples).
class FixedSampleModel : public Model {
 public:
  explicit FixedSampleModel(Matrix rows) : rows_(std::move(rows)) {}
  Index dim() const override { return rows_.cols(); }
  std::string type_name() const override { return "test/fixed"; }
  Vector log_unnormalized(const Matrix& X) const override { return Vector::Zero(X.rows()); }
  Matrix score(const Matrix& X) const override { return Matrix::Zero(X.rows(), X.cols()); }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = score(X);
    l = s;
  }
  bool can_sample() const override { return true; }
  Matrix sample(Index n, RandomStream&) const override { return rows_.topRows(n); }
  std::string describe() const override { return "test fixed sample"; }

 private:
  Matrix rows_;
};

}  // namespace kef::test
