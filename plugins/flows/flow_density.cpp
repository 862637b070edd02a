#include "flow_density.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "kef/error.hpp"
#include "kef/network/batch_norm.hpp"
#include "kef/network/dense.hpp"
#include "kef/network/made.hpp"
#include "kef/parallel.hpp"

namespace kef::flows {

namespace nw = kef::network;

std::vector<MadeDegrees> flow_degrees(const FlowArchitecture& arch, bool random_hidden, RandomStream* rng) {
  const Index D = arch.dim;
  const Index count = (arch.coupling ? 0 : arch.layers) + (arch.components > 0 ? 1 : 0);
  std::vector<MadeDegrees> out;
  std::vector<Index> order = nw::made::input_degrees(D, nw::made::InputOrder::natural);
  const auto mode = random_hidden ? nw::made::HiddenDegrees::random : nw::made::HiddenDegrees::sequential;
  for (Index k = 0; k < count; ++k) {
    MadeDegrees m;
    m.inputs = order;
    for (Index h : arch.hidden_units)
      m.hidden.push_back(
          nw::made::hidden_degrees(h, D, mode, m.hidden.empty() ? m.inputs : m.hidden.back(), rng));
    out.push_back(std::move(m));
    std::reverse(order.begin(), order.end());  // the next MADE sees the inputs in reverse order
  }
  return out;
}

// ------------------------------------------------------------------------------------------- Made

Made::Made(const FlowArchitecture& arch, MadeDegrees degrees, Index components)
    : dim_(arch.dim), components_(components), degrees_(std::move(degrees)), net_(arch.dim) {
  const Index D = dim_;
  if (static_cast<Index>(degrees_.inputs.size()) != D || degrees_.hidden.size() != arch.hidden_units.size())
    throw Error("made: degrees for " + std::to_string(degrees_.inputs.size()) + " inputs and " +
                std::to_string(degrees_.hidden.size()) + " hidden layers, expected " + std::to_string(D) +
                " and " + std::to_string(arch.hidden_units.size()));
  by_degree_.assign(static_cast<std::size_t>(D), -1);
  for (Index j = 0; j < D; ++j) {
    const Index t = degrees_.inputs[static_cast<std::size_t>(j)];
    if (t < 1 || t > D || by_degree_[static_cast<std::size_t>(t - 1)] >= 0)
      throw Error("made: the input degrees must be a permutation of 1.." + std::to_string(D));
    by_degree_[static_cast<std::size_t>(t - 1)] = j;
  }
  const std::vector<Index>* below = &degrees_.inputs;
  for (std::size_t l = 0; l < degrees_.hidden.size(); ++l) {
    const auto& deg = degrees_.hidden[l];
    if (static_cast<Index>(deg.size()) != arch.hidden_units[l])
      throw Error("made: hidden layer " + std::to_string(l) + " has " + std::to_string(deg.size()) +
                  " degrees for " + std::to_string(arch.hidden_units[l]) + " units");
    const Index fan_in = static_cast<Index>(below->size());
    net_.add(std::make_unique<nw::MaskedDense>(nw::made::hidden_mask(*below, deg),
                                               nw::WeightInit::normal(1.0 / std::sqrt(double(fan_in + 1)))));
    net_.add(std::make_unique<nw::Activation>(arch.activation, static_cast<Index>(deg.size())));
    below = &deg;
  }
  // Output degrees: the degree of the input each head column belongs to.
  const Index heads = components_ > 0 ? 3 : 2, cw = std::max<Index>(components_, 1);
  std::vector<Index> out_deg;
  for (Index h = 0; h < heads; ++h)
    for (Index d = 0; d < D; ++d)
      for (Index c = 0; c < cw; ++c) out_deg.push_back(degrees_.inputs[static_cast<std::size_t>(d)]);
  const Index fan_in = static_cast<Index>(below->size());
  net_.add(std::make_unique<nw::MaskedDense>(nw::made::output_mask(*below, out_deg),
                                             nw::WeightInit::normal(1.0 / std::sqrt(double(fan_in + 1)))));
}

void Made::initialize(RandomStream& rng) {
  net_.initialize(rng);
  if (components_ == 0) return;
  const Index last = net_.layer_count() - 1;
  const auto& layer = net_.layer(last);
  Vector theta = net_.parameters();
  const Index bias = net_.parameter_offset(last) + layer.input_width() * layer.output_width();
  for (Index i = 0; i < layer.output_width(); ++i) theta[bias + i] = rng.normal();
  net_.set_parameters(theta);
}

// --------------------------------------------------------------------------------------- Coupling

Coupling::Coupling(const FlowArchitecture& arch, Index k) : s_(arch.dim), t_(arch.dim), mask_(arch.dim) {
  const Index D = arch.dim;
  for (Index j = 0; j < D; ++j) mask_[j] = static_cast<double>((j + k) % 2);
  for (auto [net, act] : {std::pair{&s_, arch.activation}, std::pair{&t_, arch.shift_activation}}) {
    Index below = D;
    for (Index h : arch.hidden_units) {
      net->add(
          std::make_unique<nw::Dense>(below, h, nw::WeightInit::normal(1.0 / std::sqrt(double(below + 1)))));
      net->add(std::make_unique<nw::Activation>(act, h));
      below = h;
    }
    net->add(
        std::make_unique<nw::Dense>(below, D, nw::WeightInit::normal(1.0 / std::sqrt(double(below + 1)))));
  }
}

void Coupling::initialize(RandomStream& rng) {
  s_.initialize(rng);
  t_.initialize(rng);
}

Vector Coupling::parameters() const {
  Vector theta(parameter_count());
  theta << s_.parameters(), t_.parameters();
  return theta;
}

void Coupling::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error("coupling: expected " + std::to_string(parameter_count()) + " parameters, got " +
                std::to_string(theta.size()));
  s_.set_parameters(theta.head(s_.parameter_count()));
  t_.set_parameters(theta.tail(t_.parameter_count()));
}

