#include "nystrom_estimator.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "kef/clone_shared.hpp"
#include "kef/data_io.hpp"
#include "kef/derivative_basis.hpp"
#include "kef/error.hpp"
#include "kef/inducing_points.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/random.hpp"
#include "kef/nystrom_model.hpp"

namespace kef::nystrom {

namespace {

std::string gigabytes(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g GB", bytes / 1e9);
  return buf;
}

FacetSet model_facets(const BaseMeasurePtr& base) {
  FacetSet f{Facet::LogDensity, Facet::Score, Facet::Laplacian};
  if (base && base->can_sample()) f |= Facet::BaseMeasureRatio;
  return f;
}

// The kernel must give the inner products of derivative features (docs/math.md §6).
void require_mixed_derivatives(const Kernel& kernel, bool second, const KeySites& sites) {
  const KernelCapabilities caps = kernel.capabilities();
  if (!caps.cross_derivatives)
    sites.fail("", "kernel `" + kernel.type_name() +
                       "` does not provide the mixed derivatives ∂_x∂_y k and ∂²_x∂_y k the derivative basis "
                       "needs; use gaussian, gaussian_mixture or imq");
  if (second && !caps.cross_second_derivatives)
    sites.fail("orders", "kernel `" + kernel.type_name() +
                             "` does not provide ∂²_x∂²_y k, which the second-derivative basis needs; use "
                             "orders = [1]");
}

}  // namespace

// ---------------------------------------------------------------------------------------- nystrom

const OptionsSpec<NystromOptions>& nystrom_options() {
  using O = NystromOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.integer("inducing_points", &O::inducing_points,
              "number m of basis points, a seeded random subset of the training rows")
        .optional()
        .at_least(1);
    s.path("inducing_points_file", &O::inducing_points_file,
           "basis points from a file (.npy or .csv), one per row, relative to the pipeline file")
        .optional();
    s.number("lambda", &O::lambda, "RKHS-norm penalty λ: the fit minimises J(f) + (λ/2)‖f‖²_H", 1e-3)
        .positive();
    s.numbers("orders", &O::orders,
              "derivative orders of the basis ∂^o_j k(z_b, ·): [1] (M = m·D) or [1, 2] (M = 2·m·D)",
              std::vector<double>{1.0});
    s.integer(
         "components", &O::components,
         "keep a seeded random subset of this many (point, coordinate) pairs of the m·D (Shogun's NystromD)")
        .optional()
        .at_least(1);
    s.string("solver", &O::solver,
             "cholesky (refuses a singular system) or pinv (eigendecomposition pseudo-inverse with `cutoff`)",
             std::string("cholesky"))
        .one_of({"cholesky", "pinv"});
    s.number("ridge", &O::ridge, "added to the system's diagonal, relative to its mean diagonal", 0.0)
        .non_negative();
    s.number("cutoff", &O::cutoff, "pinv: eigenvalues at or below cutoff·(largest eigenvalue) are dropped",
             1e-12)
        .positive()
        .at_most(1.0);
    s.integer("chunk_rows", &O::chunk_rows,
              "rows per accumulation chunk (0: automatic, about 2 MB of features)", 0)
        .non_negative();
    return s;
  }();
  return spec;
}

NystromEstimator::NystromEstimator(const Config& cfg, const EstimatorParts& parts)
    : opt_(nystrom_options().read(cfg)), sites_(cfg), kernel_(parts.kernel), base_(parts.base_measure) {
  if (opt_.inducing_points.has_value() == opt_.inducing_points_file.has_value())
    sites_.fail(opt_.inducing_points ? "inducing_points_file" : "",
                "give exactly one of `inducing_points` (a count) and `inducing_points_file`");
  for (double o : opt_.orders) orders_.push_back(static_cast<int>(o));
  if (orders_ != std::vector<int>{1} && orders_ != std::vector<int>{1, 2})
    sites_.fail("orders", "must be [1] or [1, 2]");
}

Estimator* NystromEstimator::clone_raw() const {
  auto* copy = new NystromEstimator(*this);
  if (kernel_) copy->kernel_ = clone_shared(kernel_);
  if (base_) copy->base_ = clone_shared(base_);
  return copy;
}

void NystromEstimator::check_kernel() const {
  if (kernel_) require_mixed_derivatives(*kernel_, orders_.size() == 2, sites_);
}

