#include "ksd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "stein_common.hpp"

namespace kef::stein {

Matrix stein_kernel(const RadialProfile& k, const Matrix& Xa, const Matrix& Sa, const Matrix& Xb,
                    const Matrix& Sb) {
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

// Rows of the fused pass. An item is a block of kRowBlock rows against every column block at or after
// it (the upper-triangular block pairs); h is formed in kTileRows x kTileCols tiles whose seven
// buffers (56 KB) stay in L1/L2, from a register-blocked kernel of kMicroRows x kMicroCols pairs (a
// 16 x 64 tile measured as fast as 32 x 64, 8 x 64 or 16 x 256, within noise). All constants:
// the summation order, hence every result, is the same for any thread count.
constexpr Index kRowBlock = 256;
constexpr Index kTileRows = 16, kTileCols = 64;
constexpr Index kMicroRows = 4, kMicroCols = 16;
static_assert(kTileCols % kTileRows == 0 && kRowBlock % kTileCols == 0,
              "the diagonal tile rule needs aligned tiles");
constexpr Index kPad = kMicroCols;  // operand rows past N, zero, so edge micro-tiles read valid memory

// Eight doubles: GCC/Clang lower it to one AVX-512 register, or to two AVX2 / four SSE registers.
using V8 = double __attribute__((vector_size(64)));

// By reference: returning or passing the 64-byte vector by value would change the ABI on targets
// without AVX-512 (GCC's -Wpsabi), though these calls are always inlined.
inline void load8(V8& v, const double* p) { std::memcpy(&v, p, sizeof v); }
inline void store8(double* p, const V8& v) { std::memcpy(p, &v, sizeof v); }

// The data as the pair kernel reads it. X is centred (h depends on x only through x_i − x_j, and
// centring keeps ‖x‖² + ‖y‖² − 2x·y from cancelling digits). A pair needs x_i·x_j, s_i·s_j and
// x_i·s_j + s_i·x_j: three inner products of length D, not four, through p = x + λs and m = x − λs,
//   p_i·p_j + m_i·m_j = 2(x_i·x_j + λ² s_i·s_j),   p_i·p_j − m_i·m_j = 2λ(x_i·s_j + s_i·x_j),
// with λ the power of 2 nearest rms‖x‖ / rms‖s‖, so that x and λs have the same scale and neither
// difference cancels more than a few digits of the larger term (λ is exact in binary). Column operands
// (X, P, M: column-major, kPad zero rows past N) and row operands (their transposes: one row's D values
// contiguous), and per row ‖x‖² and s·x.
struct PairOperands {
  Index N = 0, D = 0, ld = 0;
  double lambda = 1.0;
  Matrix X, P, M;     // ld x D, rows ≥ N zero
  Matrix Xt, Pt, Mt;  // D x ld
  Vector nx, sx;      // ld
  PairOperands(const Matrix& X0, const Matrix& S0) : N(X0.rows()), D(X0.cols()), ld(X0.rows() + kPad) {
    X = Matrix::Zero(ld, D);
    X.topRows(N) = X0.rowwise() - X0.colwise().mean();
    Matrix S = Matrix::Zero(ld, D);
    S.topRows(N) = S0;
    const double xs = X.squaredNorm(), ss = S.squaredNorm();
    if (xs > 0.0 && ss > 0.0) lambda = std::exp2(std::round(0.5 * std::log2(xs / ss)));
    P = X + lambda * S;
    M = X - lambda * S;
    Xt = X.transpose();
    Pt = P.transpose();
    Mt = M.transpose();
    nx = X.rowwise().squaredNorm();
    sx = X.cwiseProduct(S).rowwise().sum();
  }
};

// Tile buffers, kTileCols x kTileRows column-major: column i holds the pairs (i, j) of one row, so the
// pair kernel writes contiguous vectors and the h tile is directly the transposed tile Hᵀ that the
// bootstrap product needs.
struct TileBuffers {
  Matrix r, ss, cross, phi, dphi, d2phi, h;
  TileBuffers() {
    for (Matrix* m : {&r, &ss, &cross, &phi, &dphi, &d2phi, &h}) *m = Matrix::Zero(kTileCols, kTileRows);
  }
};

// For rows i0 .. i0 + 3 and columns j0 .. j0 + 15: r = ‖x_i − x_j‖² (clamped at 0), s_i·s_j and
// (s_j − s_i)·(x_i − x_j) − D = x_i·s_j + s_i·x_j − s_i·x_i − s_j·x_j − D, into column i − ti0 of the
// tile buffers at row j − tj0. The 24 accumulators stay in registers over the D coordinates.
inline void pair_micro_kernel(const PairOperands& op, Index i0, Index j0, Index ti0, Index tj0,
                              TileBuffers& t) {
  const Index D = op.D, ld = op.ld;
  V8 xx[kMicroRows][2] = {}, pp[kMicroRows][2] = {}, mm[kMicroRows][2] = {};
  const double* xa = op.Xt.data() + i0 * D;
  const double* pa = op.Pt.data() + i0 * D;
  const double* ma = op.Mt.data() + i0 * D;
  for (Index d = 0; d < D; ++d) {
    const double* xb = op.X.data() + d * ld + j0;
    const double* pb = op.P.data() + d * ld + j0;
    const double* mb = op.M.data() + d * ld + j0;
    V8 xb0, xb1, pb0, pb1, mb0, mb1;
    load8(xb0, xb);
    load8(xb1, xb + 8);
    load8(pb0, pb);
    load8(pb1, pb + 8);
    load8(mb0, mb);
    load8(mb1, mb + 8);
#pragma GCC unroll 4
    for (int m = 0; m < kMicroRows; ++m) {
      const double xi = xa[m * D + d], pi = pa[m * D + d], mi = ma[m * D + d];
      xx[m][0] += xi * xb0;
      xx[m][1] += xi * xb1;
      pp[m][0] += pi * pb0;
      pp[m][1] += pi * pb1;
      mm[m][0] += mi * mb0;
      mm[m][1] += mi * mb1;
    }
  }
  const double Dd = static_cast<double>(D), half_inv_l2 = 0.5 / (op.lambda * op.lambda),
               half_inv_l = 0.5 / op.lambda;
  const V8 zero = {};
  // Unrolled, so the accumulators are read from registers, not from a spilled array.
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    V8 nxb, sxb;
    load8(nxb, op.nx.data() + j0 + 8 * h);
    load8(sxb, op.sx.data() + j0 + 8 * h);
#pragma GCC unroll 4
    for (int m = 0; m < kMicroRows; ++m) {
      const Index col = i0 + m - ti0, row = j0 + 8 * h - tj0;
      V8 r = (op.nx[i0 + m] + nxb) - 2.0 * xx[m][h];
      r = r > zero ? r : zero;
      store8(t.r.data() + col * kTileCols + row, r);
      store8(t.ss.data() + col * kTileCols + row, ((pp[m][h] + mm[m][h]) - 2.0 * xx[m][h]) * half_inv_l2);
      store8(t.cross.data() + col * kTileCols + row,
             (pp[m][h] - mm[m][h]) * half_inv_l - (op.sx[i0 + m] + Dd) - sxb);
    }
  }
}

// The tile of rows [i0, i0 + ni) and columns [j0, j0 + nj) (ni ≤ kTileRows, nj ≤ kTileCols) into t.h
// (its top-left nj x ni corner, transposed). With g = 2φ' and ∇_x k = g (x − y) = −∇_y k,
// Σ_d ∂_{x_d}∂_{y_d} k = −(D g + 4φ'' r), so h = φ s_i·s_j + g ((s_j − s_i)·(x_i − x_j) − D) − 4φ'' r.
// With store = false and a full tile, only the sum of h is formed (returned), without writing t.h.
double stein_tile(const RadialProfile& k, const PairOperands& op, Index i0, Index ni, Index j0, Index nj,
                  TileBuffers& t, bool store) {
  for (Index i = 0; i < ni; i += kMicroRows)
    for (Index j = 0; j < nj; j += kMicroCols) pair_micro_kernel(op, i0 + i, j0 + j, i0, j0, t);
  k.evaluate(t.r, &t.phi, &t.dphi, &t.d2phi);
  auto h = t.phi.array() * t.ss.array() + 2.0 * t.dphi.array() * t.cross.array() -
           4.0 * t.d2phi.array() * t.r.array();
  if (!store && ni == kTileRows && nj == kTileCols) return h.sum();
  t.h.array() = h;
  return t.h.topLeftCorner(nj, ni).sum();
}

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
        for (int i = 0; i < 8; ++i)
          t[static_cast<std::size_t>(v)][static_cast<std::size_t>(i)] = (v >> i) & 1 ? 1.0 : -1.0;
      return t;
    }();
    W.resize(words * 64, n);
    for (Index i = 0; i < n; ++i) {
      double* col = W.col(i).data();
      const std::uint64_t* row = bits.data() + (begin + i) * words;
      for (Index w = 0; w < words; ++w)
        for (int byte = 0; byte < 8; ++byte)
          std::memcpy(col + w * 64 + byte * 8, table[(row[w] >> (8 * byte)) & 0xFF].data(),
                      8 * sizeof(double));
    }
  }
};

