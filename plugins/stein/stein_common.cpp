#include "stein_common.hpp"

#include <cmath>

#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/registry.hpp"

namespace kef::stein {

Matrix checked_score(const Model& model, const Matrix& X, Index row_offset, const std::string& what) {
  Matrix S = model.score(X);
  if (S.rows() != X.rows() || S.cols() != X.cols())
    throw NumericalError(what + " has shape " + std::to_string(S.rows()) + " x " + std::to_string(S.cols()) +
                         ", expected " + std::to_string(X.rows()) + " x " + std::to_string(X.cols()));
  for (Index n = 0; n < S.rows(); ++n)
    if (!S.row(n).allFinite())
      throw NumericalError(what + " is not finite at row " + std::to_string(row_offset + n) + " (0-based)");
  return S;
}

Matrix checked_score_all(const Model& model, const Matrix& X, const Context& context,
                         const std::string& what) {
  Matrix S(X.rows(), X.cols());
  parallel_for_chunks(X.rows(), kRowChunk, context.threads(), [&](Index b, Index n) {
    S.middleRows(b, n) = checked_score(model, X.middleRows(b, n), b, what);
  });
  return S;
}

KernelPtr make_gaussian_kernel(Registry& registry, double sigma) {
  auto k = registry.make_kernel(Config::parse_string("type = \"gaussian\"", "stein"), BuildContext{});
  k->set_parameters(Vector::Constant(1, std::log(sigma)));
  return k;
}

double stein_bandwidth(const std::optional<double>& given, const BandwidthRule& rule, const Matrix& X,
                       const std::string& where, const KeySites& sites, const Context& context,
                       std::string* how) {
  if (given) {
    if (how) *how = "given";
    return *given;
  }
  if (rule.kind == BandwidthRule::Kind::Bkl) {
    const ChosenBandwidth c = choose_bandwidth(rule, X, where, context.child("bandwidth"));
    if (how) *how = c.how;
    return c.sigma;
  }
  const double sigma = median_pairwise_distance(X);
  if (!(sigma > 0.0))
    sites.fail("bandwidth", "the median pairwise distance of the data is 0; set `bandwidth`");
  if (how) *how = "median heuristic";
  return sigma;
}

KernelPtr make_imq_kernel(Registry& registry, double c, double beta) {
  Config cfg = Config::parse_string("type = \"imq\"", "stein");
  cfg.set("c", c);
  cfg.set("beta", beta);
  return registry.make_kernel(cfg, BuildContext{});
}

double monte_carlo_pvalue(double stat, const std::vector<double>& simulated) {
  std::size_t above = 0;
  for (double s : simulated) above += s >= stat ? 1 : 0;
  return (1.0 + static_cast<double>(above)) / (1.0 + static_cast<double>(simulated.size()));
}

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace kef::stein
