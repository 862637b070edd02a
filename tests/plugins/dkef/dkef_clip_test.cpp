// dkef's stage-1 gradient clipping (`gradient_clip_norm`, the reference code's global-norm clip at
// 100): a huge gradient is scaled to the norm with its direction kept, a small one is left alone, and
// 0 turns clipping off.
#include <gtest/gtest.h>

#include "dkef_estimator.hpp"

namespace kef::dkef {
namespace {

TEST(DkefClip, AHugeGradientIsScaledToTheNorm) {
  Vector g(4);
  g << 3e8, -4e8, 0.0, 1e-3;  // norm 5e8
  const ClippedGradient c = clip_stage1_gradient(g, 100.0);
  EXPECT_TRUE(c.clipped);
  EXPECT_NEAR(c.norm, 5e8, 1e-6);
  EXPECT_NEAR(c.gradient.norm(), 100.0, 1e-10);
  // The direction is kept: every entry scaled by the same factor.
  for (Index i = 0; i < g.size(); ++i)
    EXPECT_NEAR(c.gradient[i], g[i] * 100.0 / 5e8, 1e-12 * std::abs(g[i]) + 1e-300);
}

TEST(DkefClip, ASmallGradientOrNoClipIsUnchanged) {
  Vector g(3);
  g << 30.0, -40.0, 0.5;
  const ClippedGradient below = clip_stage1_gradient(g, 100.0);
  EXPECT_FALSE(below.clipped);
  EXPECT_EQ(below.gradient, g);
  EXPECT_DOUBLE_EQ(below.norm, g.norm());
  Vector huge = 1e12 * g;
  const ClippedGradient off = clip_stage1_gradient(huge, 0.0);
  EXPECT_FALSE(off.clipped);
  EXPECT_EQ(off.gradient, huge);
  EXPECT_DOUBLE_EQ(off.norm, huge.norm());
}

}  // namespace
}  // namespace kef::dkef
