// Radial kernels expose k(x, y) = φ(‖x − y‖²): φ must reproduce the kernel, and φ', φ'' must be the
// derivatives of φ (central differences in r), for every kernel that claims the form.
#include <gtest/gtest.h>

#include "kef/kernel.hpp"
#include "kef/linalg.hpp"
#include "kef/registry.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

const char* kRadialKernels[] = {"type = \"gaussian\"\nsigma = 0.8", "type = \"imq\"\nc = 0.7\nbeta = -0.5",
                                "type = \"imq\"\nc = 1.5\nbeta = -1.7"};

TEST(RadialProfile, ReproducesTheKernel) {
  for (const char* toml : kRadialKernels) {
    auto kernel = test::plugin_registry().make_kernel(test::config_from(toml), {});
    const RadialProfile* profile = kernel->radial_profile();
    ASSERT_NE(profile, nullptr) << toml;
    auto p = test::random_points(7, 5, 3, 4, "radial-profile");
    Matrix phi;
    profile->evaluate(squared_distances(p.X, p.Y), &phi, nullptr, nullptr);
    const Matrix K = kernel->gram(p.X, p.Y);
    EXPECT_LT((phi - K).cwiseAbs().maxCoeff(), 1e-14 * K.cwiseAbs().maxCoeff()) << toml;
  }
}

TEST(RadialProfile, DerivativesMatchCentralDifferences) {
  const double h = 1e-5;
  for (const char* toml : kRadialKernels) {
    auto kernel = test::plugin_registry().make_kernel(test::config_from(toml), {});
    const RadialProfile* profile = kernel->radial_profile();
    ASSERT_NE(profile, nullptr) << toml;
    Matrix r(1, 6);
    r << 0.01, 0.3, 0.9, 1.7, 3.2, 6.0;
    Matrix phi, dphi, d2phi, phi_p, phi_m, dphi_p, dphi_m;
    profile->evaluate(r, &phi, &dphi, &d2phi);
    profile->evaluate(r.array() + h, &phi_p, &dphi_p, nullptr);
    profile->evaluate(r.array() - h, &phi_m, &dphi_m, nullptr);
    const Matrix fd1 = (phi_p - phi_m) / (2 * h), fd2 = (dphi_p - dphi_m) / (2 * h);
    EXPECT_LT((dphi - fd1).cwiseAbs().maxCoeff(), 1e-8) << toml;
    EXPECT_LT((d2phi - fd2).cwiseAbs().maxCoeff(), 1e-8) << toml;
    EXPECT_GT(dphi.cwiseAbs().maxCoeff(), 1e-3) << "the check must be able to fail";
    // Outputs left null are not required; a lone φ'' request works too.
    Matrix only2;
    profile->evaluate(r, nullptr, nullptr, &only2);
    EXPECT_EQ((only2 - d2phi).cwiseAbs().maxCoeff(), 0.0) << toml;
  }
}

TEST(RadialProfile, NonRadialKernelsSayNo) {
  BuildContext ctx;
  ctx.dim = 2;
  RandomStream rng(1, "deep");
  ctx.rng = &rng;
  auto deep = test::plugin_registry().make_kernel(
      test::config_from("type = \"deep\"\ncomponents = 1\nlayers = 1\nwidth = 3\nsigma_init = [1.0]"), ctx);
  EXPECT_EQ(deep->radial_profile(), nullptr);
}

}  // namespace
}  // namespace kef
