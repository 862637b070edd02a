#pragma once
// The two BLAS-3 products of the hot loops, through OpenBLAS on the calling thread (libkef sets
// OpenBLAS to one thread: kef parallelises over fixed row blocks itself, so results stay independent of
// the thread count), as lite_system.cpp does. OpenBLAS's kernels run these ~1.7x faster than Eigen's.
// A public framework helper would remove this plugin's direct dependency (see the README).
#include <cblas.h>

#include "kef/types.hpp"

namespace kef::stein {

// C += A'·Bᵀ, A' the first C.rows() rows of A (column-major).
inline void gemm_nt_accumulate(const Matrix& A, const Matrix& B, Matrix& C) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(C.rows()), static_cast<blasint>(B.rows()),
              static_cast<blasint>(A.cols()), 1.0, A.data(), static_cast<blasint>(A.rows()), B.data(),
              static_cast<blasint>(B.rows()), 1.0, C.data(), static_cast<blasint>(C.rows()));
}

// Lower triangle of C += AᵀA.
inline void syrk_lower_accumulate(const Matrix& A, Matrix& C) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, static_cast<blasint>(C.rows()), static_cast<blasint>(A.rows()),
              1.0, A.data(), static_cast<blasint>(A.rows()), 1.0, C.data(), static_cast<blasint>(C.rows()));
}

// The same with whichever library is faster for the shape. Measured on the AVX-512 machine (one
// thread): for C of order ≥ 512 and depth ≥ 512, Eigen's AVX-512 rank update runs at ~67 GFLOP/s
// against OpenBLAS's Haswell dsyrk at ~48; for order 100, OpenBLAS (~38) far outruns Eigen.
inline void gram_lower_accumulate(const Matrix& A, Matrix& C) {
  if (C.rows() >= 512)
    C.selfadjointView<Eigen::Lower>().rankUpdate(A.transpose());
  else
    syrk_lower_accumulate(A, C);
}

}  // namespace kef::stein
