// Default behaviour of the optional parts of the interfaces: an honest error naming the component.
#include "kef/base_measure.hpp"
#include "kef/component.hpp"
#include "kef/conditional_model.hpp"
#include "kef/error.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"

namespace kef {

void Component::set_parameters(const Vector& theta) {
  if (theta.size() != parameter_count())
    throw Error(type_name() + ": set_parameters expected " + std::to_string(parameter_count()) +
                " values, got " + std::to_string(theta.size()));
}

Vector Kernel::gram_times(const Matrix& X, const Matrix& Y, const Vector& b) const {
  if (b.size() != Y.rows())
    throw Error("kernel " + type_name() + ": gram_times needs one coefficient per point of Y (got " +
                std::to_string(b.size()) + " for " + std::to_string(Y.rows()) + ")");
  return gram(X, Y) * b;
}

void Kernel::cross_derivatives(const Matrix&, const Matrix&, KernelCrossStacks&) const {
  throw Error("kernel " + type_name() + " does not provide mixed derivatives in both arguments");
}

void Kernel::cross_second_derivatives(const Matrix&, const Matrix&, Matrix&) const {
  throw Error("kernel " + type_name() + " does not provide the mixed derivatives ∂²_x ∂²_y k");
}

void Kernel::backward(const Matrix&, const Matrix&, const KernelStacks&, Vector*, Matrix*) const {
  throw Error("kernel " + type_name() + " is not differentiable in its parameters");
}

Matrix BaseMeasure::sample(Index, Index, RandomStream&) const {
  throw Error("base measure " + type_name() + " cannot be sampled");
}

void BaseMeasure::backward(const Matrix&, const Vector&, const Matrix&, const Matrix&,
                           Vector& grad_params) const {
  if (parameter_count() != 0)
    throw Error("base measure " + type_name() + " has parameters but no backward pass");
  grad_params.resize(0);
}

std::vector<bool> Model::in_support(const Matrix& X) const {
  return std::vector<bool>(static_cast<std::size_t>(X.rows()), true);
}

Vector Model::log_ratio_to_base(const Matrix& X) const {
  const BaseMeasure* q0 = base_measure();
  if (!q0) throw Error("model " + type_name() + " has no base measure, so no log ratio to it");
  return log_unnormalized(X) - q0->log_density(X);
}

std::string_view to_string(Facet facet) {
  switch (facet) {
    case Facet::LogDensity:
      return "log density";
    case Facet::NormalizedDensity:
      return "normalised density";
    case Facet::Score:
      return "score";
    case Facet::Laplacian:
      return "Laplacian";
    case Facet::Hessian:
      return "Hessian";
    case Facet::Sampler:
      return "sampler";
    case Facet::BaseMeasureRatio:
      return "base measure";
    case Facet::ConditionalDensity:
      return "conditional density";
    case Facet::ConditionalScore:
      return "conditional score";
    case Facet::ConditionalSampler:
      return "conditional sampler";
    case Facet::ApproximateSampler:
      return "approximate sampler";
  }
  return "facet";
}

std::vector<std::string> FacetSet::names() const {
  std::vector<std::string> out;
  for (std::uint32_t bit = 1; bit != 0 && bit <= bits_; bit <<= 1)
    if (bits_ & bit) out.emplace_back(to_string(static_cast<Facet>(bit)));
  return out;
}

std::string FacetSet::text() const {
  std::string out;
  for (const std::string& n : names()) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "nothing" : out;
}

FacetSet Model::facets() const {
  FacetSet f{Facet::LogDensity, Facet::Score, Facet::Laplacian};
  if (has_hessian()) f |= Facet::Hessian;
  if (log_normalizer()) f |= Facet::NormalizedDensity;
  if (can_sample()) f |= Facet::Sampler;
  if (base_measure()) f |= Facet::BaseMeasureRatio;
  if (conditional()) f |= FacetSet{Facet::ConditionalDensity, Facet::ConditionalScore};
  return f;
}

void require_facets(const Model& model, FacetSet needed, const std::string& who, const std::string& name) {
  const FacetSet have = model.facets();
  const FacetSet missing = needed.minus(have);
  if (missing.empty()) return;
  const std::string label = name.empty() ? "model of type " + model.type_name()
                                         : "model `" + name + "` (type " + model.type_name() + ")";
  throw ConfigError(who + ": " + label + " has no " + missing.text() + " (it has: " + have.text() +
                    "); choose an evaluator that needs only what the model provides");
}

namespace {
[[noreturn]] void lacks(const std::string& type, Facet facet) {
  throw ConfigError("model " + type + " has no " + std::string(to_string(facet)) + " facet");
}
}  // namespace

Matrix Model::score(const Matrix&) const { lacks(type_name(), Facet::Score); }

void Model::score_and_laplacian(const Matrix&, Matrix&, Matrix&) const {
  lacks(type_name(), Facet::Laplacian);
}

Matrix ConditionalModel::score(const Matrix&, const Matrix&) const {
  throw ConfigError("this conditional model has no conditional score facet");
}

void ConditionalModel::score_and_laplacian(const Matrix&, const Matrix&, Matrix&, Matrix&) const {
  throw ConfigError("this conditional model has no conditional score facet");
}

Matrix ConditionalModel::sample(const Matrix&, RandomStream&) const {
  throw ConfigError("this conditional model has no conditional sampler facet");
}

std::optional<Vector> ConditionalModel::log_normalizer(const Matrix&) const { return std::nullopt; }

Matrix Model::hessian(const Vector&) const {
  throw Error("model " + type_name() + " does not provide a full Hessian");
}

Matrix Model::sample(Index, RandomStream&) const {
  throw Error("model " + type_name() + " cannot be sampled");
}

void Model::save(ModelWriter&) const { throw ModelFileError("model " + type_name() + " cannot be saved"); }

}  // namespace kef
