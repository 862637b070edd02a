#pragma once
// Numeric types shared by every interface: samples are rows of an N x D matrix.
#include <Eigen/Dense>

namespace kef {

using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;
using Index = Eigen::Index;
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace kef
