#include "quadrature.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "kef/constants.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef::likelihood {

namespace {

constexpr Index kCellChunk = 4096;

// log Σ e^{v_i} over the selected entries, shifted by their maximum; −inf when none is selected or
// all are −inf (so exp(−inf) contributes exactly 0).
template <class Selected>
double log_sum_selected(const Vector& v, Selected&& selected) {
  double m = kNegInf;
  for (Index i = 0; i < v.size(); ++i)
    if (selected(i)) m = std::max(m, v[i]);
  if (m == kNegInf) return kNegInf;
  double s = 0.0;
  for (Index i = 0; i < v.size(); ++i)
    if (selected(i)) s += std::exp(v[i] - m);
  return m + std::log(s);
}

std::string point_text(const Vector& x) {
  std::ostringstream os;
  os.precision(9);
  os << "(";
  for (Index d = 0; d < x.size(); ++d) os << (d ? ", " : "") << x[d];
  os << ")";
  return os.str();
}

}  // namespace

Vector cell_centre(const Box& box, Index n, Index k) {
  const Index D = box.dim();
  Vector x(D);
  for (Index d = D - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    const double h = (box.hi[u] - box.lo[u]) / static_cast<double>(n);
    x[d] = box.lo[u] + (static_cast<double>(k % n) + 0.5) * h;
    k /= n;
  }
  return x;
}

GridIntegral midpoint_log_integral(const Model& model, const Box& box, Index n, Index band_cells,
                                   const Context& context, const std::string& model_name, Progress* progress,
                                   const std::string& task) {
  const Index D = box.dim();
  Index cells = 1;
  for (Index d = 0; d < D; ++d) cells *= n;
  double log_volume = 0.0;
  std::vector<double> h(static_cast<std::size_t>(D));
  for (Index d = 0; d < D; ++d) {
    const auto u = static_cast<std::size_t>(d);
    h[u] = (box.hi[u] - box.lo[u]) / static_cast<double>(n);
    log_volume += std::log(h[u]);
  }

  const Index chunks = (cells + kCellChunk - 1) / kCellChunk;
  Vector chunk_all(chunks), chunk_band(chunks);
  const Index wave = 16 * static_cast<Index>(context.threads());
  for (Index w0 = 0; w0 < chunks; w0 += wave) {
    const Index wn = std::min(wave, chunks - w0);
    parallel_for(wn, context.threads(), [&](Index j) {
      const Index c = w0 + j, begin = c * kCellChunk, len = std::min(kCellChunk, cells - begin);
      Matrix X(len, D);
      std::vector<char> band(static_cast<std::size_t>(len), 0);
      for (Index i = 0; i < len; ++i) {
        Index k = begin + i;
        for (Index d = D - 1; d >= 0; --d) {
          const Index idx = k % n;
          k /= n;
          const auto u = static_cast<std::size_t>(d);
          X(i, d) = box.lo[u] + (static_cast<double>(idx) + 0.5) * h[u];
          if (idx < band_cells || idx >= n - band_cells) band[static_cast<std::size_t>(i)] = 1;
        }
      }
      const Vector lp = model.log_unnormalized(X);
      if (lp.size() != len)
        throw NumericalError("log_likelihood quadrature: model " + model_name + " returned " +
                             std::to_string(lp.size()) + " values for " + std::to_string(len) + " points");
      for (Index i = 0; i < len; ++i)
        if (std::isnan(lp[i]) || lp[i] == std::numeric_limits<double>::infinity()) {
          std::ostringstream v;
          v << lp[i];
          throw NumericalError("log_likelihood quadrature: log p~ of model " + model_name + " is " + v.str() +
                               " at grid cell " + std::to_string(begin + i) + " of " + std::to_string(cells) +
                               ", centre " + point_text(X.row(i).transpose()));
        }
      chunk_all[c] = log_sum_selected(lp, [](Index) { return true; });
      chunk_band[c] = log_sum_selected(lp, [&](Index i) { return band[static_cast<std::size_t>(i)] != 0; });
    });
    if (progress)
      progress->update(task, static_cast<double>(w0 + wn) / static_cast<double>(chunks),
                       std::to_string(std::min(cells, (w0 + wn) * kCellChunk)) + " of " +
                           std::to_string(cells) + " cells");
  }
  // logsumexp reduces the chunk sums in chunk order: the same for every thread count.
  GridIntegral out;
  out.cells = cells;
  out.log_integral = logsumexp(chunk_all) + log_volume;
  out.log_band = logsumexp(chunk_band) + log_volume;
  return out;
}

}  // namespace kef::likelihood
