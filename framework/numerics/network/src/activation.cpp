#include "kef/network/activation.hpp"

#include <algorithm>
#include <cmath>

#include "kef/error.hpp"
#include "kef/vector_exp.hpp"
#include "multiply_add.hpp"

namespace kef::network {

namespace {

using Arr = Eigen::Map<Eigen::ArrayXd>;

// Softplus above this is the identity with derivatives 1, 0, 0 (DKEF's threshold; no overflow).
constexpr double kLinearAbove = 30.0;

// s(t) = max(t, 0) + log1p(e) from e = exp(−|t|) ∈ (0, 1], which neither overflows nor cancels.
// log1p(e) = 2 atanh(z) with z = e/(2 + e) ∈ (0, 1/3]: the odd series 2z Σ z^{2i}/(2i + 1) to i = 16
// truncates below 2^-60 relative (z² ≤ 1/9), needs no logarithm and one division, and is accurate to
// a few ulp for every e (1 + e is never rounded and then taken a logarithm of). s may be t.
void softplus_from(const double* t, const double* e, double* s, Index n) {
  for (Index i = 0; i < n; ++i) {
    const double z = e[i] / (2.0 + e[i]), w = z * z;
    double p = 1.0 / 33.0;
    p = multiply_add(p, w, 1.0 / 31.0);
    p = multiply_add(p, w, 1.0 / 29.0);
    p = multiply_add(p, w, 1.0 / 27.0);
    p = multiply_add(p, w, 1.0 / 25.0);
    p = multiply_add(p, w, 1.0 / 23.0);
    p = multiply_add(p, w, 1.0 / 21.0);
    p = multiply_add(p, w, 1.0 / 19.0);
    p = multiply_add(p, w, 1.0 / 17.0);
    p = multiply_add(p, w, 1.0 / 15.0);
    p = multiply_add(p, w, 1.0 / 13.0);
    p = multiply_add(p, w, 1.0 / 11.0);
    p = multiply_add(p, w, 1.0 / 9.0);
    p = multiply_add(p, w, 1.0 / 7.0);
    p = multiply_add(p, w, 1.0 / 5.0);
    p = multiply_add(p, w, 1.0 / 3.0);
    const double z2 = z + z;
    const double value = (t[i] > 0.0 ? t[i] : 0.0) + multiply_add(z2, w * p, z2);
    s[i] = t[i] > kLinearAbove ? t[i] : value;
  }
}

// e = exp(−|t|) (kef::exp_array, the one exponential of every path).
void exp_minus_abs(const double* t, double* e, Index n) {
  for (Index i = 0; i < n; ++i) e[i] = -std::abs(t[i]);
  exp_array(e, e, n);
}

// The softplus value alone in cache-sized chunks (s may be t).
void softplus_values(const double* t, double* s, Index n) {
  constexpr Index kChunk = 256;
  alignas(64) double e[kChunk];
  for (Index i0 = 0; i0 < n; i0 += kChunk) {
    const Index len = std::min(kChunk, n - i0);
    exp_minus_abs(t + i0, e, len);
    softplus_from(t + i0, e, s + i0, len);
  }
}

void softplus(const double* tp, Index n, int derivs, double* s, double* d1p, double* d2p, double* d3p) {
  if (derivs == 0) return softplus_values(tp, s, n);
  Eigen::ArrayXd e(n);
  exp_minus_abs(tp, e.data(), n);
  const Eigen::ArrayXd u = 1.0 + e;
  auto linear_to = [&](Arr x, double value) {
    for (Index i = 0; i < n; ++i) x[i] = tp[i] > kLinearAbove ? value : x[i];
  };
  softplus_from(tp, e.data(), s, n);
  Eigen::ArrayXd num(n);  // σ(t) = 1/u for t ≥ 0, e/u below
  for (Index i = 0; i < n; ++i) num[i] = tp[i] >= 0.0 ? 1.0 : e[i];
  Arr sg(d1p, n);
  sg = num / u;
  linear_to(sg, 1.0);
  if (derivs >= 2) {
    Arr d2(d2p, n);
    d2 = sg * (1.0 - sg);
    linear_to(d2, 0.0);
  }
  if (derivs >= 3) {
    Arr d3(d3p, n);
    d3 = sg * (1.0 - sg) * (1.0 - 2.0 * sg);
    linear_to(d3, 0.0);
  }
}

// σ from e = exp(−|t|): σ = 1/(1 + e) above 0, e/(1 + e) below; σ(1 − σ) = e/(1 + e)² with no
// cancellation; 1 − 2σ = ∓(1 − e)/(1 + e); σ''' = σ(1 − σ)(1 − 6σ(1 − σ)).
void sigmoid(const double* t, Index n, int derivs, double* s, double* d1, double* d2, double* d3) {
  Eigen::ArrayXd e(n);
  exp_minus_abs(t, e.data(), n);
  for (Index i = 0; i < n; ++i) {
    const bool pos = t[i] >= 0.0;
    const double u = 1.0 + e[i];
    const double g = e[i] / (u * u);
    const double one_minus_2s = (pos ? -(1.0 - e[i]) : (1.0 - e[i])) / u;
    s[i] = (pos ? 1.0 : e[i]) / u;
    if (derivs >= 1) d1[i] = g;
    if (derivs >= 2) d2[i] = g * one_minus_2s;
    if (derivs >= 3) d3[i] = g * (1.0 - 6.0 * g);
  }
}

// The Maclaurin coefficients of tanh, 2^{2k}(2^{2k} − 1) B_{2k}/(2k)! for x^{2k−1}, k = 1..16 (B: the
// Bernoulli numbers). On |x| < kTanhSeriesBelow (x² < 0.16) the omitted tail is below 2^-56 relative.
constexpr double kTanhSeriesBelow = 0.4;
constexpr double kTanhSeries[16] = {
    1.0,
    -0.33333333333333331,
    0.13333333333333333,
    -0.053968253968253971,
    0.021869488536155203,
    -0.0088632355299021973,
    0.0035921280365724811,
    -0.0014558343870513183,
    0.00059002744094558595,
    -0.00023912911424355248,
    9.6915379569294509e-05,
    -3.9278323883316833e-05,
    1.5918905069328964e-05,
    -6.4516892156554306e-06,
    2.6147711512907546e-06,
    -1.0597268320104654e-06,
};

// tanh on contiguous arrays through kef::exp_array instead of one std::tanh call per element (~30 ns
// each, a quarter of a MAF training epoch): with e = e^{−2|x|}, tanh x = sign(x)·(1 − e)/(1 + e) for
// |x| ≥ 0.4 (e ≤ 0.45, so 1 − e loses under one bit), and the odd series above below 0.4, where
// 1 − e would cancel. Both branches are computed for every element so the loop vectorises; e = 0 for
// large |x| gives ±1 exactly, NaN stays NaN. Within 4 ulp of std::tanh (tests/framework/numerics/network, brute force).
// y may be x.
void tanh_values(const double* x, double* y, Index n) {
  constexpr Index kChunk = 256;
  alignas(64) double e[kChunk];
  for (Index i0 = 0; i0 < n; i0 += kChunk) {
    const Index len = std::min(kChunk, n - i0);
    const double* xi = x + i0;
    double* yi = y + i0;
    for (Index i = 0; i < len; ++i) e[i] = -2.0 * std::abs(xi[i]);
    exp_array(e, e, len);
    for (Index i = 0; i < len; ++i) {
      const double a = std::abs(xi[i]), w = a * a;
      // Horner written out: a loop over the coefficients would stop the outer loop vectorising.
      double p = multiply_add(kTanhSeries[15], w, kTanhSeries[14]);
      p = multiply_add(p, w, kTanhSeries[13]);
      p = multiply_add(p, w, kTanhSeries[12]);
      p = multiply_add(p, w, kTanhSeries[11]);
      p = multiply_add(p, w, kTanhSeries[10]);
      p = multiply_add(p, w, kTanhSeries[9]);
      p = multiply_add(p, w, kTanhSeries[8]);
      p = multiply_add(p, w, kTanhSeries[7]);
      p = multiply_add(p, w, kTanhSeries[6]);
      p = multiply_add(p, w, kTanhSeries[5]);
      p = multiply_add(p, w, kTanhSeries[4]);
      p = multiply_add(p, w, kTanhSeries[3]);
      p = multiply_add(p, w, kTanhSeries[2]);
      p = multiply_add(p, w, kTanhSeries[1]);
      const double series = multiply_add(a * w, p, a);  // a·(1 + w·p)
      const double ratio = (1.0 - e[i]) / (1.0 + e[i]);
      yi[i] = std::copysign(a < kTanhSeriesBelow ? series : ratio, xi[i]);
    }
  }
}

void tanh_(const double* t, Index n, int derivs, double* s, double* d1, double* d2, double* d3) {
  tanh_values(t, s, n);
  if (derivs == 0) return;
  for (Index i = 0; i < n; ++i) {
    const double y = s[i], g = 1.0 - y * y;
    if (derivs >= 1) d1[i] = g;
    if (derivs >= 2) d2[i] = -2.0 * y * g;
    if (derivs >= 3) d3[i] = -2.0 * g * (1.0 - 3.0 * y * y);
  }
}

void relu(const double* t, Index n, int derivs, double* s, double* d1, double* d2, double* d3) {
  // One loop per output, so each vectorises (DDE's networks are ReLU: this was 15% of an iteration).
  // In place (s == t) is allowed, so the derivative reads t before s overwrites it.
  if (derivs >= 1)
    for (Index i = 0; i < n; ++i) d1[i] = t[i] > 0.0 ? 1.0 : 0.0;
  for (Index i = 0; i < n; ++i) s[i] = t[i] > 0.0 ? t[i] : 0.0;
  if (derivs >= 2) std::fill(d2, d2 + n, 0.0);
  if (derivs >= 3) std::fill(d3, d3 + n, 0.0);
}

void elu(const double* t, Index n, int derivs, double* s, double* d1, double* d2, double* d3) {
  for (Index i = 0; i < n; ++i) {
    const bool pos = t[i] > 0.0;
    const double ex = pos ? 1.0 : std::exp(t[i]);
    s[i] = pos ? t[i] : std::expm1(t[i]);
    if (derivs >= 1) d1[i] = ex;
    if (derivs >= 2) d2[i] = pos ? 0.0 : ex;
    if (derivs >= 3) d3[i] = pos ? 0.0 : ex;
  }
}

void linear(const double* t, Index n, int derivs, double* s, double* d1, double* d2, double* d3) {
  for (Index i = 0; i < n; ++i) {
    s[i] = t[i];
    if (derivs >= 1) d1[i] = 1.0;
    if (derivs >= 2) d2[i] = 0.0;
    if (derivs >= 3) d3[i] = 0.0;
  }
}

}  // namespace

ActivationKind activation_from_name(const std::string& name) {
  for (auto k : {ActivationKind::softplus, ActivationKind::tanh, ActivationKind::sigmoid,
                 ActivationKind::relu, ActivationKind::elu, ActivationKind::linear})
    if (activation_name(k) == name) return k;
  throw Error("network: unknown activation '" + name +
              "' (expected softplus, tanh, sigmoid, relu, elu or linear)");
}

std::string activation_name(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::softplus:
      return "softplus";
    case ActivationKind::tanh:
      return "tanh";
    case ActivationKind::sigmoid:
      return "sigmoid";
    case ActivationKind::relu:
      return "relu";
    case ActivationKind::elu:
      return "elu";
    case ActivationKind::linear:
      return "linear";
  }
  return "?";
}

