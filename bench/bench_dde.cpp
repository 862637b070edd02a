// One DDE training iteration and drawing 10⁴ samples (plugins/dde's Trainer and sampler network), the
// quantities ../shared/anchors/dde_torch.py prints as seconds_per_step and sample_seconds_1e4.
//   bench_dde N STEPS   n training rows (two moons-like: the same sizes matter, not the data), STEPS
//                       timed iterations after 5 of warm-up; prints the median.
// The settings are the reference's defaults: D = 2, batch 100, widths 128, ξ of dimension 128,
// generator depth 4, dual depth 3, 5 rounds of (3 dual steps, 1 sampler step) per f step, float64.
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
  return 0;
}
