#include "fssd.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>
#include <vector>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/normal_fill.hpp"
#include "stein_common.hpp"

namespace kef::stein {

void fssd_features(const KernelStacks& st, const Matrix& S, Index J, Matrix& T) {
  const Index N = S.rows(), D = S.cols();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D * J));
  T.resize(N, D * J);
  for (Index d = 0; d < D; ++d)
    T.middleCols(d * J, J) = scale * (S.col(d).asDiagonal() * st.value + st.d1.middleRows(d * N, N));
}

void fssd_features(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S, KernelStacks& stacks,
                   Matrix& T) {
  kernel.derivatives(X, V, 1, stacks);
  fssd_features(stacks, S, V.rows(), T);
}

namespace {

// τ from φ and φ' already in ws (the rows X against V), for the scores S.
void radial_features_from_profile(const Matrix& V, const Eigen::Ref<const Matrix>& X, const Eigen::Ref<const Matrix>& S,
                                  const FeatureWorkspace& ws, Matrix& T) {
  const Index n = X.rows(), D = X.cols(), J = V.rows();
  const double scale = 1.0 / std::sqrt(static_cast<double>(D * J));
  T.resize(n, D * J);
  for (Index d = 0; d < D; ++d)
    for (Index j = 0; j < J; ++j)
      T.col(d * J + j).array() = scale * (S.col(d).array() * ws.phi.col(j).array() +
                                          2.0 * ws.dphi.col(j).array() * (X.col(d).array() - V(j, d)));
}

}  // namespace

void fssd_features_radial(const RadialProfile& profile, const Matrix& V, const Eigen::Ref<const Matrix>& X,
                          const Eigen::Ref<const Matrix>& S, FeatureWorkspace& ws, Matrix& T) {
  const Index n = X.rows(), D = X.cols(), J = V.rows();
  // r by explicit differences (no ‖x‖² + ‖v‖² − 2x·v cancellation), vectorised over the rows.
  ws.r.setZero(n, J);
  for (Index j = 0; j < J; ++j)
    for (Index d = 0; d < D; ++d) ws.r.col(j).array() += (X.col(d).array() - V(j, d)).square();
  profile.evaluate(ws.r, &ws.phi, &ws.dphi, nullptr);
  radial_features_from_profile(V, X, S, ws, T);
}

namespace {

// Lower triangle of C += AᵀA as Eigen rank updates of at most 128 rows. Measured on the AVX-512
// machine (one thread): 54–73 GFLOP/s for C of order 100–1000 at depth 128, against OpenBLAS's Haswell
// dsyrk at 40–49; at depth ≥ 256 Eigen's blocking falls off a cliff (3–10 GFLOP/s) for orders below
// ~500. (Without OpenBLAS here, FSSD also avoids the 2-thread stalls seen on the VM while the
// pthreads OpenBLAS's idle worker spins after a call.)
constexpr Index kRankUpdateRows = 128;

void gram_lower_accumulate(const Matrix& A, Matrix& C) {
  for (Index r = 0; r < A.rows(); r += kRankUpdateRows)
    C.selfadjointView<Eigen::Lower>().rankUpdate(A.middleRows(r, std::min(kRankUpdateRows, A.rows() - r)).transpose());
}

struct Moments {
  FeatureWorkspace ws;
  Vector sum;         // Σ τ
  double sum_sq = 0;  // Σ ‖τ‖²
  Matrix gram;        // Σ τ τᵀ (lower triangle), only for the null distribution
};

void check_rows(Index n, const char* what) {
  if (n < 2) throw DataError(std::string(what) + ": needs at least 2 rows, got " + std::to_string(n));
}

}  // namespace