void activate(ActivationKind kind, const double* t, Index n, int derivs, double* s, double* d1, double* d2,
              double* d3) {
  switch (kind) {
    case ActivationKind::softplus:
      return softplus(t, n, derivs, s, d1, d2, d3);
    case ActivationKind::tanh:
      return tanh_(t, n, derivs, s, d1, d2, d3);
    case ActivationKind::sigmoid:
      return sigmoid(t, n, derivs, s, d1, d2, d3);
    case ActivationKind::relu:
      return relu(t, n, derivs, s, d1, d2, d3);
    case ActivationKind::elu:
      return elu(t, n, derivs, s, d1, d2, d3);
    case ActivationKind::linear:
      return linear(t, n, derivs, s, d1, d2, d3);
  }
}

Activation::Activation(ActivationKind kind, Index width) : kind_(kind), width_(width) {
  if (width < 1)
    throw Error("network: an activation layer needs a positive width (got " + std::to_string(width) + ")");
}

std::string Activation::name() const { return activation_name(kind_) + " " + std::to_string(width_); }

void Activation::forward(const double* /*theta*/, const Pass& pass, bool /*seeded*/, Matrix& h,
                         LayerTape* tape) const {
  const Index N = pass.n, D = pass.dim, W = width_;
  const int order = pass.order;
  if (order == 0 && !tape) {  // values only: in place, no derivative buffers
    activate(kind_, h.data(), h.size(), 0, h.data(), nullptr, nullptr, nullptr);
    return;
  }
  if (order == 0) {  // training: values and s' for backward, without copying the stack twice
    Matrix s(N, W), d1(N, W);
    activate(kind_, h.data(), h.size(), 1, s.data(), d1.data(), nullptr, nullptr);
    tape->input = std::move(h);
    tape->d1 = std::move(d1);
    h = std::move(s);
    return;
  }
  const int derivs = tape ? order + 1 : order;
  const Matrix P = h.topRows(N);
  Matrix s(N, W), d1(N, W), d2, d3;
  if (derivs >= 2) d2.resize(N, W);
  if (derivs >= 3) d3.resize(N, W);
  activate(kind_, P.data(), P.size(), derivs, s.data(), d1.data(), d2.data(), d3.data());
  if (tape) {
    Matrix next(pass.rows(), W);
    next.topRows(N) = s;
    for (Index d = 0; d < D * std::min(order, 1); ++d) {
      const auto A = h.middleRows((1 + d) * N, N);
      next.middleRows((1 + d) * N, N) = d1.cwiseProduct(A);
      if (order >= 2)
        next.middleRows((1 + D + d) * N, N) =
            d2.cwiseProduct(A.cwiseProduct(A)) + d1.cwiseProduct(h.middleRows((1 + D + d) * N, N));
    }
    tape->input = std::move(h);
    tape->d1 = std::move(d1);
    tape->d2 = std::move(d2);
    tape->d3 = std::move(d3);
    h = std::move(next);
    return;
  }
  // In place: S_d first (it reads A_d), then J_d, then the values.
  for (Index d = 0; d < D * std::min(order, 1); ++d) {
    auto A = h.middleRows((1 + d) * N, N);
    if (order >= 2) {
      auto Q = h.middleRows((1 + D + d) * N, N);
      Q = d2.cwiseProduct(A.cwiseProduct(A)) + d1.cwiseProduct(Q);
    }
    A = d1.cwiseProduct(A);
  }
  h.topRows(N) = s;
}

