#pragma once
// e^x over contiguous arrays, for the hot loops whose cost is the exponential (the deep kernel's
// Gram, softplus). Within 2 ulp of a correctly rounded exp everywhere (observed: 1 ulp), including
// the subnormal range; NaN stays NaN, e^x = +inf above ln(DBL_MAX) and 0 below the smallest
// subnormal. Eigen's exp is both slower (a division per packet) and flushes part of the subnormal
// range to zero.
#include "kef/types.hpp"

namespace kef {

// y[i] = e^{x[i]} for i < n; y may be x (in place), other overlaps are not allowed.
void exp_array(const double* x, double* y, Index n);

// e^A coefficient-wise, computed in A's own storage (pass an expression or a moved-from matrix).
inline Matrix exp_of(Matrix A) {
  exp_array(A.data(), A.data(), A.size());
  return A;
}

namespace detail {
// The portable path (a degree-13 polynomial, vectorised by the compiler), which exp_array uses when
// the build has no AVX-512; exposed so the tests check it on every machine.
void exp_array_portable(const double* x, double* y, Index n);
}  // namespace detail

}  // namespace kef
