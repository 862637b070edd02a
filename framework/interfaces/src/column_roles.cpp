#include "kef/column_roles.hpp"

#include <algorithm>

#include "kef/error.hpp"

namespace kef {

namespace {

Matrix columns_of(const Matrix& rows, const std::vector<Index>& columns) {
  Matrix out(rows.rows(), static_cast<Index>(columns.size()));
  for (std::size_t k = 0; k < columns.size(); ++k) out.col(static_cast<Index>(k)) = rows.col(columns[k]);
  return out;
}

Index width_of(const ColumnRoles& roles, const Matrix& rows) {
  if (!roles.targets.empty() && roles.targets.back() >= rows.cols())
    throw Error("column roles: target column " + std::to_string(roles.targets.back()) + " of rows with " +
                std::to_string(rows.cols()) + " columns");
  return rows.cols();
}

}  // namespace

bool ColumnRoles::is_target(Index column) const {
  return std::binary_search(targets.begin(), targets.end(), column);
}

std::vector<Index> ColumnRoles::inputs(Index dim) const {
  std::vector<Index> out;
  for (Index d = 0; d < dim; ++d)
    if (!is_target(d)) out.push_back(d);
  return out;
}

Matrix ColumnRoles::inputs_of(const Matrix& rows) const {
  return columns_of(rows, inputs(width_of(*this, rows)));
}

Matrix ColumnRoles::targets_of(const Matrix& rows) const {
  (void)width_of(*this, rows);
  return columns_of(rows, targets);
}

Matrix ColumnRoles::join(const Matrix& x, const Matrix& y) const {
  if (x.rows() != y.rows() || static_cast<Index>(targets.size()) != y.cols())
    throw Error("column roles: joining " + std::to_string(x.rows()) + " x " + std::to_string(x.cols()) +
                " inputs with " + std::to_string(y.rows()) + " x " + std::to_string(y.cols()) + " targets (" +
                std::to_string(targets.size()) + " target columns)");
  const Index dim = x.cols() + y.cols();
  Matrix out(x.rows(), dim);
  Index xi = 0, yi = 0;
  for (Index d = 0; d < dim; ++d) out.col(d) = is_target(d) ? y.col(yi++) : x.col(xi++);
  return out;
}

ColumnRoles ColumnRoles::without_column(Index column) const {
  if (is_target(column))
    throw Error("column roles: target column " + std::to_string(column) + " cannot be removed");
  ColumnRoles out;
  for (Index t : targets) out.targets.push_back(t > column ? t - 1 : t);
  return out;
}

ColumnRoles make_column_roles(std::vector<Index> targets, Index dim) {
  std::sort(targets.begin(), targets.end());
  for (std::size_t k = 0; k < targets.size(); ++k) {
    if (targets[k] < 0 || targets[k] >= dim)
      throw Error("column roles: target column " + std::to_string(targets[k]) + " out of range for " +
                  std::to_string(dim) + " columns");
    if (k > 0 && targets[k] == targets[k - 1])
      throw Error("column roles: target column " + std::to_string(targets[k]) + " listed twice");
  }
  if (!targets.empty() && static_cast<Index>(targets.size()) >= dim)
    throw Error("column roles: every one of the " + std::to_string(dim) +
                " columns is a target, which leaves no inputs x");
  ColumnRoles roles;
  roles.targets = std::move(targets);
  return roles;
}

Matrix block_of(const Matrix& A, const std::vector<Index>& subset) {
  const auto k = static_cast<Index>(subset.size());
  Matrix out(k, k);
  for (Index i = 0; i < k; ++i)
    for (Index j = 0; j < k; ++j)
      out(i, j) = A(subset[static_cast<std::size_t>(i)], subset[static_cast<std::size_t>(j)]);
  return out;
}

}  // namespace kef