// ------------------------------------------------------------------------------------ FlowDensity

struct FlowDensity::Trace {
  struct MadeStep {
    Matrix input, out, e, output;  // e = exp(lp/2); output u = e ∘ (input − μ)
    nw::Network::Tape tape;
  };
  struct NormStep {
    Matrix input;
    nw::Network::Tape tape;
    Vector mean, variance;  // the statistics used (batch or recorded)
  };
  struct CouplingStep {
    Matrix input, masked, s, t, e, diff;  // e = exp(−s), diff = input − t
    nw::Network::Tape s_tape, t_tape;
  };
  struct BaseStep {
    Matrix input, out, w, e, r, pi;  // mixture: w = e ∘ (u − μ), responsibilities r, weights π
    nw::Network::Tape tape;
  };
  std::vector<MadeStep> mades;
  std::vector<CouplingStep> couplings;
  std::vector<NormStep> norms;
  BaseStep base;
  Matrix last;  // u_K
  Index n = 0;
};

FlowDensity::FlowDensity(FlowArchitecture arch, Vector shift, Vector scale,
                         const std::vector<MadeDegrees>& degrees)
    : arch_(std::move(arch)), shift_(std::move(shift)), scale_(std::move(scale)) {
  const Index D = arch_.dim;
  if (D < 1) throw Error("flow: the dimension must be positive");
  if (shift_.size() != D || scale_.size() != D)
    throw Error("flow: standardisation of size " + std::to_string(shift_.size()) + "/" +
                std::to_string(scale_.size()) + " for dimension " + std::to_string(D));
  for (Index d = 0; d < D; ++d)
    if (!(scale_[d] > 0.0) || !std::isfinite(scale_[d]) || !std::isfinite(shift_[d]))
      throw Error("flow: the standardisation of column " + std::to_string(d) +
                  " is not a finite shift and a scale > 0");
  if (arch_.coupling && arch_.components > 0) throw Error("flow: coupling layers take no mixture base");
  const Index count = (arch_.coupling ? 0 : arch_.layers) + (arch_.components > 0 ? 1 : 0);
  if (static_cast<Index>(degrees.size()) != count)
    throw Error("flow: " + std::to_string(degrees.size()) + " sets of MADE degrees for " +
                std::to_string(count) + " MADEs");
  for (Index k = 0; k < arch_.layers; ++k) {
    if (arch_.coupling)
      couplings_.emplace_back(arch_, k);
    else
      mades_.emplace_back(arch_, degrees[static_cast<std::size_t>(k)], 0);
    if (arch_.batch_norm) {
      nw::Network bn(D);
      bn.add(std::make_unique<nw::BatchNorm>(D, arch_.batch_norm_epsilon));
      bn.set_training(false);
      norms_.push_back(std::move(bn));
    }
  }
  if (arch_.components > 0) base_.emplace_back(arch_, degrees.back(), arch_.components);
}

