#pragma once
// An analytic gradient against central differences, the check every derivative in kef gets.
#include <gtest/gtest.h>

#include <functional>

#include "kef/types.hpp"

namespace kef::test {

// Whether `analytic` agrees with `numeric` (a gradient by central differences, a vector or a matrix of
// derivatives) to within rel_tol · max(1, max_i |numeric_i|) in every entry: relative to the gradient's
// scale, absolute below 1, so that near-zero entries are not held to a relative error that differencing
// cannot reach. On failure the message names the worst entry, both values and the tolerance; shapes
// that differ fail, and so does a NaN.
::testing::AssertionResult gradients_agree(const Matrix& analytic, const Matrix& numeric, double rel_tol);

// gradients_agree(analytic, numerical_gradient(f, x, h), rel_tol).
::testing::AssertionResult gradient_matches_differences(const Matrix& analytic,
                                                        const std::function<double(const Vector&)>& f,
                                                        const Vector& x, double rel_tol, double h = 1e-5);

}  // namespace kef::test
