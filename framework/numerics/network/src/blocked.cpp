#include "blocked.hpp"

#include <algorithm>

#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef::network {

namespace {

void require_row_independent(const Network& net) {
  if (!net.training()) return;
  for (Index i = 0; i < net.layer_count(); ++i)
    if (net.layer(i).has_running_statistics())
      throw Error("network: " + net.layer(i).name() +
                  " in training mode couples all rows of a batch; blocked passes need set_training(false)");
}

// Rows [i0, i0 + nb) of every channel of a stack with N rows per channel, and back.
Matrix gather(const Matrix& stack, Index N, Index channels, Index i0, Index nb) {
  Matrix out(nb * channels, stack.cols());
  for (Index c = 0; c < channels; ++c) out.middleRows(c * nb, nb) = stack.middleRows(c * N + i0, nb);
  return out;
}

void scatter(const Matrix& block, Index N, Index channels, Index i0, Index nb, Matrix& stack) {
  for (Index c = 0; c < channels; ++c) stack.middleRows(c * N + i0, nb) = block.middleRows(c * nb, nb);
}

}  // namespace

void forward_blocked(const Network& net, const Matrix& X, int order, Matrix& out, BlockedTape* tape,
                     const Context& context, Index block_rows) {
  require_row_independent(net);
  if (block_rows < 1)
    throw Error("network: block_rows must be positive (got " + std::to_string(block_rows) + ")");
  if (X.cols() != net.input_dim())
    throw DataError("network: input has " + std::to_string(X.cols()) + " columns, expected " +
                    std::to_string(net.input_dim()));
  const Index N = X.rows(), C = 1 + net.input_dim() * std::clamp(order, 0, 2);
  const Index blocks = (N + block_rows - 1) / block_rows;
  out.resize(N * C, net.output_dim());
  if (tape) {
    tape->order = order;
    tape->n = N;
    tape->block_rows = block_rows;
    tape->blocks.assign(static_cast<std::size_t>(blocks), Network::Tape{});
  }
  parallel_for(blocks, context.threads(), [&](Index b) {
    const Index i0 = b * block_rows, nb = std::min(block_rows, N - i0);
    Matrix ob;
    net.forward(X.middleRows(i0, nb), order, ob, tape ? &tape->blocks[static_cast<std::size_t>(b)] : nullptr);
    scatter(ob, N, C, i0, nb, out);
  });
}

void backward_blocked(const Network& net, const Matrix& X, const BlockedTape& tape, const Matrix& adjoint,
                      Vector* grad_params, Matrix* grad_X, const Context& context) {
  require_row_independent(net);
  const Index N = X.rows(), D = net.input_dim(), C = 1 + D * tape.order, B = tape.block_rows;
  const Index blocks = static_cast<Index>(tape.blocks.size());
  if (tape.n != N || B < 1 || blocks != (N + B - 1) / B || adjoint.rows() != N * C ||
      adjoint.cols() != net.output_dim())
    throw Error("network: backward_blocked needs the tape of forward_blocked on the same input and a " +
                std::to_string(N * C) + " x " + std::to_string(net.output_dim()) + " adjoint");
  if (grad_params && grad_params->size() != net.parameter_count())
    grad_params->setZero(net.parameter_count());
  if (grad_X && (grad_X->rows() != N || grad_X->cols() != D)) grad_X->setZero(N, D);
  std::vector<Vector> g(static_cast<std::size_t>(blocks));
  Matrix Xbar = Matrix::Zero(N, D);
  parallel_for(blocks, context.threads(), [&](Index b) {
    const Index i0 = b * B, nb = std::min(B, N - i0);
    Matrix xb;
    net.backward(X.middleRows(i0, nb), tape.blocks[static_cast<std::size_t>(b)],
                 gather(adjoint, N, C, i0, nb), grad_params ? &g[static_cast<std::size_t>(b)] : nullptr,
                 grad_X ? &xb : nullptr);
    if (grad_X) Xbar.middleRows(i0, nb) = xb;
  });
  if (grad_params) {
    Vector sum = Vector::Zero(net.parameter_count());
    for (const Vector& gb : g) sum += gb;  // in block order: the same for any thread count
    *grad_params += sum;
  }
  if (grad_X) *grad_X += Xbar;
}

}  // namespace kef::network
