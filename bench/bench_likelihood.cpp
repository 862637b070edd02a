// Throughput of the log_likelihood evaluator (importance sampling from q0) for a lite model.
//   bench_likelihood [U] [D] [M] [gaussian|deep] [gaussian|generalized_normal]
//   defaults 2000000 11 300 gaussian gaussian
// Fits a lite model on Gaussian data through the registry, with a Gaussian kernel (σ = 3) or DKEF's
// deep kernel (R = 3 components, L = 3 layers of width W = 30), and q0 either N(0, 2²) or DKEF's
// generalised normal (σ = 2, β = 1.5: a non-Gaussian shape, so its sampler draws gamma variates),
// then reports (lines "key value"):
//   proposals_per_second   the evaluator's own rate (best of 3, bias bound off)
//   flops_per_proposal     Gaussian: 2·D·M (the K(Y, Z) GEMM); deep: per component the network on
//                          the proposal, 2·(2·D·W + (L−1)·W²), and the feature-space Gram, 2·W·M
//   kernel_gflops          flops_per_proposal at that rate
//   seconds_per_1e9        projected time for 10⁹ proposals
//   gemm_gflops            the machine's DGEMM peak (the faster of OpenBLAS and Eigen), measured here
//   sample_per_second / model_per_second   the two halves of a proposal measured alone
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_common.hpp"
#include "kef/allocator.hpp"
#include "kef/config.hpp"
#include "kef/dataset.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"
#include "kef/registry.hpp"

using namespace kef;
using bench::Clock;
using bench::measure_gemm_gflops;
using bench::seconds_since;

namespace {



Config cfg(const std::string& text) { return Config::parse_string(text, "bench"); }

}  // namespace

int main(int argc, char** argv) {
  const Index U = argc > 1 ? std::atol(argv[1]) : 2000000;
  const Index D = argc > 2 ? std::atol(argv[2]) : 11;
  const Index M = argc > 3 ? std::atol(argv[3]) : 300;
  const std::string kernel_type = argc > 4 ? argv[4] : "gaussian";
  const std::string base_type = argc > 5 ? argv[5] : "gaussian";
  if ((kernel_type != "gaussian" && kernel_type != "deep") ||
      (base_type != "gaussian" && base_type != "generalized_normal")) {
    std::fprintf(stderr, "usage: bench_likelihood [U] [D] [M] [gaussian|deep] [gaussian|generalized_normal]\n");
    return 2;
  }
  const Index R = 3, L = 3, W = 30;  // the deep kernel's defaults (DKEF's sizes)
  const int threads = default_threads();
  kef::keep_freed_memory();  // as the kef command does (kef/allocator.hpp)
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});

  RandomStream data_rng(7, "bench-data");
  Dataset data;
  data.train = data_rng.normal_matrix(std::max<Index>(4 * M, 2000), D);
  data.test = data_rng.normal_matrix(1000, D);
  RandomStream kernel_rng(7, "kernel");
  auto kernel = kernel_type == "deep" ? reg.make_kernel(cfg("type = \"deep\""), BuildContext{D, &reg, &kernel_rng})
                                      : reg.make_kernel(cfg("type = \"gaussian\"\nsigma = 3.0"), {});
  auto base = reg.make_base_measure(base_type == "gaussian" ? cfg("type = \"gaussian\"\nstd = 2.0")
                                                           : cfg("type = \"generalized_normal\"\nstd = 2.0\nbeta = 1.5"),
                                    {});
  auto est = reg.make_estimator(cfg("type = \"lite\"\ninducing_points = " + std::to_string(M)),
                                EstimatorParts{kernel, base, &reg}, {});
  Context fit_context = Context(7, threads).child("fit");
  FitReport report;
  const Matrix empty(0, D);
  ModelPtr model = est->fit(FitInput{data.train, empty, fit_context, report});

  auto evaluator = reg.make_evaluator(
      cfg("type = \"log_likelihood\"\nmethod = \"importance\"\ncheck = \"none\"\nbias_bound = false\nsamples = " +
          std::to_string(U)),
      BuildContext{D, &reg});
  double rate = 0, log_z = 0;
  for (int rep = 0; rep < 3; ++rep) {
    Context context = Context(7, threads).child("evaluate");
    const std::string name = "lite";
    EvaluationResult r = evaluator->evaluate(EvalInput{*model, name, data, context});
    for (const auto& [k, v] : r.metrics) {
      if (k == "proposals_per_second") rate = std::max(rate, v);
      if (k == "log_normalizer") log_z = v;
    }
  }

  // The halves of a proposal alone, on 4096-proposal chunks over the same threads (best of 3).
  const Index chunk = 4096, chunks = 32 * static_cast<Index>(threads);
  const double proposals = static_cast<double>(chunks * chunk);
  const Matrix Y = RandomStream(2, "halves").normal_matrix(chunk, D) * 2.0;
  double sample_rate = 0, model_rate = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    parallel_for(chunks, threads, [&](Index c) {
      RandomStream rng = RandomStream(1, "halves").derive(static_cast<std::uint64_t>(c));
      volatile double sink = base->sample(chunk, D, rng)(0, 0);
      (void)sink;
    });
    sample_rate = std::max(sample_rate, proposals / seconds_since(t0));
    t0 = Clock::now();
    parallel_for(chunks, threads, [&](Index) {
      volatile double sink = model->log_unnormalized(Y)[0];
      (void)sink;
    });
    model_rate = std::max(model_rate, proposals / seconds_since(t0));
  }

  const double flops = kernel_type == "deep"
                           ? 2.0 * static_cast<double>(R * (2 * D * W + (L - 1) * W * W + W * M))
                           : 2.0 * static_cast<double>(D * M);
  std::printf("threads %d\nkernel %s\nbase_measure %s\nU %ld\nD %ld\nM %ld\nlog_normalizer %.6f\n", threads, kernel_type.c_str(), base_type.c_str(),
              static_cast<long>(U), static_cast<long>(D), static_cast<long>(M), log_z);
  std::printf("flops_per_proposal %.0f\nproposals_per_second %.4g\nkernel_gflops %.3f\nseconds_per_1e9 %.0f\n", flops,
              rate, rate * flops / 1e9, 1e9 / rate);
  std::printf("sample_per_second %.4g\nmodel_per_second %.4g\nmodel_gflops %.3f\n", sample_rate, model_rate,
              model_rate * flops / 1e9);
  std::printf("gemm_gflops %.3f\n", measure_gemm_gflops(threads));
  return 0;
}