struct RowBlock {
  double sum = 0.0;    // Σ h over this row block's pairs (both orders of off-diagonal blocks)
  double trace = 0.0;  // Σ h(x_i, x_i) over its rows
  Vector quad;         // Σ_{i in block, all j} w_i w_j h_ij per draw
};

}  // namespace

KsdResult ksd_test(const Kernel& k, const Matrix& X, const Matrix& S, bool u_statistic, Index B,
                   RandomStream& rng, const Context& context) {
  const Index N = X.rows();
  if (N < 2) throw DataError("ksd: needs at least 2 rows, got " + std::to_string(N));
  const RadialProfile* profile = k.radial_profile();
  if (!profile) throw Error("ksd: the base kernel must be radial, k(x, y) = φ(‖x − y‖²)");
  const PairOperands op(X, S);
  const Index blocks = (N + kRowBlock - 1) / kRowBlock;
  auto begin = [](Index a) { return a * kRowBlock; };
  auto size = [&](Index a) { return std::min(kRowBlock, N - a * kRowBlock); };
  std::optional<Signs> signs;
  if (B > 0) signs.emplace(N, B, rng);

  // Item a: the blocks (a, b ≥ a) of the symmetric matrix h; off-diagonal blocks count twice. Items
  // with small a hold the most work and parallel_for's dynamic schedule starts them first.
  // Shared between the processes of a distributed run as well (kef/distributed_reduce.hpp), by
  // consecutive items: every process gets every item's sums and adds them in item order below.
  const std::vector<RowBlock> parts = distributed_parts(
      blocks, context, [] { return RowBlock(); },
      [&](Index a, RowBlock& p) {
        const Index ba = begin(a), na = size(a);
        TileBuffers t;
        // R_a = Σ_{b ≥ a} H_ab W_b (off-diagonal blocks doubled), kept transposed: Rᵀ += W_bᵀ H_abᵀ.
        Matrix Rt, W, Ht;  // buffers reused over b: fresh megabyte matrices per block cost page faults
        if (B > 0) {
          Rt = Matrix::Zero(B, na);
          Ht.resize(kRowBlock, na);
        }
        for (Index b = a; b < blocks; ++b) {
          const Index bb = begin(b), nb = size(b);
          const double weight = a == b ? 1.0 : 2.0;
          double block_sum = 0.0;
          for (Index i = 0; i < na; i += kTileRows)
            for (Index j = 0; j < nb; j += kTileCols) {
              const Index ti = std::min(kTileRows, na - i), tj = std::min(kTileCols, nb - j);
              // Without the bootstrap, a diagonal block needs only the tiles on and above its diagonal:
              // tiles entirely below it are skipped, those entirely above count twice. With kTileCols a
              // multiple of kTileRows, the mirror of every pair of a tile straddling the diagonal lies in
              // a straddling tile, and the mirror of an above tile's pair in a skipped tile (the tests
              // check the sum against the double loop).
              double tile_weight = 1.0;
              if (a == b && B == 0) {
                if (j + kTileCols <= i) continue;
                if (j >= i + kTileRows) tile_weight = 2.0;
              }
              const bool on_diagonal = a == b && j < i + ti && i < j + tj;
              block_sum +=
                  tile_weight * stein_tile(*profile, op, ba + i, ti, bb + j, tj, t, B > 0 || on_diagonal);
              if (B > 0) Ht.block(j, i, tj, ti) = t.h.topLeftCorner(tj, ti);
              if (on_diagonal)
                for (Index q = 0; q < ti; ++q)
                  if (i + q >= j && i + q < j + tj) p.trace += t.h(i + q - j, q);
            }
          p.sum += weight * block_sum;
          if (B > 0) {
            signs->block_transposed(bb, nb, W);
            Rt.noalias() += weight * W.topRows(B) * Ht.topRows(nb);
          }
        }
        if (B > 0) {
          signs->block_transposed(ba, na, W);
          p.quad = (W.topRows(B).array() * Rt.array()).rowwise().sum();
        }
      },
      [](RowBlock& p) { return std::tie(p.sum, p.trace, p.quad); });

  double sum = 0.0, trace = 0.0;
  Vector quad = Vector::Zero(B);
  for (const auto& p : parts) {
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
      KeySpec::string("kernel", "base kernel of the Stein kernel", std::string("gaussian"))
          .one_of({"gaussian", "imq"}),
      KeySpec::number("bandwidth",
                      "gaussian: length scale σ (default: median pairwise distance of the split)")
          .positive()
          .optional(),
      KeySpec::string(
          "bandwidth_rule",
          "gaussian, without `bandwidth`: how σ is chosen on the split, median (the median pairwise "
          "distance) or bkl (Bayesian kernel learning, docs/math.md §9)")
          .one_of({"median", "bkl"})
          .optional(),
      KeySpec::number("imq_c", "imq: offset c of (c² + ‖x − y‖²)^β", 1.0).positive(),
      KeySpec::number("imq_beta", "imq: exponent β < 0 of (c² + ‖x − y‖²)^β", -0.5).at_most(0.0),
      KeySpec::string("statistic", "u: unbiased U-statistic; v: V-statistic", std::string("u"))
          .one_of({"u", "v"}),
      KeySpec::integer("bootstrap_draws",
                       "wild-bootstrap draws with Rademacher weights for the p-value (0: no test)",
                       std::int64_t{1000})
          .non_negative(),
      split_key(),
  };
}

