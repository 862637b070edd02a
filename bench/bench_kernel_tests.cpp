// Speed of the kernel two-sample (MMD) and independence (HSIC) permutation tests, the same work as
// bench/kernel_tests_numpy.py.
//   bench_kernel_tests N D PERMUTATIONS OUTDIR [REPS]
// Writes OUTDIR/X.npy and OUTDIR/Y.npy (N x D each, standard normal; Y shifted by 0.1), then times on all
// threads (best of REPS, default 3): mmd_test of X against Y (2N pooled rows) and hsic_test of the pairs
// (x_i, y_i), Gaussian kernels with σ = the pooled median distance, PERMUTATIONS permutations and the
// Gamma approximation. Output lines are "key value" for bench/run.sh to parse.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench_common.hpp"
#include "kef/allocator.hpp"
#include "kef/bandwidth_rule.hpp"
#include "kef/config.hpp"
#include "kef/context.hpp"
#include "kef/hsic_test.hpp"
#include "kef/mmd_test.hpp"
#include "kef/npy.hpp"
#include "kef/registry.hpp"

using namespace kef;

int main(int argc, char** argv) {
  keep_freed_memory();
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_kernel_tests N D PERMUTATIONS OUTDIR [REPS]\n");
    return 2;
  }
  const Index N = std::atol(argv[1]), D = std::atol(argv[2]), P = std::atol(argv[3]);
  const std::filesystem::path out = argv[4];
  const int reps = argc > 5 ? std::atoi(argv[5]) : 3;
  const int threads = default_threads();
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});
  RandomStream rng(1, "bench-kernel-tests");
  const Matrix X = rng.normal_matrix(N, D);
  const Matrix Y = (rng.normal_matrix(N, D).array() + 0.1).matrix();
  std::filesystem::create_directories(out);
  write_npy(out / "X.npy", X);
  write_npy(out / "Y.npy", Y);
  const double sigma = choose_bandwidth(BandwidthRule{}, X, Y, "bench", Context(1, 1)).sigma;
  char text[96];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", sigma);
  const KernelPtr k = reg.make_kernel(Config::parse_string(text, "bench"), {});
  const Context context(1, threads);

  double mmd_best = 1e30, hsic_best = 1e30;
  MmdTest m;
  HsicTest h;
  for (int r = 0; r < reps; ++r) {
    auto t0 = bench::Clock::now();
    RandomStream prng(2, "perm");
    m = mmd_test(*k, X, Y, P, prng, context);
    mmd_best = std::min(mmd_best, bench::seconds_since(t0));
    t0 = bench::Clock::now();
    h = hsic_test(*k, *k, X, Y, P, RandomStream(3, "perm"), context);
    hsic_best = std::min(hsic_best, bench::seconds_since(t0));
  }
  const double pooled = 2.0 * static_cast<double>(N);
  std::printf("threads %d\n", threads);
  std::printf("sigma %.17g\n", sigma);
  std::printf("mmd2_unbiased %.17g\nmmd2_biased %.17g\nmmd_pvalue %.6g\nmmd_gamma_pvalue %.6g\n", m.mmd2,
              m.mmd2_biased, m.p_value, m.gamma_p_value);
  std::printf("hsic %.17g\nhsic_unbiased %.17g\nhsic_pvalue %.6g\nhsic_gamma_pvalue %.6g\n", h.hsic,
              h.hsic_unbiased, h.p_value, h.gamma_p_value);
  std::printf("mmd_seconds %.6g\nhsic_seconds %.6g\n", mmd_best, hsic_best);
  // The MMD null's one product K·A over all labellings: 2 (2N)² (P + 1) flops.
  std::printf("mmd_product_flops %.6g\n", 2 * pooled * pooled * static_cast<double>(P + 1));
  // HSIC: N(N + 1)/2 gathered multiply-adds per permutation (symmetry), P + 1 statistics.
  const double terms = static_cast<double>(N) * static_cast<double>(N + 1) / 2 * static_cast<double>(P + 1);
  std::printf("hsic_terms %.6g\nhsic_ns_per_term %.4g\n", terms, hsic_best / terms * 1e9);
  std::printf("gemm_gflops %.4g\n", bench::measure_gemm_gflops(threads));
  return 0;
}
