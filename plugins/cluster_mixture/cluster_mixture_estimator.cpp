#include "cluster_mixture_estimator.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <vector>

#include "kef/clone_shared.hpp"
#include "kef/defensive_proposal.hpp"
#include "kef/error.hpp"
#include "kef/importance_sampling.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_model.hpp"
#include "kef/memory_budget.hpp"
#include "kef/number_text.hpp"
#include "mixture_model.hpp"
#include "spectral_clustering.hpp"

namespace kef::cluster_mixture {

namespace {

constexpr Index kNormalizerChunk = 4096;  // proposals per chunk; chunk i draws from its own stream
// A component's log Ẑ_k is reported without a warning only with at least this effective sample size
// and at most this standard error (the log_likelihood evaluator's defaults: min_effective_samples and
// tolerance / 2).
constexpr double kMinNormalizerEss = 100.0, kMaxNormalizerStderr = 0.025;

// Runs f, adding which cluster was being fitted to the message of a kef error (same kind, so the
// exit status is unchanged).
template <class F>
auto in_cluster(const std::string& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (" + context + ")");
  } catch (const DataError& e) {
    throw DataError(std::string(e.what()) + " (" + context + ")");
  } catch (const NumericalError& e) {
    throw NumericalError(std::string(e.what()) + " (" + context + ")");
  }
}

// Cluster k's own kernel or base measure: a clone of the model's, with its random initial values (a
// deep kernel's networks) drawn from the cluster's `init` stream, as if built from the config with it.
template <class T>
std::shared_ptr<T> fresh_copy(const std::shared_ptr<T>& prototype, RandomStream& init) {
  std::shared_ptr<T> copy = clone_shared(prototype);
  copy->initialize(init);
  return copy;
}

}  // namespace

const OptionsSpec<ClusterMixtureOptions>& cluster_mixture_options() {
  using O = ClusterMixtureOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.integer("clusters", &O::clusters, "K, the number of clusters and mixture components")
        .mandatory()
        .at_least(1);
    s.table("inner", &O::inner, "the estimator fitted on each cluster: `type` and that estimator's keys")
        .mandatory();
    s.number("bandwidth", &O::bandwidth,
             "σ of the clustering affinity exp(−‖x−y‖²/(2σ²)); absent: median pairwise "
             "distance of the landmark rows")
        .optional()
        .positive();
    s.integer("max_points", &O::max_points,
              "landmark rows (a seeded random subset) for the eigenproblem; every row is "
              "then assigned by the Nyström extension",
              2000)
        .at_least(1);
    s.integer("kmeans_restarts", &O::kmeans_restarts,
              "k-means++ restarts on the spectral embedding (best inertia wins)", 10)
        .at_least(1);
    s.integer("kmeans_max_iterations", &O::kmeans_max_iterations, "Lloyd iterations per restart at most", 300)
        .at_least(1);
    s.integer("min_cluster_size", &O::min_cluster_size, "a cluster with fewer training rows is an error", 10)
        .at_least(1);
    s.integer("normalizer_samples", &O::normalizer_samples,
              "importance-sampling proposals per component for its log Ẑ_k", 1000000)
        .at_least(2);
    s.string("normalizer_proposal", &O::normalizer_proposal,
             "what proposes for each log Ẑ_k: the defensive mixture of the log_likelihood evaluator (the "
             "component's base measure, a Student-t fitted to its cluster's rows and Gaussian bumps at those "
             "rows and at the component's inducing points; defensive) or the base measure alone (base, kef "
             "0.3.0's)",
             std::string("defensive"))
        .one_of({"defensive", "base"});
    s.integer("normalizer_centres", &O::normalizer_centres,
              "the defensive mixture's Gaussian bumps per component at most (its inducing points and a "
              "seeded subset of its cluster's rows): each proposal's density costs one evaluation per bump",
              200)
        .at_least(1);
    return s;
  }();
  return spec;
}

KeyList cluster_mixture_keys() { return cluster_mixture_options().keys(); }

