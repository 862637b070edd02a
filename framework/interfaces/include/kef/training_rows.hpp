#pragma once
// The training split of a distributed run read by rows (docs/mpi.md, "Reading data by row ranges"): no
// process holds it; each reads, from the data file, the rows its share of a sum needs, when it needs
// them. A row's values are the file's, so every process (and a single process holding the whole split
// as a matrix) sees the same doubles for the same position, and block sums stay bitwise the
// single-process ones.
#include <memory>
#include <vector>

#include "kef/types.hpp"

namespace kef {

class TrainingRows {
 public:
  virtual ~TrainingRows() = default;
  virtual Index rows() const = 0;
  virtual Index cols() const = 0;
  // Rows [begin, end) of the split, in split order.
  virtual Matrix range(Index begin, Index end) const = 0;
  // The rows at `positions` of the split (any order, repeats allowed), in that order.
  virtual Matrix pick(const std::vector<Index>& positions) const = 0;
};

using TrainingRowsPtr = std::shared_ptr<const TrainingRows>;

// A held matrix seen as TrainingRows, so that a consumer of the training split has one code path
// whether the split is held (one process, or a run that cannot read by rows) or left in the file: the
// same positions give the same doubles, so what it computes is the same bits either way. A view: it
// refers to the matrix, which must outlive it.
class MatrixRows final : public TrainingRows {
 public:
  explicit MatrixRows(const Matrix& rows) : rows_(rows) {}
  Index rows() const override { return rows_.rows(); }
  Index cols() const override { return rows_.cols(); }
  Matrix range(Index begin, Index end) const override;
  Matrix pick(const std::vector<Index>& positions) const override;

 private:
  const Matrix& rows_;
};

// Its rows [0, min(rows, count)): what the bandwidth heuristics look at.
Matrix first_rows(const TrainingRows& rows, Index count);

}  // namespace kef
