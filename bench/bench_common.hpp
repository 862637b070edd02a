#pragma once
// What every benchmark program shares: timing and the machine's DGEMM rate, the baseline that flop
// rates are reported against.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "kef/parallel.hpp"
#include "kef/random.hpp"

namespace kef::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One single-threaded 1024³ DGEMM per thread, as kef splits work, best of five: GFLOP/s over all
// threads, for a given product C = A·B.
template <class Product>
double gemm_rate(int threads, Product&& product) {
  const Index n = 1024;
  std::vector<Matrix> A(static_cast<std::size_t>(threads)), C(static_cast<std::size_t>(threads));
  RandomStream rng(1, "gemm");
  const Matrix B = rng.normal_matrix(n, n);
  for (auto& a : A) a = rng.normal_matrix(n, n);
  for (auto& c : C) c = Matrix::Zero(n, n);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    parallel_for(threads, threads, [&](Index t) {
      product(A[static_cast<std::size_t>(t)], B, C[static_cast<std::size_t>(t)]);
    });
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * static_cast<double>(n * n * n) * threads / best / 1e9;
}

inline double openblas_gemm_gflops(int threads) {
  return gemm_rate(threads, [](const Matrix& a, const Matrix& b, Matrix& c) {
    const auto n = static_cast<blasint>(a.rows());
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  });
}

// Eigen's own kernels (AVX-512 under -march=native), which kef's deep kernel and Stein code use.
inline double eigen_gemm_gflops(int threads) {
  return gemm_rate(threads, [](const Matrix& a, const Matrix& b, Matrix& c) { c.noalias() = a * b; });
}

// The machine's DGEMM peak as kef can reach it: the faster of the two (on the AVX-512 development
// machine Eigen's, ~130 GFLOP/s on 2 threads against OpenBLAS's Haswell kernels' ~103). Efficiency
// percentages and "ideal" times are reported against this, not against the slower library.
inline double measure_gemm_gflops(int threads) {
  return std::max(openblas_gemm_gflops(threads), eigen_gemm_gflops(threads));
}

}  // namespace kef::bench
