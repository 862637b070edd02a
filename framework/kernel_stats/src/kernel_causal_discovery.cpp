// PC with HSIC tests on GP-regression residuals (kef/kernel_causal_discovery.hpp).
#include "kernel_causal_discovery.hpp"

#include <map>

#include "gp_regression.hpp"
#include "kef/error.hpp"
#include "kef/hsic_test.hpp"

namespace kef {

CausalDiscoveryResult discover_causal_structure(const Matrix& data, const CausalDiscoveryOptions& options,
                                                const GaussianKernelFactory& gaussian,
                                                const Context& context) {
  if (data.rows() < 4)
    throw DataError(options.where + ": " + std::to_string(data.rows()) + " rows (expected at least 4)");
  if (!data.allFinite()) throw DataError(options.where + ": the data have non-finite values");
  if (options.permutations < 0)
    throw ConfigError(options.where + ": permutations must be >= 0, got " +
                      std::to_string(options.permutations));
  CausalDiscoveryResult result;
  // x_i − E[x_i | X_S], once per (i, S).
  std::map<std::pair<Index, std::vector<Index>>, Matrix> residuals;
  auto residual = [&](Index i, const std::vector<Index>& given) -> const Matrix& {
    auto key = std::make_pair(i, given);
    auto it = residuals.find(key);
    if (it != residuals.end()) return it->second;
    Matrix r(data.rows(), 1);
    if (given.empty()) {
      r.col(0) = data.col(i);
    } else {
      Matrix Z(data.rows(), static_cast<Index>(given.size()));
      for (std::size_t k = 0; k < given.size(); ++k) Z.col(static_cast<Index>(k)) = data.col(given[k]);
      r.col(0) = gp_regression(Z, data.col(i)).residuals;
      ++result.regressions;
    }
    return residuals.emplace(std::move(key), std::move(r)).first->second;
  };
  auto test = [&](Index i, Index j, const std::vector<Index>& given) {
    const Matrix& x = residual(i, given);
    const Matrix& y = residual(j, given);
    std::string path = std::to_string(i) + "," + std::to_string(j) + "|";
    for (Index k : given) path += std::to_string(k) + " ";
    Context child = context.child("pc " + path);
    const ChosenBandwidth bx = choose_bandwidth(options.bandwidth, x, options.where, child.child("x"));
    const ChosenBandwidth by = choose_bandwidth(options.bandwidth, y, options.where, child.child("y"));
    const KernelPtr kx = gaussian(bx.sigma), ky = gaussian(by.sigma);
    const HsicTest h = hsic_test(*kx, *ky, x, y, options.permutations, child.rng().derive("permutations"),
                                 context, options.permutations == 0);
    return options.permutations > 0 ? h.p_value : h.gamma_p_value;
  };
  PcOptions pc;
  pc.alpha = options.alpha;
  pc.max_given = options.max_given;
  result.pc = pc_algorithm(data.cols(), test, pc);
  return result;
}

}  // namespace kef
