#include "flow_estimator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "flow_model.hpp"
#include "kef/adam.hpp"
#include "kef/column_summary.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/memory_budget.hpp"
#include "kef/network/activation.hpp"

namespace kef::flows {

std::string kind_name(FlowKind kind) {
  switch (kind) {
    case FlowKind::made:
      return "made";
    case FlowKind::made_mog:
      return "made_mog";
    case FlowKind::maf:
      return "maf";
    case FlowKind::maf_mog:
      return "maf_mog";
    case FlowKind::real_nvp:
      return "real_nvp";
  }
  return "flow";
}

namespace {

bool is_flow(FlowKind k) { return k == FlowKind::maf || k == FlowKind::maf_mog || k == FlowKind::real_nvp; }
bool is_mog(FlowKind k) { return k == FlowKind::made_mog || k == FlowKind::maf_mog; }

OptionsSpec<FlowOptions> make_spec(FlowKind kind) {
  using O = FlowOptions;
  OptionsSpec<O> s;
  s.numbers("hidden_units", &O::hidden_units,
            kind == FlowKind::real_nvp
                ? "units of each hidden layer of every scale and shift net (integers >= 1)"
                : "units of each hidden layer of every MADE (integers >= 1)",
            std::vector<double>{100.0, 100.0});
  const bool nvp = kind == FlowKind::real_nvp;
  s.string("activation", &O::activation,
           nvp ? "hidden units' nonlinearity of the scale nets" : "hidden units' nonlinearity",
           std::string("tanh"))
      .one_of({"tanh", "relu", "sigmoid", "softplus", "elu"});
  if (nvp)
    s.string("shift_activation", &O::shift_activation, "hidden units' nonlinearity of the shift nets",
             std::string("relu"))
        .one_of({"tanh", "relu", "sigmoid", "softplus", "elu"});
  else
    s.string("hidden_degrees", &O::hidden_degrees,
             "MADE hidden degrees: sequential (unit k: k mod (D-1) + 1) or random (seeded)",
             std::string("sequential"))
        .one_of({"sequential", "random"});
  if (is_flow(kind)) {
    s.integer("layers", &O::layers,
              nvp ? "coupling layers (masks alternating between them)"
                  : "Gaussian MADEs in the flow (order reversed between them)",
              5)
        .at_least(1);
    s.boolean(
        "batch_norm", &O::batch_norm,
        nvp ? "a batch norm after every coupling layer (batch statistics in training, the training set's "
              "afterwards)"
            : "a batch norm after every MADE (batch statistics in training, the training set's afterwards)",
        nvp);
    s.number("batch_norm_epsilon", &O::batch_norm_epsilon, "ε added to the batch norm's variance", 1e-5)
        .positive();
  }
  if (is_mog(kind))
    s.integer("components", &O::components, "Gaussian components of each conditional of the mixture MADE", 10)
        .at_least(1);
  s.number("learning_rate", &O::learning_rate, "Adam's learning rate", is_flow(kind) ? 1e-4 : 1e-3)
      .positive();
  s.number("weight_decay", &O::weight_decay, "w: the loss adds (w/2)·|θ|² over every parameter", 1e-6)
      .non_negative();
  s.number("beta1", &O::beta1, "Adam's first-moment decay", 0.9).non_negative().at_most(0.999999);
  s.number("beta2", &O::beta2, "Adam's second-moment decay", 0.999).non_negative().at_most(0.999999);
  s.number("adam_epsilon", &O::adam_epsilon, "Adam's ε (added to the root of the second moment)", 1e-8)
      .positive();
  s.integer("batch_size", &O::batch_size, "rows per minibatch (the last one of an epoch may be smaller)", 100)
      .at_least(1);
  s.integer("max_epochs", &O::max_epochs, "passes over the training split at most", 1000).at_least(1);
  s.integer("patience", &O::patience,
            "training stops after this many epochs without a better validation loss", 30)
      .at_least(1);
  s.boolean(
      "standardize", &O::standardize,
      "standardise by the training split's mean and sd (part of the density: results stay in data units)",
      true);
  return s;
}

// Mean and (Bessel-corrected, as the reference's torch.std) standard deviation of each column.
void column_moments(const Matrix& X, Vector& mean, Vector& sd) {
  const double n = static_cast<double>(X.rows());
  mean = X.colwise().mean().transpose();
  sd = ((X.rowwise() - mean.transpose()).colwise().squaredNorm().transpose() / (n - 1.0)).cwiseSqrt();
}

double mean_negative_log_likelihood(const FlowDensity& d, const Matrix& X, int threads) {
  const Vector lp = chunked_log_density(d, X, threads);
  double s = 0.0;
  for (Index i = 0; i < lp.size(); ++i) s += lp[i];
  return -s / static_cast<double>(lp.size());
}

}  // namespace

const OptionsSpec<FlowOptions>& flow_options(FlowKind kind) {
  static const OptionsSpec<FlowOptions> specs[] = {make_spec(FlowKind::made), make_spec(FlowKind::made_mog),
                                                   make_spec(FlowKind::maf), make_spec(FlowKind::maf_mog),
                                                   make_spec(FlowKind::real_nvp)};
  return specs[static_cast<int>(kind)];
}

FlowEstimator::FlowEstimator(const Config& cfg, FlowKind kind)
    : kind_(kind), opt_(flow_options(kind).read(cfg)), sites_(cfg) {
  if (opt_.hidden_units.empty()) sites_.fail("hidden_units", "needs at least one hidden layer");
  for (double h : opt_.hidden_units) {
    if (!(h >= 1.0) || h != std::round(h) || h > 1e6) {
      std::ostringstream os;
      os << "every entry must be an integer >= 1 (got " << h << ")";
      sites_.fail("hidden_units", os.str());
    }
    hidden_.push_back(static_cast<Index>(h));
  }
  // MADE: one Gaussian MADE on N(0, I); MADE-MoG: the mixture MADE alone (the reference's).
  if (kind == FlowKind::made) opt_.layers = 1;
  if (kind == FlowKind::made_mog) opt_.layers = 0;
  if (!is_mog(kind)) opt_.components = 0;
  if (!is_flow(kind)) opt_.batch_norm = false;
}

void FlowEstimator::check(const DataShape& data) const {
  if (data.validation_rows == 0) no_validation_split();
  if (data.dim > 0) check_memory(data.dim);
}

void FlowEstimator::no_validation_split() const {
  throw ConfigError(sites_.where("patience") + ": " + kind_name(kind_) +
                    " early-stops on a validation split; set `split = { validation = ... }` in [data]");
}

// The fit's memory before any of it is allocated: every layer's weights (a MADE's masks are as large),
// with the gradient, Adam's two moments and the best parameters kept for early stopping, and a
// minibatch's activations through every layer.
void FlowEstimator::check_memory(Index dim) const {
  const double D = static_cast<double>(dim);
  const bool coupling = kind_ == FlowKind::real_nvp;
  double per_net = 0.0, units = 0.0, in = D;
  for (Index h : hidden_) {
    per_net += (in + 1.0) * static_cast<double>(h);
    units += static_cast<double>(h);
    in = static_cast<double>(h);
  }
  // A Gaussian MADE outputs a mean and a log scale per dimension; a coupling layer has a scale and a
  // shift net of D outputs each; the mixture MADE K weights, means and log scales per dimension.
  const double layer = coupling ? 2.0 * (per_net + (in + 1.0) * D) : per_net + (in + 1.0) * 2.0 * D;
  const double mixture = opt_.components > 0
                             ? per_net + (in + 1.0) * 3.0 * static_cast<double>(opt_.components) * D
                             : 0.0;
  const double layers = static_cast<double>(std::max<std::int64_t>(opt_.layers, 0));
  // A MADE's masks are as large as its weights.
  const double weights = layers * (coupling ? layer : 2.0 * layer) + 2.0 * mixture;
  const double nets = layers + (opt_.components > 0 ? 1.0 : 0.0);
  const double activations = 4.0 * static_cast<double>(opt_.batch_size) * (coupling ? 2.0 : 1.0) * units;
  const double bytes = 8.0 * (5.0 * weights + nets * activations);
  // The key to lower: the widths when one network alone is too large, else the number of layers.
  const double one_net = 8.0 * (5.0 * 2.0 * std::max(layer, mixture) + activations);
  const std::optional<double> limit = memory_limit_bytes();
  const char* key = limit && one_net > *limit           ? "hidden_units"
                    : kind_ == FlowKind::made_mog ? "components"
                                                  : "layers";
  require_memory(bytes, sites_.where(key),
                 "the weights of " + kind_name(kind_) + " (layers, hidden_units, components, batch_size)");
}

std::optional<FacetSet> FlowEstimator::facets() const {
  return FacetSet{Facet::LogDensity, Facet::NormalizedDensity, Facet::Score, Facet::Laplacian,
                  Facet::Sampler};
}

namespace {

// The untrained flow: its architecture, the standardisation of X (refusing constant columns), the
// MADEs' degrees and the initial weights, each from its own stream.
FlowDensity initial_density(const Matrix& X, const FitInput& in, const FlowOptions& opt, FlowKind kind,
                            const std::vector<Index>& hidden, const std::string& name) {
  const Index D = X.cols();
  FlowArchitecture arch;
  arch.dim = D;
  arch.hidden_units = hidden;
  arch.activation = network::activation_from_name(opt.activation);
  arch.layers = opt.layers;
  arch.components = opt.components;
  arch.batch_norm = opt.batch_norm;
  arch.batch_norm_epsilon = opt.batch_norm_epsilon;
  if (kind == FlowKind::real_nvp) {
    arch.coupling = true;
    arch.shift_activation = network::activation_from_name(opt.shift_activation);
  }

  Vector shift = Vector::Zero(D), scale = Vector::Ones(D);
  if (opt.standardize) {
    column_moments(X, shift, scale);
    // The squared deviations of a column narrower than about 1e-150 underflow to a zero sd; the column
    // summary's sd, taken relative to the column's range, tells such a column from a constant one.
    std::optional<Vector> sd_by_range;
    for (Index d = 0; d < D; ++d) {
      if (!(scale[d] > 0.0)) {
        if (!sd_by_range) sd_by_range = summarize_columns(X).sd(1);
        scale[d] = (*sd_by_range)[d];
      }
      if (!(scale[d] > 0.0))
        throw DataError(name + ": column " + std::to_string(d) +
                        " of the training split is constant, so it has no density; drop it ([data] exclude)");
    }
  }
  RandomStream degree_rng = in.context.rng().derive("degrees");
  FlowDensity density(arch, shift, scale,
                      flow_degrees(arch, !arch.coupling && opt.hidden_degrees == "random", &degree_rng));
  {
    RandomStream init = in.context.rng().derive("init");
    density.initialize(init);
  }
  return density;
}

// One epoch: the rows in a fresh random order, one Adam step per minibatch (with weight decay);
// returns the sum of the minibatch losses weighted by their sizes.
double train_epoch(FlowDensity& density, const Matrix& X, const FlowOptions& opt, Adam& adam,
                   RandomStream& shuffle, Vector& theta, Vector& grad, std::vector<Index>& perm, int threads) {
  const Index N = X.rows();
  for (Index i = 0; i < N; ++i) perm[static_cast<std::size_t>(i)] = i;
  for (std::size_t i = perm.size() - 1; i > 0; --i)  // Fisher–Yates
    std::swap(perm[i], perm[static_cast<std::size_t>(shuffle.uniform_int(i + 1))]);
  density.set_training(true);
  double train_sum = 0.0;
  for (Index b = 0; b < N; b += opt.batch_size) {
    const Index len = std::min<Index>(opt.batch_size, N - b);
    const Matrix batch = gather_rows(X, perm, static_cast<std::size_t>(b), static_cast<std::size_t>(len));
    const double loss = density.loss_and_gradient(batch, grad, threads);
    train_sum += loss * static_cast<double>(len);
    grad += opt.weight_decay * theta;  // the gradient of (w/2)|θ|²
    adam.step_in_place(theta, grad);
    density.set_parameters(theta);
  }
  return train_sum;
}

}  // namespace

ModelPtr FlowEstimator::fit(const FitInput& in) {
  const Matrix& X = in.train;
  const Matrix& V = in.validation;
  const Index N = X.rows();
  const std::string name = kind_name(kind_);
  if (V.rows() == 0) no_validation_split();
  if (N < 2) throw DataError(name + ": needs at least 2 training rows (got " + std::to_string(N) + ")");
  if (!X.allFinite() || !V.allFinite())
    throw DataError(name + ": the training or validation data are not finite");

  FlowDensity density = initial_density(X, in, opt_, kind_, hidden_, name);

  Adam adam(AdamOptions{opt_.learning_rate, opt_.beta1, opt_.beta2, opt_.adam_epsilon},
            sites_.where("learning_rate"));
  RandomStream shuffle = in.context.rng().derive("minibatches");
  const int threads = in.context.threads();
  Vector theta = density.parameters();
  Vector grad;  // one buffer for every step's gradient
  std::vector<Index> perm(static_cast<std::size_t>(N));
  double best = std::numeric_limits<double>::infinity(), last_train = 0.0;
  std::optional<FlowDensity> best_density;
  long best_epoch = 0, epoch = 0;
  Index left = opt_.patience;
  const auto t0 = std::chrono::steady_clock::now();
  for (epoch = 1; epoch <= opt_.max_epochs; ++epoch) {
    const double train_sum = train_epoch(density, X, opt_, adam, shuffle, theta, grad, perm, threads);
    last_train = train_sum / static_cast<double>(N);
    if (density.has_batch_norm())
      density.record_batch_norm_statistics(X);
    else
      density.set_training(false);
    const double val = mean_negative_log_likelihood(density, V, threads);
    if (!std::isfinite(val)) {
      std::ostringstream os;
      os << name << " epoch " << epoch << ": the validation loss is " << val
         << "; try a smaller learning_rate";
      throw NumericalError(os.str());
    }
    in.report.curve.emplace_back(epoch, val);
    --left;
    if (val < best) {
      best = val;
      best_epoch = epoch;
      best_density = density;
      left = opt_.patience;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::ostringstream msg;
    msg << "epoch " << epoch << " train loss " << last_train << " validation " << val << " best " << best
        << " (epoch " << best_epoch << ", " << secs / static_cast<double>(epoch) << " s/epoch)";
    in.context.progress().update(
        name + " training", static_cast<double>(epoch) / static_cast<double>(opt_.max_epochs), msg.str());
    if (left <= 0) break;
  }
  const long epochs = std::min<long>(epoch, opt_.max_epochs);
  density = std::move(*best_density);
  density.record_batch_norm_statistics(X);  // as the reference, after restoring the best parameters
  in.report.iterations = epochs;
  in.report.values["best_epoch"] = static_cast<double>(best_epoch);
  in.report.values["best_validation_loss"] = best;
  in.report.values["parameters"] = static_cast<double>(density.parameter_count());
  in.context.progress().done(name + " training",
                             "best epoch " + std::to_string(best_epoch) + " of " + std::to_string(epochs));
  auto model = std::make_shared<FlowModel>(name, std::move(density));
  model->set_fit_info({{"learning_rate", opt_.learning_rate}, {"best_validation_loss", best}},
                      {{"train_rows", static_cast<std::int64_t>(N)},
                       {"epochs", static_cast<std::int64_t>(epochs)},
                       {"best_epoch", static_cast<std::int64_t>(best_epoch)}});
  return model;
}

}  // namespace kef::flows
