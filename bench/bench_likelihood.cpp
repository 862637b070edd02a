// Throughput of the log_likelihood evaluator (importance sampling from q0) for a lite model.
//   bench_likelihood [U] [D] [M]   defaults 2000000 11 300
// Fits a lite model on Gaussian data through the registry, then reports (lines "key value"):
//   proposals_per_second   the evaluator's own rate (best of 3, bias bound off)
//   kernel_gflops          2·D·M flops per proposal (the K(Y, Z) GEMM) at that rate
//   gemm_gflops            the machine's DGEMM rate, measured here, split the way kef splits work
//   sample_per_second / model_per_second   the two halves of a proposal measured alone
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench_common.hpp"
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
  const int threads = default_threads();
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});

  RandomStream data_rng(7, "bench-data");
  Dataset data;
  data.train = data_rng.normal_matrix(std::max<Index>(4 * M, 2000), D);
  data.test = data_rng.normal_matrix(1000, D);
  auto kernel = reg.make_kernel(cfg("type = \"gaussian\"\nsigma = 3.0"), {});
  auto base = reg.make_base_measure(cfg("type = \"gaussian\"\nstd = 2.0"), {});
  auto est = reg.make_estimator(cfg("type = \"lite\"\ninducing_points = " + std::to_string(M)),
                                EstimatorParts{kernel, base, &reg}, {});
  auto progress = make_silent_progress();
  RandomStream fit_rng(7, "fit");
  FitReport report;
  const Matrix empty(0, D);
  ModelPtr model = est->fit(FitInput{data.train, empty, fit_rng, *progress, threads, report});

  auto evaluator = reg.make_evaluator(
      cfg("type = \"log_likelihood\"\nbias_bound = false\nsamples = " + std::to_string(U)), BuildContext{D, &reg});
  double rate = 0, log_z = 0;
  for (int rep = 0; rep < 3; ++rep) {
    RandomStream rng(7, "evaluate");
    const std::string name = "lite";
    EvaluationResult r = evaluator->evaluate(EvalInput{*model, name, data, rng, *progress, threads});
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

  const double flops = 2.0 * static_cast<double>(D * M);
  std::printf("threads %d\nU %ld\nD %ld\nM %ld\nlog_normalizer %.6f\n", threads, static_cast<long>(U),
              static_cast<long>(D), static_cast<long>(M), log_z);
  std::printf("proposals_per_second %.4g\nkernel_gflops %.3f\n", rate, rate * flops / 1e9);
  std::printf("sample_per_second %.4g\nmodel_per_second %.4g\nmodel_gflops %.3f\n", sample_rate, model_rate,
              model_rate * flops / 1e9);
  std::printf("gemm_gflops %.3f\n", measure_gemm_gflops(threads));
  return 0;
}