void NystromEstimator::check(const DataShape& data) const {
  check_kernel();
  if (opt_.inducing_points) {
    check_inducing_count(*opt_.inducing_points, data.train_rows, sites_);
    if (opt_.components && data.dim > 0 && *opt_.components > *opt_.inducing_points * data.dim)
      sites_.fail("components", std::to_string(*opt_.components) + " components but only " +
                                    std::to_string(*opt_.inducing_points * data.dim) +
                                    " (point, coordinate) pairs (inducing_points x dimension)");
    if (data.dim > 0) {
      // The basis of M = m·D functions per derivative order (or `components` of them): the M x M
      // system, its factor and a copy, and a chunk's features, before any is formed.
      const double orders = static_cast<double>(std::max<std::size_t>(opt_.orders.size(), 1));
      const double M = opt_.components ? static_cast<double>(*opt_.components)
                                       : orders * static_cast<double>(*opt_.inducing_points) *
                                             static_cast<double>(data.dim);
      require_memory(8.0 * (3.0 * M * M + 2e6 / 8.0), sites_.where(opt_.components ? "components" : "inducing_points"),
                     "the basis system (inducing_points, orders, components)");
    }
  }
}

std::optional<FacetSet> NystromEstimator::facets() const { return model_facets(base_); }

Matrix NystromEstimator::choose_points(const Matrix& train, RandomStream& rng) const {
  if (opt_.inducing_points) return draw_inducing_points(train, *opt_.inducing_points, rng, sites_);
  const std::filesystem::path& p = *opt_.inducing_points_file;
  if (!std::filesystem::exists(p)) sites_.fail("inducing_points_file", "no such file " + p.string());
  Matrix Z = read_table(p).values;
  if (Z.cols() != train.cols())
    sites_.fail("inducing_points_file", p.string() + " has " + std::to_string(Z.cols()) +
                                            " columns, the data has " + std::to_string(train.cols()));
  if (Z.rows() == 0) sites_.fail("inducing_points_file", p.string() + " has no rows");
  if (!Z.allFinite()) sites_.fail("inducing_points_file", p.string() + " has non-finite values");
  return Z;
}

ModelPtr NystromEstimator::fit(const FitInput& in) {
  check_kernel();
  base_->check_dimension(in.train.cols());
  const Index D = in.train.cols();
  DerivativeBasis basis;
  // A distributed run reading its data by rows passes the training split as rows to read (the same
  // draw of points, the same sums: kef/training_rows.hpp).
  basis.points = in.train_rows && opt_.inducing_points
                     ? draw_inducing_points(*in.train_rows, *opt_.inducing_points, in.context.rng(), sites_)
                     : choose_points(in.train, in.context.rng());
  basis.orders = orders_;
  const Index pairs = basis.points.rows() * D;
  if (opt_.components) {
    if (*opt_.components > pairs)
      sites_.fail("components", std::to_string(*opt_.components) + " components but only " +
                                    std::to_string(pairs) +
                                    " (point, coordinate) pairs (basis points x dimension)");
    RandomStream pick = in.context.rng().derive("components");
    std::vector<Index> chosen = sample_without_replacement(pairs, *opt_.components, pick);
    std::sort(chosen.begin(), chosen.end());
    for (std::size_t o = 0; o < orders_.size(); ++o)
      for (Index c : chosen) basis.atoms.push_back(static_cast<Index>(o) * pairs + c);
  }
  DerivativeAccumulateOptions acc;
  acc.chunk_rows = opt_.chunk_rows;
  acc.progress = &in.context.progress();
  const DerivativeSystem sys =
      in.train_rows ? accumulate_derivative_system(*kernel_, *base_, *in.train_rows, basis, acc, in.context)
                    : accumulate_derivative_system(*kernel_, *base_, in.train, basis, acc, in.context);
  DerivativeSolveOptions so;
  so.lambda = opt_.lambda;
  so.ridge = opt_.ridge;
  so.solver = opt_.solver == "pinv" ? DerivativeSolver::pseudo_inverse : DerivativeSolver::cholesky;
  so.cutoff = opt_.cutoff;
  DerivativeSolution sol;
  try {
    sol = solve_derivative_system(sys, so);
  } catch (const NumericalError& e) {
    sites_.fail(so.solver == DerivativeSolver::cholesky ? "ridge" : "cutoff",
                std::string(e.what()) + " (system size " + std::to_string(basis.size()) + ")");
  }
  in.report.iterations = 1;
  in.report.values["basis_size"] = static_cast<double>(basis.size());
  in.report.values["ridge"] = sol.ridge_added;
  in.report.values["rank"] = static_cast<double>(sol.rank);
  in.report.values["condition"] = sol.condition;
  if (sol.rank < basis.size())
    in.report.notes.push_back("the pseudo-inverse kept " + std::to_string(sol.rank) + " of " +
                              std::to_string(basis.size()) + " eigenvalues");
  const Vector coefficients = expand_derivative_coefficients(basis, sol.beta);
  basis.atoms.clear();
  auto model = std::make_shared<NystromModel>(clone_shared(kernel_), clone_shared(base_), std::move(basis),
                                              coefficients, "nystrom");
  model->set_fit_info({{"lambda", opt_.lambda}, {"ridge", sol.ridge_added}, {"condition", sol.condition}},
                      {{"train_rows", static_cast<std::int64_t>(in.train_rows ? in.train_rows->rows() : in.train.rows())},
                       {"rank", static_cast<std::int64_t>(sol.rank)}});
  return model;
}