void FlowDensity::initialize(RandomStream& rng) {
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    if (arch_.coupling)
      couplings_[k].initialize(rng);
    else
      mades_[k].initialize(rng);
    if (!norms_.empty()) norms_[k].initialize(rng);
  }
  if (!base_.empty()) base_.front().initialize(rng);
}

Index FlowDensity::layer_parameter_count(std::size_t k) const {
  return arch_.coupling ? couplings_[k].parameter_count() : mades_[k].net().parameter_count();
}

Vector FlowDensity::layer_parameters(std::size_t k) const {
  return arch_.coupling ? couplings_[k].parameters() : mades_[k].net().parameters();
}

void FlowDensity::set_layer_parameters(std::size_t k, const Vector& theta) {
  if (arch_.coupling)
    couplings_[k].set_parameters(theta);
  else
    mades_[k].net().set_parameters(theta);
}

std::vector<Index> FlowDensity::offsets() const {
  std::vector<Index> out;
  Index at = 0;
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    out.push_back(at);
    at += layer_parameter_count(k);
    if (!norms_.empty()) {
      out.push_back(at);
      at += norms_[k].parameter_count();
    }
  }
  if (!base_.empty()) out.push_back(at);
  return out;
}

Index FlowDensity::parameter_count() const {
  Index n = 0;
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) n += layer_parameter_count(k);
  for (const auto& b : norms_) n += b.parameter_count();
  if (!base_.empty()) n += base_.front().net().parameter_count();
  return n;
}

Vector FlowDensity::parameters() const {
  Vector theta(parameter_count());
  Index at = 0;
  auto put = [&](const nw::Network& net) {
    theta.segment(at, net.parameter_count()) = net.parameters();
    at += net.parameter_count();
  };
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    const Vector part = layer_parameters(k);
    theta.segment(at, part.size()) = part;
    at += part.size();
    if (!norms_.empty()) put(norms_[k]);
  }
  if (!base_.empty()) put(base_.front().net());
  return theta;
}

void FlowDensity::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error("flow: expected " + std::to_string(parameter_count()) + " parameters, got " +
                std::to_string(theta.size()));
  Index at = 0;
  auto take = [&](nw::Network& net) {
    net.set_parameters(theta.segment(at, net.parameter_count()));
    at += net.parameter_count();
  };
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    const Index n = layer_parameter_count(k);
    set_layer_parameters(k, theta.segment(at, n));
    at += n;
    if (!norms_.empty()) take(norms_[k]);
  }
  if (!base_.empty()) take(base_.front().net());
}

void FlowDensity::set_training(bool training) {
  training_ = training;
  for (auto& b : norms_) b.set_training(training);
}

// Σ_j (log γ_j − ½ log(v_j + ε)): the log-determinant of the batch norm after MADE k at variance v.
double FlowDensity::batch_norm_log_det(Index k, const Vector& variance) const {
  const nw::Network& bn = norms_[static_cast<std::size_t>(k)];
  const Index D = arch_.dim;
  const Eigen::Map<const Vector> log_gamma(bn.parameters().data(), D);
  return log_gamma.sum() - 0.5 * (variance.array() + arch_.batch_norm_epsilon).log().sum();
}

void FlowDensity::record_batch_norm_statistics(const Matrix& X) {
  if (norms_.empty()) return;
  set_training(true);
  Matrix u = ((X.rowwise() - shift_.transpose()).array().rowwise() / scale_.transpose().array()).matrix();
  const Index D = arch_.dim;
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    if (arch_.coupling) {
      const Coupling& c = couplings_[k];
      const Matrix mv = (u.array().rowwise() * c.mask().transpose().array()).matrix();
      const Matrix S = c.scale_net().value(mv), T = c.shift_net().value(mv);
      u = (mv.array() +
           ((-S.array()).exp() * (u - T).array()).rowwise() * (1.0 - c.mask().array()).transpose())
              .matrix();
    } else {
      const Matrix out = mades_[k].net().value(u);
      u = ((0.5 * out.middleCols(D, D).array()).exp() * (u - out.leftCols(D)).array()).matrix();
    }
    nw::Network::Tape tape;
    Matrix y;
    norms_[k].forward(u, 0, y, &tape);
    norms_[k].update_running_statistics(tape, 1.0);
    u = std::move(y);
  }
  set_training(false);
}