ClusterMixtureEstimator::ClusterMixtureEstimator(const Config& cfg, const EstimatorParts& parts,
                                                 const BuildContext& ctx)
    : opt_(cluster_mixture_options().read(cfg)), sites_(cfg), inner_(opt_.inner), parts_(parts) {
  clusters_ = opt_.clusters;
  min_cluster_size_ = opt_.min_cluster_size;
  normalizer_samples_ = opt_.normalizer_samples;
  if (ctx.train_rows >= 0) {
    if (clusters_ > ctx.train_rows)
      cfg.fail("clusters", std::to_string(clusters_) + " clusters but only " +
                               std::to_string(ctx.train_rows) + " training rows");
    if (clusters_ * min_cluster_size_ > ctx.train_rows)
      cfg.fail("min_cluster_size", std::to_string(clusters_) + " clusters of at least " +
                                       std::to_string(min_cluster_size_) + " rows need " +
                                       std::to_string(clusters_ * min_cluster_size_) +
                                       " training rows, there are " + std::to_string(ctx.train_rows));
  }
  if (opt_.max_points < clusters_)
    cfg.fail("max_points", "max_points = " + std::to_string(opt_.max_points) +
                               " is below clusters = " + std::to_string(clusters_));
  {
    // The spectral clustering's landmark eigenproblem (the affinity, its eigenvectors and a work copy:
    // landmarks x landmarks each), before any is allocated.
    const double m = static_cast<double>(ctx.train_rows > 0 ? std::min<std::int64_t>(opt_.max_points, ctx.train_rows)
                                                            : opt_.max_points);
    require_memory(8.0 * 4.0 * m * m, sites_.where("max_points"), "the clustering's landmark eigenproblem");
  }
  if (!parts.registry) throw Error("cluster_mixture: built without a registry (nested estimators need one)");
  const ComponentInfo& info = parts.registry->info_for(ComponentKind::Estimator, inner_);
  // Each cluster gets its own copy of the parts the inner estimator uses, and only those: a
  // [model.kernel] it would ignore is refused rather than silently unused.
  auto uses = [&](const std::string& name) {
    for (const PartSpec& part : info.all_parts())
      if (part.name == name) return true;
    return false;
  };
  for (const PartSpec& part : info.all_parts())
    if (part.required && part.name != "kernel" && part.name != "base_measure")
      inner_.fail("type", "the inner estimator `" + info.type + "` needs a [model." + part.name +
                              "] part; cluster_mixture gives its inner fits only [model.kernel] and "
                              "[model.base_measure]");
  const std::pair<std::string, bool> given[] = {{"kernel", parts.kernel != nullptr},
                                                {"base_measure", parts.base_measure != nullptr}};
  for (const auto& [name, present] : given) {
    if (uses(name) && !present)
      inner_.fail("type", "the inner estimator `" + info.type + "` uses a " + name +
                              ": give the model a [model." + name + "] table, which each cluster copies");
    if (!uses(name) && present)
      inner_.fail("type", "the inner estimator `" + info.type + "` uses no " + name +
                              ", so the model's [model." + name + "] table would be ignored: remove it");
  }
  // Validates the inner keys (errors cite model[i].estimator.inner.KEY); the object is discarded, each
  // cluster builds its own. Cluster sizes are not known yet; the training size bounds them all.
  EstimatorPtr probe = parts.registry->make_estimator(inner_, parts, ctx);
  inner_facets_ = probe->facets();
  if (!inner_facets_ && !info.facets.empty()) inner_facets_ = info.facets;
  if (inner_facets_ && !inner_facets_->has(Facet::NormalizedDensity) && !uses("base_measure"))
    inner_.fail("type", "the models of inner estimator `" + info.type +
                            "` neither know their normaliser nor have a base measure to importance-sample "
                            "it from, so cluster_mixture cannot weigh its components");
  inner_.fill_defaults();  // the resolved inner table appears in results.json
}

Estimator* ClusterMixtureEstimator::clone_raw() const {
  auto* copy = new ClusterMixtureEstimator(*this);
  copy->parts_.parts = Parts();
  if (parts_.kernel) {
    copy->parts_.kernel = clone_shared(parts_.kernel);
    copy->parts_.parts.add("kernel", Kernel::kInterface, copy->parts_.kernel);
  }
  if (parts_.base_measure) {
    copy->parts_.base_measure = clone_shared(parts_.base_measure);
    copy->parts_.parts.add("base_measure", BaseMeasure::kInterface, copy->parts_.base_measure);
  }
  return copy;
}