FssdMoments fssd_moments(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                         bool with_covariance, const Context& context) {
  const Index N = X.rows(), P = X.cols() * V.rows();
  const RadialProfile* profile = kernel.radial_profile();
  const Index rows = kRowChunk;
  const Index items = (N + rows - 1) / rows;
  // Each run holds a P x P Gram: at most 32 MB of them (4 runs at P = 1000), and 8 runs for small P.
  const Index max_groups = std::clamp<Index>(static_cast<Index>(4e6 / (double(P) * double(P))), 2, 8);
  Moments total = ordered_reduce(
      items, context,
      [&] {
        Moments m;
        m.sum = Vector::Zero(P);
        if (with_covariance) m.gram = Matrix::Zero(P, P);
        return m;
      },
      [&](Index c, Moments& m) {
        const Index b = c * rows, n = std::min(rows, N - b);
        if (profile)
          fssd_features_radial(*profile, V, X.middleRows(b, n), S.middleRows(b, n), m.ws, m.ws.T);
        else
          fssd_features(kernel, V, X.middleRows(b, n), S.middleRows(b, n), m.ws.stacks, m.ws.T);
        const Matrix& T = m.ws.T;
        m.sum.noalias() += T.colwise().sum().transpose();
        m.sum_sq += T.squaredNorm();
        if (with_covariance) gram_lower_accumulate(T, m.gram);
      },
      [](Moments& acc, const Moments& m) {
        acc.sum += m.sum;
        acc.sum_sq += m.sum_sq;
        if (m.gram.size()) acc.gram.triangularView<Eigen::Lower>() += m.gram;
      },
      max_groups, [](Moments& m) { return std::tie(m.sum, m.sum_sq, m.gram); });
  FssdMoments out;
  out.sum = total.sum;
  out.sum_sq = total.sum_sq;
  if (with_covariance) {
    // (Σ ττᵀ − N μμᵀ)/(N − 1), lower triangle.
    const double Nd = static_cast<double>(N);
    const Vector mu = total.sum / Nd;
    out.cov = std::move(total.gram);
    out.cov.selfadjointView<Eigen::Lower>().rankUpdate(mu, -Nd);
    out.cov.triangularView<Eigen::Lower>() /= Nd - 1.0;
  }
  return out;
}

FssdResult fssd_test(const Kernel& kernel, const Matrix& V, const Matrix& X, const Matrix& S,
                     Index null_draws, RandomStream& rng, const Context& context) {
  const Index N = X.rows();
  check_rows(N, "fssd");
  const bool need_null = null_draws > 0;
  const FssdMoments m = fssd_moments(kernel, V, X, S, need_null, context);
  const double Nd = static_cast<double>(N);
  FssdResult r;
  r.fssd2 = (m.sum.squaredNorm() - m.sum_sq) / (Nd * (Nd - 1.0));
  if (!std::isfinite(r.fssd2)) throw NumericalError("fssd: FSSD² is not finite");
  if (!need_null) return r;
  const std::vector<double> sims =
      simulate_quadratic_null(m.cov, null_draws, rng.derive("fssd-null"), context);
  r.pvalue = monte_carlo_pvalue(Nd * r.fssd2, sims);
  return r;
}

std::vector<double> simulate_quadratic_null(const Matrix& cov, Index draws, const RandomStream& rng,
                                            const Context& context) {
  const Index P = cov.rows();
  const Vector diag = cov.diagonal();
  const double trace = diag.sum();
  constexpr Index kGroup = 64;
  std::vector<double> sims(static_cast<std::size_t>(draws));
  parallel_for((draws + kGroup - 1) / kGroup, context.threads(), [&](Index grp) {
    RandomStream z = rng.derive(static_cast<std::uint64_t>(grp));
    const Index first = grp * kGroup, n = std::min(draws, first + kGroup) - first;
    Matrix Z(P, n);
    fill_normal(z, Z.data(), P * n);  // column b is draw first + b
    // zᵀCz = Σ c_ii z_i² + 2 zᵀ(L z), L the strictly lower triangle: half the flops of C·z.
    const Matrix LZ = cov.triangularView<Eigen::StrictlyLower>() * Z;
    for (Index b = 0; b < n; ++b)
      sims[static_cast<std::size_t>(first + b)] =
          (diag.array() * Z.col(b).array().square()).sum() + 2.0 * Z.col(b).dot(LZ.col(b)) - trace;
  });
  return sims;
}

