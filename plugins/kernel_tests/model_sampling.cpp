#include "model_sampling.hpp"

#include <cmath>

#include "kef/base_measure.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/number_text.hpp"

namespace kef::kernel_tests {

ModelSampling::ModelSampling(const ModelSamplingOptions& o, const KeySites& sites)
    : init_from_train_(o.hmc_init == "train"), sites_(sites) {
  hmc_.chains = o.hmc_chains;
  hmc_.warmup = o.hmc_warmup;
  hmc_.leapfrog_steps = o.hmc_leapfrog_steps;
  hmc_.step_size = o.hmc_step_size;
  hmc_.target_acceptance = o.hmc_target_acceptance;
  hmc_.step_size_jitter = o.hmc_step_size_jitter;
  hmc_.thinning = o.hmc_thinning;
  hmc_.adapt_mass = o.hmc_adapt_mass;
  hmc_.chains_per_batch = o.hmc_chains_per_batch;
}

void ModelSampling::check_model(const DataShape& data, const PlannedModel& model) const {
  if (!model.facets || model.facets->has(Facet::Sampler) || model.facets->has(Facet::ApproximateSampler))
    return;
  if (init_from_train_) {
    if (data.train_rows == 0) sites_.fail("hmc_init", "the training split is empty; use \"base_measure\"");
  } else if (!model.facets->has(Facet::BaseMeasureRatio)) {
    sites_.fail("hmc_init",
                "model " + model.name + " has no base measure that can be sampled; use \"train\"");
  }
}

ModelSamples ModelSampling::draw(const EvalInput& in, Index n, const std::string& who) const {
  HmcOptions o = hmc_;
  o.progress = &in.context.progress();
  o.progress_task = who + " " + in.model_name + ": HMC";
  o.context = "model " + in.model_name + " (evaluator " + who + ")";
  if (!in.model.can_sample() && init_from_train_) {
    if (in.data.train_count() == 0)
      sites_.fail("hmc_init", "the training split is empty; use \"base_measure\"");
    o.init = HmcInit::Points;
    o.init_rows = in.data.training();  // only the chains' starting rows are read
  } else if (!in.model.can_sample()) {
    const BaseMeasure* base = in.model.base_measure();
    if (!base || !base->can_sample())
      sites_.fail("hmc_init",
                  "model " + in.model_name + " has no base measure that can be sampled; use \"train\"");
    o.init = HmcInit::BaseMeasure;
  }
  ModelSamples out;
  RandomStream rng = in.context.rng().derive("samples");
  out.rows = draw_samples(in.model, n, rng, o, in.context, &out.diagnostics);
  check_finite(out.rows, who + ": samples of model " + in.model_name);
  return out;
}

std::string ModelSampling::approximate_sampler_warning(const std::string& model_name) {
  return "model samples from the approximate sampler of model " + model_name +
         " (draws from its learned q, not from p~): the test measures the sampler, not the density";
}

void ModelSampling::report(const ModelSamples& samples, Index n, const std::string& model_name,
                           std::vector<std::string>& notes,
                           std::vector<std::pair<std::string, double>>* metrics) {
  const HmcDiagnostics& diag = samples.diagnostics;
  if (!diag.ran && diag.approximate) {
    // The numbers describe the sampler network, not the density: say so wherever they are read.
    if (metrics) metrics->emplace_back("sampler_approximate", 1.0);
    notes.push_back("warning: " + approximate_sampler_warning(model_name));
    return;
  }
  if (!diag.ran) {
    notes.push_back("model samples from the model's exact sampler");
    return;
  }
  if (metrics) {
    metrics->emplace_back("hmc_acceptance", diag.mean_acceptance());
    if (std::isfinite(diag.min_ess())) metrics->emplace_back("hmc_min_ess", diag.min_ess());
    if (std::isfinite(diag.max_r_hat())) metrics->emplace_back("hmc_max_rhat", diag.max_r_hat());
    metrics->emplace_back("hmc_divergences", static_cast<double>(diag.total_divergences()));
  }
  notes.push_back("model samples by " + diag.summary());
  // The permutation null assumes independent draws; autocorrelated ones make p-values too small.
  if (!(diag.min_ess() >= 0.5 * static_cast<double>(n)))
    notes.push_back("HMC min ESS " + number_text(diag.min_ess(), 4) + " is below half of the " +
                    std::to_string(n) +
                    " samples: the p-values (which assume independent samples) may be too small; raise "
                    "hmc_thinning or hmc_leapfrog_steps");
  if (!diag.stuck_chains().empty())
    notes.push_back(
        "warning: HMC chains that accepted no proposal after warm-up: " + diag.stuck_chains_text() +
        "; each one's draws are a single point, so the samples do not represent the model");
  if (diag.total_divergences() > 0)
    notes.push_back(std::to_string(diag.total_divergences()) +
                    " HMC divergences after warm-up: the samples may miss regions of the model");
  if (std::isfinite(diag.max_r_hat()) && diag.max_r_hat() > 1.05)
    notes.push_back("HMC split-R^ " + number_text(diag.max_r_hat(), 4) +
                    " > 1.05: chains disagree; raise hmc_warmup");
}

}  // namespace kef::kernel_tests