// ------------------------------------------------------------------------------------------- full

const OptionsSpec<FullOptions>& full_options() {
  using O = FullOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.number("lambda", &O::lambda, "RKHS-norm penalty λ: the fit minimises J(f) + (λ/2)‖f‖²_H", 1e-3)
        .positive();
    s.integer("max_system", &O::max_system, "largest n·D accepted; the system needs about 3·(n·D)²·8 bytes",
              20000)
        .at_least(1);
    s.integer("chunk_rows", &O::chunk_rows,
              "rows per accumulation chunk of the right-hand side (0: automatic)", 0)
        .non_negative();
    return s;
  }();
  return spec;
}

FullEstimator::FullEstimator(const Config& cfg, const EstimatorParts& parts)
    : opt_(full_options().read(cfg)), sites_(cfg), kernel_(parts.kernel), base_(parts.base_measure) {}

Estimator* FullEstimator::clone_raw() const {
  auto* copy = new FullEstimator(*this);
  if (kernel_) copy->kernel_ = clone_shared(kernel_);
  if (base_) copy->base_ = clone_shared(base_);
  return copy;
}

void FullEstimator::check_kernel() const {
  // The model is written in the 2nD basis {∂_i k(X_a, ·), ∂²_i k(X_a, ·)}, whose Laplacian needs ∂²_x∂²_y k.
  if (kernel_) require_mixed_derivatives(*kernel_, true, sites_);
}

void FullEstimator::check_size(Index rows, Index dim) const {
  const double size = static_cast<double>(rows) * static_cast<double>(dim);
  if (size > static_cast<double>(opt_.max_system))
    sites_.fail("max_system", "the full system has n·D = " + std::to_string(rows) + "·" +
                                  std::to_string(dim) + " = " + std::to_string(rows * dim) +
                                  " unknowns, above max_system = " + std::to_string(opt_.max_system) +
                                  "; it would need about " + gigabytes(3.0 * size * size * 8.0) +
                                  " (3·(n·D)² doubles); raise max_system or use estimator `nystrom`");
}

void FullEstimator::check(const DataShape& data) const {
  check_kernel();
  if (data.dim > 0) check_size(data.train_rows, data.dim);
}

std::optional<FacetSet> FullEstimator::facets() const { return model_facets(base_); }

ModelPtr FullEstimator::fit(const FitInput& in) {
  check_kernel();
  const Index n = in.train.rows(), D = in.train.cols();
  check_size(n, D);
  base_->check_dimension(D);
  // ξ's inner products with the atoms ∂_i k(X_a, ·) are h of the first-order basis at the training
  // rows, and that basis's Gram is Gf (docs/math.md §6): one accumulation gives both.
  DerivativeBasis basis;
  basis.points = in.train;
  basis.orders = {1};
  DerivativeAccumulateOptions acc;
  acc.need_BtB = false;
  acc.chunk_rows = opt_.chunk_rows;
  acc.progress = &in.context.progress();
  DerivativeSystem sys = accumulate_derivative_system(*kernel_, *base_, in.train, basis, acc, in.context);
  const double nl = static_cast<double>(n) * opt_.lambda;
  Matrix A = std::move(sys.G);
  A.diagonal().array() += nl;
  SpdFactor factor(A, "full system (Gf + nλ I)");
  A.resize(0, 0);
  const Vector beta = factor.solve(Vector(sys.h / opt_.lambda));
  // f = Σ β_(a,i) ∂_i k(X_a, ·) − ξ/λ, written in the 2nD basis (orders 1 and 2 at the training rows).
  Matrix q1, q2;
  base_->derivatives(in.train, q1, q2);
  Vector coefficients(2 * n * D);
  coefficients.head(n * D) = beta - Eigen::Map<const Vector>(q1.data(), n * D) / nl;
  coefficients.tail(n * D).setConstant(-1.0 / nl);
  check_finite(coefficients, "full solution");
  in.report.iterations = 1;
  in.report.values["system_size"] = static_cast<double>(n * D);
  in.report.values["jitter"] = factor.jitter();
  if (factor.jitter() > 0)
    in.report.notes.push_back("the full system needed jitter " + std::to_string(factor.jitter()) +
                              " to factorise");
  basis.orders = {1, 2};
  auto model = std::make_shared<NystromModel>(clone_shared(kernel_), clone_shared(base_), std::move(basis),
                                              coefficients, "full");
  model->set_fit_info({{"lambda", opt_.lambda}, {"jitter", factor.jitter()}},
                      {{"train_rows", static_cast<std::int64_t>(n)}});
  return model;
}

}  // namespace kef::nystrom
