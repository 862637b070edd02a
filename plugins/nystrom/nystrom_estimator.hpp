#pragma once
// Score matching on the derivative basis (docs/math.md §6): `nystrom` restricts f to the span of
// ∂^o_j k(z_b, ·) at m sampled points (Sutherland et al.), `full` solves over the whole RKHS
// (Sriperumbudur et al.), an n·D system.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kef/config.hpp"
#include "kef/estimator.hpp"
#include "kef/options.hpp"
#include "kef/registry.hpp"

namespace kef::nystrom {

// Exactly one of inducing_points and inducing_points_file is set (checked at construction).
struct NystromOptions {
  std::optional<std::int64_t> inducing_points;
  std::optional<std::filesystem::path> inducing_points_file;
  double lambda = 1e-3;
  std::vector<double> orders;
  std::optional<std::int64_t> components;
  std::string solver;
  double ridge = 0, cutoff = 1e-12;
  std::int64_t chunk_rows = 0;
};
const OptionsSpec<NystromOptions>& nystrom_options();

struct FullOptions {
  double lambda = 1e-3;
  std::int64_t max_system = 0;
  std::int64_t chunk_rows = 0;
};
const OptionsSpec<FullOptions>& full_options();

class NystromEstimator final : public Estimator {
 public:
  NystromEstimator(const Config& cfg, const EstimatorParts& parts);
  ModelPtr fit(const FitInput& input) override;
  // m > n, components > m·D and a kernel without the mixed derivatives fail in `kef validate`.
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 protected:
  Estimator* clone_raw() const override;

 private:
  Matrix choose_points(const Matrix& train, RandomStream& rng) const;
  void check_kernel() const;
  NystromOptions opt_;
  std::vector<int> orders_;
  KeySites sites_;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
};

class FullEstimator final : public Estimator {
 public:
  FullEstimator(const Config& cfg, const EstimatorParts& parts);
  ModelPtr fit(const FitInput& input) override;
  // n·D above max_system fails in `kef validate`, naming the memory the system would need.
  void check(const DataShape& data) const override;
  std::optional<FacetSet> facets() const override;

 protected:
  Estimator* clone_raw() const override;

 private:
  void check_size(Index rows, Index dim) const;
  void check_kernel() const;
  FullOptions opt_;
  KeySites sites_;
  KernelPtr kernel_;
  BaseMeasurePtr base_;
};

}  // namespace kef::nystrom