namespace {

// One coupling layer: u = m∘v + (1 − m)∘e^{−s}∘(v − t), log-determinant −Σ_j (1 − m_j) s_j
// (docs/math.md §15); the step's intermediates go to cs when it is not null.
void forward_coupling(const Coupling& c, Matrix& u, Vector& logp, FlowDensity::Trace::CouplingStep* cs) {
  const Vector keep = (1.0 - c.mask().array()).matrix();
  Matrix mv = (u.array().rowwise() * c.mask().transpose().array()).matrix();
  Matrix S, T;
  c.scale_net().forward(mv, 0, S, cs ? &cs->s_tape : nullptr);
  c.shift_net().forward(mv, 0, T, cs ? &cs->t_tape : nullptr);
  Matrix e = (-S.array()).exp().matrix();
  Matrix diff = u - T;
  Matrix next = (mv.array() + (e.array() * diff.array()).rowwise() * keep.transpose().array()).matrix();
  logp -= S * keep;
  if (cs) {
    cs->input = std::move(u);
    cs->masked = std::move(mv);
    cs->s = std::move(S);
    cs->t = std::move(T);
    cs->e = std::move(e);
    cs->diff = std::move(diff);
  }
  u = std::move(next);
}

// The mixture base's log density of u (N x D), added to logp: Σ_d log Σ_c π_dc N(u_d; μ_dc,
// 1/exp(lp_dc)) with π = softmax of the log mixing weights; the pass's intermediates go to s when
// it is not null.
void add_mixture_base(const Made& base, const Matrix& u, Vector& logp, FlowDensity::Trace::BaseStep* s) {
  const Index N = u.rows(), D = u.cols();
  const Index C = base.components(), W = base.width();
  Matrix out;
  base.net().forward(u, 0, out, s ? &s->tape : nullptr);
  Matrix w(N, W), e(N, W), r(N, W), pi(N, W);
  Vector a(C);
  for (Index n = 0; n < N; ++n) {
    double total = 0.0;
    for (Index d = 0; d < D; ++d) {
      const Index c0 = d * C;
      const double la_lse = log_sum_exp_of_row(out, n, 2 * W + c0, C);
      double a_max = -std::numeric_limits<double>::infinity();
      for (Index c = 0; c < C; ++c) {
        const double lp = out(n, W + c0 + c), ec = std::exp(0.5 * lp);
        const double wc = ec * (u(n, d) - out(n, c0 + c));
        const double log_pi = out(n, 2 * W + c0 + c) - la_lse;
        e(n, c0 + c) = ec;
        w(n, c0 + c) = wc;
        pi(n, c0 + c) = std::exp(log_pi);
        a[c] = log_pi - 0.5 * wc * wc + 0.5 * lp;
        a_max = std::max(a_max, a[c]);
      }
      double a_sum = 0.0;
      for (Index c = 0; c < C; ++c) a_sum += std::exp(a[c] - a_max);
      const double a_lse = a_max + std::log(a_sum);
      for (Index c = 0; c < C; ++c) r(n, c0 + c) = std::exp(a[c] - a_lse);
      total += a_lse;
    }
    logp[n] += total - D * kHalfLog2Pi;
  }
  if (s) {
    s->input = u;
    s->out = std::move(out);
    s->w = std::move(w);
    s->e = std::move(e);
    s->r = std::move(r);
    s->pi = std::move(pi);
  }
}

}  // namespace