std::optional<FacetSet> ClusterMixtureEstimator::facets() const {
  if (!inner_facets_) return std::nullopt;
  const FacetSet in = *inner_facets_;
  FacetSet out = Facet::LogDensity;
  for (Facet f : {Facet::Score, Facet::Laplacian, Facet::NormalizedDensity, Facet::BaseMeasureRatio})
    if (in.has(f)) out |= f;
  if (in.has(Facet::NormalizedDensity) && in.has(Facet::Sampler)) out |= Facet::Sampler;
  return out;
}

ClusterMixtureEstimator::Clusters ClusterMixtureEstimator::cluster_rows(const FitInput& in) const {
  const Matrix& X = in.train;
  const Index N = X.rows(), K = clusters_;
  Clusters out;
  std::vector<Index> train_labels(static_cast<std::size_t>(N), 0),
      val_labels(static_cast<std::size_t>(in.validation.rows()), 0);
  if (K > 1) {
    in.context.progress().update("cluster_mixture", -1.0,
                                 "spectral clustering of " + std::to_string(N) + " rows");
    SpectralClusteringOptions opt;
    opt.clusters = K;
    opt.bandwidth = opt_.bandwidth.value_or(0.0);
    opt.max_points = opt_.max_points;
    opt.kmeans_restarts = static_cast<int>(opt_.kmeans_restarts);
    opt.kmeans_max_iterations = static_cast<int>(opt_.kmeans_max_iterations);
    const SpectralClustering sc =
        SpectralClustering::fit(X, opt, in.context.rng().derive("clustering"), in.context);
    train_labels = sc.labels();
    if (in.validation.rows() > 0) val_labels = sc.assign(in.validation, in.context);
    out.bandwidth = sc.bandwidth();
    in.report.values["clustering.bandwidth"] = out.bandwidth;
    in.report.values["clustering.landmarks"] = static_cast<double>(sc.landmarks().rows());
    in.report.values["clustering.kmeans_inertia"] = sc.kmeans_inertia();
    for (Index k = 0; k < K; ++k)
      in.report.values["clustering.eigenvalue" + std::to_string(k)] = sc.eigenvalues()[k];
    if (sc.eigensolver_fell_back())
      in.report.notes.push_back("spectral clustering: Lanczos did not converge; used the dense eigensolver");
  }
  out.train.resize(static_cast<std::size_t>(K));
  out.validation.resize(static_cast<std::size_t>(K));
  for (Index i = 0; i < N; ++i)
    out.train[static_cast<std::size_t>(train_labels[static_cast<std::size_t>(i)])].push_back(i);
  for (Index i = 0; i < in.validation.rows(); ++i)
    out.validation[static_cast<std::size_t>(val_labels[static_cast<std::size_t>(i)])].push_back(i);
  for (Index k = 0; k < K; ++k) {
    const Index n_k = static_cast<Index>(out.train[static_cast<std::size_t>(k)].size());
    if (n_k < min_cluster_size_)
      sites_.fail("min_cluster_size",
                  "cluster " + std::to_string(k) + " of " + std::to_string(K) + " has " +
                      std::to_string(n_k) +
                      " training rows, fewer than min_cluster_size = " + std::to_string(min_cluster_size_) +
                      "; use fewer clusters or change the affinity bandwidth");
  }
  return out;
}

ModelPtr ClusterMixtureEstimator::fit_cluster(Index k, const Matrix& Xk, const Matrix& Vk, const Context& cluster,
                                              FitReport& sub) const {
  const Index D = Xk.cols();
  Registry& registry = *parts_.registry;
  const std::string context = "in cluster " + std::to_string(k) + " of " + std::to_string(clusters_) +
                              ", which has " + std::to_string(Xk.rows()) + " training and " +
                              std::to_string(Vk.rows()) + " validation rows";
  RandomStream init = cluster.rng().derive("init");
  BuildContext ctx{D, &registry, &init, Xk.rows()};
  ModelPtr model = in_cluster(context, [&] {
    EstimatorParts parts;
    parts.registry = &registry;
    if (parts_.kernel) parts.kernel = fresh_copy(parts_.kernel, init);
    if (parts_.base_measure) {
      parts.base_measure = fresh_copy(parts_.base_measure, init);
      parts.base_measure->check_dimension(D);
    }
    EstimatorPtr est = registry.make_estimator(inner_, parts, ctx);
    Context fit_context = cluster.child("fit");
    FitInput fin{Xk, Vk, fit_context, sub};
    return est->fit(fin);
  });
  if (!model)
    throw Error("cluster_mixture: the inner estimator returned no model for cluster " + std::to_string(k));
  return model;
}

