#include "kef/training_rows.hpp"

#include <algorithm>
#include <string>

#include "kef/error.hpp"

namespace kef {

namespace {

void check_positions(Index begin, Index end, Index rows) {
  if (begin < 0 || end < begin || end > rows)
    throw Error("training rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") asked of a split of " +
                std::to_string(rows) + " rows");
}

}  // namespace

Matrix MatrixRows::range(Index begin, Index end) const {
  check_positions(begin, end, rows_.rows());
  return rows_.middleRows(begin, end - begin);
}

Matrix MatrixRows::pick(const std::vector<Index>& positions) const {
  Matrix out(static_cast<Index>(positions.size()), rows_.cols());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    check_positions(positions[i], positions[i] + 1, rows_.rows());
    out.row(static_cast<Index>(i)) = rows_.row(positions[i]);
  }
  return out;
}

Matrix first_rows(const TrainingRows& rows, Index count) {
  return rows.range(0, std::min(std::max<Index>(count, 0), rows.rows()));
}

}  // namespace kef
