// FlowDensity's second-order pass: log p, its input gradient and the diagonal of its input Hessian in
// one forward sweep, every intermediate carried as a stack of values, first and second derivatives
// (network/layer.hpp), so that FSSD, KSD and score matching get exact Laplacians of a trained flow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

#include "flow_density.hpp"
#include "kef/error.hpp"
#include "kef/network/batch_norm.hpp"

namespace kef::flows {

namespace nw = kef::network;

namespace {

// Stacks (network/layer.hpp): rows [values; J_1 .. J_D; S_1 .. S_D], N rows per channel, any width.
// exp(q/2) of a stack: J = e J_q / 2, S = e (S_q/2 + J_q²/4).
Matrix stack_exp_half(const Matrix& q, Index N, Index D) {
  Matrix out(q.rows(), q.cols());
  const Matrix e = (0.5 * q.topRows(N).array()).exp().matrix();
  out.topRows(N) = e;
  for (Index d = 0; d < D; ++d) {
    const auto J = q.middleRows((1 + d) * N, N).array();
    out.middleRows((1 + d) * N, N) = (0.5 * e.array() * J).matrix();
    out.middleRows((1 + D + d) * N, N) =
        (e.array() * (0.5 * q.middleRows((1 + D + d) * N, N).array() + 0.25 * J.square())).matrix();
  }
  return out;
}

// The elementwise product of two stacks: J = J_a b + a J_b, S = S_a b + 2 J_a J_b + a S_b.
Matrix stack_product(const Matrix& a, const Matrix& b, Index N, Index D) {
  Matrix out(a.rows(), a.cols());
  const auto a0 = a.topRows(N).array(), b0 = b.topRows(N).array();
  out.topRows(N) = (a0 * b0).matrix();
  for (Index d = 0; d < D; ++d) {
    const auto Ja = a.middleRows((1 + d) * N, N).array(), Jb = b.middleRows((1 + d) * N, N).array();
    const auto Sa = a.middleRows((1 + D + d) * N, N).array(), Sb = b.middleRows((1 + D + d) * N, N).array();
    out.middleRows((1 + d) * N, N) = (Ja * b0 + a0 * Jb).matrix();
    out.middleRows((1 + D + d) * N, N) = (Sa * b0 + 2.0 * Ja * Jb + a0 * Sb).matrix();
  }
  return out;
}

// The mixture base's log density of the stacked u (value rows, then J_d and S_d rows: N(1 + 2D) x D),
// added to the stacked lp with its first and diagonal second derivatives.
// Per coordinate j: log Σ_c π_c N(u_j; μ_c, e^{−lp_c}) = LSE_c a_c, a_c = log π_c − w_c²/2 + lp_c/2,
// w_c = e^{lp_c/2}(u_j − μ_c), log π = la − LSE(la); its derivatives by the chain rule on each channel
// (∂ LSE(a) = Σ r ∂a, ∂² LSE(a) = Σ r (∂²a + (∂a)²) − (Σ r ∂a)² with r = softmax(a)).
void add_mixture_base_stack(const Made& base, const Matrix& u, Index N, Vector& lp) {
  const Index D = u.cols();
  const Index C = base.components(), W = base.width();
  Matrix out;
  base.net().forward_stack(u, D, 2, out);
  Vector pi(C), logpi(C), e(C), w(C), a(C), r(C), Ja(C), Sa(C);
  for (Index j = 0; j < D; ++j)
    for (Index n = 0; n < N; ++n) {
      const Index c0 = j * C;
      const double la_lse = log_sum_exp_of_row(out, n, 2 * W + c0, C);
      double a_max = -std::numeric_limits<double>::infinity();
      for (Index c = 0; c < C; ++c) {
        logpi[c] = out(n, 2 * W + c0 + c) - la_lse;
        pi[c] = std::exp(logpi[c]);
        e[c] = std::exp(0.5 * out(n, W + c0 + c));
        w[c] = e[c] * (u(n, j) - out(n, c0 + c));
        a[c] = logpi[c] - 0.5 * w[c] * w[c] + 0.5 * out(n, W + c0 + c);
        a_max = std::max(a_max, a[c]);
      }
      double a_sum = 0.0;
      for (Index c = 0; c < C; ++c) a_sum += std::exp(a[c] - a_max);
      const double a_lse = a_max + std::log(a_sum);
      for (Index c = 0; c < C; ++c) r[c] = std::exp(a[c] - a_lse);
      lp[n] += a_lse;
      for (Index d = 0; d < D; ++d) {
        const Index jr = (1 + d) * N + n, sr = (1 + D + d) * N + n;
        double pJla = 0.0, pSla = 0.0;
        for (Index c = 0; c < C; ++c) {
          const double Jla = out(jr, 2 * W + c0 + c);
          pJla += pi[c] * Jla;
          pSla += pi[c] * (out(sr, 2 * W + c0 + c) + Jla * Jla);
        }
        double Jf = 0.0, Sf = 0.0;
        for (Index c = 0; c < C; ++c) {
          const double Jla = out(jr, 2 * W + c0 + c), Sla = out(sr, 2 * W + c0 + c);
          const double Jlp = out(jr, W + c0 + c), Slp = out(sr, W + c0 + c);
          const double Jdf = u(jr, j) - out(jr, c0 + c), Sdf = u(sr, j) - out(sr, c0 + c);
          const double df = u(n, j) - out(n, c0 + c);
          const double Je = 0.5 * e[c] * Jlp, Se = e[c] * (0.5 * Slp + 0.25 * Jlp * Jlp);
          const double Jw = Je * df + e[c] * Jdf, Sw = Se * df + 2.0 * Je * Jdf + e[c] * Sdf;
          const double Jlogpi = Jla - pJla, Slogpi = Sla - (pSla - pJla * pJla);
          Ja[c] = Jlogpi - w[c] * Jw + 0.5 * Jlp;
          Sa[c] = Slogpi - (Jw * Jw + w[c] * Sw) + 0.5 * Slp;
          Jf += r[c] * Ja[c];
        }
        for (Index c = 0; c < C; ++c) Sf += r[c] * (Sa[c] + Ja[c] * Ja[c]);
        lp[jr] += Jf;
        lp[sr] += Sf - Jf * Jf;
      }
    }
  lp.head(N).array() -= D * kHalfLog2Pi;
}

}  // namespace

Vector FlowDensity::log_density_score_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  if (training_) throw Error("flow: input derivatives need evaluation mode");
  if (X.cols() != arch_.dim)
    throw DataError("flow: data has " + std::to_string(X.cols()) + " columns, the model dimension " +
                    std::to_string(arch_.dim));
  const Index N = X.rows(), D = arch_.dim, R = N * (1 + 2 * D);
  // z = (x − shift)/scale: J_d = e_d / scale_d, S_d = 0.
  Matrix u = Matrix::Zero(R, D);
  u.topRows(N) = ((X.rowwise() - shift_.transpose()).array().rowwise() / scale_.transpose().array()).matrix();
  for (Index d = 0; d < D; ++d) u.block((1 + d) * N, d, N, 1).setConstant(1.0 / scale_[d]);
  Vector lp = Vector::Zero(R);  // log p as a stack of width 1
  lp.head(N).setConstant(-scale_.array().log().sum());
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    if (arch_.coupling) {
      // Masking, e^{−s} and the product act channel by channel (the mask is a constant per column).
      const Coupling& c = couplings_[k];
      const Vector keep = (1.0 - c.mask().array()).matrix();
      const Matrix mv = (u.array().rowwise() * c.mask().transpose().array()).matrix();
      Matrix S, T;
      c.scale_net().forward_stack(mv, D, 2, S);
      c.shift_net().forward_stack(mv, D, 2, T);
      const Matrix prod = stack_product(stack_exp_half(Matrix(-2.0 * S), N, D), Matrix(u - T), N, D);
      u = (mv.array() + prod.array().rowwise() * keep.transpose().array()).matrix();
      lp -= S * keep;
    } else {
      Matrix out;
      mades_[k].net().forward_stack(u, D, 2, out);
      const Matrix lpk = out.rightCols(D);
      u = stack_product(stack_exp_half(lpk, N, D), Matrix(u - out.leftCols(D)), N, D);
      lp += 0.5 * lpk.rowwise().sum();
    }
    if (!norms_.empty()) {
      const auto& layer = static_cast<const nw::BatchNorm&>(norms_[k].layer(0));
      Matrix y;
      norms_[k].forward_stack(u, D, 2, y);
      u = std::move(y);
      lp.head(N).array() += batch_norm_log_det(static_cast<Index>(k), layer.running_variance());
    }
  }
  if (base_.empty()) {
    const auto u0 = u.topRows(N);
    lp.head(N) -= 0.5 * u0.rowwise().squaredNorm();
    lp.head(N).array() -= D * kHalfLog2Pi;
    for (Index d = 0; d < D; ++d) {
      const auto J = u.middleRows((1 + d) * N, N), S = u.middleRows((1 + D + d) * N, N);
      lp.segment((1 + d) * N, N) -= u0.cwiseProduct(J).rowwise().sum();
      lp.segment((1 + D + d) * N, N) -= (J.cwiseAbs2() + u0.cwiseProduct(S)).rowwise().sum();
    }
  } else {
    add_mixture_base_stack(base_.front(), u, N, lp);
  }
  score.resize(N, D);
  laplacian.resize(N, D);
  for (Index d = 0; d < D; ++d) {
    score.col(d) = lp.segment((1 + d) * N, N);
    laplacian.col(d) = lp.segment((1 + D + d) * N, N);
  }
  return lp.head(N);
}

}  // namespace kef::flows
