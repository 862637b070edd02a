// The kernel adaptive HMC study (experiments/kahmc): effective samples per
// target evaluation of KAHMC, random-walk Metropolis tuned to 0.234 and HMC with the exact gradient,
// on the synthetic banana and funnel in D = 2, 4, 8, over several seeds (mean ± sd).
//
//   bench_kahmc [SEEDS] [THREADS]      (defaults 3 and 2; prints a Markdown table)
//   bench_kahmc funnel [SEEDS] [THREADS]
//       why the funnel does not mix in D = 4 and 8: per sampler, split-R̂ of x0 and of the other
//       coordinates, how often the chains visit the neck and the mouth (x0 beyond the truth's 10%
//       tails, where the conditional scale of x_{1:} is below 0.28 or clipped at √10), the adapted
//       step size and the surrogate's length scale, at the study's budget and at 4x its kept draws
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

// Fraction of rows with x0 above q (the neck) and below −q (the mouth).
std::pair<double, double> tails(const Matrix& draws, double q) {
  double hi = 0, lo = 0;
  for (Index i = 0; i < draws.rows(); ++i) {
    hi += draws(i, 0) > q ? 1.0 : 0.0;
    lo += draws(i, 0) < -q ? 1.0 : 0.0;
  }
  return {hi / double(draws.rows()), lo / double(draws.rows())};
}

double rest_max(const Vector& v) { return v.size() > 1 ? v.tail(v.size() - 1).maxCoeff() : 0.0; }

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / double(v.size());
}

int funnel_diagnosis(Registry& reg, int seeds, int threads) {
  const KernelFamily kernels = [&reg](double sigma) {
    Config k = table("type = \"gaussian\"\n");
    k.set("sigma", sigma);
    return reg.make_kernel(k, BuildContext{});
  };
  // x0 ~ N(0, 2²): its 10% tails are beyond ±2·1.2816.
  const double q = 2.0 * 1.2815515655446004;
  std::printf(
      "| D | kept draws per chain | sampler | R̂ x0 | max R̂ x_{1:} | P(x0 > q) (truth 0.10) | P(x0 < −q) "
      "(truth 0.10) | step size | surrogate σ |\n|---|---|---|---|---|---|---|---|---|\n");
  for (Index D : {Index{4}, Index{8}}) {
    for (Index mult : {Index{1}, Index{4}}) {
      const Index samples = 2000 * mult;
      for (int which = 0; which < 3; ++which) {
        Stat r0, rr, neck, mouth, step, sigma;
        for (int seed = 1; seed <= seeds; ++seed) {
          const std::string keys = "type = \"synthetic/funnel\"\ndim = " + std::to_string(D) + "\nrotate = false\n";
          RandomStream target_rng(std::uint64_t(seed), "target");
          TargetPtr target = reg.make<Target>(table(keys), BuildContext{-1, &reg, &target_rng});
          Context ctx(std::uint64_t(seed), threads);
          if (which < 2) {
            KahmcOptions o;
            o.chains = 4;
            o.burn_in = 1000;
            o.warmup = 500;
            o.samples = samples;
            o.method = which == 0 ? KahmcMethod::Kahmc : KahmcMethod::RandomWalk;
            const KahmcResult r = run_kahmc(*target, kernels, ctx.rng(), o, ctx);
            r0.add(r.r_hat[0]);
            rr.add(rest_max(r.r_hat));
            const auto [hi, lo] = tails(r.samples, q);
            neck.add(hi);
            mouth.add(lo);
            step.add(which == 0 ? mean_of(r.step_size) : mean_of(r.rwm_scale));
            if (which == 0) sigma.add(mean_of(r.bandwidth));
          } else {
            BuildContext sctx;
            sctx.registry = &reg;
            DataSourcePtr source = reg.make_data_source(table(keys + "n = 10\n"), sctx);
            RandomStream data_rng(std::uint64_t(seed), "data");
            const SourceData data = source->load(data_rng);
            HmcOptions h;
            h.chains = 4;
            h.warmup = 1500;
            h.samples = samples;
            h.leapfrog_steps = 10;
            h.init = HmcInit::Points;
            RandomStream init(std::uint64_t(seed), "init");
            h.init_points = init.normal_matrix(4, D);
            HmcDiagnostics diag;
            const Matrix draws = run_hmc(*data.truth, ctx.rng(), h, ctx, &diag);
            r0.add(diag.r_hat[0]);
            rr.add(rest_max(diag.r_hat));
            const auto [hi, lo] = tails(draws, q);
            neck.add(hi);
            mouth.add(lo);
            step.add(mean_of(diag.step_size));
          }
          std::fprintf(stderr, "[bench_kahmc funnel] D=%ld x%ld sampler %d seed %d done\n", long(D), long(mult),
                       which, seed);
        }
        const char* names[] = {"KAHMC (lite)", "RWM (0.234; step = its scale)", "HMC (exact gradient)"};
        std::printf("| %ld | %ld | %s | %s | %s | %s | %s | %s | %s |\n", long(D), long(samples), names[which],
                    r0.text().c_str(), rr.text().c_str(), neck.text(1, 3).c_str(), mouth.text(1, 3).c_str(),
                    step.text(1, 3).c_str(), which == 0 ? sigma.text().c_str() : "—");
        std::fflush(stdout);
      }
    }
  }
  std::printf("\nmean ± sd over %d seeds; 4 chains; KAHMC and RWM: 1000 + 500 discarded iterations, HMC: 1500.\n",
              seeds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});
  if (argc > 1 && std::string(argv[1]) == "funnel")
    return funnel_diagnosis(reg, argc > 2 ? std::atoi(argv[2]) : 3, argc > 3 ? std::atoi(argv[3]) : 2);
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
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
