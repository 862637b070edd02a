// Nyström fit speed and memory (estimator/nystrom's building block, kef/derivative_basis.hpp).
//   bench_nystrom fit N D m OUTDIR   fits, best of 3 (writes train.npy and idx.npy for nystrom_numpy.py)
//   bench_nystrom memory N D m       one fit; the caller reads peak RSS
// Basis: the first m rows, orders [1] (M = m·D), Gaussian kernel σ 2, q0 = N(0, 3² I), λ 1e-3.
// Output lines are "key value" for bench/run.sh to parse.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench_common.hpp"
#include "kef/allocator.hpp"
#include "kef/config.hpp"
#include "kef/derivative_basis.hpp"
#include "kef/npy.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"
#include "kef/registry.hpp"

using namespace kef;
using bench::Clock;
using bench::seconds_since;

namespace {

struct Fit {
  double seconds;
  Vector beta;
};

Fit fit(const Matrix& X, const Matrix& Z, int threads, Registry& reg) {
  // KEF_BENCH_CHUNK_ROWS overrides the accumulation's chunk size (rows per block), to study its effect.
  DerivativeAccumulateOptions ao;
  if (const char* c = std::getenv("KEF_BENCH_CHUNK_ROWS")) ao.chunk_rows = std::atol(c);
  auto kernel = reg.make_kernel(Config::parse_string("type = \"gaussian\"\nsigma = 2.0", "bench"), {});
  auto base = reg.make_base_measure(Config::parse_string("type = \"gaussian\"\nstd = 3.0", "bench"), {});
  DerivativeBasis basis;
  basis.points = Z;
  basis.orders = {1};
  auto t0 = Clock::now();
  DerivativeSystem sys = accumulate_derivative_system(*kernel, *base, X, basis, ao, Context(1, threads));
  DerivativeSolveOptions so;
  so.lambda = 1e-3;
  DerivativeSolution sol = solve_derivative_system(sys, so);
  return {seconds_since(t0), sol.beta};
}

}  // namespace

int main(int argc, char** argv) {
  kef::keep_freed_memory();
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_nystrom fit N D m OUTDIR | memory N D m\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int threads = default_threads();
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});
  const Index N = std::atol(argv[2]), D = std::atol(argv[3]), m = std::atol(argv[4]);
  RandomStream rng(7, "bench-data");
  const Matrix X = rng.normal_matrix(N, D);
  const Matrix Z = X.topRows(m);
  if (mode == "memory") {
    Fit f = fit(X, Z, threads, reg);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf("fit_seconds %.6f\ndata_mb %.3f\npeak_rss_mb %.3f\n", f.seconds, N * D * 8.0 / 1e6,
                ru.ru_maxrss / 1024.0);
    return 0;
  }
  if (mode != "fit" || argc < 6) {
    std::fprintf(stderr, "usage: bench_nystrom fit N D m OUTDIR | memory N D m\n");
    return 2;
  }
  const std::filesystem::path out = argv[5];
  std::filesystem::create_directories(out);
  write_npy(out / "train.npy", X);
  Vector idx(m);
  for (Index i = 0; i < m; ++i) idx[i] = static_cast<double>(i);
  write_npy(out / "idx.npy", idx);
  fit(X, Z, threads, reg);  // warm-up
  double best = 1e30;
  Fit f;
  for (int rep = 0; rep < 3; ++rep) {
    f = fit(X, Z, threads, reg);
    best = std::min(best, f.seconds);
  }
  write_npy(out / "beta_kef.npy", f.beta);
  const double M = static_cast<double>(m * D);
  // The bound: n·M² multiply-adds. The rank-k update kef performs is (n·D) x M, of which dsyrk
  // computes the lower triangle: n·D·M²/2 multiply-adds.
  std::printf("threads %d\nfit_seconds %.6f\nbound_flops %.6g\nsyrk_flops %.6g\nbasis_size %.0f\n", threads,
              best, 2.0 * static_cast<double>(N) * M * M, static_cast<double>(N * D) * M * M, M);
  return 0;
}