ClusterMixtureEstimator::Normalizer ClusterMixtureEstimator::normalize_cluster(const Model& model, Index k,
                                                                               const Matrix& Xk,
                                                                               const RandomStream& stream,
                                                                               const FitInput& in) const {
  Normalizer out;
  if (const std::optional<double> exact = model.log_normalizer()) {
    out.log_z = *exact;
    out.log_z_stderr = 0.0;
    out.exact = true;
    out.text = "log Z = " + number_text(out.log_z) + " (exact)";
    return out;
  }
  const Index D = Xk.cols();
  const std::string prefix = "cluster" + std::to_string(k);
  const BaseMeasure* base = model.base_measure();
  if (!base || !base->can_sample())
    inner_.fail("type",
                "the models of inner estimator `" + *inner_.type() + "` " +
                    (base ? "have a base measure (" + base->type_name() + ") that cannot be sampled"
                          : std::string("expose no base measure")) +
                    ", so cluster_mixture cannot normalise its components by importance sampling");
  // The base measure alone misses a component whose mass sits far inside its cluster (a narrow deep
  // kernel model: log Ẑ_k came out at −268 ± 0.7 from 10⁷ proposals, ESS ≈ 3, and the mixture's
  // weights with it); the defensive mixture's Student-t and bumps at the cluster's rows reach it.
  const std::string task = "cluster_mixture normaliser " + std::to_string(k);
  const std::string label = "cluster_mixture component " + std::to_string(k);
  const bool defensive = opt_.normalizer_proposal == "defensive";
  std::optional<MixtureProposal> mixture;
  if (defensive) {
    Matrix inducing(0, D);
    if (const auto* lite = dynamic_cast<const LiteModel*>(&model)) inducing = lite->inducing_points();
    RandomStream centres = stream.derive("normalizer_centres");
    DefensiveOptions options;
    options.max_centres = opt_.normalizer_centres;
    mixture.emplace(make_defensive_proposal(base, Xk, inducing, options, centres));
  }
  const ProposalSource source =
      defensive ? ProposalSource(model, *mixture, label) : ProposalSource(model, *base, label);
  const ChunkPlan plan{normalizer_samples_, kNormalizerChunk, 0.0, &in.context.progress(), task};
  const MomentsRun run = sample_moments(source, stream.derive("normalizer"), plan, in.context);
  if (!run.moments.has_mass())
    throw NumericalError("cluster_mixture: every one of the " + std::to_string(run.report.used) +
                         " importance-sampling proposals of component " + std::to_string(k) +
                         " has p~ = 0, so log Ẑ = −inf");
  out.log_z = run.moments.log_mean();
  out.log_z_stderr = run.moments.log_mean_stderr();
  const double ess = run.moments.effective_sample_size();
  in.report.values[prefix + ".normalizer_ess"] = ess;
  // The responsibilities, hence the mixture's score, Laplacian and Fisher divergence, move with
  // log Ẑ_k − log Ẑ_j: an imprecise Ẑ_k is not a number to print without a warning.
  if (ess < kMinNormalizerEss || out.log_z_stderr > kMaxNormalizerStderr)
    in.report.notes.push_back(
        "warning: " + prefix + ": log Ẑ = " + number_text(out.log_z) + " ± " + number_text(out.log_z_stderr) +
        " rests on an effective sample size of " + number_text(ess) + " of " + std::to_string(run.report.used) +
        " proposals (reliable needs at least " + number_text(kMinNormalizerEss) +
        " and a standard error of at most " + number_text(kMaxNormalizerStderr) +
        " nats): the weights between the components, and with them the "
        "mixture's score and any Fisher divergence or score-matching loss of it, are unreliable; raise "
        "normalizer_samples" +
        (defensive ? std::string() : std::string(" or use normalizer_proposal = \"defensive\"")));
  out.text = "log Ẑ = " + number_text(out.log_z) + " ± " + number_text(out.log_z_stderr) + " from " +
             std::to_string(run.report.used) + " proposals";
  return out;
}

