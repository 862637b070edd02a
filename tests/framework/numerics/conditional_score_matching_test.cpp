// The conditional score-matching loss (kef/score_matching.hpp, the evaluator
// conditional_score_matching_loss): its chunked sum against the direct mean, independence of the
// thread count, and the value of the true density p(y | x), for which J = −½ E‖∇_y log p‖².
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kef/conditional_model.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/random.hpp"
#include "kef/score_matching.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

// p(y | x) = N(y; sin x, s(x)²), s(x) = 0.3 + 0.2 |x|: heteroscedastic, with a known score and Laplacian.
class SineNoise final : public ConditionalModel {
 public:
  Index input_dim() const override { return 1; }
  Index target_dim() const override { return 1; }
  static double sd(double x) { return 0.3 + 0.2 * std::abs(x); }
  Vector log_unnormalized(const Matrix& X, const Matrix& Y) const override {
    Vector v(X.rows());
    for (Index n = 0; n < X.rows(); ++n) {
      const double s = sd(X(n, 0)), r = Y(n, 0) - std::sin(X(n, 0));
      v[n] = -0.5 * r * r / (s * s) - std::log(s);
    }
    return v;
  }
  void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const override {
    score.resize(X.rows(), 1);
    laplacian.resize(X.rows(), 1);
    for (Index n = 0; n < X.rows(); ++n) {
      const double s2 = sd(X(n, 0)) * sd(X(n, 0));
      score(n, 0) = -(Y(n, 0) - std::sin(X(n, 0))) / s2;
      laplacian(n, 0) = -1.0 / s2;
    }
  }
};

struct Pairs {
  Matrix X, Y;
};

Pairs draw(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "pairs");
  Pairs p{Matrix(n, 1), Matrix(n, 1)};
  for (Index i = 0; i < n; ++i) {
    p.X(i, 0) = -3.0 + 6.0 * rng.uniform();
    p.Y(i, 0) = std::sin(p.X(i, 0)) + SineNoise::sd(p.X(i, 0)) * rng.normal();
  }
  return p;
}

TEST(ConditionalScoreMatching, EqualsTheDirectMeanForAnyThreadCount) {
  const SineNoise model;
  const Pairs p = draw(5000, 1);  // more rows than one chunk (2048)
  Matrix s, l;
  model.score_and_laplacian(p.X, p.Y, s, l);
  const double direct = (l.array() + 0.5 * s.array().square()).mean();
  const double one = conditional_score_matching_loss(model, p.X, p.Y, Context(0, 1));
  EXPECT_NEAR(one, direct, 1e-12 * std::abs(direct));
  EXPECT_EQ(one, conditional_score_matching_loss(model, p.X, p.Y, Context(0, 2)));
}

TEST(ConditionalScoreMatching, TheTrueDensityScoresMinusHalfItsFisherInformation) {
  // E_p[∂² log p + ½ (∂ log p)²] = −½ E[(∂ log p)²] = −½ E[1/s(x)²] for the true p(y | x).
  const SineNoise model;
  const Index n = 20000;
  const Pairs p = draw(n, 2);
  Matrix s, l;
  model.score_and_laplacian(p.X, p.Y, s, l);
  const Vector terms = (l.array() + 0.5 * s.array().square()).matrix();
  double expected = 0.0;
  for (Index i = 0; i < n; ++i) expected += -0.5 / (SineNoise::sd(p.X(i, 0)) * SineNoise::sd(p.X(i, 0)));
  expected /= static_cast<double>(n);
  const double j = conditional_score_matching_loss(model, p.X, p.Y, Context(0, 1));
  const double se = std::sqrt((terms.array() - terms.mean()).square().mean() / static_cast<double>(n));
  EXPECT_NEAR(j, expected, 5.0 * se);
  // A wrong variance (the model twice as wide) scores worse: J is minimised by the truth.
  class Wide final : public ConditionalModel {
   public:
    Index input_dim() const override { return 1; }
    Index target_dim() const override { return 1; }
    Vector log_unnormalized(const Matrix& X, const Matrix&) const override { return Vector::Zero(X.rows()); }
    void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& lap) const override {
      SineNoise().score_and_laplacian(X, Y, score, lap);
      score *= 0.25;
      lap *= 0.25;
    }
  } wide;
  EXPECT_GT(conditional_score_matching_loss(wide, p.X, p.Y, Context(0, 1)), j + 10.0 * se);
}

TEST(ConditionalScoreMatching, ANonFiniteScoreIsAnErrorNamingTheRow) {
  const SineNoise model;
  Pairs p = draw(100, 3);
  p.X(37, 0) = std::numeric_limits<double>::quiet_NaN();
  const std::string msg = test::message_of<NumericalError>(
      [&] { conditional_score_matching_loss(model, p.X, p.Y, Context(0, 1)); });
  EXPECT_NE(msg.find("row 37"), std::string::npos) << msg;
  EXPECT_THROW(conditional_score_matching_loss(model, p.X, p.Y.topRows(50), Context(0, 1)), Error);
}

}  // namespace
}  // namespace kef