Vector FlowDensity::forward(const Matrix& X, Trace* tr) const {
  if (X.cols() != arch_.dim)
    throw DataError("flow: data has " + std::to_string(X.cols()) + " columns, the model dimension " +
                    std::to_string(arch_.dim));
  const Index N = X.rows(), D = arch_.dim;
  if (tr) {
    tr->n = N;
    tr->mades.assign(mades_.size(), {});
    tr->couplings.assign(couplings_.size(), {});
    tr->norms.assign(norms_.size(), {});
  }
  Matrix u = ((X.rowwise() - shift_.transpose()).array().rowwise() / scale_.transpose().array()).matrix();
  Vector logp = Vector::Constant(N, -scale_.array().log().sum());
  for (std::size_t k = 0; k < static_cast<std::size_t>(layer_count()); ++k) {
    if (arch_.coupling) {
      forward_coupling(couplings_[k], u, logp, tr ? &tr->couplings[k] : nullptr);
    } else {
      // u ↦ e ∘ (u − μ(u)), e = exp(lp(u)/2); log-determinant Σ_d lp_d / 2 (docs/math.md §15).
      Trace::MadeStep* s = tr ? &tr->mades[k] : nullptr;
      Matrix out;
      mades_[k].net().forward(u, 0, out, s ? &s->tape : nullptr);
      Matrix e = (0.5 * out.middleCols(D, D).array()).exp().matrix();
      Matrix next = (e.array() * (u - out.leftCols(D)).array()).matrix();
      logp += 0.5 * out.middleCols(D, D).rowwise().sum();
      if (s) {
        s->input = std::move(u);
        s->out = std::move(out);
        s->e = std::move(e);
        s->output = next;
      }
      u = std::move(next);
    }
    if (!norms_.empty()) {
      const nw::Network& bn = norms_[k];
      Trace::NormStep* b = tr ? &tr->norms[k] : nullptr;
      nw::Network::Tape local;
      nw::Network::Tape* tape = b ? &b->tape : (training_ ? &local : nullptr);
      Matrix y;
      bn.forward(u, 0, y, tape);
      const auto& layer = static_cast<const nw::BatchNorm&>(bn.layer(0));
      Vector mean = training_ ? tape->layers[0].mean : layer.running_mean();
      Vector variance = training_ ? tape->layers[0].variance : layer.running_variance();
      logp.array() += batch_norm_log_det(static_cast<Index>(k), variance);
      if (b) {
        b->input = std::move(u);
        b->mean = std::move(mean);
        b->variance = std::move(variance);
      }
      u = std::move(y);
    }
  }
  if (base_.empty()) {
    logp -= 0.5 * u.rowwise().squaredNorm();
    logp.array() -= D * kHalfLog2Pi;
  } else {
    add_mixture_base(base_.front(), u, logp, tr ? &tr->base : nullptr);
  }
  if (tr) tr->last = std::move(u);
  return logp;
}

