#include "gradient_check.hpp"

#include <cmath>

#include "test_support.hpp"

namespace kef::test {

::testing::AssertionResult gradients_agree(const Matrix& analytic, const Matrix& numeric, double rel_tol) {
  if (analytic.rows() != numeric.rows() || analytic.cols() != numeric.cols())
    return ::testing::AssertionFailure() << "the analytic gradient is " << analytic.rows() << " x "
                                         << analytic.cols() << ", the differences " << numeric.rows() << " x "
                                         << numeric.cols();
  double scale = 1.0;
  Index worst_row = 0, worst_col = 0;
  double worst_error = 0.0;
  for (Index j = 0; j < analytic.cols(); ++j)
    for (Index i = 0; i < analytic.rows(); ++i) {
      scale = std::fmax(scale, std::abs(numeric(i, j)));
      const double error = std::abs(analytic(i, j) - numeric(i, j));
      // A NaN on either side is the worst entry whatever the others are, and fails the check.
      if (std::isnan(error) || (!std::isnan(worst_error) && error > worst_error)) {
        worst_row = i;
        worst_col = j;
        worst_error = error;
      }
    }
  const double tol = rel_tol * scale;
  if (worst_error < tol) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  if (analytic.cols() == 1)
    failure << "coordinate " << worst_row << " of " << analytic.rows();
  else
    failure << "entry (" << worst_row << ", " << worst_col << ") of " << analytic.rows() << " x " << analytic.cols();
  return failure << ": analytic " << analytic(worst_row, worst_col) << ", central differences "
                 << numeric(worst_row, worst_col) << " (|difference| " << worst_error << ", tolerance " << tol
                 << ")";
}

::testing::AssertionResult gradient_matches_differences(const Matrix& analytic,
                                                        const std::function<double(const Vector&)>& f,
                                                        const Vector& x, double rel_tol, double h) {
  return gradients_agree(analytic, numerical_gradient(f, x, h), rel_tol);
}

}  // namespace kef::test
