// The inverse multiquadric kernel k(x, y) = (c² + ‖x − y‖²)^β, c > 0, β < 0, as a kef plugin.
//
// With u = c² + ‖x − y‖² and δ = x − y, the input derivatives kef's estimators need are
//   ∂k/∂x_d   = 2β u^(β−1) δ_d
//   ∂²k/∂x_d² = 2β u^(β−1) + 4β(β−1) u^(β−2) δ_d²
// stored as (N·D) x M stacks, row d*N + n (kef/kernel.hpp).
#include <cmath>
#include <memory>
#include <sstream>
#include <string>

#include "kef/error.hpp"
#include "kef/sdk/plugin.hpp"

namespace {

using kef::Index;
using kef::Matrix;

class ImqKernel final : public kef::Clonable<ImqKernel, kef::Kernel> {
 public:
  ImqKernel(double c, double beta) : c2_(c * c), beta_(beta), bounded_(c >= 1.0) {}

  kef::KernelCapabilities capabilities() const override {
    kef::KernelCapabilities caps;
    caps.bounded_unit = bounded_;  // 0 < k ≤ c^(2β), which is ≤ 1 exactly when c ≥ 1
    return caps;
  }

  Matrix gram(const Matrix& X, const Matrix& Y) const override {
    check(X, Y);
    return base(X, Y).array().pow(beta_).matrix();
  }

  void derivatives(const Matrix& X, const Matrix& Y, int order, kef::KernelStacks& out) const override {
    check(X, Y);
    const Index N = X.rows(), M = Y.rows(), D = X.cols();
    const Matrix u = base(X, Y);
    out.value = u.array().pow(beta_).matrix();
    if (order < 1) return;
    // u^(β−1) and u^(β−2) from the value: one pow per entry instead of three.
    const Matrix u_b1 = out.value.cwiseQuotient(u);
    Matrix u_b2;
    out.d1.resize(N * D, M);
    if (order >= 2) {
      u_b2 = u_b1.cwiseQuotient(u);
      out.d2.resize(N * D, M);
    }
    for (Index d = 0; d < D; ++d) {
      const Matrix delta = X.col(d).replicate(1, M) - Y.col(d).transpose().replicate(N, 1);
      out.d1.middleRows(d * N, N) = 2.0 * beta_ * u_b1.cwiseProduct(delta);
      if (order >= 2) {
        out.d2.middleRows(d * N, N) =
            (2.0 * beta_ * u_b1.array() + 4.0 * beta_ * (beta_ - 1.0) * u_b2.array() * delta.array().square())
                .matrix();
      }
    }
  }

 private:
  // u = c² + ‖x − y‖², accumulated coordinate by coordinate (no cancellation for close points).
  Matrix base(const Matrix& X, const Matrix& Y) const {
    Matrix u = Matrix::Constant(X.rows(), Y.rows(), c2_);
    for (Index d = 0; d < X.cols(); ++d)
      u += (X.col(d).replicate(1, Y.rows()) - Y.col(d).transpose().replicate(X.rows(), 1)).cwiseAbs2();
    return u;
  }

  static void check(const Matrix& X, const Matrix& Y) {
    if (X.cols() != Y.cols())
      throw kef::DataError("kernel imq_example: X and Y have different dimensions (" + std::to_string(X.cols()) +
                           " and " + std::to_string(Y.cols()) + ")");
  }

  double c2_;
  double beta_;
  bool bounded_;
};

void register_components(kef::PluginRegistrar& registrar) {
  kef::ComponentInfo info;
  info.type = "imq_example";
  info.summary = "Inverse multiquadric kernel (c² + ‖x−y‖²)^β";
  info.reference = "Gorham & Mackey (2017), Measuring sample quality with kernels, §3";
  info.keys = {
      kef::KeySpec::number("c", "offset c; the kernel is bounded by 1 when c >= 1", 1.0).positive(),
      kef::KeySpec::number("beta", "exponent β, negative", -0.5).at_most(0.0),
  };
  registrar.add_kernel(info,
                       [](const kef::Config& cfg, const kef::BuildContext&) -> std::unique_ptr<kef::Kernel> {
                         const double beta = cfg.number("beta");
                         // The key list can only say β ≤ 0; β = 0 would be the constant kernel, which is not
                         // strictly positive definite.
                         if (beta >= 0.0) {
                           std::ostringstream got;
                           got << beta;
                           cfg.fail("beta", "must be negative (expected beta < 0, got " + got.str() + ")");
                         }
                         return std::make_unique<ImqKernel>(cfg.number("c"), beta);
                       });
}

}  // namespace

KEF_PLUGIN("imq_example", "1.0.0", "Inverse multiquadric kernel (SDK example)", register_components)
