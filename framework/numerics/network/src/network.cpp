#include "kef/network/network.hpp"

#include "kef/error.hpp"
#include "kef/network/dense.hpp"

namespace kef::network {

Network::Network(Index input_dim) : input_dim_(input_dim) {
  if (input_dim < 1)
    throw Error("network: the input dimension must be positive (got " + std::to_string(input_dim) + ")");
}

Network& Network::add(LayerPtr layer) {
  if (layer && body_.empty() && layer->input_width() != input_dim_)
    throw Error("network: the first layer (" + layer->name() + ") takes width " +
                std::to_string(layer->input_width()) + " but the input has dimension " +
                std::to_string(input_dim_));
  body_.add(std::move(layer));
  theta_.conservativeResize(body_.parameter_count());
  const Index start = body_.offset(body_.size() - 1);
  theta_.tail(theta_.size() - start).setZero();
  refresh_masked();
  return *this;
}

void Network::refresh_masked() {
  if (!body_.masks_parameters()) {
    masked_.resize(0);
    return;
  }
  masked_ = theta_;
  body_.mask_parameters(masked_.data());
}

void Network::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error("network: expected " + std::to_string(parameter_count()) + " parameters, got " +
                std::to_string(theta.size()));
  theta_ = theta;
  refresh_masked();
}

void Network::initialize(RandomStream& rng) {
  body_.initialize(theta_.data(), rng);
  refresh_masked();
}

Pass Network::pass(const Matrix& X, int order, bool training) const {
  if (body_.empty()) throw Error("network: the network has no layers");
  if (X.cols() != input_dim_)
    throw DataError("network: input has " + std::to_string(X.cols()) + " columns, expected " +
                    std::to_string(input_dim_));
  if (order < 0 || order > 2)
    throw Error("network: derivative order must be 0, 1 or 2 (got " + std::to_string(order) + ")");
  if (order > body_.max_order(training))
    throw Error("network: derivative order " + std::to_string(order) + " is not available in " +
                (training ? "training" : "evaluation") + " mode (a batch norm layer supports order " +
                std::to_string(body_.max_order(training)) + "; set_training(false) for input derivatives)");
  return Pass{X, X.rows(), input_dim_, order, training, masked_.size() > 0};
}

void Network::forward(const Matrix& X, int order, Matrix& out, Tape* tape) const {
  const Pass p = pass(X, order, training_);
  if (tape) {
    tape->order = order;
    tape->n = p.n;
    tape->training = training_;
  }
  Matrix h;
  body_.forward(pass_parameters(), p, true, h, tape ? &tape->layers : nullptr);
  out = std::move(h);
}

void Network::backward(const Matrix& X, const Tape& tape, const Matrix& adjoint, Vector* grad_params,
                       Matrix* grad_X) const {
  const Pass p = pass(X, tape.order, tape.training);
  if (tape.n != p.n || static_cast<Index>(tape.layers.size()) != body_.size() || adjoint.rows() != p.rows() ||
      adjoint.cols() != output_dim())
    throw Error("network: backward needs the tape of forward on the same input and a " +
                std::to_string(p.rows()) + " x " + std::to_string(output_dim()) + " adjoint (got " +
                std::to_string(adjoint.rows()) + " x " + std::to_string(adjoint.cols()) + ")");
  // A gradient the caller passes empty is summed in place; one that holds values gets the local sums
  // added at the end, so the result does not depend on what the caller accumulated. (The extra zeroed
  // vector and pass were 2–3% of a MAF training epoch, whose callers pass empty vectors.)
  const bool fresh = grad_params && grad_params->size() == 0;
  if (grad_params && grad_params->size() != parameter_count()) grad_params->setZero(parameter_count());
  if (grad_X && (grad_X->rows() != p.n || grad_X->cols() != input_dim_)) grad_X->setZero(p.n, input_dim_);
  Vector local;
  if (!fresh) local.setZero(parameter_count());
  double* g = fresh ? grad_params->data() : local.data();
  Matrix Xbar = Matrix::Zero(p.n, input_dim_);
  Matrix a = adjoint;
  body_.backward(pass_parameters(), p, tape.layers, a, g, grad_X ? &Xbar : nullptr);
  if (grad_params && !fresh) *grad_params += local;
  if (grad_X) *grad_X += Xbar;
}

Matrix Network::value(const Matrix& X) const {
  Matrix out;
  forward(X, 0, out, nullptr);
  return out;
}

void Network::forward_stack(const Matrix& stack, Index outer_dim, int order, Matrix& out) const {
  if (body_.empty()) throw Error("network: the network has no layers");
  if (order < 0 || order > 2 || outer_dim < 1)
    throw Error("network: forward_stack needs order 0, 1 or 2 and a positive outer dimension (got order " +
                std::to_string(order) + ", dimension " + std::to_string(outer_dim) + ")");
  if (order > body_.max_order(training_))
    throw Error("network: derivative order " + std::to_string(order) + " is not available in " +
                (training_ ? "training" : "evaluation") +
                " mode (set_training(false) for input derivatives)");
  const Index channels = 1 + outer_dim * order;
  if (stack.cols() != input_dim_ || stack.rows() % channels != 0)
    throw Error("network: forward_stack takes a stack of N·" + std::to_string(channels) + " rows and " +
                std::to_string(input_dim_) + " columns (got " + std::to_string(stack.rows()) + " x " +
                std::to_string(stack.cols()) + ")");
  // An input skip adds the network input with J_d = e_d, which a stack over another variable is not.
  for (Index i = 0; i < body_.size(); ++i)
    if (dynamic_cast<const InputSkip*>(&body_.layer(i)))
      throw Error("network: forward_stack on a network with an input skip (" + body_.layer(i).name() + ")");
  const Index n = stack.rows() / channels;
  const Matrix values = stack.topRows(n);  // what a pass reports as its input (only seeded layers read it)
  const Pass p{values, n, outer_dim, order, training_, masked_.size() > 0};
  Matrix h = stack;
  body_.forward(pass_parameters(), p, false, h, nullptr);
  out = std::move(h);
}

void Network::update_running_statistics(const Tape& tape, double momentum) {
  if (!tape.training)
    throw Error("network: update_running_statistics needs the tape of a training-mode pass");
  body_.update_statistics(tape.layers, momentum);
}

}  // namespace kef::network
