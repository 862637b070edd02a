// draw_samples with a sample count near the Index maximum: kef 0.2 computed ceil(n / chains) as
// (n + chains - 1) / chains, which overflows (UBSan, hmc.cpp) and let a too-small `samples` option
// through; `kef sample -n 9223372036854775807` then reported a negative sample count.
#include <gtest/gtest.h>

#include <limits>

#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "test_models.hpp"

namespace kef {
namespace {

TEST(HmcSampleCount, ACountNearTheIndexMaximumIsRefusedBeforeItsArithmeticCanOverflow) {
  const test::GaussianModel model(Vector::Zero(2), Matrix::Identity(2, 2));  // no exact sampler: HMC
  HmcOptions o;
  o.chains = 4;
  o.samples = 1;
  o.init_points = Matrix::Zero(1, 2);
  RandomStream rng(1, "count");
  const Index n = std::numeric_limits<Index>::max();
  try {
    (void)draw_samples(model, n, rng, o, Context(1, 0));
    ADD_FAILURE() << "accepted 1 draw per chain for " << n << " samples";
  } catch (const ConfigError& e) {
    // The count is bounded (2^40) before any per-chain arithmetic could overflow.
    EXPECT_NE(std::string(e.what()).find("the number of samples must be at most 1099511627776, got "
                                         "9223372036854775807"),
              std::string::npos)
        << e.what();
  }
  // The exact ceiling at small counts is unchanged: 10 samples from 4 chains need 3 draws each.
  o.samples = 2;
  EXPECT_THROW((void)draw_samples(model, 10, rng, o, Context(1, 0)), ConfigError);
  o.samples = 3;
  o.warmup = 10;
  EXPECT_EQ(draw_samples(model, 10, rng, o, Context(1, 0)).rows(), 10);
}

}  // namespace
}  // namespace kef
