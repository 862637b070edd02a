#pragma once
// A fitted (or known) unnormalised density log p~(x). Estimators return one; the ground truth of a
// synthetic data source is one too, so evaluators compare any model with the truth the same way.
//
// A model declares what it can do as facets (kef/facets.hpp): evaluators ask for the facets they need
// (require_facets) and get an error naming the model and the missing facet instead of a faked value.
// The methods of a facet a model lacks keep their default, which throws that same error.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kef/facets.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

class BaseMeasure;
class ConditionalModel;
class ModelWriter;

class Model {
 public:
  static constexpr const char* kInterface = "model";

  virtual ~Model() = default;

  virtual Index dim() const = 0;
  virtual std::string type_name() const = 0;

  // The facets this model has. The default describes a score-matching model: log density, score and
  // Laplacian, plus whatever the optional virtuals below report (Hessian, log Z, sampler, base
  // measure, conditional). A model without a score or a Laplacian must override this.
  virtual FacetSet facets() const;
  bool has(FacetSet needed) const { return facets().contains(needed); }

  virtual Vector log_unnormalized(const Matrix& X) const = 0;
  virtual Matrix score(const Matrix& X) const;  // N x D: ∇ log p~ (facet Score)
  // score (N x D) and the diagonal of the Hessian of log p~ (N x D): what score matching needs
  // (facet Laplacian).
  virtual void score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const;

  // Full Hessian of log p~ at one point (D x D), for models that can give it (synthetic truths);
  // needed to carry the exact second derivatives through a non-diagonal change of coordinates.
  virtual bool has_hessian() const { return false; }
  virtual Matrix hessian(const Vector& x) const;

  // log Z when known exactly (normalised truths, q0-only models); otherwise empty.
  virtual std::optional<double> log_normalizer() const { return std::nullopt; }

  // For importance sampling from the base measure (log-likelihood evaluation): the model's
  // normalised q0, when log p~ = f + log q0 with a samplable q0; and an almost-sure lower bound of
  // f = log p~ − log q0 (for the bias bound of DKEF Proposition 1), when one is known.
  virtual const BaseMeasure* base_measure() const { return nullptr; }
  virtual std::optional<double> log_ratio_lower_bound() const { return std::nullopt; }
  // f = log p~ − log q0 at X, for q0 = base_measure() (which must be non-null). The default subtracts;
  // a model built as f + log q0 returns f itself, which is exact where log q0 is large and negative
  // and spares importance sampling two evaluations of q0 per proposal.
  virtual Vector log_ratio_to_base(const Matrix& X) const;

  // Densities with bounded support report where they are positive; score-based metrics use only
  // those rows and say so.
  virtual bool bounded_support() const { return false; }
  virtual std::vector<bool> in_support(const Matrix& X) const;

  virtual bool can_sample() const { return false; }
  virtual Matrix sample(Index n, RandomStream& rng) const;

  // The conditional facet (p~(y | x)), or null for unconditional models.
  virtual const ConditionalModel* conditional() const { return nullptr; }

  virtual std::string describe() const = 0;

  virtual bool can_save() const { return false; }
  virtual void save(ModelWriter& writer) const;
};

using ModelPtr = std::shared_ptr<const Model>;

// Throws ConfigError unless `model` has every facet in `needed`: "`who`: model `name` (type T) has no
// score (it has: log density, sampler)". `who` names the asking evaluator or command.
void require_facets(const Model& model, FacetSet needed, const std::string& who, const std::string& name = {});

}  // namespace kef
