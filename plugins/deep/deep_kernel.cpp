#include "deep_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/vector_exp.hpp"

namespace kef::deep {


DeepKernel::DeepKernel(Index input_dim, Index components, Index layers, Index width,
                       const std::vector<double>& sigma_init, OnFeatures on, RandomStream& rng)
    : on_(on), logits_(Vector::Zero(components)), log_sigma_(Vector::Zero(on == OnFeatures::Gaussian ? components : 0)) {
  for (Index r = 0; r < components; ++r) {
    nets_.emplace_back(input_dim, width, layers);
    if (gaussian())
      log_sigma_[r] = std::log(sigma_init.size() == 1 ? sigma_init[0] : sigma_init[static_cast<std::size_t>(r)]);
  }
  initialize(rng);
}

void DeepKernel::initialize(RandomStream& rng) {
  for (Index r = 0; r < components(); ++r) {
    RandomStream net_rng = rng.derive(static_cast<std::uint64_t>(r));
    nets_[static_cast<std::size_t>(r)].initialize(net_rng);
  }
  ++generation_;  // cached features of the old weights must not be reused
}

KernelCapabilities DeepKernel::capabilities() const {
  KernelCapabilities c;
  c.differentiable_parameters = true;
  c.inducing_point_gradients = true;
  c.bounded_unit = gaussian();  // a convex combination of Gaussians lies in [0, 1]
  return c;
}

Vector DeepKernel::weights() const {
  Vector w = (logits_.array() - logits_.maxCoeff()).exp();
  return w / w.sum();
}

Index DeepKernel::net_offset(Index r) const {
  Index off = logits_.size() + log_sigma_.size();
  for (Index i = 0; i < r; ++i) off += nets_[static_cast<std::size_t>(i)].parameter_count();
  return off;
}

Index DeepKernel::parameter_count() const { return net_offset(components()); }

Vector DeepKernel::parameters() const {
  Vector theta(parameter_count());
  theta.head(logits_.size()) = logits_;
  theta.segment(logits_.size(), log_sigma_.size()) = log_sigma_;
  for (Index r = 0; r < components(); ++r) {
    const auto& net = nets_[static_cast<std::size_t>(r)];
    theta.segment(net_offset(r), net.parameter_count()) = net.parameters();
  }
  return theta;
}

void DeepKernel::set_parameters(const Vector& theta) {
  Kernel::set_parameters(theta);
  check_finite(theta, "deep kernel parameters");
  logits_ = theta.head(logits_.size());
  log_sigma_ = theta.segment(logits_.size(), log_sigma_.size());
  for (Index r = 0; r < components(); ++r) {
    auto& net = nets_[static_cast<std::size_t>(r)];
    net.set_parameters(theta.segment(net_offset(r), net.parameter_count()));
  }
  ++generation_;
}

std::vector<std::string> DeepKernel::parameter_names() const {
  std::vector<std::string> names;
  for (Index r = 0; r < components(); ++r) names.push_back("logit_" + std::to_string(r));
  for (Index r = 0; r < log_sigma_.size(); ++r) names.push_back("log_sigma_" + std::to_string(r));
  for (Index r = 0; r < components(); ++r)
    for (Index i = 0; i < nets_[static_cast<std::size_t>(r)].parameter_count(); ++i)
      names.push_back("net_" + std::to_string(r) + "_" + std::to_string(i));
  return names;
}

std::shared_ptr<const DeepKernel::YFeatures> DeepKernel::y_features(const Matrix& Y) const {
  {
    std::lock_guard<std::mutex> lock(cache_.mutex);
    const auto& e = cache_.entry;
    if (e && e->generation == generation_ && e->Y.rows() == Y.rows() && e->Y.cols() == Y.cols() && e->Y == Y)
      return e;
  }
  auto f = std::make_shared<YFeatures>();
  f->Y = Y;
  f->generation = generation_;
  const auto R = static_cast<std::size_t>(components());
  f->C.resize(R);
  f->tape.resize(R);
  f->mean.resize(R);
  f->Cc.resize(R);
  f->norms.resize(R);
  for (std::size_t r = 0; r < R; ++r) {
    nets_[r].forward_stacked(Y, 0, f->C[r], &f->tape[r]);
    f->mean[r] = Y.rows() ? Eigen::RowVectorXd(f->C[r].colwise().mean()) : Eigen::RowVectorXd::Zero(f->C[r].cols());
    f->Cc[r] = f->C[r].rowwise() - f->mean[r];
    f->norms[r] = f->Cc[r].rowwise().squaredNorm();
  }
  std::lock_guard<std::mutex> lock(cache_.mutex);
  cache_.entry = f;
  return f;
}

namespace {

// Centred quantities of one Gaussian component for a batch X (u = a − c = Ac − Cc):
//   T = Fc Ccᵀ, whose block 0 is Ac Ccᵀ and whose J/S blocks are J_d·c, S_d·c (centred);
//   K = exp(−τ r²/2) with r² = ‖Ac‖² + ‖Cc‖² − 2 Ac Ccᵀ (clamped at 0);
//   ja = J_d·Ac, jj = ‖J_d‖², sa = S_d·Ac per stacked row, so that g = ja − T_J, e = jj + sa − T_S.
struct GaussianPart {
  Matrix T, K, r2;
  Vector ja, jj, sa;
  Matrix Ac;
};

GaussianPart gaussian_part(const Matrix& F, Index N, Index D, int order, const Eigen::RowVectorXd& mean,
                           const Matrix& Cc, const Vector& cnorm, double tau, bool keep_r2) {
  GaussianPart p;
  p.Ac = F.topRows(N).rowwise() - mean;
  if (order == 0) {
    p.T.noalias() = p.Ac * Cc.transpose();
  } else {
    Matrix Fc = F;
    Fc.topRows(N) = p.Ac;
    p.T.noalias() = Fc * Cc.transpose();
  }
  const Vector anorm = p.Ac.rowwise().squaredNorm();
  Matrix r2 = ((-2.0 * p.T.topRows(N)).colwise() + anorm).rowwise() + cnorm.transpose();
  r2 = r2.cwiseMax(0.0);
  p.K = exp_of(-0.5 * tau * r2);
  if (keep_r2) p.r2 = std::move(r2);
  if (order >= 1) {
    p.ja.resize(N * D);
    p.jj.resize(N * D);
    for (Index d = 0; d < D; ++d) {
      const auto J = F.middleRows((1 + d) * N, N);
      p.ja.segment(d * N, N) = J.cwiseProduct(p.Ac).rowwise().sum();
      p.jj.segment(d * N, N) = J.rowwise().squaredNorm();
    }
  }
  if (order >= 2) {
    p.sa.resize(N * D);
    for (Index d = 0; d < D; ++d) p.sa.segment(d * N, N) = F.middleRows((1 + D + d) * N, N).cwiseProduct(p.Ac).rowwise().sum();
  }
  return p;
}

// The adjoints of one Gaussian component's derivative stacks (adj.d1, adj.d2 against the stacked
// g = J_d·u − T_J and e = ‖J_d‖² + S_d·u − T_S): adds their share to kq (the adjoint of the
// component's k divided by ρ_r), fills Gbar = [ḡ; ē] and returns τ̄ from the stacks divided by ρ_r.
double gaussian_stack_adjoints(const GaussianPart& p, const KernelStacks& adj, double rho_r, double tau, Index N,
                               Index D, int order, Matrix& kq, Matrix& Gbar) {
  const Index M = kq.cols();
  const bool has_1 = adj.d1.size() > 0, has_2 = adj.d2.size() > 0;
  double tau_q = 0.0;  // τ̄ from the stacks, divided by ρ_r
  const double t2 = tau * tau;
  for (Index m = 0; m < M && order >= 1; ++m) {
    const double* k = p.K.col(m).data();
    const double* tj = p.T.col(m).data() + N;
    const double* ts = p.T.col(m).data() + N + N * D;
    const double* a1 = has_1 ? adj.d1.col(m).data() : nullptr;
    const double* a2 = has_2 ? adj.d2.col(m).data() : nullptr;
    double* kb = kq.col(m).data();
    double* gb = Gbar.col(m).data();
    double* eb = order >= 2 ? Gbar.col(m).data() + N * D : nullptr;
    for (Index d = 0; d < D; ++d) {
      for (Index n = 0; n < N; ++n) {
        const Index i = d * N + n;
        const double gv = p.ja[i] - tj[i];
        const double w1 = a1 ? a1[i] : 0.0;
        double kbi = -tau * gv * w1;
        double gbi = -rho_r * tau * k[n] * w1;
        double tq = -gv * k[n] * w1;
        if (eb) {
          const double ev = p.jj[i] + p.sa[i] - ts[i];
          const double w2 = a2 ? a2[i] : 0.0;
          kbi += w2 * (t2 * gv * gv - tau * ev);
          gbi += 2.0 * rho_r * t2 * gv * k[n] * w2;
          eb[i] = -rho_r * tau * k[n] * w2;
          tq += w2 * (2.0 * tau * gv * gv - ev) * k[n];
        }
        kb[n] += kbi;
        gb[i] = gbi;
        tau_q += tq;
      }
    }
  }
  return tau_q;
}

}  // namespace

// The Gram of component r on a block of rows: for a Gaussian component its kernel values k_r (in T),
// k = exp(−τ/2 · max(0, ‖a‖² + ‖c‖² − 2aᵀc)) on centred features; for a linear one the block's
// features φ_r (in A), whose Gram is A·Cᵀ.
const Matrix& DeepKernel::component_block(const Matrix& Xb, Index r, const YFeatures& yf, Matrix& A, Matrix& T) const {
  const auto ri = static_cast<std::size_t>(r);
  nets_[ri].forward_stacked(Xb, 0, A, nullptr);
  if (!gaussian()) return A;
  const double tau = std::exp(-2.0 * log_sigma_[r]);
  A.rowwise() -= yf.mean[ri];
  const Vector anorm = A.rowwise().squaredNorm();
  T.noalias() = A * yf.Cc[ri].transpose();
  const Vector& cnorm = yf.norms[ri];
  // Column by column (a row-broadcast would make Eigen evaluate the expression coefficient-wise).
  for (Index m = 0; m < T.cols(); ++m)
    T.col(m) = (-0.5 * tau) * ((anorm.array() + cnorm[m]) - 2.0 * T.col(m).array()).max(0.0).matrix();
  exp_array(T.data(), T.data(), T.size());
  return T;
}

namespace {

// Rows in blocks of 128, so that a block's network passes and its 128 x M Gram stay in cache between
// the GEMM, the exponential and their use.
constexpr Index kGramRows = 128;

}  // namespace

template <class Use>
void DeepKernel::for_each_block(const Matrix& X, const YFeatures& yf, Use&& use) const {
  Matrix A, T;
  for (Index begin = 0; begin < X.rows(); begin += kGramRows) {
    const Index rows = std::min(kGramRows, X.rows() - begin);
    const Matrix Xb = X.middleRows(begin, rows);
    for (Index r = 0; r < components(); ++r) use(begin, rows, r, component_block(Xb, r, yf, A, T));
  }
}

void DeepKernel::check_inputs(const Matrix& X, const Matrix& Y) const {
  if (X.cols() != Y.cols())
    throw DataError("deep kernel: inputs of dimension " + std::to_string(X.cols()) + " and " + std::to_string(Y.cols()));
}

Matrix DeepKernel::gram(const Matrix& X, const Matrix& Y) const {
  check_inputs(X, Y);
  const Vector rho = weights();
  const auto yf = y_features(Y);
  Matrix out = Matrix::Zero(X.rows(), Y.rows());
  for_each_block(X, *yf, [&](Index begin, Index rows, Index r, const Matrix& P) {
    auto ob = out.middleRows(begin, rows);
    if (gaussian())
      ob += rho[r] * P;
    else
      ob.noalias() += rho[r] * P * yf->C[static_cast<std::size_t>(r)].transpose();
  });
  return out;
}

// The same blocks as gram, but each block's Gram is consumed in cache (a matrix-vector product with
// ρ_r b) instead of being written out: no N x M matrix, no second pass over it.
Vector DeepKernel::gram_times(const Matrix& X, const Matrix& Y, const Vector& b) const {
  check_inputs(X, Y);
  if (b.size() != Y.rows())
    throw Error("deep kernel: gram_times needs one coefficient per point of Y (got " + std::to_string(b.size()) +
                " for " + std::to_string(Y.rows()) + ")");
  const Vector rho = weights();
  const auto yf = y_features(Y);
  Vector out = Vector::Zero(X.rows());
  for_each_block(X, *yf, [&](Index begin, Index rows, Index r, const Matrix& P) {
    auto ob = out.segment(begin, rows);
    if (gaussian())
      ob.noalias() += P * (rho[r] * b);
    else  // Σ_m b_m aᵀc_m = aᵀ(Cᵀb)
      ob.noalias() += P * (rho[r] * (yf->C[static_cast<std::size_t>(r)].transpose() * b));
  });
  return out;
}

void DeepKernel::derivatives(const Matrix& X, const Matrix& Y, int order, KernelStacks& out) const {
  check_inputs(X, Y);
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const Vector rho = weights();
  const auto yf = y_features(Y);
  out.value = Matrix::Zero(N, M);
  out.d1 = order >= 1 ? Matrix::Zero(N * D, M) : Matrix();
  out.d2 = order >= 2 ? Matrix::Zero(N * D, M) : Matrix();
  Matrix F;
  for (Index r = 0; r < components(); ++r) {
    const auto ri = static_cast<std::size_t>(r);
    nets_[ri].forward_stacked(X, order, F, nullptr);
    if (gaussian()) {
      const double tau = std::exp(-2.0 * log_sigma_[r]);
      const GaussianPart p = gaussian_part(F, N, D, order, yf->mean[ri], yf->Cc[ri], yf->norms[ri], tau, false);
      out.value += rho[r] * p.K;
      // d1 = −ρτ g K, d2 = ρ(τ²g² − τe) K, with g = uᵀJ_d, e = J_dᵀJ_d + uᵀS_d.
      const double c1 = -rho[r] * tau, c2 = rho[r] * tau * tau, c3 = -rho[r] * tau;
      for (Index m = 0; m < M && order >= 1; ++m) {
        const double* k = p.K.col(m).data();
        const double* tj = p.T.col(m).data() + N;
        const double* ts = p.T.col(m).data() + N + N * D;
        double* o1 = out.d1.col(m).data();
        double* o2 = order >= 2 ? out.d2.col(m).data() : nullptr;
        for (Index d = 0; d < D; ++d) {
          for (Index n = 0; n < N; ++n) {
            const Index i = d * N + n;
            const double g = p.ja[i] - tj[i];
            o1[i] += c1 * g * k[n];
            if (o2) o2[i] += (c2 * g * g + c3 * (p.jj[i] + p.sa[i] - ts[i])) * k[n];
          }
        }
      }
    } else {
      // Linear: k = aᵀc, ∂_d k = J_dᵀc, ∂²_d k = S_dᵀc: one GEMM gives all three stacks.
      const Matrix T = F * yf->C[ri].transpose();
      out.value += rho[r] * T.topRows(N);
      if (order >= 1) out.d1 += rho[r] * T.middleRows(N, N * D);
      if (order >= 2) out.d2 += rho[r] * T.bottomRows(N * D);
    }
  }
}

void DeepKernel::backward(const Matrix& X, const Matrix& Y, const KernelStacks& adj, Vector* grad_params,
                          Matrix* grad_Y) const {
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  const int order = adj.d2.size() ? 2 : adj.d1.size() ? 1 : 0;
  auto check = [&](const Matrix& a, Index rows, const char* what) {
    if (a.size() && (a.rows() != rows || a.cols() != M))
      throw Error(std::string("deep kernel backward: the adjoint of ") + what + " has the wrong shape");
  };
  check(adj.value, N, "the value");
  check(adj.d1, N * D, "d1");
  check(adj.d2, N * D, "d2");
  const Vector rho = weights();
  const auto yf = y_features(Y);
  Vector g = Vector::Zero(parameter_count());
  Matrix gY = Matrix::Zero(M, D);
  Vector rho_bar = Vector::Zero(components());
  const bool has_v = adj.value.size() > 0, has_1 = adj.d1.size() > 0, has_2 = adj.d2.size() > 0;
  const Index S = N * D * order;  // stacked derivative rows

  for (Index r = 0; r < components(); ++r) {
    const auto ri = static_cast<std::size_t>(r);
    const auto& net = nets_[ri];
    Mlp::Tape tape;
    Matrix F;
    net.forward_stacked(X, order, F, &tape);
    Matrix ax = Matrix::Zero(F.rows(), F.cols());  // stacked adjoint of φ_r(X), J_d, S_d
    Matrix c_bar;                                   // adjoint of φ_r(Y)

    if (gaussian()) {
      const double tau = std::exp(-2.0 * log_sigma_[r]);
      const GaussianPart p = gaussian_part(F, N, D, order, yf->mean[ri], yf->Cc[ri], yf->norms[ri], tau, true);
      // kq: adjoint of this component's k divided by ρ_r; Gbar = [ḡ; ē] (adjoints of g and e).
      Matrix kq = has_v ? adj.value : Matrix(Matrix::Zero(N, M));
      Matrix Gbar(S, M);
      const double tau_q = gaussian_stack_adjoints(p, adj, rho[r], tau, N, D, order, kq, Gbar);
      // ρ̄_r = Σ kq ∘ K; k̄ = ρ_r kq; ω = k̄ ∘ K; k = exp(−τ‖u‖²/2): ū = −τ ω u, τ̄ += −½ Σ ω r².
      rho_bar[r] += (kq.array() * p.K.array()).sum();
      const Matrix omega = rho[r] * kq.cwiseProduct(p.K);
      double tau_bar = rho[r] * tau_q + (omega.array() * (-0.5) * p.r2.array()).sum();
      const Vector row = omega.rowwise().sum(), col = omega.colwise().sum().transpose();
      ax.topRows(N).noalias() -= tau * (row.asDiagonal() * p.Ac);
      ax.topRows(N).noalias() += tau * (omega * yf->Cc[ri]);
      c_bar.noalias() = tau * (omega.transpose() * p.Ac);
      c_bar.noalias() -= tau * (col.asDiagonal() * yf->Cc[ri]);
      if (order >= 1) {
        // g = J_d·(Ac − Cc): ∂/∂a = J_d, ∂/∂J_d = Ac − Cc, ∂/∂c = −J_d.
        // e = ‖J_d‖² + S_d·(Ac − Cc): ∂/∂a = S_d, ∂/∂J_d = 2J_d, ∂/∂S_d = Ac − Cc, ∂/∂c = −S_d.
        const Vector rs = Gbar.rowwise().sum();
        auto FS = F.bottomRows(S);
        auto axS = ax.bottomRows(S);
        axS.noalias() -= Gbar * yf->Cc[ri];
        c_bar.noalias() -= Gbar.transpose() * FS;
        for (Index c = 0; c < D * order; ++c) {
          const auto rsc = rs.segment(c * N, N);
          axS.middleRows(c * N, N).noalias() += rsc.asDiagonal() * p.Ac;
          ax.topRows(N).noalias() += rsc.asDiagonal() * FS.middleRows(c * N, N);
        }
        if (order >= 2)
          for (Index d = 0; d < D; ++d)
            axS.middleRows(d * N, N).noalias() +=
                2.0 * (rs.segment((D + d) * N, N).asDiagonal() * F.middleRows((1 + d) * N, N));
      }
      g[logits_.size() + r] += tau_bar * (-2.0 * tau);  // τ = exp(−2s)
    } else {
      // Linear: the stacks are ρ F Cᵀ, so F̄ = ρ Ā C and C̄ = ρ Āᵀ F with Ā = [V̄; D̄1; D̄2].
      Matrix Abar = Matrix::Zero(F.rows(), M);
      if (has_v) Abar.topRows(N) = adj.value;
      if (has_1) Abar.middleRows(N, N * D) = adj.d1;
      if (has_2) Abar.bottomRows(N * D) = adj.d2;
      rho_bar[r] += (Abar.array() * (F * yf->C[ri].transpose()).array()).sum();
      ax.noalias() = rho[r] * (Abar * yf->C[ri]);
      c_bar.noalias() = rho[r] * (Abar.transpose() * F);
    }
    Vector g_net = Vector::Zero(net.parameter_count());
    net.backward_stacked(X, tape, ax, &g_net, nullptr);
    net.backward_stacked(Y, yf->tape[ri], c_bar, &g_net, grad_Y ? &gY : nullptr);
    g.segment(net_offset(r), net.parameter_count()) += g_net;
  }
  // ρ = softmax(v): v̄_i = ρ_i (ρ̄_i − Σ_j ρ_j ρ̄_j).
  g.head(logits_.size()) = rho.cwiseProduct(rho_bar - Vector::Constant(rho.size(), rho.dot(rho_bar)));
  if (grad_params) {
    if (grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
    *grad_params += g;
  }
  if (grad_Y) {
    if (grad_Y->rows() != M || grad_Y->cols() != D) grad_Y->setZero(M, D);
    *grad_Y += gY;
  }
}

}  // namespace kef::deep
