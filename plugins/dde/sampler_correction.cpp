#include "sampler_correction.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "kef/error.hpp"

namespace kef::dde {

SamplerDiagnostic diagnose_log_weights(const Vector& lw) {
  const Index m = lw.size();
  SamplerDiagnostic d;
  double top = -std::numeric_limits<double>::infinity(), sum_lw = 0.0;
  Index inside = 0;
  for (Index i = 0; i < m; ++i)
    if (std::isfinite(lw[i])) {
      ++inside;
      top = std::max(top, lw[i]);
      sum_lw += lw[i];
    }
  d.outside_box = m > 0 ? static_cast<double>(m - inside) / static_cast<double>(m) : 0.0;
  if (inside == 0) {
    d.ess_fraction = 0.0;
    d.kl = std::numeric_limits<double>::infinity();
    return d;
  }
  double s1 = 0.0, s2 = 0.0;
  for (Index i = 0; i < m; ++i)
    if (std::isfinite(lw[i])) {
      const double w = std::exp(lw[i] - top);
      s1 += w;
      s2 += w * w;
    }
  const double k = static_cast<double>(inside);
  d.ess_fraction = s1 * s1 / (k * s2);
  d.kl = top + std::log(s1 / k) - sum_lw / k;
  return d;
}

Matrix importance_resample(const Matrix& candidates, const Vector& log_w, Index n, RandomStream& rng) {
  double top = -std::numeric_limits<double>::infinity();
  for (Index i = 0; i < log_w.size(); ++i) {
    if (std::isnan(log_w[i]) || log_w[i] == std::numeric_limits<double>::infinity())
      throw NumericalError("dde importance resampling: log weight " + std::to_string(i) + " is " +
                           std::to_string(log_w[i]));
    top = std::max(top, log_w[i]);
  }
  if (!std::isfinite(top))
    throw NumericalError(
        "dde importance resampling: every candidate has weight 0 (all outside the data box)");
  Vector cum(log_w.size());
  double s = 0.0;
  for (Index i = 0; i < log_w.size(); ++i) cum[i] = (s += std::exp(log_w[i] - top));
  Matrix out(n, candidates.cols());
  for (Index k = 0; k < n; ++k) {
    const double u = rng.uniform() * s;
    Index i = static_cast<Index>(std::upper_bound(cum.data(), cum.data() + cum.size(), u) - cum.data());
    i = std::min<Index>(i, cum.size() - 1);
    // Only when u rounded up to s can the clamped index be a zero-weight row: step back to a weighted one.
    while (i > 0 && log_w[i] == -std::numeric_limits<double>::infinity()) --i;
    out.row(k) = candidates.row(i);
  }
  return out;
}

void write_correction(ModelWriter& w, const SamplerCorrection& c) {
  w.manifest().set("sampler_correction", std::string(c.importance ? "importance" : "none"));
  w.manifest().set("correction_candidates", static_cast<std::int64_t>(c.candidates));
}

SamplerCorrection read_correction(const ModelReader& r) {
  SamplerCorrection c;
  if (!r.manifest().has("sampler_correction")) return c;
  const std::string kind = r.manifest().string("sampler_correction");
  if (kind != "none" && kind != "importance")
    r.fail("model.toml `sampler_correction` must be \"none\" or \"importance\" (got \"" + kind + "\")");
  c.importance = kind == "importance";
  c.candidates = r.positive_integer("correction_candidates");
  return c;
}

}  // namespace kef::dde
