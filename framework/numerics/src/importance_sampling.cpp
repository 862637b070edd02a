#include "kef/importance_sampling.hpp"

#include <cmath>
#include <sstream>

#include "kef/error.hpp"

namespace kef {

ProposalSource::ProposalSource(const Model& model, const BaseMeasure& base, std::string where)
    : model_(model), base_(&base), where_(std::move(where)) {}

ProposalSource::ProposalSource(const Model& model, const Proposal& proposal, std::string where)
    : model_(model), proposal_(&proposal), where_(std::move(where)) {
  if (proposal.dim() != model.dim())
    throw Error(where_ + ": the proposal has dimension " + std::to_string(proposal.dim()) + ", the model " +
                std::to_string(model.dim()));
}

Vector ProposalSource::log_ratios(Index n, RandomStream& rng, Index first_index) const {
  const Matrix Y = proposal_ ? proposal_->sample(n, rng) : base_->sample(n, model_.dim(), rng);
  // One batched call: for kernel models a GEMM against the inducing points. Proposals from the
  // model's own q0 need f = log p~ − log q0 only, which the model gives without evaluating q0.
  Vector f;
  if (proposal_) {
    f = model_.log_unnormalized(Y);
    f -= proposal_->log_density(Y);
  } else if (base_ == model_.base_measure()) {
    f = model_.log_ratio_to_base(Y);
  } else {
    f = model_.log_unnormalized(Y);
    f -= base_->log_density(Y);
  }
  for (Index i = 0; i < n; ++i) {
    if (std::isnan(f[i]) || f[i] == std::numeric_limits<double>::infinity()) {
      std::ostringstream os;
      os << where_ << ": log p~(y) − log q0(y) is " << f[i] << " at importance-sampling proposal "
         << first_index + i << " (y = " << Y.row(i) << "); the model is not finite where its base measure samples";
      throw NumericalError(os.str());
    }
  }
  return f;
}

ShiftedMoments ShiftedMoments::of(const Vector& log_r) {
  ShiftedMoments m;
  m.n = log_r.size();
  if (m.n == 0) return m;
  m.shift = log_r.maxCoeff();
  if (!std::isfinite(m.shift)) return m;  // every ratio is 0 (−inf logs): no mass, shift stays −inf
  const Eigen::ArrayXd e = (log_r.array() - m.shift).exp();  // in (0, 1], the maximum is exactly 1
  m.mean = e.mean();
  m.m2 = (e - m.mean).square().sum();
  return m;
}

void ShiftedMoments::merge(const ShiftedMoments& o) {
  if (o.n == 0) return;
  if (n == 0) {
    *this = o;
    return;
  }
  const double c = std::max(shift, o.shift);
  if (!std::isfinite(c)) {  // both massless
    n += o.n;
    return;
  }
  // Rescale both sides to the common shift; exp(non-positive) cannot overflow.
  const double ea = std::exp(shift - c), eb = std::exp(o.shift - c);
  const double ma = mean * ea, mb = o.mean * eb;
  const double na = static_cast<double>(n), nb = static_cast<double>(o.n), nt = na + nb;
  const double delta = mb - ma;
  mean = ma + delta * (nb / nt);
  m2 = m2 * ea * ea + o.m2 * eb * eb + delta * delta * (na * nb / nt);
  n += o.n;
  shift = c;
}

MomentsRun sample_moments(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                          const Context& context) {
  MomentsRun run;
  run.report = stream_chunks<ShiftedMoments>(
      source, stream, plan, context,
      [](Index, Index, const Vector& log_r) { return ShiftedMoments::of(log_r); },
      [&](const ShiftedMoments& s) { run.moments.merge(s); });
  return run;
}

Vector sample_log_ratios(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                         const Context& context, StreamReport* report) {
  Vector all(plan.total);
  // Each chunk's ratios are its summary (so they reach every process of a distributed run), copied in
  // chunk order into the prefix of `all`.
  Index filled = 0;
  StreamReport r = stream_chunks<Vector>(
      source, stream, plan, context, [](Index, Index, const Vector& log_r) { return log_r; },
      [&](const Vector& log_r) {
        all.segment(filled, log_r.size()) = log_r;
        filled += log_r.size();
      });
  if (report) *report = r;
  return all;
}

Index count_at_most(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                    const Context& context, double threshold, StreamReport* report) {
  Index count = 0;
  StreamReport r = stream_chunks<Index>(
      source, stream, plan, context,
      [&](Index, Index, const Vector& log_r) {
        return static_cast<Index>((log_r.array() <= threshold).count());
      },
      [&](Index c) { count += c; });
  if (report) *report = r;
  return count;
}

}  // namespace kef