void FlowDensity::backward(const Trace& tr, const Vector& g, Vector* gradient, Matrix* grad_X) const {
  const Index N = tr.n, D = arch_.dim;
  const std::vector<Index> off = offsets();
  std::size_t slot = off.size();
  auto add_grad = [&](const Vector& part) {
    --slot;
    if (gradient) gradient->segment(off[slot], part.size()) += part;  // (part is empty without one)
  };
  Matrix ub;  // the adjoint of the current u
  if (base_.empty()) {
    ub = -(tr.last.array().colwise() * g.array()).matrix();
  } else {
    const Made& base = base_.front();
    const Index C = base.components(), W = base.width();
    const auto& s = tr.base;
    Matrix adj(N, 3 * W);
    ub = Matrix::Zero(N, D);
    for (Index n = 0; n < N; ++n)
      for (Index d = 0; d < D; ++d)
        for (Index c = 0; c < C; ++c) {
          const Index j = d * C + c;
          const double ab = g[n] * s.r(n, j), wc = s.w(n, j), ec = s.e(n, j);
          adj(n, j) = ab * wc * ec;                             // μ
          adj(n, W + j) = ab * (0.5 - 0.5 * wc * wc);           // log precision
          adj(n, 2 * W + j) = g[n] * (s.r(n, j) - s.pi(n, j));  // log mixing weight
          ub(n, d) -= ab * wc * ec;
        }
    Vector gp;
    base.net().backward(s.input, s.tape, adj, gradient ? &gp : nullptr, &ub);
    add_grad(gp);
  }
  const double G = g.sum();
  for (std::size_t k = static_cast<std::size_t>(layer_count()); k-- > 0;) {
    if (!norms_.empty()) {
      const auto& b = tr.norms[k];
      Vector gp;
      Matrix xb = Matrix::Zero(N, D);
      norms_[k].backward(b.input, b.tape, ub, gradient ? &gp : nullptr, &xb);
      // The log-determinant Σ_j (log γ_j − ½ log(v_j + ε)) enters every row's log p: G·1 to log γ, and
      // in training mode, where v is the batch's, −G (x_nj − m_j)/(N (v_j + ε)) to x_nj.
      if (gradient) gp.head(D).array() += G;
      if (training_) {
        const Vector f =
            (G / static_cast<double>(N)) * (b.variance.array() + arch_.batch_norm_epsilon).inverse().matrix();
        xb -= ((b.input.rowwise() - b.mean.transpose()).array().rowwise() * f.transpose().array()).matrix();
      }
      add_grad(gp);
      ub = std::move(xb);
    }
    if (arch_.coupling) {
      // With keep = 1 − m: v̄ = ū∘(m + keep∘e), s̄ = −keep∘(ū∘e∘(v − t) + ḡ), t̄ = −keep∘ū∘e, and the
      // nets' input adjoint, taken through the mask, adds m∘(S̄ + T̄ at m∘v).
      const Coupling& c = couplings_[k];
      const auto& cs = tr.couplings[k];
      const Vector keep = (1.0 - c.mask().array()).matrix();
      const Matrix ue = (ub.array() * cs.e.array()).matrix();
      Matrix sb = (ue.array() * cs.diff.array()).matrix();
      sb.array().colwise() += g.array();
      sb = -(sb.array().rowwise() * keep.transpose().array()).matrix();
      const Matrix tb = -(ue.array().rowwise() * keep.transpose().array()).matrix();
      Matrix mb = Matrix::Zero(N, D);
      Vector gs, gt;
      c.scale_net().backward(cs.masked, cs.s_tape, sb, gradient ? &gs : nullptr, &mb);
      c.shift_net().backward(cs.masked, cs.t_tape, tb, gradient ? &gt : nullptr, &mb);
      Vector gp;
      if (gradient) {
        gp.resize(gs.size() + gt.size());
        gp << gs, gt;
      }
      add_grad(gp);
      Matrix vb = (ub.array().rowwise() * c.mask().transpose().array()).matrix() +
                  (ue.array().rowwise() * keep.transpose().array()).matrix() +
                  (mb.array().rowwise() * c.mask().transpose().array()).matrix();
      ub = std::move(vb);
      continue;
    }
    const auto& s = tr.mades[k];
    Matrix adj(N, 2 * D);
    adj.leftCols(D) = -(ub.array() * s.e.array()).matrix();
    adj.rightCols(D) = (0.5 * ub.array() * s.output.array()).matrix();
    adj.rightCols(D).array().colwise() += 0.5 * g.array();
    Matrix vb = (ub.array() * s.e.array()).matrix();
    Vector gp;
    mades_[k].net().backward(s.input, s.tape, adj, gradient ? &gp : nullptr, &vb);
    add_grad(gp);
    ub = std::move(vb);
  }
  if (grad_X) *grad_X = (ub.array().rowwise() / scale_.transpose().array()).matrix();
}

Vector FlowDensity::log_density(const Matrix& X) const { return forward(X, nullptr); }

Vector FlowDensity::log_density_and_score(const Matrix& X, Matrix& score) const {
  Trace tr;
  Vector logp = forward(X, &tr);
  backward(tr, Vector::Ones(X.rows()), nullptr, &score);
  return logp;
}

double FlowDensity::loss_and_gradient(const Matrix& X, Vector& gradient, int threads) const {
  const Index N = X.rows();
  const double n = static_cast<double>(N);
  // Σ log p over some rows, and the gradient of −Σ log p / n over them.
  auto group_sum = [&](const Matrix& rows, Vector& grad) {
    Trace tr;
    const double sum = forward(rows, &tr).sum();
    grad = Vector::Zero(parameter_count());
    backward(tr, Vector::Constant(rows.rows(), -1.0 / n), &grad, nullptr);
    return sum;
  };
  const Index groups = loss_groups(N);
  if (groups == 1) return -group_sum(X, gradient) / n;
  std::vector<double> logp(static_cast<std::size_t>(groups));
  std::vector<Vector> grads(static_cast<std::size_t>(groups));
  parallel_for(groups, threads, [&](Index g) {
    const Index begin = g * N / groups, end = (g + 1) * N / groups;
    const auto k = static_cast<std::size_t>(g);
    logp[k] = group_sum(X.middleRows(begin, end - begin), grads[k]);
  });
  // Added in group order.
  gradient = std::move(grads[0]);
  double sum = logp[0];
  for (std::size_t k = 1; k < grads.size(); ++k) {
    gradient += grads[k];
    sum += logp[k];
  }
  return -sum / n;
}

