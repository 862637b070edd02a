#include "dde_parts.hpp"

namespace kef::dde {

namespace {

std::optional<Index> read(const Config& cfg, const char* key) {
  if (!cfg.has(key)) return std::nullopt;
  return static_cast<Index>(cfg.integer(key));
}

}  // namespace

KeyList relu_sampler_keys() {
  return {
      KeySpec::integer("noise_dim", "dimension of ξ ~ N(0, I) (default: the estimator's noise_dim)")
          .optional()
          .at_least(1),
      KeySpec::integer("width", "hidden units of every hidden layer of g (default: the estimator's width)")
          .optional()
          .at_least(1),
      KeySpec::integer("depth", "linear layers of g (default: the estimator's generator_depth)")
          .optional()
          .at_least(1)};
}

KeyList relu_dual_keys() {
  return {
      KeySpec::integer("width", "hidden units of every hidden layer of ν (default: the estimator's width)")
          .optional()
          .at_least(1),
      KeySpec::integer("depth", "linear layers of ν (default: the estimator's dual_depth)")
          .optional()
          .at_least(1)};
}

ReluSampler::ReluSampler(const Config& cfg) {
  noise_dim = read(cfg, "noise_dim");
  width = read(cfg, "width");
  depth = read(cfg, "depth");
  sites = KeySites(cfg);
}

ReluDual::ReluDual(const Config& cfg) {
  width = read(cfg, "width");
  depth = read(cfg, "depth");
  sites = KeySites(cfg);
}

}  // namespace kef::dde
