#pragma once
// The check every basis of DDE's f gets (kernel centres and random features): its input gradient and
// diagonal second derivatives at the rows of Y against central differences of its values.
#include <gtest/gtest.h>

#include <cmath>

#include "dde_core.hpp"

namespace kef::dde::test_check {

inline void expect_derivatives_match_central_differences(const KernelExpansion& f, const Matrix& Y) {
  Matrix lap;
  Vector values;
  const Matrix G = f.gradient(Y, &lap, &values);
  EXPECT_EQ(values, f.values(Y));
  const double h = 1e-4;
  for (Index b = 0; b < Y.rows(); ++b)
    for (Index d = 0; d < Y.cols(); ++d) {
      Matrix p = Y.row(b), m = Y.row(b);
      p(0, d) += h;
      m(0, d) -= h;
      const double fp = f.values(p)[0], fm = f.values(m)[0], f0 = f.values(Y.row(b))[0];
      EXPECT_NEAR(G(b, d), (fp - fm) / (2 * h), 1e-8 * (1 + std::abs(G(b, d))))
          << "row " << b << ", input " << d;
      EXPECT_NEAR(lap(b, d), (fp - 2 * f0 + fm) / (h * h), 1e-5 * (1 + std::abs(lap(b, d))))
          << "row " << b << ", input " << d;
    }
}

}  // namespace kef::dde::test_check
