#pragma once
// Numeric types shared by every interface: samples are rows of an N x D matrix.
// kef includes Eigen here (a file that includes it elsewhere includes this first). GCC 12's AVX-512
// intrinsics, which Eigen includes, initialise an undefined vector from itself (_mm512_undefined_pd),
// and GCC reports that as -Wuninitialized or -Wmaybe-uninitialized wherever Eigen's kernels are inlined
// into kef's code, although the header is a system header. A diagnostic pragma applies to the lines it
// encloses, so this one silences the two in the intrinsics and Eigen only: kef's own code keeps them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace kef {

using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;
using Index = Eigen::Index;
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace kef
