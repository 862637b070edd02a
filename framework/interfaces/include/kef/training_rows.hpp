#pragma once
// The training split of a distributed run read by rows (README "Reading data by row ranges"): no
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

}  // namespace kef
