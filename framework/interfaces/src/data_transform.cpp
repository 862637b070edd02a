#include "kef/data_transform.hpp"

#include <cmath>

#include "kef/error.hpp"

namespace kef {

std::string DataTransform::model_space() const {
  if (kind == "standardize") return "standardized";
  if (kind == "whiten") return "whitened";
  return "data";
}

Matrix DataTransform::to_model(const Matrix& X) const {
  if (identity()) return X;
  // The same expression as the pipeline's, so a raw row maps bitwise to the row the model saw.
  return (X * matrix.transpose()).rowwise() + offset.transpose();
}

Matrix DataTransform::to_data(const Matrix& Z) const {
  if (identity()) return Z;
  if (matrix.isDiagonal())
    return (Z.rowwise() - offset.transpose()).array().rowwise() / matrix.diagonal().transpose().array();
  return (Z.rowwise() - offset.transpose()) * matrix.inverse().transpose();
}

Matrix DataTransform::input_map() const {
  return identity() ? Matrix() : block_of(matrix, roles.inputs(matrix.rows()));
}

Matrix DataTransform::target_map() const { return identity() ? Matrix() : block_of(matrix, roles.targets); }

double DataTransform::target_log_abs_det() const {
  if (identity() || !roles.conditional()) return 0;
  const Eigen::PartialPivLU<Matrix> lu(target_map());
  double log_det = 0;
  for (Index d = 0; d < lu.matrixLU().rows(); ++d) log_det += std::log(std::abs(lu.matrixLU()(d, d)));
  return log_det;
}

void set_column_roles(DataTransform& transform, const ColumnRoles& roles) {
  if (!transform.identity()) {
    const Index D = transform.matrix.rows();
    (void)make_column_roles(roles.targets, D);  // in range, distinct, leaves inputs
    for (Index i = 0; i < D; ++i)
      for (Index j = 0; j < D; ++j)
        if (roles.is_target(i) != roles.is_target(j) && transform.matrix(i, j) != 0.0)
          throw Error("data transform (" + transform.kind +
                      "): the map mixes an input and a target column (A(" + std::to_string(i) + ", " +
                      std::to_string(j) + ") != 0); a conditional density needs a block-diagonal map");
  }
  transform.roles = roles;
}

DataTransform make_data_transform(std::string kind, Matrix A, Vector offset,
                                  std::vector<std::string> columns) {
  if (kind != "standardize" && kind != "whiten")
    throw Error("data transform: kind `" + kind + "` (expected standardize or whiten)");
  if (A.rows() != A.cols() || offset.size() != A.rows())
    throw Error("data transform: a " + std::to_string(A.rows()) + " x " + std::to_string(A.cols()) +
                " matrix with an offset of " + std::to_string(offset.size()));
  double log_det = 0;
  if (A.isDiagonal()) {
    for (Index d = 0; d < A.rows(); ++d) log_det += std::log(std::abs(A(d, d)));
  } else {
    const Eigen::PartialPivLU<Matrix> lu(A);
    const Matrix& U = lu.matrixLU();
    for (Index d = 0; d < A.rows(); ++d) log_det += std::log(std::abs(U(d, d)));
  }
  if (!std::isfinite(log_det) || !A.allFinite() || !offset.allFinite())
    throw DataError("data transform (" + kind +
                    "): the map to model coordinates is singular or not finite "
                    "(log|det A| = " +
                    std::to_string(log_det) + ")");
  DataTransform t;
  t.kind = std::move(kind);
  t.columns = std::move(columns);
  t.matrix = std::move(A);
  t.offset = std::move(offset);
  t.log_abs_det = log_det;
  return t;
}

}  // namespace kef
