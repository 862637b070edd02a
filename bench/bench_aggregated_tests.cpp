// Speed of MMDAgg (kef/aggregated_test.hpp) on the papers' default setting, and where its time goes.
//   bench_aggregated_tests OUTDIR [N D B REPS]
// X and Y are N x D (default 500 x 10) uniform on [0, 1]^D, Y shifted by 0.02, written to OUTDIR/x.npy
// and OUTDIR/y.npy (the rows bench/aggregated_tests_bench.py gives the NumPy reference). The Laplace and
// Gaussian collections of 10 bandwidths each, B1 = B2 = B (default 2000), B3 = 50, wild bootstrap.
// Best of REPS (default 3), wall-clock and CPU seconds, on all threads:
//   mmdagg       the library call mmd_agg as a whole;
//   and its parts, each timed alone on the same inputs: the bandwidths and distance matrices, the
//   20 kernel matrices H, the draws (the signs' bit patterns), the 20 quadratic forms wᵀHw over
//   all 1 + 2B draws as kef computes them (pattern tables), the same by the product H·W (the general
//   form, kept as the baseline), and the decision (sorting and the bisection).
// The product's flops are those of H·W over the 128-row blocks on and above the diagonal of the
// symmetric H (2 · 128 · (n − r0) · (1 + 2B) per block row); their rate is reported for both forms
// against the machine's DGEMM rate measured in the same run. Output lines are "key value".
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "bench_common.hpp"
#include "kef/aggregate_collection.hpp"
#include "kef/aggregated_test.hpp"
#include "kef/allocator.hpp"
#include "kef/context.hpp"
#include "kef/npy.hpp"

using namespace kef;