RelativeFssdResult relative_fssd_test(const Kernel& kernel, const Matrix& V, const Matrix& X,
                                      const Matrix& S_p, const Matrix& S_q, const Context& context) {
  const Index N = X.rows(), J = V.rows();
  check_rows(N, "relative_fssd");
  const Index P = X.cols() * J;
  struct First {
    FeatureWorkspace ws;
    Vector sum_p, sum_q;
    double sq_p = 0, sq_q = 0;
  };
  struct Second {
    FeatureWorkspace ws;
    double pp = 0, qq = 0, pq = 0;  // Σ a_p², Σ a_q², Σ a_p a_q with a = τ·μ
  };
  const RadialProfile* profile = kernel.radial_profile();
  auto features = [&](Index c, FeatureWorkspace& ws) {
    const Index b = chunk_begin(c), n = chunk_size(c, N);
    if (profile) {  // one kernel evaluation for both models, as with the stacks below
      fssd_features_radial(*profile, V, X.middleRows(b, n), S_p.middleRows(b, n), ws, ws.T);
      radial_features_from_profile(V, X.middleRows(b, n), S_q.middleRows(b, n), ws, ws.Tq);
      return;
    }
    fssd_features(kernel, V, X.middleRows(b, n), S_p.middleRows(b, n), ws.stacks, ws.T);
    fssd_features(ws.stacks, S_q.middleRows(b, n), J, ws.Tq);
  };
  const First one = ordered_reduce(
      chunk_count(N), context,
      [&] {
        First f;
        f.sum_p = f.sum_q = Vector::Zero(P);
        return f;
      },
      [&](Index c, First& f) {
        features(c, f.ws);
        f.sum_p += f.ws.T.colwise().sum().transpose();
        f.sum_q += f.ws.Tq.colwise().sum().transpose();
        f.sq_p += f.ws.T.squaredNorm();
        f.sq_q += f.ws.Tq.squaredNorm();
      },
      [](First& acc, const First& f) {
        acc.sum_p += f.sum_p;
        acc.sum_q += f.sum_q;
        acc.sq_p += f.sq_p;
        acc.sq_q += f.sq_q;
      },
      8, [](First& f) { return std::tie(f.sum_p, f.sum_q, f.sq_p, f.sq_q); });
  const double Nd = static_cast<double>(N);
  const Vector mu_p = one.sum_p / Nd, mu_q = one.sum_q / Nd;
  const Second two = ordered_reduce(
      chunk_count(N), context, [] { return Second(); },
      [&](Index c, Second& s) {
        features(c, s.ws);
        const Vector ap = s.ws.T * mu_p, aq = s.ws.Tq * mu_q;
        s.pp += ap.squaredNorm();
        s.qq += aq.squaredNorm();
        s.pq += ap.dot(aq);
      },
      [](Second& acc, const Second& s) {
        acc.pp += s.pp;
        acc.qq += s.qq;
        acc.pq += s.pq;
      },
      8, [](Second& s) { return std::tie(s.pp, s.qq, s.pq); });

  RelativeFssdResult r;
  r.fssd2_p = (one.sum_p.squaredNorm() - one.sq_p) / (Nd * (Nd - 1.0));
  r.fssd2_q = (one.sum_q.squaredNorm() - one.sq_q) / (Nd * (Nd - 1.0));
  r.statistic = std::sqrt(Nd) * (r.fssd2_p - r.fssd2_q);
  const double mp2 = mu_p.squaredNorm(), mq2 = mu_q.squaredNorm();
  const double v_p = 4.0 * two.pp / Nd - 4.0 * mp2 * mp2;
  const double v_q = 4.0 * two.qq / Nd - 4.0 * mq2 * mq2;
  const double c_pq = 4.0 * two.pq / Nd - 4.0 * mp2 * mq2;
  // (v_p + v_q) first: the sum commutes exactly, so swapping p and q gives the same σ bit for bit.
  const double var = (v_p + v_q) - 2.0 * c_pq;
  if (!std::isfinite(r.statistic) || !std::isfinite(var))
    throw NumericalError("relative_fssd: the statistic or its variance is not finite");
  r.sigma = std::sqrt(std::max(var, 0.0));
  if (r.sigma > 0.0)
    r.pvalue = normal_upper_tail(r.statistic / r.sigma);
  else  // identical features: no evidence either way unless the statistic itself differs
    r.pvalue = r.statistic > 0.0 ? 0.0 : r.statistic < 0.0 ? 1.0 : 0.5;
  return r;
}

std::string relative_fssd_verdict(double pvalue, double alpha, const std::string& model,
                                  const std::string& against) {
  std::ostringstream level;
  level << "at level " << alpha;
  if (pvalue < alpha) return against + " fits significantly better than " + model + " " + level.str();
  if (1.0 - pvalue < alpha) return model + " fits significantly better than " + against + " " + level.str();
  return "no significant difference between " + model + " and " + against + " " + level.str();
}

}  // namespace kef::stein
