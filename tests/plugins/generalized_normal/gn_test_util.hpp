#pragma once
// Builds the generalised normal base measure directly from TOML keys (validated like the registry does).
#include <memory>
#include <string>

#include "generalized_normal_base_measure.hpp"
#include "test_support.hpp"

namespace kef::generalized_normal::test_util {

inline std::unique_ptr<GeneralizedNormalBaseMeasure> make(const std::string& keys, Index dim = -1) {
  Config cfg = kef::test::config_from("type = \"generalized_normal\"\n" + keys);
  cfg.validate(generalized_normal::keys());
  BuildContext ctx;
  ctx.dim = dim;
  return std::make_unique<GeneralizedNormalBaseMeasure>(cfg, ctx);
}

}  // namespace kef::generalized_normal::test_util
