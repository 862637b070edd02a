#pragma once
// A network's passes over a large batch on several threads: the samples are cut into fixed blocks
// of block_rows rows (the last one shorter), each block runs Network::forward/backward on its own,
// and the blocks' parameter gradients are summed afterwards in block order. The blocks never depend
// on the thread count, so every result is bitwise the same for any number of threads (and equals the
// single-block pass up to rounding in the order of the gradient sum).
//
// Batch norm in training mode couples all samples of a batch through its statistics; a network with
// batch norm must be in evaluation mode here (Error otherwise), or run by Network::forward.
#include "kef/context.hpp"
#include "kef/network/network.hpp"

namespace kef::network {

struct BlockedTape {
  int order = 0;
  Index n = 0;
  Index block_rows = 0;
  std::vector<Network::Tape> blocks;
};

// As Network::forward (same stacked layout of out) over blocks of block_rows samples.
void forward_blocked(const Network& net, const Matrix& X, int order, Matrix& out, BlockedTape* tape,
                     const Context& context, Index block_rows = 256);
// As Network::backward, with the tape of forward_blocked on the same X (gradients accumulated).
void backward_blocked(const Network& net, const Matrix& X, const BlockedTape& tape, const Matrix& adjoint,
                      Vector* grad_params, Matrix* grad_X, const Context& context);

}  // namespace kef::network
