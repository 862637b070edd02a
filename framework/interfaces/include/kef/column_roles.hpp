#pragma once
// Which columns of a data set are inputs x and which are targets y, for conditional densities
// p(y | x) ([data] targets). A row holds both: x and y are column sets of one matrix, so splitting
// and shuffling (which move whole rows) keep every pair together, and a model receives the two
// blocks as two matrices with one row per pair (kef/conditional_model.hpp).
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef {

struct ColumnRoles {
  // Column indices of y, ascending and distinct; empty: every column is a variable of one joint
  // density (unconditional data).
  std::vector<Index> targets;

  bool conditional() const { return !targets.empty(); }
  bool is_target(Index column) const;
  // Column indices of x: every column of `dim` that is not a target, ascending.
  std::vector<Index> inputs(Index dim) const;
  // The x and y blocks of rows of the full data (N x dim -> N x |x|, N x |y|), columns in order.
  Matrix inputs_of(const Matrix& rows) const;
  Matrix targets_of(const Matrix& rows) const;
  // The full rows from the two blocks (the inverse of inputs_of / targets_of).
  Matrix join(const Matrix& inputs, const Matrix& targets) const;
  // The roles after column `column` is removed (a target cannot be: Error).
  ColumnRoles without_column(Index column) const;
  bool operator==(const ColumnRoles&) const = default;
};

// Roles from target column indices for data of `dim` columns: Error unless the indices are in
// [0, dim), distinct, and leave at least one input column. Sorts them.
ColumnRoles make_column_roles(std::vector<Index> targets, Index dim);

// Column indices `subset` of a square map `A`: the block A(subset, subset).
Matrix block_of(const Matrix& A, const std::vector<Index>& subset);

}  // namespace kef
