#include "ksd.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <sstream>

#include "blas.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "stein_common.hpp"

namespace kef::stein {

Matrix stein_kernel(const RadialProfile& k, const Matrix& Xa, const Matrix& Sa, const Matrix& Xb, const Matrix& Sb) {
  const Index na = Xa.rows(), nb = Xb.rows(), D = Xa.cols();
  const Matrix r = squared_distances(Xa, Xb);
  Matrix phi, dphi, d2phi;
  k.evaluate(r, &phi, &dphi, &d2phi);
  // (s_b − s_a)·(x_a − x_b) = x_a·s_b + s_a·x_b − s_a·x_a − s_b·x_b
  Matrix left(na, 2 * D), right(nb, 2 * D);  // one GEMM: [x_a s_a]·[s_b x_b]ᵀ
  left << Xa, Sa;
  right << Sb, Xb;
  Matrix cross = left * right.transpose();
  cross.colwise() -= Sa.cwiseProduct(Xa).rowwise().sum();
  cross.rowwise() -= Sb.cwiseProduct(Xb).rowwise().sum().transpose();
  Matrix H = Sa * Sb.transpose();
  H.array() = phi.array() * H.array() + 2.0 * dphi.array() * (cross.array() - static_cast<double>(D)) -
              4.0 * d2phi.array() * r.array();
  return H;
}

namespace {

// h is computed in kTile x kTile tiles: the dozen temporaries of one tile stay in L2 (two times faster
// than whole 128 x 128 blocks), while the bootstrap GEMM keeps the larger blocks it needs.
constexpr Index kTile = 32;

// Rademacher signs as bits, row n holding draws 0..B−1 in `words` 64-bit words (bit b % 64 of word
// b / 64): N·B/8 bytes, where ±1 doubles would take 64 times as much.
struct Signs {
  Index words = 0, draws = 0;
  std::vector<std::uint64_t> bits;

  Signs(Index rows, Index B, RandomStream& rng) : words((B + 63) / 64), draws(B) {
    bits.resize(static_cast<std::size_t>(rows * words));
    for (auto& w : bits) w = rng();
  }
  // Rows [begin, begin + n) into W as a (64·words) x n matrix of ±1 whose first B rows are the draws
  // (one column per data row: contiguous writes, eight signs per table lookup).
  void block_transposed(Index begin, Index n, Matrix& W) const {
    static const auto table = [] {
      std::array<std::array<double, 8>, 256> t{};
      for (int v = 0; v < 256; ++v)
        for (int i = 0; i < 8; ++i) t[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)] = (v >> i) & 1 ? 1.0 : -1.0;
      return t;
    }();
    W.resize(words * 64, n);
    for (Index i = 0; i < n; ++i) {
      double* col = W.col(i).data();
      const std::uint64_t* row = bits.data() + (begin + i) * words;
      for (Index w = 0; w < words; ++w)
        for (int byte = 0; byte < 8; ++byte)
          std::memcpy(col + w * 64 + byte * 8, table[(row[w] >> (8 * byte)) & 0xFF].data(), 8 * sizeof(double));
    }
  }
};

struct RowBlock {
  double sum = 0.0;    // Σ_b Σ h over this row block's pairs (both orders of off-diagonal blocks)
  double trace = 0.0;  // Σ h(x_i, x_i) over its rows
  Vector quad;         // Σ_{i in block, all j} w_i w_j h_ij per draw
};

}  // namespace

KsdResult ksd_test(const Kernel& k, const Matrix& X, const Matrix& S, bool u_statistic, Index B, RandomStream& rng,
                   int threads) {
  const Index N = X.rows();
  if (N < 2) throw DataError("ksd: needs at least 2 rows, got " + std::to_string(N));
  const RadialProfile* profile = k.radial_profile();
  if (!profile) throw Error("ksd: the base kernel must be radial, k(x, y) = φ(‖x − y‖²)");
  const Index blocks = (N + kPairBlock - 1) / kPairBlock;
  auto begin = [](Index a) { return a * kPairBlock; };
  auto size = [&](Index a) { return std::min(kPairBlock, N - a * kPairBlock); };
  std::optional<Signs> signs;
  if (B > 0) signs.emplace(N, B, rng);

  // Item a: the blocks (a, b ≥ a) of the symmetric matrix h; off-diagonal blocks count twice. Items
  // with small a hold the most work and OpenMP's dynamic schedule starts them first.
  std::vector<RowBlock> parts(static_cast<std::size_t>(blocks));
  parallel_for(blocks, threads, [&](Index a) {
    RowBlock& p = parts[static_cast<std::size_t>(a)];
    const Index ba = begin(a), na = size(a);
    const Matrix Xa = X.middleRows(ba, na), Sa = S.middleRows(ba, na);
    // R_a = Σ_{b ≥ a} H_ab W_b (off-diagonal blocks doubled), kept transposed: Rᵀ += W_bᵀ H_abᵀ.
    Matrix Rt, W, H;  // buffers reused over b: fresh megabyte matrices per block cost page faults
    if (B > 0) Rt = Matrix::Zero(B, na);
    for (Index b = a; b < blocks; ++b) {
      const Index bb = begin(b), nb = size(b);
      H.resize(na, nb);
      for (Index i = 0; i < na; i += kTile)
        for (Index j = 0; j < nb; j += kTile) {
          const Index ti = std::min(kTile, na - i), tj = std::min(kTile, nb - j);
          H.block(i, j, ti, tj) = stein_kernel(*profile, Xa.middleRows(i, ti), Sa.middleRows(i, ti),
                                               X.middleRows(bb + j, tj), S.middleRows(bb + j, tj));
        }
      if (a == b) {
        p.trace = H.diagonal().sum();
      } else {
        H *= 2.0;
      }
      p.sum += H.sum();
      if (B > 0) {
        signs->block_transposed(bb, nb, W);
        gemm_nt_accumulate(W, H, Rt);
      }
    }
    if (B > 0) {
      signs->block_transposed(ba, na, W);
      p.quad = (W.topRows(B).array() * Rt.array()).rowwise().sum();
    }
  });

  double sum = 0.0, trace = 0.0;
  Vector quad = Vector::Zero(B);
  for (auto& p : parts) {
    sum += p.sum;
    trace += p.trace;
    if (B > 0) quad += p.quad;
  }
  if (!std::isfinite(sum)) throw NumericalError("ksd: the Stein kernel sum is not finite");
  const double Nd = static_cast<double>(N);
  // w_i² = 1, so every bootstrap sum holds the diagonal Σ h_ii unchanged; the U-statistic drops it.
  const double denom = u_statistic ? Nd * (Nd - 1.0) : Nd * Nd;
  const double drop = u_statistic ? trace : 0.0;
  KsdResult r;
  r.statistic = (sum - drop) / denom;
  r.bootstrap.resize(static_cast<std::size_t>(B));
  for (Index b = 0; b < B; ++b) r.bootstrap[static_cast<std::size_t>(b)] = (quad[b] - drop) / denom;
  r.pvalue = B > 0 ? monte_carlo_pvalue(r.statistic, r.bootstrap) : std::numeric_limits<double>::quiet_NaN();
  return r;
}