Index FlowDensity::loss_groups(Index rows) const {
  if (!norms_.empty()) return 1;  // batch norm's statistics couple the batch's rows
  return std::max<Index>(1, rows / kLossGroupRows);
}

Matrix FlowDensity::to_base(const Matrix& X) const {
  Trace tr;
  forward(X, &tr);
  return tr.last;
}

Matrix FlowDensity::from_base(const Matrix& U) const {
  if (training_) throw Error("flow: the inverse pass needs evaluation mode");
  const Index N = U.rows(), D = arch_.dim;
  Matrix u = U;
  for (std::size_t k = static_cast<std::size_t>(layer_count()); k-- > 0;) {
    if (!norms_.empty()) {
      // y = e^γ (x − m)/√(v + ε) + β  ⇒  x = (y − β) e^{−γ} √(v + ε) + m.
      const nw::Network& bn = norms_[k];
      const auto& layer = static_cast<const nw::BatchNorm&>(bn.layer(0));
      const Eigen::Map<const Vector> log_gamma(bn.parameters().data(), D),
          beta(bn.parameters().data() + D, D);
      const Vector f =
          ((-log_gamma.array()).exp() * (layer.running_variance().array() + arch_.batch_norm_epsilon).sqrt())
              .matrix();
      u = ((u.rowwise() - beta.transpose()).array().rowwise() * f.transpose().array()).matrix();
      u.rowwise() += layer.running_mean().transpose();
    }
    if (arch_.coupling) {
      // m∘v = m∘u; the rest v = u∘e^{s} + t with s, t at m∘u: one pass.
      const Coupling& c = couplings_[k];
      const Vector keep = (1.0 - c.mask().array()).matrix();
      const Matrix mu = (u.array().rowwise() * c.mask().transpose().array()).matrix();
      const Matrix S = c.scale_net().value(mu), T = c.shift_net().value(mu);
      u = (mu.array() + (u.array() * S.array().exp() + T.array()).rowwise() * keep.transpose().array())
              .matrix();
      continue;
    }
    // v_j = μ_j(v_<j) + u_j e^{−lp_j(v_<j)/2}, in the order of the degrees: input j of degree t depends
    // only on inputs of lower degree, which are final by step t.
    const Made& m = mades_[k];
    Matrix v = Matrix::Zero(N, D);
    for (Index t = 1; t <= D; ++t) {
      const Index j = m.input_of_degree(t);
      const Matrix out = m.net().value(v);
      v.col(j) = (out.col(j).array() + u.col(j).array() * (-0.5 * out.col(D + j).array()).exp()).matrix();
    }
    u = std::move(v);
  }
  return ((u.array().rowwise() * scale_.transpose().array()).rowwise() + shift_.transpose().array()).matrix();
}

Matrix FlowDensity::sample(Index n, RandomStream& rng) const {
  const Index D = arch_.dim;
  Matrix z = rng.normal_matrix(n, D);
  if (base_.empty()) return from_base(z);
  const Made& base = base_.front();
  const Index C = base.components(), W = base.width();
  Matrix pick(n, D);  // uniforms choosing the components
  for (Index j = 0; j < D; ++j)
    for (Index i = 0; i < n; ++i) pick(i, j) = rng.uniform();
  Matrix u = Matrix::Zero(n, D);
  for (Index t = 1; t <= D; ++t) {
    const Index d = base.input_of_degree(t);
    const Matrix out = base.net().value(u);
    for (Index i = 0; i < n; ++i) {
      // Component c with probability softmax(la)_c: the first c whose cumulative weight exceeds the uniform.
      double la_max = -std::numeric_limits<double>::infinity();
      for (Index c = 0; c < C; ++c) la_max = std::max(la_max, out(i, 2 * W + d * C + c));
      double total = 0.0;
      for (Index c = 0; c < C; ++c) total += std::exp(out(i, 2 * W + d * C + c) - la_max);
      const double target = pick(i, d) * total;
      Index chosen = C - 1;
      double acc = 0.0;
      for (Index c = 0; c < C; ++c) {
        acc += std::exp(out(i, 2 * W + d * C + c) - la_max);
        if (target < acc) {
          chosen = c;
          break;
        }
      }
      const Index j = d * C + chosen;
      u(i, d) = out(i, j) + z(i, d) * std::exp(-0.5 * out(i, W + j));
    }
  }
  return from_base(u);
}

}  // namespace kef::flows