// With h = s(P), J = s'(P)·A, S = s''(P)·A² + s'(P)·Q and adjoints h̄, J̄, S̄:
//   P̄ = h̄ s' + Σ_d J̄_d A_d s'' + S̄_d (A_d² s''' + Q_d s''),  Ā_d = J̄_d s' + 2 S̄_d s'' A_d,  Q̄_d = S̄_d s'.
void Activation::backward(const double* /*theta*/, const Pass& pass, const LayerTape& t, Matrix& adjoint,
                          double* /*grad*/, Matrix* /*grad_X*/) const {
  const Index N = pass.n, D = pass.dim;
  const int order = pass.order;
  auto P0 = adjoint.topRows(N);
  P0 = P0.cwiseProduct(t.d1);
  for (Index d = 0; d < D * std::min(order, 1); ++d) {
    const auto A = t.input.middleRows((1 + d) * N, N);
    auto Jb = adjoint.middleRows((1 + d) * N, N);
    if (order >= 2) {
      const auto Q = t.input.middleRows((1 + D + d) * N, N);
      auto Sb = adjoint.middleRows((1 + D + d) * N, N);
      P0.array() += Jb.array() * A.array() * t.d2.array() +
                    Sb.array() * (A.array().square() * t.d3.array() + Q.array() * t.d2.array());
      Jb.array() = Jb.array() * t.d1.array() + 2.0 * Sb.array() * t.d2.array() * A.array();
      Sb = Sb.cwiseProduct(t.d1);
    } else {
      P0.array() += Jb.array() * A.array() * t.d2.array();
      Jb = Jb.cwiseProduct(t.d1);
    }
  }
}

}  // namespace kef::network
