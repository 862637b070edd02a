// The kernel adaptive HMC study of the README ("Gradient-free sampling"): effective samples per
// target evaluation of KAHMC, random-walk Metropolis tuned to 0.234 and HMC with the exact gradient,
// on the synthetic banana and funnel in D = 2, 4, 8, over several seeds (mean ± sd).
//
//   bench_kahmc [SEEDS] [THREADS]      (defaults 3 and 2; prints a Markdown table)
//
// Accounting. KAHMC and random-walk Metropolis evaluate the target's log density once per iteration
// (plus once at each chain's start); KAHMC's leapfrog steps use the surrogate's score, which costs no
// target evaluation. HMC evaluates the exact score once per leapfrog step and log p once per
// iteration (plus both at the start); a gradient evaluation is counted as one evaluation, as a
// density evaluation is. Every iteration is counted, burn-in and warm-up included. ESS is the
// minimum over coordinates of the split-chain ESS that `kef sample` reports, over all chains.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kef/allocator.hpp"
#include "kef/data_source.hpp"
#include "kef/hmc.hpp"
#include "kef/kahmc.hpp"
#include "kef/registry.hpp"
#include "kef/target.hpp"

namespace {

using namespace kef;

struct Stat {
  std::vector<double> v;
  void add(double x) { v.push_back(x); }
  double mean() const {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  }
  double sd() const {
    if (v.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
  }
  std::string text(double scale = 1, int digits = 2) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f ± %.*f", digits, mean() * scale, digits, sd() * scale);
    return buf;
  }
};

struct Row {
  Stat kahmc, nys, rwm, hmc;                      // ESS per 1000 evaluations
  Stat kahmc_acc, nys_acc, rwm_acc, hmc_acc;      // acceptance
  Stat kahmc_rhat, nys_rhat, rwm_rhat, hmc_rhat;  // max split-R̂
  Stat kahmc_refits;                              // refits per chain
};

Config table(const std::string& text) { return Config::parse_string(text, "bench_kahmc"); }

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});
  const KernelFamily kernels = [&reg](double sigma) {
    Config k = table("type = \"gaussian\"\n");
    k.set("sigma", sigma);
    return reg.make_kernel(k, BuildContext{});
  };
  // The same iteration budget for the three samplers: 4 chains x (1000 + 500 + 2000).
  const Index chains = 4, burn_in = 1000, warmup = 500, samples = 2000, leapfrog = 10;

  std::printf(
      "| target | D | KAHMC (lite) | KAHMC (Nyström) | RWM (0.234) | HMC (exact gradient) | acceptance lite "
      "/ "
      "Nyström / RWM / HMC | max R̂ lite / Nyström / RWM / HMC | refits per chain (lite) |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const char* name : {"banana", "funnel"}) {
    for (Index D : {Index{2}, Index{4}, Index{8}}) {
      Row row;
      const std::string keys =
          "type = \"synthetic/" + std::string(name) + "\"\ndim = " + std::to_string(D) + "\nrotate = false\n";
      for (int seed = 1; seed <= seeds; ++seed) {
        RandomStream target_rng(std::uint64_t(seed), "target");
        TargetPtr target = reg.make<Target>(table(keys), BuildContext{-1, &reg, &target_rng});
        KahmcOptions o;
        o.chains = chains;
        o.burn_in = burn_in;
        o.warmup = warmup;
        o.samples = samples;
        o.leapfrog_steps = leapfrog;
        {
          Context ctx(std::uint64_t(seed), threads);
          const KahmcResult r = run_kahmc(*target, kernels, ctx.rng(), o, ctx);
          row.kahmc.add(r.min_ess() / double(r.target_evaluations));
          row.kahmc_acc.add(r.mean_acceptance());
          row.kahmc_rhat.add(r.max_r_hat());
          row.kahmc_refits.add(double(r.total_refits()) / double(chains));
        }
        {
          o.surrogate = KahmcSurrogate::Nystrom;
          Context ctx(std::uint64_t(seed), threads);
          const KahmcResult r = run_kahmc(*target, kernels, ctx.rng(), o, ctx);
          row.nys.add(r.min_ess() / double(r.target_evaluations));
          row.nys_acc.add(r.mean_acceptance());
          row.nys_rhat.add(r.max_r_hat());
          o.surrogate = KahmcSurrogate::Lite;
        }
        {
          o.method = KahmcMethod::RandomWalk;
          Context ctx(std::uint64_t(seed), threads);
          const KahmcResult r = run_kahmc(*target, kernels, ctx.rng(), o, ctx);
          row.rwm.add(r.min_ess() / double(r.target_evaluations));
          row.rwm_acc.add(r.mean_acceptance());
          row.rwm_rhat.add(r.max_r_hat());
        }
        {
          BuildContext sctx;
          sctx.registry = &reg;
          DataSourcePtr source = reg.make_data_source(table(keys + "n = 10\n"), sctx);
          RandomStream data_rng(std::uint64_t(seed), "data");
          const SourceData data = source->load(data_rng);
          HmcOptions h;
          h.chains = chains;
          h.warmup = burn_in + warmup;
          h.samples = samples;
          h.leapfrog_steps = leapfrog;
          h.init = HmcInit::Points;
          RandomStream init(std::uint64_t(seed), "init");
          h.init_points = init.normal_matrix(chains, D);  // N(0, I) starts, as KAHMC's
          Context ctx(std::uint64_t(seed), threads);
          HmcDiagnostics diag;
          run_hmc(*data.truth, ctx.rng(), h, ctx, &diag);
          // Start: log p and score; per iteration: a score per leapfrog step and log p at the end.
          const double evaluations =
              double(chains) * (2.0 + double(h.warmup + h.samples) * double(leapfrog + 1));
          row.hmc.add(diag.min_ess() / evaluations);
          row.hmc_acc.add(diag.mean_acceptance());
          row.hmc_rhat.add(diag.max_r_hat());
        }
        std::fprintf(stderr, "[bench_kahmc] %s D=%ld seed %d done\n", name, long(D), seed);
      }
      std::printf(
          "| %s | %ld | %s | %s | %s | %s | %.2f / %.2f / %.2f / %.2f | %.3f / %.3f / %.3f / %.3f | %.0f |\n",
          name, long(D), row.kahmc.text(1000).c_str(), row.nys.text(1000).c_str(), row.rwm.text(1000).c_str(),
          row.hmc.text(1000).c_str(), row.kahmc_acc.mean(), row.nys_acc.mean(), row.rwm_acc.mean(),
          row.hmc_acc.mean(), row.kahmc_rhat.mean(), row.nys_rhat.mean(), row.rwm_rhat.mean(),
          row.hmc_rhat.mean(), row.kahmc_refits.mean());
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nESS per 1000 target evaluations (min over coordinates), mean ± sd over %d seeds; "
      "%ld chains x (%ld + %ld + %ld) iterations; HMC: %ld leapfrog steps, a gradient counted as "
      "one evaluation.\n",
      seeds, long(chains), long(burn_in), long(warmup), long(samples), long(leapfrog));
  return 0;
}
