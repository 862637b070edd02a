#include "conditional_likelihood.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "kef/column_summary.hpp"
#include "kef/error.hpp"
#include "kef/evaluation_rows.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/number_text.hpp"

namespace kef::likelihood {

namespace {

// Composite Simpson weights of n (odd) nodes with spacing h.
Vector simpson_weights(Index n, double h) {
  Vector w(n);
  for (Index i = 0; i < n; ++i) w[i] = (i == 0 || i == n - 1) ? 1.0 : (i % 2 ? 4.0 : 2.0);
  return w * (h / 3.0);
}

double weighted_logsumexp(const Vector& log_f, const Vector& w, Index stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (Index i = 0; i < log_f.size(); i += stride) m = std::max(m, log_f[i]);
  if (m == -std::numeric_limits<double>::infinity()) return m;
  double s = 0.0;
  for (Index i = 0, k = 0; i < log_f.size(); i += stride, ++k) s += w[k] * std::exp(log_f[i] - m);
  return m + std::log(s);
}

}  // namespace

const OptionsSpec<ConditionalKeys>& conditional_likelihood_options() {
  using O = ConditionalKeys;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.bind(split_key("which split's pairs (x, y) to evaluate on"), &O::split);
    s.string("normalizer", &O::normalizer,
             "log Z(x): `exact` (the model's own; an error if it has none), `quadrature` (Simpson on a grid "
             "of y, "
             "one target column), or `auto` (exact when the model has it, else quadrature)",
             std::string("auto"))
        .one_of({"auto", "exact", "quadrature"});
    s.integer("quadrature_points", &O::quadrature_points,
              "nodes of the y grid per x (rounded up to 4k + 1; the error estimate reruns on every other node)", 2001)
        .at_least(9);
    s.number("quadrature_margin", &O::quadrature_margin,
             "the y grid spans the training targets' range widened by this many ranges on each side", 1.0)
        .non_negative();
    return s;
  }();
  return spec;
}

QuadratureNormalizer conditional_quadrature(const ConditionalModel& model, const Matrix& X, double lo,
                                            double hi, Index points) {
  if (points % 2 == 0) ++points;
  if ((points - 1) % 4 != 0) points += 2;  // the coarse rule (every other node) needs an even cell count too
  const double h = (hi - lo) / static_cast<double>(points - 1);
  const Vector fine = simpson_weights(points, h), coarse = simpson_weights((points + 1) / 2, 2 * h);
  Matrix Y(points, 1);
  for (Index g = 0; g < points; ++g) Y(g, 0) = lo + h * static_cast<double>(g);
  QuadratureNormalizer out{Vector(X.rows()), Vector(X.rows()), Vector(X.rows())};
  for (Index n = 0; n < X.rows(); ++n) {
    const Matrix Xn = X.row(n).replicate(points, 1);
    const Vector log_f = model.log_unnormalized(Xn, Y);
    const double lz = weighted_logsumexp(log_f, fine, 1);
    out.log_z[n] = lz;
    out.error[n] = std::abs(lz - weighted_logsumexp(log_f, coarse, 2));
    // Trapezoid mass of the two end cells relative to the whole.
    const double end = 0.5 * h * (std::exp(log_f[0] - lz) + std::exp(log_f[1] - lz)) +
                       0.5 * h * (std::exp(log_f[points - 2] - lz) + std::exp(log_f[points - 1] - lz));
    out.edge[n] = end;
  }
  return out;
}

ConditionalLikelihoodEvaluator::ConditionalLikelihoodEvaluator(const Config& cfg)
    : opt_(conditional_likelihood_options().read(cfg)), sites_(cfg) {}

void ConditionalLikelihoodEvaluator::check(const DataShape& data) const {
  if (data.target_dim == 0)
    sites_.fail("",
                "conditional_log_likelihood evaluates p(y | x) and the data have no target columns; set "
                "[data] targets");
  if (data.rows(opt_.split) == 0) sites_.fail("split", "the " + opt_.split + " split is empty");
  if (opt_.normalizer == "quadrature" && data.target_dim > 1)
    sites_.fail("normalizer",
                "quadrature in y needs one target column; the data have " + std::to_string(data.target_dim));
  if (opt_.normalizer == "quadrature" && data.dim > 0)
    // Each x's grid: the nodes, x repeated at every node and the model's values there, before any is made.
    require_memory(8.0 * 4.0 * static_cast<double>(opt_.quadrature_points) * static_cast<double>(data.dim + 2),
                   sites_.where("quadrature_points"), "the y grid of each x (quadrature_points)");
}

