#include "kef/closed_form_gradient.hpp"

#include "kef/error.hpp"
#include "kef/linalg.hpp"

namespace kef {

namespace {

struct Stacks {
  KernelStacks k;
  Vector q1, q2;  // (d, n) order, like the stacks' rows
  Matrix q1m, q2m;
};

Stacks stacks_of(const Kernel& kernel, const BaseMeasure& base, const Matrix& X, const Matrix& Z) {
  Stacks s;
  kernel.derivatives(X, Z, 2, s.k);
  base.derivatives(X, s.q1m, s.q2m);
  s.q1 = Eigen::Map<const Vector>(s.q1m.data(), s.q1m.size());
  s.q2 = Eigen::Map<const Vector>(s.q2m.data(), s.q2m.size());
  return s;
}

struct Fit {
  Stacks train;
  SpdFactor factor;
  Vector alpha;
  Matrix U;
};

Fit fit_alpha(const Kernel& kernel, const BaseMeasure& base, const Matrix& train, const Matrix& Z, double la,
              double lc) {
  Fit f;
  f.train = stacks_of(kernel, base, train, Z);
  const double inv_n = 1.0 / static_cast<double>(train.rows());
  const Matrix& B1 = f.train.k.d1;
  const Matrix& B2 = f.train.k.d2;
  Matrix A = B1.transpose() * B1 * inv_n;
  f.U = B2.transpose() * B2 * inv_n;
  A += lc * f.U;
  A.diagonal().array() += la;
  Vector b = (B2.colwise().sum().transpose() + B1.transpose() * f.train.q1 + lc * B2.transpose() * f.train.q2) * inv_n;
  f.factor = SpdFactor(A, "DKEF closed-form fit (G + λ_α I + λ_C U)");
  f.alpha = -f.factor.solve(b);
  check_finite(f.alpha, "DKEF closed-form alpha");
  return f;
}

double loss_of(const Stacks& v, const Vector& alpha, Index n, Vector* grad_score) {
  Vector s = v.k.d1 * alpha + v.q1;
  Vector l = v.k.d2 * alpha + v.q2;
  if (grad_score) *grad_score = s;
  return (l.sum() + 0.5 * s.squaredNorm()) / static_cast<double>(n);
}

void check_inputs(const Matrix& train, const Matrix& validation, const Matrix& Z) {
  if (train.rows() == 0 || validation.rows() == 0) throw DataError("DKEF gradient: empty batch");
  if (train.cols() != Z.cols() || validation.cols() != Z.cols())
    throw DataError("DKEF gradient: batches and inducing points differ in dimension");
}

}  // namespace

double closed_form_validation_loss(const Kernel& kernel, const BaseMeasure& base, const Matrix& train,
                                   const Matrix& validation, const Matrix& Z, double la, double lc) {
  check_inputs(train, validation, Z);
  Fit f = fit_alpha(kernel, base, train, Z, la, lc);
  Stacks v = stacks_of(kernel, base, validation, Z);
  return loss_of(v, f.alpha, validation.rows(), nullptr);
}

ClosedFormGradient closed_form_validation_gradient(const Kernel& kernel, const BaseMeasure& base,
                                                   const Matrix& train, const Matrix& validation, const Matrix& Z,
                                                   double la, double lc) {
  check_inputs(train, validation, Z);
  const Index Nt = train.rows(), Nv = validation.rows();
  Fit f = fit_alpha(kernel, base, train, Z, la, lc);
  Stacks v = stacks_of(kernel, base, validation, Z);
  ClosedFormGradient out;
  out.alpha = f.alpha;
  out.jitter = f.factor.jitter();
  Vector s;
  out.loss = loss_of(v, f.alpha, Nv, &s);
  if (!std::isfinite(out.loss)) throw NumericalError("DKEF validation loss is not finite");

  const Vector& a = f.alpha;
  // Direct terms of J_v = (1/Nv) Σ [B2v α + q2v + ½ (B1v α + q1v)²].
  const double inv_v = 1.0 / static_cast<double>(Nv), inv_t = 1.0 / static_cast<double>(Nt);
  KernelStacks adj_v;
  adj_v.d1 = inv_v * s * a.transpose();
  adj_v.d2 = inv_v * Vector::Ones(s.size()) * a.transpose();
  const Vector g = inv_v * (v.k.d2.colwise().sum().transpose() + v.k.d1.transpose() * s);  // ∂J_v/∂α
  const Vector w = f.factor.solve(g);

  // Through the solve (MATH.md §5): dJ/dθ = ∂J_v/∂θ|_α − wᵀ(dA α + db).
  const Matrix& B1 = f.train.k.d1;
  const Matrix& B2 = f.train.k.d2;
  const Vector B1a = B1 * a, B1w = B1 * w, B2a = B2 * a, B2w = B2 * w;
  KernelStacks adj_t;
  adj_t.d1 = -inv_t * (B1a * w.transpose() + B1w * a.transpose() + f.train.q1 * w.transpose());
  adj_t.d2 = -inv_t * (lc * B2a * w.transpose() + lc * B2w * a.transpose() +
                       (Vector::Ones(B2.rows()) + lc * f.train.q2) * w.transpose());
  out.log_lambda_alpha = la * (-w.dot(a));
  out.log_lambda_c = lc * (-w.dot(f.U * a) - inv_t * w.dot(B2.transpose() * f.train.q2));

  out.kernel = Vector::Zero(kernel.parameter_count());
  out.inducing = Matrix::Zero(Z.rows(), Z.cols());
  if (kernel.parameter_count() > 0 || kernel.capabilities().inducing_point_gradients) {
    kernel.backward(train, Z, adj_t, &out.kernel, &out.inducing);
    kernel.backward(validation, Z, adj_v, &out.kernel, &out.inducing);
  }

  out.base = Vector::Zero(base.parameter_count());
  if (base.parameter_count() > 0) {
    const Index D = Z.cols();
    // Adjoints of q1, q2 (stacked like the rows) back to N x D.
    Vector q1t = -inv_t * B1w, q2t = -inv_t * lc * B2w;
    Vector q1v = inv_v * s, q2v = Vector::Constant(s.size(), inv_v);
    Vector gt = Vector::Zero(base.parameter_count()), gv = Vector::Zero(base.parameter_count());
    base.backward(train, Vector(), Eigen::Map<const Matrix>(q1t.data(), Nt, D), Eigen::Map<const Matrix>(q2t.data(), Nt, D), gt);
    base.backward(validation, Vector(), Eigen::Map<const Matrix>(q1v.data(), Nv, D), Eigen::Map<const Matrix>(q2v.data(), Nv, D), gv);
    out.base = gt + gv;
  }
  check_finite(out.kernel, "DKEF gradient (kernel parameters)");
  check_finite(out.inducing, "DKEF gradient (inducing points)");
  check_finite(out.base, "DKEF gradient (base measure parameters)");
  return out;
}

}  // namespace kef
