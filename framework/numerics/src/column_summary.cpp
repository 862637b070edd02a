#include "kef/column_summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kef/error.hpp"

namespace kef {

Matrix ColumnSummary::covariance() const {
  if (rows < 2) return Matrix::Zero(scatter.rows(), scatter.cols());
  return scatter / static_cast<double>(rows - 1);
}

Vector ColumnSummary::sd(int ddof) const {
  if (rows - ddof < 1) return Vector::Zero(centred_squares.size());
  const auto divisor = static_cast<double>(rows - ddof);
  Vector out = (centred_squares / divisor).cwiseSqrt();
  // Squares of deviations below 1e-150 underflow (the normal range of a double ends near 1e-308): such a
  // column's sd comes from its squares relative to its range. Wider columns keep centred_squares, so
  // that a column whose variance overflows still reads as infinite (and is refused by its callers).
  for (Index d = 0; d < out.size(); ++d) {
    const double range = max[d] - min[d];
    if (range == 0)
      out[d] = 0;
    else if (range < 1e-150)
      out[d] = range * std::sqrt(scaled_squares[d] / divisor);
  }
  return out;
}

ColumnSummary summarize_columns(const TrainingRows& rows, Index block_rows, Index count) {
  if (block_rows < 1) throw Error("summarize_columns: block_rows must be >= 1");
  const Index n = count < 0 ? rows.rows() : std::min(count, rows.rows()), D = rows.cols();
  ColumnSummary s;
  s.rows = n;
  s.mean = Vector::Zero(D);
  s.scatter = Matrix::Zero(D, D);
  s.centred_squares = Vector::Zero(D);
  s.scaled_squares = Vector::Zero(D);
  s.min = Vector::Constant(D, std::numeric_limits<double>::infinity());
  s.max = Vector::Constant(D, -std::numeric_limits<double>::infinity());
  if (n == 0) return s;
  for (Index b = 0; b < n; b += block_rows) {
    const Matrix X = rows.range(b, std::min(n, b + block_rows));
    if (!X.allFinite()) s.finite = false;
    s.mean += X.colwise().sum().transpose();
    s.min = s.min.cwiseMin(X.colwise().minCoeff().transpose());
    s.max = s.max.cwiseMax(X.colwise().maxCoeff().transpose());
  }
  s.mean /= static_cast<double>(n);
  if (!s.finite) return s;
  for (Index b = 0; b < n; b += block_rows) {
    const Matrix C = rows.range(b, std::min(n, b + block_rows)).rowwise() - s.mean.transpose();
    s.scatter.noalias() += C.transpose() * C;
    s.centred_squares += C.array().square().colwise().sum().matrix().transpose();
    for (Index d = 0; d < D; ++d)
      if (const double range = s.max[d] - s.min[d]; range > 0)
        s.scaled_squares[d] += (C.col(d) / range).squaredNorm();
  }
  return s;
}

ColumnSummary summarize_columns(const Matrix& rows) { return summarize_columns(MatrixRows(rows)); }

std::pair<Index, double> largest_magnitude(const TrainingRows& rows, Index d, Index count, Index block_rows) {
  const Index n = count < 0 ? rows.rows() : std::min(count, rows.rows());
  Index best_row = 0;
  double best = -1.0;
  for (Index b = 0; b < n; b += block_rows) {
    const Matrix X = rows.range(b, std::min(n, b + block_rows));
    Index r = 0;
    const double v = X.col(d).cwiseAbs().maxCoeff(&r);
    if (v > best) best = v, best_row = b + r;  // the first such row on ties
  }
  return {best_row, best};
}

}  // namespace kef