ModelPtr ClusterMixtureEstimator::fit(const FitInput& in) {
  const Matrix& X = in.train;
  const Index N = X.rows(), K = clusters_;
  if (K > N)
    sites_.fail("clusters", std::to_string(K) + " clusters but only " + std::to_string(N) + " training rows");

  // 1. Spectral clustering; validation rows by the same assignment rule.
  const Clusters clusters = cluster_rows(in);

  // 2. One inner fit per cluster, each with fresh components and its own streams.
  std::vector<ModelPtr> components;
  Vector weights(K), log_z(K), log_z_se(K);
  std::vector<Index> counts;
  Index exact_components = 0;
  for (Index k = 0; k < K; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    const Matrix Xk = gather_rows(X, clusters.train[kk]);
    const Matrix Vk = gather_rows(in.validation, clusters.validation[kk]);
    const std::string prefix = "cluster" + std::to_string(k);
    in.context.progress().update("cluster_mixture", static_cast<double>(k) / static_cast<double>(K),
                                 "fitting cluster " + std::to_string(k + 1) + " of " + std::to_string(K) +
                                     " (" + std::to_string(Xk.rows()) + " rows)");
    // The cluster's context: stream in.context.rng().derive("cluster").derive(k), progress labelled.
    const Context cluster =
        in.context.child("cluster").child(static_cast<std::uint64_t>(k), "cluster " + std::to_string(k));
    FitReport sub;
    ModelPtr model = fit_cluster(k, Xk, Vk, cluster, sub);

    // 3. Its normaliser: exact when the model knows its log Z (the likelihood baselines), otherwise by
    // importance sampling from its own normalised base measure.
    const Normalizer z = normalize_cluster(*model, k, Xk, cluster.rng(), in);
    log_z[k] = z.log_z;
    log_z_se[k] = z.log_z_stderr;
    if (z.exact) ++exact_components;
    weights[k] = static_cast<double>(Xk.rows()) / static_cast<double>(N);
    counts.push_back(Xk.rows());

    // The cluster's report, prefixed.
    in.report.iterations += sub.iterations;
    for (const auto& [key, v] : sub.values) in.report.values[prefix + "." + key] = v;
    if (!sub.curve.empty()) {
      in.report.values[prefix + ".curve_points"] = static_cast<double>(sub.curve.size());
      in.report.values[prefix + ".final_validation_loss"] = sub.curve.back().second;
    }
    for (const auto& note : sub.notes) in.report.notes.push_back(prefix + ": " + note);
    in.report.values[prefix + ".train_rows"] = static_cast<double>(Xk.rows());
    in.report.values[prefix + ".validation_rows"] = static_cast<double>(Vk.rows());
    in.report.values[prefix + ".weight"] = weights[k];
    in.report.values[prefix + ".log_normalizer"] = log_z[k];
    in.report.values[prefix + ".log_normalizer_stderr"] = log_z_se[k];
    in.report.notes.push_back(prefix + ": " + std::to_string(Xk.rows()) + " training rows, weight " +
                              number_text(weights[k]) + ", " + z.text);
    components.push_back(std::move(model));
  }
  in.context.progress().done("cluster_mixture", "fitted " + std::to_string(K) + " components");
  if (in.report.iterations == 0) in.report.iterations = 1;

  MixtureInfo info;
  info.counts = counts;
  info.log_normalizer_stderr = log_z_se;
  // Every component exact: no proposals were drawn. A mix of exact and estimated components keeps the
  // proposal that estimated the others.
  const bool all_exact = exact_components == K;
  info.normalizer_samples = all_exact ? 0 : normalizer_samples_;
  info.normalizer_proposal = all_exact ? std::string("exact") : opt_.normalizer_proposal;
  info.bandwidth = clusters.bandwidth;
  return std::make_shared<MixtureModel>(std::move(components), weights, log_z, std::move(info));
}

}  // namespace kef::cluster_mixture
