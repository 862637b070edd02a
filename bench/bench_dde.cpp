// One DDE training iteration and drawing 10⁴ samples (plugins/dde's Trainer and sampler network), the
// quantities ../shared/anchors/dde_torch.py prints as seconds_per_step and sample_seconds_1e4.
//   bench_dde N STEPS   n training rows (two moons-like: the same sizes matter, not the data), STEPS
//                       timed iterations after 5 of warm-up; prints the median.
// The settings are the reference's defaults: D = 2, batch 100, widths 128, ξ of dimension 128,
// generator depth 4, dual depth 3, 5 rounds of (3 dual steps, 1 sampler step) per f step, float64.
// Also the machine's GEMM rate (Eigen, one thread) at the networks' block shape, 100 x 128 times
// 128 x 128, and on 512 x 512 matrices: the iteration's time is about half such products, so these
// rates bound how fast it can get (plugins/dde/README.md, Speed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dde_core.hpp"
#include "kef/allocator.hpp"
#include "kef/normal_fill.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"

using namespace kef;
using namespace kef::dde;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GFLOP/s of C = A B (m x k times k x n) through Eigen, the best of 5 timings of `reps` products.
double gemm_rate(Index m, Index k, Index n, int reps) {
  RandomStream rng(5, "bench-gemm");
  const Matrix A = rng.normal_matrix(m, k), B = rng.normal_matrix(k, n);
  Matrix C(m, n);
  for (int i = 0; i < reps / 10 + 1; ++i) C.noalias() = A * B;
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) C.noalias() = A * B;
    best = std::min(best, seconds_since(t0) / reps);
  }
  if (!C.allFinite()) std::abort();
  return 2.0 * static_cast<double>(m * k * n) / best * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  kef::keep_freed_memory();  // as the kef command does
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_dde N STEPS\n");
    return 2;
  }
  const Index N = std::atol(argv[1]), steps = std::atol(argv[2]), B = 100;
  RandomStream data(3, "bench-data");
  const Matrix X = data.normal_matrix(N, 2);
  Architecture arch;
  arch.dim = 2;
  KernelExpansion f;
  f.points = X;
  f.gamma = 1.0;
  RandomStream init(3, "init");
  f.alpha = 0.1 * init.normal_matrix(N, 1).col(0);
  network::Network g = make_generator(arch), nu = make_dual(arch);
  g.initialize(init);
  nu.initialize(init);
  const Vector lo = X.colwise().minCoeff().transpose(), hi = X.colwise().maxCoeff().transpose();
  TrainerOptions to;
  Trainer trainer(std::move(f), std::move(g), std::move(nu), lo, hi, to, "bench_dde");

  RandomStream noise(3, "noise");
  std::vector<double> times;
  for (Index s = 0; s < steps + 5; ++s) {
    const Matrix batch = X.middleRows((s * B) % (N - B + 1), B);
    const auto t0 = Clock::now();
    const IterationDraws d = IterationDraws::draw(noise, B, arch.noise_dim, arch.dim, to);
    trainer.iteration(batch, d, static_cast<long>(s));
    if (s >= 5) times.push_back(seconds_since(t0));
  }
  std::vector<double> sample_times;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    const Matrix xs = trainer.generator().value(normal_rows(noise, 10000, arch.noise_dim));
    sample_times.push_back(seconds_since(t0));
    if (!xs.allFinite()) return 1;
  }
  std::printf("threads %d\nseconds_per_step %.6f\nsample_seconds_1e4 %.6f\n", default_threads(), median(times),
              median(sample_times));
  std::printf("gemm_gflops_100x128x128 %.1f\ngemm_gflops_512 %.1f\n", gemm_rate(100, 128, 128, 2000),
              gemm_rate(512, 512, 512, 5));
  return 0;
}