KeyList ksd_keys() {
  return {
      KeySpec::string("kernel", "base kernel of the Stein kernel", std::string("gaussian")).one_of({"gaussian", "imq"}),
      KeySpec::number("bandwidth", "gaussian: length scale σ (default: median pairwise distance of the split)")
          .positive()
          .optional(),
      KeySpec::number("imq_c", "imq: offset c of (c² + ‖x − y‖²)^β", 1.0).positive(),
      KeySpec::number("imq_beta", "imq: exponent β < 0 of (c² + ‖x − y‖²)^β", -0.5).at_most(0.0),
      KeySpec::string("statistic", "u: unbiased U-statistic; v: V-statistic", std::string("u")).one_of({"u", "v"}),
      KeySpec::integer("bootstrap_draws", "wild-bootstrap draws with Rademacher weights for the p-value (0: no test)",
                       std::int64_t{1000})
          .non_negative(),
      split_key(),
  };
}

KsdEvaluator::KsdEvaluator(const Config& cfg, const BuildContext& ctx) : cfg_(cfg), registry_(ctx.registry) {
  if (!registry_) throw Error("ksd: built without a registry");
  split_ = cfg.string("split");
  kernel_ = cfg.string("kernel");
  if (cfg.has("bandwidth")) {
    if (kernel_ != "gaussian") cfg.fail("bandwidth", "applies to kernel = \"gaussian\" only");
    bandwidth_ = cfg.number("bandwidth");
  }
  imq_c_ = cfg.number("imq_c");
  imq_beta_ = cfg.number("imq_beta");
  if (imq_beta_ >= 0.0) {
    std::ostringstream got;
    got << imq_beta_;
    cfg.fail("imq_beta", "must be negative (expected imq_beta < 0, got " + got.str() + ")");
  }
  u_statistic_ = cfg.string("statistic") == "u";
  bootstrap_draws_ = cfg.integer("bootstrap_draws");
}

EvaluationResult KsdEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = select_split(in.data, split_, cfg_);
  check_dimension(in.model, in.model_name, X);
  if (X.rows() < 2) cfg_.fail("split", "the " + split_ + " split has 1 row; KSD needs 2");
  const Matrix S = checked_score_all(in.model, X, in.threads,
                                     "ksd: the score of model " + in.model_name + " on the " + split_ + " split");
  KernelPtr k;
  double sigma = 0.0;
  if (kernel_ == "gaussian") {
    sigma = bandwidth_ ? *bandwidth_ : median_pairwise_distance(X);
    if (!(sigma > 0.0)) cfg_.fail("bandwidth", "the median pairwise distance of the data is 0; set `bandwidth`");
    k = make_gaussian_kernel(*registry_, sigma);
  } else {
    k = make_imq_kernel(*registry_, imq_c_, imq_beta_);
  }
  RandomStream rng = in.rng.derive("bootstrap");
  in.progress.update("ksd", -1.0, std::to_string(X.rows()) + " rows");
  const KsdResult res = ksd_test(*k, X, S, u_statistic_, bootstrap_draws_, rng, in.threads);
  in.progress.done("ksd", "");
  EvaluationResult r;
  r.metrics.emplace_back("ksd2", res.statistic);
  if (bootstrap_draws_ > 0) r.metrics.emplace_back("ksd_pvalue", res.pvalue);
  if (kernel_ == "gaussian") r.metrics.emplace_back("ksd_bandwidth", sigma);
  std::ostringstream os;
  os << "ksd (" << kernel_ << ", " << (u_statistic_ ? "U" : "V") << "-statistic): KSD² " << res.statistic;
  if (bootstrap_draws_ > 0) os << ", p-value " << res.pvalue;
  r.summary = os.str();
  return r;
}

}  // namespace kef::stein
