// Lite fit speed and memory.
//   bench_lite fit N D M OUTDIR   fits (and writes train.npy / inducing.npy for the NumPy anchor)
//   bench_lite gemm               the machine's DGEMM rate with Eigen on all threads (GFLOP/s)
//   bench_lite memory N D M       fit only; the caller reads peak RSS
// Output lines are "key value" for bench/run.sh to parse.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench_common.hpp"
#include "kef/allocator.hpp"
#include "kef/config.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_system.hpp"
#include "kef/npy.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"
#include "kef/registry.hpp"

using namespace kef;
using bench::Clock;
using bench::measure_gemm_gflops;
using bench::seconds_since;

namespace {

struct Fit {
  double seconds;
  Vector alpha;
};

Fit fit(const Matrix& X, const Matrix& Z, int threads, Registry& reg) {
  auto kernel = reg.make_kernel(Config::parse_string("type = \"gaussian\"\nsigma = 2.0", "bench"), {});
  auto base = reg.make_base_measure(Config::parse_string("type = \"gaussian\"\nstd = 3.0", "bench"), {});
  LiteAccumulateOptions opt;
  opt.need_U = true;
  auto t0 = Clock::now();
  LiteSystem sys = accumulate_lite_system(*kernel, *base, X, Z, opt, Context(1, threads));
  LiteSolution sol = solve_lite_system(sys, Matrix(), 1e-3, 0.0, 1e-3);
  return {seconds_since(t0), sol.alpha};
}

}  // namespace

int main(int argc, char** argv) {
  kef::keep_freed_memory();  // as the kef command does (kef/allocator.hpp)
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_lite fit N D M OUTDIR | gemm | memory N D M\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int threads = default_threads();
  if (mode == "gemm") {
    std::printf("threads %d\ngemm_gflops %.3f\n", threads, measure_gemm_gflops(threads));
    // Not a key/value line: the sentence says which library computes kef's syrk/gemm hot loops.
    std::printf("products: %s\n", product_backend_description().c_str());
    return 0;
  }
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});
  const Index N = std::atol(argv[2]), D = std::atol(argv[3]), M = std::atol(argv[4]);
  RandomStream rng(7, "bench-data");
  Matrix X = rng.normal_matrix(N, D);
  Matrix Z = X.topRows(M);
  if (mode == "memory") {
    Fit f = fit(X, Z, threads, reg);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf("fit_seconds %.6f\ndata_mb %.3f\npeak_rss_mb %.3f\n", f.seconds, N * D * 8.0 / 1e6,
                ru.ru_maxrss / 1024.0);
    return 0;
  }
  const std::filesystem::path out = argv[5];
  std::filesystem::create_directories(out);
  write_npy(out / "train.npy", X);
  write_npy(out / "inducing.npy", Z);
  fit(X, Z, threads, reg);  // warm-up
  double best = 1e30;
  Fit f;
  for (int rep = 0; rep < 3; ++rep) {
    f = fit(X, Z, threads, reg);
    best = std::min(best, f.seconds);
  }
  write_npy(out / "alpha_kef.npy", f.alpha);
  const double flops = 2.0 * N * D * static_cast<double>(M) * M;
  std::printf("threads %d\nfit_seconds %.6f\nsyrk_flops %.6g\nachieved_gflops %.3f\n", threads, best, flops,
              flops / best / 1e9);
  return 0;
}
