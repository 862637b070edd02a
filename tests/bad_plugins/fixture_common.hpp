#pragma once
// Shared pieces of the plugin-host fixtures: a trivial kernel and a descriptor whose fields can be
// set wrong on purpose (KEF_PLUGIN always writes the right ones).
#include <memory>

#include "kef/sdk/plugin.hpp"

// A descriptor with the ABI version and kef major.minor chosen by the fixture.
#define FIXTURE_DESCRIPTOR_VERSION(ABI_VERSION, KEF_MAJOR, KEF_MINOR, NAME)                          \
  extern "C" __attribute__((visibility("default"))) const kef_plugin_descriptor_t kef_plugin_descriptor = \
      KEF_PLUGIN_DESCRIPTOR_FOR(ABI_VERSION, KEF_MAJOR, KEF_MINOR, NAME, "0.0.1", "plugin-host test fixture");

// The same, with this kef's minor version.
#define FIXTURE_DESCRIPTOR(ABI_VERSION, KEF_MAJOR, NAME) \
  FIXTURE_DESCRIPTOR_VERSION(ABI_VERSION, KEF_MAJOR, static_cast<uint32_t>(::kef::kVersionMinor), NAME)

namespace fixture {

// k(x, y) = value: every input derivative is zero.
class ConstantKernel final : public kef::Clonable<ConstantKernel, kef::Kernel> {
 public:
  explicit ConstantKernel(double value) : value_(value) {}
  kef::KernelCapabilities capabilities() const override { return {}; }
  kef::Matrix gram(const kef::Matrix& X, const kef::Matrix& Y) const override {
    return kef::Matrix::Constant(X.rows(), Y.rows(), value_);
  }
  void derivatives(const kef::Matrix& X, const kef::Matrix& Y, int order,
                   kef::KernelStacks& out) const override {
    out.value = gram(X, Y);
    if (order >= 1) out.d1 = kef::Matrix::Zero(X.rows() * X.cols(), Y.rows());
    if (order >= 2) out.d2 = kef::Matrix::Zero(X.rows() * X.cols(), Y.rows());
  }

 private:
  double value_;
};

inline kef::ComponentInfo info(const char* type) {
  kef::ComponentInfo i;
  i.type = type;
  i.summary = "fixture";
  return i;
}

inline std::unique_ptr<kef::Kernel> make_constant(const kef::Config&, const kef::BuildContext&) {
  return std::make_unique<ConstantKernel>(1.0);
}

}  // namespace fixture
