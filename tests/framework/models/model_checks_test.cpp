// The models suites' difference check (model_checks.hpp) must be able to fail: a model whose score,
// Hessian diagonal, or score_and_laplacian's score is off by a little more than the check's tolerance
// is caught, and the unperturbed model passes.
#include <gtest/gtest.h>

#include "kef/lite_model.hpp"
#include "kef/random.hpp"
#include "model_checks.hpp"
#include "test_support.hpp"

namespace kef::model_checks_test {

// A model with the log density of `inner` and its derivatives shifted: score() by ds, the Hessian
// diagonal by dl, and score_and_laplacian's score by ds + dss.
class Shifted final : public Model {
 public:
  Shifted(ModelPtr inner, double ds, double dl, double dss) : inner_(std::move(inner)), ds_(ds), dl_(dl), dss_(dss) {}
  Index dim() const override { return inner_->dim(); }
  std::string type_name() const override { return "test/shifted"; }
  Vector log_unnormalized(const Matrix& X) const override { return inner_->log_unnormalized(X); }
  Matrix score(const Matrix& X) const override { return inner_->score(X).array() + ds_; }
  void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const override {
    inner_->score_and_laplacian(X, score, laplacian);
    score.array() += ds_ + dss_;
    laplacian.array() += dl_;
  }
  std::string describe() const override { return "test shifted model"; }

 private:
  ModelPtr inner_;
  double ds_, dl_, dss_;
};

TEST(ModelChecks, ThePerturbedDerivativesOfAModelFailTheDifferenceCheck) {
  Registry& reg = test::plugin_registry();
  RandomStream rng(1, "model-checks");
  const auto lite = std::make_shared<LiteModel>(
      test::gaussian_kernel(1.0), reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 1.5"), {}),
      rng.normal_matrix(5, 2), rng.normal_matrix(5, 1).col(0));
  const Matrix X = rng.normal_matrix(3, 2);
  EXPECT_TRUE(model_checks::derivatives_match_differences(Shifted(lite, 0, 0, 0), X, 1e-8, 1e-5));
  EXPECT_FALSE(model_checks::derivatives_match_differences(Shifted(lite, 1e-6, 0, 0), X, 1e-8, 1e-5));
  EXPECT_FALSE(model_checks::derivatives_match_differences(Shifted(lite, 0, 1e-6, 0), X, 1e-8, 1e-5));
  EXPECT_FALSE(model_checks::derivatives_match_differences(Shifted(lite, 0, 0, 1e-10), X, 1e-8, 1e-5));
  // The Hessian diagonal against second differences of values alone (tol = 1 passes the score check).
  EXPECT_FALSE(model_checks::derivatives_match_differences(Shifted(lite, 0, 1e-4, 0), X, 1.0, 1e-5));
}

}  // namespace kef::model_checks_test
