#pragma once
// Per-column statistics of a set of rows read in blocks, in order (kef/training_rows.hpp): the one
// implementation behind the data-fitted proposals' location, scale and bandwidths, the quadrature box
// and the standardize/whiten statistics. Reading by blocks keeps a training split that is left in the
// data file (a distributed run) out of memory, and the fixed block order makes the statistics the same
// bits whether the rows are held or read from the file, on any number of processes. Within one block
// (up to 4096 rows by default) they are the bits of the direct expressions on the whole matrix.
#include "kef/training_rows.hpp"
#include "kef/types.hpp"

namespace kef {

struct ColumnSummary {
  Index rows = 0;
  Vector mean;             // column means
  Matrix scatter;          // Σ (x − mean)(x − mean)ᵀ
  Vector centred_squares;  // Σ (x_d − mean_d)², column by column (scatter's diagonal, summed elementwise)
  Vector min, max;         // column extremes
  // Σ ((x_d − mean_d) / (max_d − min_d))² (0 for a constant column): centred_squares on the column's own
  // scale, where a column of values near 1e-200 does not underflow its squares.
  Vector scaled_squares;
  bool finite = true;      // every value finite (otherwise the moments are meaningless and not computed)

  // The sample covariance, scatter / (rows − 1); zero for fewer than 2 rows.
  Matrix covariance() const;
  // Column standard deviations with divisor rows − `ddof` (1: the sample sd, 0: the population sd); 0
  // exactly when the column is constant, whatever its scale (from scaled_squares where the squares of its
  // deviations underflow, from centred_squares elsewhere: an overflowing variance stays infinite).
  Vector sd(int ddof = 1) const;
};

// Two passes over the first `count` rows (all when negative) in blocks of `block_rows`: the means, then
// the centred products (the two-pass form loses no precision to a large mean). Holds one block at a time.
ColumnSummary summarize_columns(const TrainingRows& rows, Index block_rows = 4096, Index count = -1);
// The same, of a held matrix (the same bits as for its MatrixRows view).
ColumnSummary summarize_columns(const Matrix& rows);

// The row (among the first `count`, all when negative) holding column d's largest |value|, and that
// value, read in blocks; the first such row on ties. For error messages that name the row.
std::pair<Index, double> largest_magnitude(const TrainingRows& rows, Index d, Index count = -1,
                                           Index block_rows = 4096);

}  // namespace kef