KsdEvaluator::KsdEvaluator(const Config& cfg, const BuildContext& ctx)
    : sites_(cfg), registry_(ctx.registry) {
  if (!registry_) throw Error("ksd: built without a registry");
  split_ = cfg.string("split");
  kernel_ = cfg.string("kernel");
  if (cfg.has("bandwidth")) {
    if (kernel_ != "gaussian") cfg.fail("bandwidth", "applies to kernel = \"gaussian\" only");
    bandwidth_ = cfg.number("bandwidth");
  }
  if (cfg.has("bandwidth_rule")) {
    if (kernel_ != "gaussian") cfg.fail("bandwidth_rule", "applies to kernel = \"gaussian\" only");
    rule_ = bandwidth_rule_from_keys(bandwidth_, cfg.string("bandwidth_rule"), sites_);
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

void KsdEvaluator::check(const DataShape& data) const {
  const Index rows = data.rows(split_);
  if (rows == 0) sites_.fail("split", "the " + split_ + " split is empty");
  if (rows < 2) sites_.fail("split", "the " + split_ + " split has 1 row; KSD needs 2");
  // The rows' scores and the bootstrap's Rademacher weights and sums (rows x draws), before any is drawn.
  const double n = static_cast<double>(rows), D = static_cast<double>(std::max<Index>(data.dim, 1));
  require_memory(8.0 * n * (2.0 * static_cast<double>(bootstrap_draws_) + 3.0 * D + 4.0),
                 sites_.where("bootstrap_draws"), "the wild bootstrap's weights (bootstrap_draws x the split's rows)");
}

EvaluationResult KsdEvaluator::evaluate(const EvalInput& in) {
  const Matrix& X = evaluation_rows(in, split_, sites_, "ksd", 2);
  const Matrix S = checked_score_all(
      in.model, X, in.context, "ksd: the score of model " + in.model_name + " on the " + split_ + " split");
  KernelPtr k;
  double sigma = 0.0;
  std::string bandwidth_note;
  if (kernel_ == "gaussian") {
    sigma = stein_bandwidth(bandwidth_, rule_, X, "ksd", sites_, in.context, &bandwidth_note);
    k = make_gaussian_kernel(*registry_, sigma);
  } else {
    k = make_imq_kernel(*registry_, imq_c_, imq_beta_);
  }
  RandomStream rng = in.context.rng().derive("bootstrap");
  in.context.progress().update("ksd", -1.0, std::to_string(X.rows()) + " rows");
  const KsdResult res = ksd_test(*k, X, S, u_statistic_, bootstrap_draws_, rng, in.context);
  in.context.progress().done("ksd", "");
  EvaluationResult r;
  r.metrics.emplace_back("ksd2", res.statistic);
  if (bootstrap_draws_ > 0) r.metrics.emplace_back("ksd_pvalue", res.pvalue);
  if (kernel_ == "gaussian") {
    r.metrics.emplace_back("ksd_bandwidth", sigma);
    r.notes.push_back("bandwidth: " + bandwidth_note);
  }
  std::ostringstream os;
  os << "ksd (" << kernel_ << ", " << (u_statistic_ ? "U" : "V") << "-statistic): KSD² " << res.statistic;
  if (bootstrap_draws_ > 0) os << ", p-value " << res.pvalue;
  r.summary = os.str();
  return r;
}

}  // namespace kef::stein