namespace {

double cpu_seconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct Timing {
  double wall = 1e30, cpu = 1e30;
};

Timing best_of(int reps, const std::function<void()>& f) {
  Timing t;
  for (int r = 0; r < reps; ++r) {
    const double c0 = cpu_seconds();
    const auto t0 = bench::Clock::now();
    f();
    t.wall = std::min(t.wall, bench::seconds_since(t0));
    t.cpu = std::min(t.cpu, cpu_seconds() - c0);
  }
  return t;
}

void print(const char* key, const Timing& t) {
  std::printf("%s_seconds %.6g\n%s_cpu_seconds %.6g\n", key, t.wall, key, t.cpu);
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_aggregated_tests OUTDIR [N D B REPS]\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const Index n = argc > 2 ? std::atol(argv[2]) : 500, D = argc > 3 ? std::atol(argv[3]) : 10;
  const Index B = argc > 4 ? std::atol(argv[4]) : 2000;
  const int reps = argc > 5 ? std::atoi(argv[5]) : 3;
  const int threads = default_threads();
  RandomStream data(1, "bench-aggregated");
  Matrix X(n, D), Y(n, D);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < D; ++j) X(i, j) = data.uniform();
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < D; ++j) Y(i, j) = data.uniform() + 0.02;
  std::filesystem::create_directories(out);
  write_npy(out / "x.npy", X);
  write_npy(out / "y.npy", Y);

  AggregateOptions o;  // laplace_gaussian, 10 bandwidths, uniform weights, B3 = 50
  o.bootstrap_draws = o.level_draws = B;
  const Context context(1, threads);
  AggregatedTest result;
  const Timing whole = best_of(reps, [&] {
    RandomStream rng(2, "mmdagg");
    result = mmd_agg(X, Y, o, rng, context);
  });

  // The parts, as mmd_agg does them (each H only on and above its diagonal, as quadratic_forms reads it).
  const auto kernels = parse_aggregate_kernels(o.kernels, "kernels");
  std::vector<std::vector<double>> bandwidths;
  std::vector<Matrix> Dxx(kernels.size()), Dyy(kernels.size()), Dxy(kernels.size()), Dyx(kernels.size());
  const Timing distances = best_of(reps, [&] {
    bandwidths.clear();
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      bandwidths.push_back(mmdagg_bandwidths(X, Y, kernels[k].distance, o.bandwidths));
      Dxx[k] = pairwise_distances(X, X, kernels[k].distance);
      Dyy[k] = pairwise_distances(Y, Y, kernels[k].distance);
      Dxy[k] = pairwise_distances(X, Y, kernels[k].distance);
      Dyx[k] = Dxy[k].transpose();
    }
  });
  std::vector<Matrix> H(kernels.size() * static_cast<std::size_t>(o.bandwidths));
  const Timing kernel_matrices = best_of(reps, [&] {
    for (std::size_t k = 0; k < kernels.size(); ++k)
      for (Index r = 0; r < o.bandwidths; ++r)
        wild_bootstrap_mmd_matrix(
            kernels[k], bandwidths[k][static_cast<std::size_t>(r)], Dxx[k], Dyy[k], Dxy[k], Dyx[k],
            H[k * static_cast<std::size_t>(o.bandwidths) + static_cast<std::size_t>(r)], context);
  });
  // The product's form reads the whole of H: its lower triangle mirrored from the upper one.
  std::vector<Matrix> full(H.size());
  for (std::size_t t = 0; t < H.size(); ++t)
    full[t] = H[t].triangularView<Eigen::Upper>().toDenseMatrix() +
              H[t].triangularView<Eigen::StrictlyUpper>().toDenseMatrix().transpose();
  TwoValuedDraws patterns;
  const Timing draws = best_of(reps, [&] {
    RandomStream rng(2, "mmdagg");
    patterns = rademacher_patterns(n, 2 * B, rng);
  });
  RandomStream again(2, "mmdagg");
  const Matrix W = rademacher_draws(n, 2 * B, again);  // the product's form needs the signs as doubles
  Matrix tables(static_cast<Index>(H.size()), W.cols()), product(static_cast<Index>(H.size()), W.cols());
  const Timing forms = best_of(reps, [&] {
    for (std::size_t t = 0; t < H.size(); ++t)
      tables.row(static_cast<Index>(t)) = quadratic_forms(H[t], patterns, context).transpose();
  });
  const Timing gemm_forms = best_of(reps, [&] {
    for (std::size_t t = 0; t < H.size(); ++t)
      product.row(static_cast<Index>(t)) = quadratic_forms(full[t], W, context).transpose();
  });
  const double scale = std::max(1.0, product.cwiseAbs().maxCoeff());
  std::vector<double> weights;
  for (const SingleTest& s : result.tests) weights.push_back(s.weight);
  const Matrix simulated = tables / (static_cast<double>(n) * static_cast<double>(n - 1));
  const Timing decision =
      best_of(reps, [&] { aggregate_decision(simulated, weights, o.alpha, B, B, o.bisection_steps); });

  double flops = 0;
  for (Index r0 = 0; r0 < n; r0 += 128)
    flops += 2.0 * static_cast<double>(std::min<Index>(128, n - r0) * (n - r0));
  flops *= static_cast<double>(W.cols()) * static_cast<double>(H.size());
  const double gemm = bench::measure_gemm_gflops(threads);
  std::printf("threads %d\nrows %ld\ndimension %ld\nsingle_tests %zu\ndraws %ld\n", threads,
              static_cast<long>(n), static_cast<long>(D), H.size(), static_cast<long>(W.cols()));
  std::printf("reject %d\n", result.reject ? 1 : 0);
  print("mmdagg", whole);
  print("distances", distances);
  print("kernel_matrices", kernel_matrices);
  print("draws", draws);
  print("products", forms);
  print("gemm_products", gemm_forms);
  print("decision", decision);
  std::printf("tables_vs_gemm_max_difference %.3g\n", (tables - product).cwiseAbs().maxCoeff() / scale);
  std::printf("product_flops %.6g\n", flops);
  std::printf("products_gflops %.4g\ngemm_products_gflops %.4g\n", flops / forms.wall / 1e9,
              flops / gemm_forms.wall / 1e9);
  std::printf("gemm_gflops %.4g\n", gemm);
  std::printf("products_vs_dgemm %.3g\ngemm_products_vs_dgemm %.3g\n", flops / forms.wall / 1e9 / gemm,
              flops / gemm_forms.wall / 1e9 / gemm);
  return 0;
}
