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

// OpenBLAS DGEMM (the fastest available here), one single-threaded 1024³ product per thread as kef
// splits work, best of five: GFLOP/s over all threads.
inline double measure_gemm_gflops(int threads) {
  const Index n = 1024;
  std::vector<Matrix> A(static_cast<std::size_t>(threads)), C(static_cast<std::size_t>(threads));
  RandomStream rng(1, "gemm");
  Matrix B = rng.normal_matrix(n, n);
  for (auto& a : A) a = rng.normal_matrix(n, n);
  for (auto& c : C) c = Matrix::Zero(n, n);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    parallel_for(threads, threads, [&](Index t) {
      const auto& a = A[static_cast<std::size_t>(t)];
      auto& c = C[static_cast<std::size_t>(t)];
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(n), static_cast<blasint>(n),
                  static_cast<blasint>(n), 1.0, a.data(), static_cast<blasint>(n), B.data(), static_cast<blasint>(n), 0.0,
                  c.data(), static_cast<blasint>(n));
    });
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * static_cast<double>(n * n * n) * threads / best / 1e9;
}

}  // namespace kef::bench