void ConditionalLikelihoodEvaluator::check_model(const DataShape&, const PlannedModel& model) const {
  if (model.facets && !model.facets->has(Facet::ConditionalDensity))
    sites_.fail("", "model " + model.name +
                        " has no conditional density p(y | x) (it has: " + model.facets->text() + ")");
}

EvaluationResult ConditionalLikelihoodEvaluator::evaluate(const EvalInput& in) {
  const ConditionalModel* c = in.model.conditional();
  if (!c)
    sites_.fail("", "model " + in.model_name + " (" + in.model.type_name() + ") has no conditional density");
  const Matrix& rows = evaluation_rows(in, opt_.split, sites_, "conditional_log_likelihood");
  const Matrix X = in.data.inputs(rows), Y = in.data.targets(rows);
  const Vector lu = c->log_unnormalized(X, Y);
  EvaluationResult r;
  Vector log_z;
  std::optional<Vector> exact = opt_.normalizer == "quadrature" ? std::nullopt : c->log_normalizer(X);
  if (exact) {
    log_z = *exact;
    r.notes.push_back("log Z(x) exact (the model's normaliser)");
  } else {
    if (opt_.normalizer == "exact")
      sites_.fail("normalizer", "model " + in.model_name + " (" + in.model.type_name() +
                                    ") has no exact normaliser; use normalizer = \"quadrature\" or \"auto\"");
    if (Y.cols() != 1)
      sites_.fail("normalizer", "model " + in.model_name + " has no exact normaliser and y has " +
                                    std::to_string(Y.cols()) +
                                    " columns: quadrature in y is implemented for one target column only");
    // The training targets' range, read in blocks (a distributed run may leave the split in the file).
    const ColumnSummary s = in.data.train_count() > 0 ? summarize_columns(*in.data.training()) : summarize_columns(rows);
    double ymin = std::numeric_limits<double>::infinity(), ymax = -ymin;
    for (Index t : in.data.roles.targets) {
      ymin = std::min(ymin, s.min[t]);
      ymax = std::max(ymax, s.max[t]);
    }
    const double range = std::max(ymax - ymin, 1e-12);
    const double lo = ymin - opt_.quadrature_margin * range, hi = ymax + opt_.quadrature_margin * range;
    const QuadratureNormalizer q = conditional_quadrature(*c, X, lo, hi, opt_.quadrature_points);
    log_z = q.log_z;
    r.metrics.emplace_back("log_normalizer_error_max", q.error.maxCoeff());
    r.metrics.emplace_back("quadrature_edge_mass_max", q.edge.maxCoeff());
    r.notes.push_back("log Z(x) by Simpson quadrature on " + std::to_string(opt_.quadrature_points) +
                      " nodes over y in [" + number_text(lo) + ", " + number_text(hi) +
                      "]; largest |Δ log Z| when halving the grid " + number_text(q.error.maxCoeff()) +
                      ", largest share of the integral in the end cells " + number_text(q.edge.maxCoeff()));
  }
  const Vector lp = lu - log_z;
  check_finite(lp, "conditional_log_likelihood: log p(y | x) of model " + in.model_name);
  const double n = static_cast<double>(lp.size());
  double total = 0.0;  // row order
  for (Index i = 0; i < lp.size(); ++i) total += lp[i];
  const double mean = total / n;
  double ss = 0.0;
  for (Index i = 0; i < lp.size(); ++i) ss += (lp[i] - mean) * (lp[i] - mean);
  const double sd = lp.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  r.metrics.emplace_back("conditional_log_likelihood", mean);
  r.metrics.emplace_back("conditional_nll", -mean);
  r.metrics.emplace_back("conditional_log_likelihood_stderr", sd / std::sqrt(n));
  r.metrics.emplace_back("pairs", n);
  r.summary = "mean log p(y | x) = " + number_text(mean) + " over " + std::to_string(lp.size()) + " " +
              opt_.split + " pairs";
  return r;
}

}  // namespace kef::likelihood
