#pragma once
// The conditional facet of a model: a density of targets y given inputs x, p~(y | x). Data carry the
// two roles as column sets ([data] targets); a conditional model receives them as two matrices with
// one row per pair. Models that have it return it from Model::conditional() and list the conditional
// facets in Model::facets().
#include <optional>

#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

class ConditionalModel {
 public:
  virtual ~ConditionalModel() = default;

  virtual Index input_dim() const = 0;   // columns of x
  virtual Index target_dim() const = 0;  // columns of y

  // Row n: log p~(y_n | x_n), up to a normaliser that may depend on x_n.
  virtual Vector log_unnormalized(const Matrix& X, const Matrix& Y) const = 0;
  // Row n: ∇_y log p~(y_n | x_n) (facet ConditionalScore).
  virtual Matrix score(const Matrix& X, const Matrix& Y) const;
  // The score and the diagonal of the Hessian in y, what conditional score matching needs.
  virtual void score_and_laplacian(const Matrix& X, const Matrix& Y, Matrix& score, Matrix& laplacian) const;
  // Row n: a draw y ~ p(y | x_n) (facet ConditionalSampler).
  virtual Matrix sample(const Matrix& X, RandomStream& rng) const;
  // log Z(x_n) per row when known exactly.
  virtual std::optional<Vector> log_normalizer(const Matrix& X) const;
};

}  // namespace kef
