// Bayesian kernel learning's marginal pseudolikelihood (docs/math.md §9): value, and value with the
// gradient in (log ℓ, log τ²), at n rows, D dimensions, m landmarks; then the fixed-τ² (τ² = 1) mode.
//   bench_bkl N D M OUT_DIR [--threads T] [--evals E]
// Data: a two-scale mixture like the NumPy anchor's (10 clusters, centres N(0, 4² I), within-cluster sd
// 0.3), N data rows and M landmark rows, written to OUT_DIR/X.npy and OUT_DIR/Z.npy so bench/run.sh can
// time bkl_numpy.py on the same rows. Prints medians over E calls at (ℓ_med, τ² = 0.01), as the anchor.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kef/context.hpp"
#include "kef/kernel_learning.hpp"
#include "kef/linalg.hpp"
#include "kef/npy.hpp"

using namespace kef;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_bkl N D M OUT_DIR [--threads T] [--evals E]\n");
    return 2;
  }
  const Index n = std::atol(argv[1]), D = std::atol(argv[2]), m = std::atol(argv[3]);
  const std::filesystem::path out = argv[4];
  int threads = 2, evals = 20;
  for (int i = 5; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    if (a == "--evals") evals = std::atoi(argv[i + 1]);
  }
  RandomStream rng(0, "bench_bkl");
  const Matrix centres = 4.0 * rng.normal_matrix(10, D);
  Matrix XZ = 0.3 * rng.normal_matrix(n + m, D);
  for (Index i = 0; i < n + m; ++i) XZ.row(i) += centres.row(static_cast<Index>(rng.uniform_int(10)));
  const Matrix X = XZ.topRows(n), Z = XZ.bottomRows(m);
  std::filesystem::create_directories(out);
  write_npy(out / "X.npy", X);
  write_npy(out / "Z.npy", Z);
  std::printf("n %ld D %ld m %ld threads %d\n", static_cast<long>(n), static_cast<long>(D),
              static_cast<long>(m), threads);

  const Context ctx(0, threads);
  auto t0 = bench::Clock::now();
  const BklPseudolikelihood L(X, Z);
  std::printf("setup_seconds %.6f\n", bench::seconds_since(t0));
  const double lmed = median_pairwise_distance(X, 2000);
  const double a = std::log(lmed), b = std::log(0.01);
  for (const bool grad : {false, true}) {
    std::vector<double> ts;
    Vector g(2);
    double v = 0;
    for (int e = 0; e < evals; ++e) {
      t0 = bench::Clock::now();
      v = L.value(a, b, grad ? &g : nullptr, ctx);
      ts.push_back(bench::seconds_since(t0));
    }
    std::sort(ts.begin(), ts.end());
    std::printf("%s %.6f\n", grad ? "seconds_per_eval_grad" : "seconds_per_eval", ts[ts.size() / 2]);
    if (!std::isfinite(v)) std::printf("warning: log L not finite at the timing point\n");
  }
  std::printf("median_lengthscale %.6g\n", lmed);

  BklOptions o;
  o.landmark_points = Z;
  o.tau2 = 1.0;
  t0 = bench::Clock::now();
  try {
    const BklResult r = bkl_bandwidth(X, o, ctx);
    std::printf("fixed_tau2_opt_seconds %.3f\n", bench::seconds_since(t0));
    std::printf("fixed_tau2_opt_evals %ld\n", static_cast<long>(r.evaluations));
    std::printf("fixed_tau2_opt_lengthscale %.6g\n", r.sigma);
    std::printf("fixed_tau2_opt_loglik %.10g\n", r.log_likelihood);
  } catch (const std::exception& e) {
    std::printf("fixed_tau2_opt_error %s\n", e.what());
  }
  return 0;
}
