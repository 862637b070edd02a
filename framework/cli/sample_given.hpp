#pragma once
// `kef sample MODEL_DIR --given X -n N`: conditional sampling. For a saved model with a conditional
// sampler (facet ConditionalSampler), N draws of y ~ p(y | x) for every row x of the file X (the model's
// input columns, in data units), written as full rows in the data's column order (x where the data had
// its inputs, y where it had its targets), N consecutive rows per row of X. Internal to the kef command.
#include <cstdint>
#include <string>
#include <vector>

#include "kef/model_archive.hpp"
#include "kef/registry.hpp"

namespace kef_cli {

int cmd_sample_given(kef::Registry& registry, const std::string& model_dir, const std::string& given, long n,
                     const std::string& out, std::uint64_t seed, int threads, bool quiet);

// The refusal of `kef sample` without --given for a conditional model (a ConfigError saying to give
// --given, naming the model's input and target columns); nothing for an unconditional one.
void refuse_conditional_without_given(const kef::SavedModel& saved, const std::string& model_dir);

}  // namespace kef_cli
