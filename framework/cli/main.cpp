// The kef command: run, fit (fit_command.cpp), validate, plugins, score, eval, sample, test, and the figure commands (montage,
// lineplot, barplot, scatterplot: figure_commands.cpp).
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_support.hpp"
#include "describe_components.hpp"
#include "distributed_run.hpp"
#include "figure_commands.hpp"
#include "fit_command.hpp"
#include "kef/allocator.hpp"
#include "kef/bandwidth_rule.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/hsic_test.hpp"
#include "kef/kahmc.hpp"
#include "kef/linalg.hpp"
#include "kef/mmd_test.hpp"
#include "kef/memory_budget.hpp"
#include "kef/model_archive.hpp"
#include "kef/model_target.hpp"
#include "kef/npy.hpp"
#include "kef/parallel.hpp"
#include "kef/pipeline.hpp"
#include "kef/plugin_permissions.hpp"
#include "kef/progress.hpp"
#include "kef/registry.hpp"
#include "kef/target.hpp"
#include "sample_given.hpp"
#include "test_command.hpp"

namespace fs = std::filesystem;

namespace {

using namespace kef_cli;

int cmd_plugins(kef::Registry& registry, const std::vector<std::string>& paths, const std::string& describe,
                bool json) {
  load_default_plugins(registry, paths);
  if (json) {
    std::cout << components_json(registry).dump(1) << "\n";
    return 0;
  }
  const std::vector<std::string> interfaces = registry.interfaces();
  if (!describe.empty()) {
    // "kernel/gaussian" or just "gaussian" (every interface that has it).
    std::string interface_part, type = describe;
    if (auto slash = describe.find('/'); slash != std::string::npos) {
      for (const auto& i : interfaces)
        if (describe.substr(0, slash) == i) interface_part = i;
      if (!interface_part.empty()) type = describe.substr(slash + 1);
    }
    int found = 0;
    for (const auto& i : interfaces) {
      if (!interface_part.empty() && interface_part != i) continue;
      const kef::ComponentInfo* info = registry.find(i, type);
      if (!info) continue;
      ++found;
      print_component(std::cout, i, *info);
    }
    if (!found)
      throw kef::ConfigError("--describe " + describe + ": no component of that type; run `kef plugins`");
    return 0;
  }
  std::cout << "plugins:\n";
  for (const auto& p : registry.plugins()) {
    const char* status = p.status == kef::PluginRecord::Status::Loaded     ? "loaded"
                         : p.status == kef::PluginRecord::Status::Shadowed ? "shadowed"
                                                                           : "REFUSED";
    std::cout << "  " << (p.name.empty() ? p.path.filename().string() : p.name) << " " << p.version << " ["
              << status << "] " << p.path.string() << "\n";
    if (!p.reason.empty()) std::cout << "      " << p.reason << "\n";
  }
  std::cout << "components:\n";
  for (const auto& i : interfaces) {
    for (const auto& info : registry.components(i))
      std::cout << "  " << i << "/" << info.type << "  " << info.summary << "\n";
  }
  return 0;
}

// `kef score`'s options besides the model, the data and --out.
struct ScoreFlags {
  std::vector<std::string> columns;
  bool normalize = false;
  bool quiet = false;
};

int cmd_score(kef::Registry& registry, const std::string& model_dir, const std::string& data,
              const std::string& out, const ScoreFlags& flags, const std::vector<std::string>& plugin_paths) {
  load_default_plugins(registry, plugin_paths);
  const kef::SavedModel saved = kef::load_saved_model(model_dir, registry);
  const kef::Matrix X = kef::read_saved_model_input(data, flags.columns, saved, model_dir);
  // The log densities and scores, and their data-units copy, held whole until written.
  require_output_memory(static_cast<double>(X.rows()), static_cast<double>(X.cols() + 1), 2.0, "--data " + data,
                        "the log densities and scores of its rows, held whole until written");
  const bool normalize = flags.normalize;
  // The models' row loops use kef::default_threads(), which main() sets from --threads.
  const kef::Matrix result = kef::score_saved_model(saved, X, normalize, model_dir);
  for (kef::Index n = 0; n < result.rows(); ++n)
    if (!result.row(n).allFinite())
      throw kef::NumericalError(data + ": the model's log density or score is not finite at data row " +
                                std::to_string(n));
  fs::path out_path(out);
  if (out_path.has_parent_path() && !fs::exists(out_path.parent_path()))
    throw kef::ConfigError("--out " + out + ": directory " + out_path.parent_path().string() +
                           " does not exist");
  // A CSV names its columns: the log density, then the gradient's component along each column (of y
  // for a conditional model).
  std::vector<std::string> columns = {normalize ? "log_p" : "log_p_tilde"};
  const std::vector<std::string> names = kef_cli::data_column_names(saved.transform, X.cols());
  if (saved.transform.roles.conditional() &&
      static_cast<kef::Index>(saved.transform.roles.targets.size()) == result.cols() - 1) {
    for (const kef::Index j : saved.transform.roles.targets) columns.push_back("score_" + names[static_cast<std::size_t>(j)]);
  } else {
    for (kef::Index j = 1; j < result.cols(); ++j)
      columns.push_back("score_" + (result.cols() - 1 == X.cols() ? names[static_cast<std::size_t>(j - 1)]
                                                                  : std::to_string(j - 1)));
  }
  kef_cli::write_output_rows(out, result, columns);
  if (flags.quiet) return 0;
  std::cerr << "[kef] wrote " << result.rows() << " x " << result.cols() << " ("
            << (normalize ? "log p" : "log p~") << ", score) to " << out
            << (saved.transform.identity()
                    ? std::string()
                    : " in data units (model fitted " + saved.transform.model_space() + ", log|det| " +
                          std::to_string(saved.transform.log_abs_det) + ")")
            << "\n";
  return 0;
}

// `kef sample`'s sampler options (HmcOptions) and its mixing check.
struct SamplerFlags {
  kef::HmcOptions hmc;
  bool allow_poor_mixing = false;
  double max_r_hat = 1.05;
  double min_ess_fraction = 0.1;
  // Gradient-free samplers on a target (kef/kahmc.hpp): --sampler kahmc|rwm with --target.
  std::string sampler = "hmc";
  std::string target;
  std::vector<std::string> target_settings;
  kef::KahmcOptions kahmc;
  std::string surrogate = "lite";
};

void add_sampler_flags(CLI::App* sample, SamplerFlags& f) {
  sample->add_option("--warmup", f.hmc.warmup, "HMC warm-up iterations per chain (discarded)")
      ->capture_default_str();
  sample->add_option("--chains", f.hmc.chains, "HMC chains")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sample->add_option("--leapfrog-steps", f.hmc.leapfrog_steps, "leapfrog steps per HMC iteration")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sample->add_option("--step-size", f.hmc.step_size, "initial leapfrog step size (adapted in warm-up)")
      ->capture_default_str();
  sample->add_option("--thinning", f.hmc.thinning, "keep every k-th draw after warm-up")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sample->add_flag(
      "--allow-poor-mixing", f.allow_poor_mixing,
      "exit 0 even when split-R^ or the ESS fail the mixing check (the warning is still printed)");
  sample->add_option("--max-rhat", f.max_r_hat, "mixing check: largest acceptable split-R^")
      ->capture_default_str();
  sample
      ->add_option("--min-ess-fraction", f.min_ess_fraction,
                   "mixing check: smallest acceptable min ESS, as a fraction of -n")
      ->capture_default_str();
  sample
      ->add_option("--sampler", f.sampler,
                   "hmc (a saved model's score), kahmc (kernel adaptive HMC: log density only) or rwm "
                   "(random-walk Metropolis); kahmc and rwm sample a --target")
      ->capture_default_str()
      ->check(CLI::IsMember({"hmc", "kahmc", "rwm"}));
  sample->add_option("--target", f.target,
                     "kahmc/rwm: a registered target type (synthetic/banana, ...; `kef plugins`) or a saved "
                     "model directory, used through its log density only");
  sample->add_option("--target-set", f.target_settings, "a key of the --target type: key=value");
  sample
      ->add_option("--burn-in", f.kahmc.burn_in, "kahmc/rwm: random-walk iterations per chain before warm-up")
      ->capture_default_str()
      ->check(integer_in(0, kMaxSamples));
  sample
      ->add_option("--adaptation-decay", f.kahmc.adaptation_decay,
                   "kahmc: δ of the surrogate refit probability k^-δ at HMC iteration k")
      ->capture_default_str();
  sample
      ->add_option("--adaptation-stop", f.kahmc.adaptation_stop,
                   "kahmc: no surrogate refit after this HMC iteration (0: no limit)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxSamples));
  sample
      ->add_option("--history-points", f.kahmc.history_points,
                   "kahmc: history rows the surrogate is fitted on (a uniform subsample)")
      ->capture_default_str()
      ->check(integer_in(10, 100000));
  sample
      ->add_option("--surrogate", f.surrogate,
                   "kahmc: the surrogate's basis, lite (k(z, .) at the history rows) or nystrom (the "
                   "first-derivative basis at --nystrom-points rows)")
      ->capture_default_str()
      ->check(CLI::IsMember({"lite", "nystrom"}));
  sample
      ->add_option(
          "--nystrom-points", f.kahmc.nystrom_points,
          "kahmc --surrogate nystrom: basis points (0: ceil(sqrt(n) log n) of the n distinct history rows)")
      ->capture_default_str()
      ->check(integer_in(0, 100000));
}

constexpr int kExitPoorMixing = 3;

// The mixing check of `kef sample` (exit status 3 unless --allow-poor-mixing). Poor mixing is
// reported even with --quiet: the samples may not represent the model.
int mixing_status(double r_hat, double ess, long n, const std::string& out, const std::string& model_dir,
                  const std::string& chains_name, const std::string& what, const SamplerFlags& flags,
                  const std::string& stuck_chains = "") {
  const double ess_needed = flags.min_ess_fraction * static_cast<double>(n);
  auto num = [](double v) {
    std::ostringstream os;
    os.precision(6);
    os << v;
    return os.str();
  };
  std::vector<std::string> problems;
  if (!(r_hat <= flags.max_r_hat))
    problems.push_back(std::isnan(r_hat)
                           ? "split-R^ could not be computed (fewer than 8 draws per chain, or a "
                             "coordinate that never moved)"
                           : "max split-R^ " + num(r_hat) + " > " + num(flags.max_r_hat));
  if (!(ess >= ess_needed))
    problems.push_back(std::isnan(ess) ? "the ESS could not be computed"
                                       : "min ESS " + num(ess) + " < " + num(flags.min_ess_fraction) + " x " +
                                             std::to_string(n) + " samples");
  if (!stuck_chains.empty())
    problems.push_back("accepted no proposal after warm-up: " + stuck_chains + " (each such chain's draws are one point)");
  if (problems.empty()) return 0;
  std::cerr << "[kef] warning: the " << chains_name << " chains for " << model_dir << " mix poorly:";
  for (std::size_t i = 0; i < problems.size(); ++i) std::cerr << (i ? "; " : " ") << problems[i];
  std::cerr << ". The samples in " << out << " may not represent the " << what
            << ". Raise --warmup, --leapfrog-steps or "
            << "-n, or pass --allow-poor-mixing to accept them"
            << (flags.allow_poor_mixing ? " (given: exit status 0)" : " (exit status 3)") << "\n";
  return flags.allow_poor_mixing ? 0 : kExitPoorMixing;
}

// `kef sample --sampler kahmc|rwm`: a target used through its log density only (kef/kahmc.hpp). The
// target is a registered type (`--target synthetic/banana --target-set dim=4`) or a saved model
// directory (`--target DIR`, or DIR as the positional argument), sampled in the coordinates it was
// fitted in and written in data units as the hmc sampler does.
// What kef sample draws from: a saved model (with its data transform) or a registered target type
// built with the --target-set keys.
struct SampleTarget {
  kef::TargetPtr target;
  kef::DataTransform transform;
  bool from_model = false;
};

SampleTarget resolve_sample_target(kef::Registry& registry, const std::string& spec, const std::string& flag,
                                   const SamplerFlags& flags, kef::RandomStream& target_rng) {
  SampleTarget t;
  if (fs::is_directory(spec)) {
    if (!flags.target_settings.empty())
      throw kef::ConfigError("--target-set: " + spec +
                             " is a saved model directory, which has no keys to set");
    const kef::SavedModel saved = kef::load_saved_model(spec, registry);
    kef::require_unconditional(saved, spec, "kef sample");
    t.target = std::make_shared<kef::ModelTarget>(saved.model, "model " + spec);
    t.transform = saved.transform;
    t.from_model = true;
  } else {
    if (!registry.find(kef::Target::kInterface, spec)) {
      std::string known;
      for (const kef::ComponentInfo& info : registry.components(kef::Target::kInterface))
        known += (known.empty() ? "" : ", ") + info.type;
      throw kef::ConfigError(
          flag + " " + spec + ": neither a saved model directory nor a registered target type " +
          "(expected one of: " + (known.empty() ? "none loaded" : known) + "; see `kef plugins`)");
    }
    kef::Config cfg = kef::Config::parse_string("type = \"" + spec + "\"\n", "--target");
    for (const std::string& setting : flags.target_settings) {
      const auto eq = setting.find('=');
      if (eq == std::string::npos || eq == 0)
        throw kef::ConfigError("--target-set " + setting + ": expected KEY=VALUE");
      cfg.set_from_text(setting.substr(0, eq), setting.substr(eq + 1));
    }
    t.target = registry.make<kef::Target>(cfg, kef::BuildContext{-1, &registry, &target_rng});
  }
  return t;
}

// The options the command line sets, checked here so that a message names the flag.
void validate_sampler_flags(const kef::KahmcOptions& o, kef::Index dim) {
  try {
    kef::validate(o, dim);
  } catch (const kef::ConfigError& e) {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"chains", "--chains"},
        {"burn_in", "--burn-in"},
        {"warmup", "--warmup"},
        {"samples", "-n"},
        {"thinning", "--thinning"},
        {"adaptation_decay", "--adaptation-decay"},
        {"adaptation_stop", "--adaptation-stop"},
        {"history_points", "--history-points"},
        {"nystrom_points", "--nystrom-points"},
        {"leapfrog_steps", "--leapfrog-steps"},
        {"step_size", "--step-size"}};
    std::string message = e.what();
    for (const auto& [option, name] : names) {
      const std::string quoted = "KAHMC option `" + option + "`";
      if (message.rfind(quoted, 0) == 0) message = name + message.substr(quoted.size());
    }
    throw kef::ConfigError(message);
  }
}

int cmd_sample_target(kef::Registry& registry, const std::string& model_dir, long n, const std::string& out,
                      std::uint64_t seed, int threads, bool quiet, const SamplerFlags& flags,
                      const std::vector<std::string>& plugin_paths) {
  if (!flags.target.empty() && !model_dir.empty())
    throw kef::ConfigError("--target " + flags.target + ": give the target once (--target or MODEL_DIR " +
                           model_dir + ", not both)");
  if (!flags.target_settings.empty() && flags.target.empty())
    throw kef::ConfigError("--target-set: needs --target (a registered target type)");
  const std::string spec = flags.target.empty() ? model_dir : flags.target;
  const std::string flag = flags.target.empty() ? "MODEL_DIR" : "--target";
  if (spec.empty())
    throw kef::ConfigError(
        "--target: --sampler " + flags.sampler +
        " needs a target (a registered type such as synthetic/banana, or a saved model directory)");
  fs::path out_path(out);
  if (out_path.has_parent_path() && !fs::exists(out_path.parent_path()))
    throw kef::ConfigError("--out " + out + ": directory " + out_path.parent_path().string() +
                           " does not exist");
  load_default_plugins(registry, plugin_paths);

  kef::RandomStream target_rng(seed, "sample.target");  // a target's structure (rotation, centres)
  const SampleTarget resolved = resolve_sample_target(registry, spec, flag, flags, target_rng);
  const kef::TargetPtr& target = resolved.target;
  const kef::DataTransform& transform = resolved.transform;
  const bool from_model = resolved.from_model;

  kef::KahmcOptions o = flags.kahmc;
  o.method = flags.sampler == "rwm" ? kef::KahmcMethod::RandomWalk : kef::KahmcMethod::Kahmc;
  o.surrogate = flags.surrogate == "nystrom" ? kef::KahmcSurrogate::Nystrom : kef::KahmcSurrogate::Lite;
  o.chains = flags.hmc.chains;
  o.warmup = flags.hmc.warmup;
  o.leapfrog_steps = flags.hmc.leapfrog_steps;
  o.step_size = flags.hmc.step_size;
  o.thinning = flags.hmc.thinning;
  o.samples = n / o.chains + (n % o.chains != 0 ? 1 : 0);
  o.context = (from_model ? "model " : "target ") + spec + " (kef sample --sampler " + flags.sampler + ")";
  validate_sampler_flags(o, target->dim());
  // The surrogate's Gaussian kernel (plugin `gaussian`), one per length scale the sampler asks for.
  kef::KernelFamily kernels = [&registry](double sigma) {
    kef::Config k = kef::Config::parse_string("type = \"gaussian\"\n", "kef sample (surrogate kernel)");
    k.set("sigma", sigma);
    return registry.make_kernel(k, kef::BuildContext{});
  };
  auto shown = quiet ? kef::make_silent_progress() : kef::make_stderr_progress();
  auto progress =
      kef::make_prefixed_progress(*shown, flags.sampler + " on " + fs::path(spec).filename().string() + ": ");
  o.progress = progress.get();
  // The same root as the hmc sampler: the sampler draws from RandomStream(seed, "sample").
  kef::Context context = kef::Context(seed, threads, progress.get(), "--threads").child("sample");
  require_output_memory(static_cast<double>(o.samples) * static_cast<double>(o.chains),
                        static_cast<double>(target->dim()), 3.0, "-n " + std::to_string(n),
                        "the samples, held whole until written");
  const kef::KahmcResult r = kef::run_kahmc(*target, kernels, context.rng(), o, context);
  kef::Matrix X = r.samples.topRows(n);
  if (from_model) X = transform.to_data(X);
  require_finite_output(X, (from_model ? "model " : "target ") + spec, "sample");
  kef_cli::write_output_rows(out, X, kef_cli::data_column_names(transform, X.cols()));
  if (!quiet) std::cerr << "[kef] " << target->describe() << ": " << r.summary() << "\n";
  std::cerr << "[kef] wrote " << X.rows() << " x " << X.cols() << " samples to " << out
            << (from_model && !transform.identity() ? " (data units)" : "") << "\n";
  return mixing_status(r.max_r_hat(), r.min_ess(), n, out, spec,
                       flags.sampler == "rwm" ? "random-walk" : "KAHMC", "target", flags);
}

int cmd_sample(kef::Registry& registry, const std::string& model_dir, long n, const std::string& out,
               std::uint64_t seed, int threads, bool quiet, const SamplerFlags& flags,
               const std::vector<std::string>& plugin_paths) {
  if (n < 1) throw kef::ConfigError("-n " + std::to_string(n) + ": expected a positive number of samples");
  if (!(flags.max_r_hat >= 1.0))
    throw kef::ConfigError("--max-rhat " + std::to_string(flags.max_r_hat) + ": expected a number >= 1");
  if (!(flags.min_ess_fraction >= 0.0 && flags.min_ess_fraction <= 1.0))
    throw kef::ConfigError("--min-ess-fraction " + std::to_string(flags.min_ess_fraction) +
                           ": expected a number in [0, 1]");
  if (flags.sampler != "hmc")
    return cmd_sample_target(registry, model_dir, n, out, seed, threads, quiet, flags, plugin_paths);
  if (!flags.target.empty())
    throw kef::ConfigError(
        "--target " + flags.target +
        ": the hmc sampler needs a model's score; sample a target with --sampler kahmc or rwm");
  if (!flags.target_settings.empty())
    throw kef::ConfigError("--target-set: needs --target with --sampler kahmc or rwm");
  if (model_dir.empty())
    throw kef::ConfigError("kef sample: give MODEL_DIR (hmc), or --sampler kahmc|rwm with --target");
  fs::path out_path(out);
  if (out_path.has_parent_path() && !fs::exists(out_path.parent_path()))
    throw kef::ConfigError("--out " + out + ": directory " + out_path.parent_path().string() +
                           " does not exist");
  load_default_plugins(registry, plugin_paths);
  const kef::SavedModel saved = kef::load_saved_model(model_dir, registry);
  kef_cli::refuse_conditional_without_given(saved, model_dir);
  kef::require_unconditional(saved, model_dir, "kef sample");
  kef::HmcOptions options = flags.hmc;
  options.context = "model " + model_dir + " (kef sample)";
  auto shown = quiet ? kef::make_silent_progress() : kef::make_stderr_progress();
  auto progress =
      kef::make_prefixed_progress(*shown, "model " + fs::path(model_dir).filename().string() + ": ");
  options.progress = progress.get();
  // The root context of `kef sample`; HMC draws from its child "sample", RandomStream(seed, "sample").
  kef::Context context = kef::Context(seed, threads, progress.get(), "--threads").child("sample");
  kef::HmcDiagnostics diag;
  // The draws are held whole until written: HMC's kept draws (every chain's, a little more than -n), the
  // first n of them, and those in data units.
  require_output_memory(static_cast<double>(n), static_cast<double>(saved.model->dim()), 3.0,
                        "-n " + std::to_string(n), "the samples, held whole until written");
  // HMC runs in the coordinates the model was fitted in (where its step sizes were tuned for unit
  // scales); the draws are then mapped back to data units.
  const kef::Matrix X =
      saved.transform.to_data(kef::draw_samples(*saved.model, n, context.rng(), options, context, &diag));
  require_finite_output(X, "model " + model_dir, "sample");
  kef_cli::write_output_rows(out, X, kef_cli::data_column_names(saved.transform, X.cols()));
  if (!quiet) {
    if (diag.ran)
      std::cerr << "[kef] " << diag.summary() << "\n";
    else if (diag.approximate)
      std::cerr << "[kef] drawn with the model's approximate sampler: draws from its learned q, not exact "
                   "draws from the model's density\n";
    else
      std::cerr << "[kef] drawn with the model's exact sampler\n";
  }
  std::cerr << "[kef] wrote " << X.rows() << " x " << X.cols() << " samples to " << out
            << (saved.transform.identity() ? "" : " (data units)") << "\n";
  if (!diag.ran) return 0;
  return mixing_status(diag.max_r_hat(), diag.min_ess(), n, out, model_dir, "HMC", "model", flags,
                       diag.stuck_chains_text());
}

int cmd_eval(kef::Registry& registry, const kef::SavedEvalOptions& opts, const std::string& out,
             const std::vector<std::string>& plugin_paths) {
  load_default_plugins(registry, plugin_paths);
  std::vector<std::pair<std::string, std::string>> spaces;
  kef::DataTransform transform;
  kef::EvaluationResult r = kef::evaluate_saved_model(registry, opts, &spaces, &transform);
  nlohmann::ordered_json j;
  j["kef_version"] = kef::version();
  j["model_dir"] = opts.model_dir;
  if (!opts.against_dir.empty()) j["against"] = opts.against_dir;
  j["data"] = opts.data_file;
  j["evaluator"] = opts.evaluator;
  j["seed"] = opts.seed;
  j["preprocessing"] = {
      {"kind", transform.kind}, {"columns", transform.columns}, {"model_space", transform.model_space()}};
  if (!transform.identity()) j["preprocessing"]["log_abs_det"] = transform.log_abs_det;
  // Every metric in data units is finite before any is printed or written.
  for (const auto& [k, v] : r.metrics)
    if (!std::isfinite(v))
      throw kef::NumericalError("model " + opts.model_dir + ": metric " + k + " of " + opts.evaluator +
                                " is not finite in data units; nothing was written");
  for (std::size_t i = 0; i < r.metrics.size(); ++i) {
    const auto& [k, v] = r.metrics[i];
    j["metrics"][k] = v;
    j["metric_spaces"][k] = spaces[i].second;
    std::cout << k << " = " << v;
    if (!transform.identity())
      std::cout << "  (" << (spaces[i].second == "data" ? "data units" : spaces[i].second) << ")";
    std::cout << "\n";
  }
  for (const auto& n : r.notes) {
    j["notes"].push_back(n);
    std::cerr << "[kef] note: " << n << "\n";
  }
  if (!out.empty()) {
    // Written to a temporary name and renamed: no partial file on failure.
    std::string tmp = out + ".kef-tmp";
    {
      std::ofstream f(tmp);
      f << j.dump(2) << "\n";
      f.close();  // the data reaches the file here: check after it
      if (!f) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw kef::ConfigError("--out " + out + ": cannot write (disk full?)");
      }
    }
    fs::rename(tmp, out);
  }
  return 0;
}

}  // namespace

namespace {

// The command line: every subcommand, its options and the variables they fill. declare() builds it
// on the app; dispatch() runs the parsed command (its exit status, passed through finish) and
// returns 0 when none was parsed.
struct CommandLine {
  std::string file, output, describe, model_dir, data, out;
  bool plugins_json = false;
  std::vector<std::string> overrides, plugin_paths;
  int threads = 0;
  bool quiet = false;
  std::optional<double> memory_limit_gb;  // --memory-limit-gb of score, eval and sample
  CLI::App* run = nullptr;
  CLI::App* validate = nullptr;
  CLI::App* plugins = nullptr;
  CLI::App* score = nullptr;
  ScoreFlags score_flags;
  kef::SavedEvalOptions eval_opts;
  std::string eval_out;
  CLI::App* eval = nullptr;
  std::string sample_dir, sample_out, sample_given;
  long sample_n = 0;
  std::uint64_t sample_seed = 0;
  CLI::App* sample = nullptr;
  FitFlags fit_flags;
  CLI::App* fit = nullptr;
  SamplerFlags sampler_flags;
  FigureFlags figure_flags;
  FigureCommands figures;
  TestFlags test_flags;
  KernelTestCommand kernel_test;

  void declare(CLI::App& app) {
    run =
        app.add_subcommand("run", "Run a TOML pipeline: fit every [[model]], evaluate, write results.json");
    run->add_option("file", file, "pipeline file")->required();
    run->add_option("--set", overrides,
                    "override a key: a.b.c=value (model.NAME.key or model[i].key for one model)");
    run->add_option("--output", output, "output directory (replaces [output] dir)");
    run->add_option("--threads", threads, "worker threads (default: all cores; results do not depend on it)")
        ->check(integer_in(1, kMaxThreads));
    run->add_flag("--quiet", quiet, "no progress output on stderr");

    fit = add_fit_command(app, fit_flags, threads);

    validate =
        app.add_subcommand("validate", "Check a pipeline (keys, types, plugins, data) without fitting");
    validate->add_option("file", file, "pipeline file")->required();
    validate->add_option("--set", overrides, "override a key: a.b.c=value");

    plugins = app.add_subcommand("plugins", "List plugins and their components");
    plugins->add_option("--describe", describe, "print the keys of one component, e.g. kernel/gaussian");
    plugins->add_flag("--json", plugins_json,
                      "list every plugin and component with its keys as JSON (the manual's reference)")
        ->excludes("--describe");
    plugins->add_option("--path", plugin_paths, "extra plugin directory (searched first)");

    score = app.add_subcommand("score", "Write log p~(x) and its gradient for data under a saved model");
    score->add_option("model_dir", model_dir, "saved model directory (runs/NAME/models/MODEL)")->required();
    score->add_option("--data", data, "data file (.csv or .npy)")->required();
    score->add_option("--out", out, "output .npy, or .csv (with a header): N x (1 + D), log p~ then the score")->required();
    score->add_option("--columns", score_flags.columns, "CSV columns to use");
    score->add_flag("--normalize", score_flags.normalize,
                    "write log p = log p~ - log Z (needs a model with a known normaliser)");
    score->add_option("--threads", threads, "worker threads (results do not depend on it)")
        ->check(integer_in(1, kMaxThreads));
    score->add_flag("--quiet", score_flags.quiet, "nothing on stderr but warnings and errors");
    score->add_option("--memory-limit-gb", memory_limit_gb, kef::kMemoryLimitDoc)->check(CLI::PositiveNumber);
    score->add_option("--path", plugin_paths, "extra plugin directory (searched first)");

    eval =
        app.add_subcommand("eval", "Run one evaluator on a saved model, with a data file as the held-out set");
    eval->add_option("model_dir", eval_opts.model_dir, "saved model directory")->required();
    eval->add_option("--data", eval_opts.data_file, "data file (.csv or .npy)")->required();
    eval->add_option("--type", eval_opts.evaluator, "evaluator type (see `kef plugins`)")->required();
    eval->add_option("--against", eval_opts.against_dir, "second saved model, for comparative evaluators");
    eval->add_option("--set", eval_opts.settings, "an evaluator key: key=value");
    eval->add_option("--columns", eval_opts.columns, "CSV columns to use");
    eval->add_option("--seed", eval_opts.seed, "seed of the evaluator's random streams (default 0)")
        ->check(seed_value());
    eval->add_option("--out", eval_out, "also write the metrics as JSON to this file");
    eval->add_option("--threads", threads, "worker threads")->check(integer_in(1, kMaxThreads));
    eval->add_flag("--quiet", eval_opts.quiet, "no progress output");
    eval->add_option("--memory-limit-gb", memory_limit_gb, kef::kMemoryLimitDoc)->check(CLI::PositiveNumber);
    eval->add_option("--path", plugin_paths, "extra plugin directory (searched first)");

    sample = app.add_subcommand("sample",
                                      "Draw samples from a saved model (its own sampler, exact or approximate, else HMC), or from "
                                      "a target with --sampler kahmc|rwm");
    sample->add_option("model_dir", sample_dir, "saved model directory (or give a target with --target)");
    sample->add_option("-n", sample_n, "number of samples")->required()->check(integer_in(1, kMaxSamples));
    sample->add_option("--out", sample_out, "output .npy, or .csv with a header (n x D; with --given, n rows per row of X)")
        ->required();
    sample->add_option(
        "--given", sample_given,
        "conditional models: a .npy or .csv of inputs x (the model's input columns, data units); "
        "-n draws of y for each row");
    sample->add_option("--seed", sample_seed, "seed (default 0)")->check(seed_value());
    sample->add_option("--threads", threads, "worker threads (results do not depend on it)")
        ->check(integer_in(1, kMaxThreads));
    sample->add_flag("--quiet", quiet, "no progress or diagnostics on stderr");
    sample->add_option("--memory-limit-gb", memory_limit_gb, kef::kMemoryLimitDoc)->check(CLI::PositiveNumber);
    sample->add_option("--path", plugin_paths, "extra plugin directory (searched first)");
    add_sampler_flags(sample, sampler_flags);

    figures = add_figure_commands(app, figure_flags);
    kernel_test = add_test_command(app, test_flags, threads);
  }

  int dispatch(kef::Registry& registry, const std::function<int(int)>& finish) {
    if (threads > 0) kef::set_default_threads(threads);
    // What a pipeline's `memory_limit_gb` sets, for the commands that run components without one.
    if (memory_limit_gb) kef::set_memory_limit_bytes(*memory_limit_gb * 1e9);
    (void)kef::product_backend();  // a bad KEF_BLAS fails here, before any work
    // An empty --output would otherwise fall back to [output] dir without notice.
    if (run->parsed() && run->count("--output") > 0 && output.empty())
      throw kef::ConfigError("--output: empty path (expected an output directory)");
    if (score->parsed()) check_output_file("--out", out);
    if (sample->parsed()) check_output_file("--out", sample_out);
    if (eval->parsed() && !eval_out.empty()) check_output_file("--out", eval_out);
    check_figure_output(figures, figure_flags);
    // Under an MPI launcher only `kef run` is distributed: other commands would run K times over.
    const int launched = kef_cli::launcher_world_size();
    if (launched > 1 && !run->parsed())
      throw kef::ConfigError("mpirun: only `kef run` runs distributed (started as " +
                             std::to_string(launched) + " processes); run this command as one process");
    if (launched > 1 && !kef_cli::built_with_mpi())
      throw kef::ConfigError(
          "mpirun: this kef was built without MPI (configure with MPI installed and "
          "-DKEF_WITH_MPI=ON), so it cannot share a run between " +
          std::to_string(launched) + " processes; run it as one process");
    if (run->parsed() && launched > 0 && kef_cli::built_with_mpi()) {
      kef::RunOptions opts;
      opts.overrides = overrides;
      if (!output.empty()) opts.output_dir = output;
      opts.threads = threads;
      opts.quiet = quiet;
      return finish(kef_cli::run_distributed(file, opts));
    }
    if (run->parsed()) {
      kef::RunOptions opts;
      opts.overrides = overrides;
      if (!output.empty()) opts.output_dir = output;
      opts.threads = threads;
      opts.quiet = quiet;
      kef::RunSummary s = kef::run_pipeline(file, opts);
      std::cout << s.table << "results: " << (s.output_dir / "results.json").string() << "\n";
      return finish(0);
    }
    if (validate->parsed()) {
      kef::RunOptions opts;
      opts.overrides = overrides;
      kef::validate_pipeline(file, opts);
      std::cout << file << ": ok\n";
      return finish(0);
    }
    if (fit->parsed()) return finish(cmd_fit(registry, fit_flags, threads));
    if (plugins->parsed()) return finish(cmd_plugins(registry, plugin_paths, describe, plugins_json));
    if (score->parsed()) return finish(cmd_score(registry, model_dir, data, out, score_flags, plugin_paths));
    if (sample->parsed() && !sample_given.empty()) {
      if (sampler_flags.sampler != "hmc" || !sampler_flags.target.empty())
        throw kef::ConfigError(
            "--given: samples a saved conditional model with its own sampler; it does not "
            "combine with --sampler or --target");
      load_default_plugins(registry, plugin_paths);
      return finish(kef_cli::cmd_sample_given(registry, sample_dir, sample_given, sample_n, sample_out,
                                              sample_seed, threads, quiet));
    }
    if (sample->parsed())
      return finish(cmd_sample(registry, sample_dir, sample_n, sample_out, sample_seed, threads, quiet,
                               sampler_flags, plugin_paths));
    if (const int status = run_figure_command(figures, figure_flags); status >= 0) return finish(status);
    if (kernel_test.test->parsed()) return finish(cmd_test(registry, kernel_test, test_flags, threads));
    if (eval->parsed()) {
      eval_opts.threads = threads;
      return finish(cmd_eval(registry, eval_opts, eval_out, plugin_paths));
    }
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  kef::keep_freed_memory();  // see allocator.hpp: large temporaries are reused, not re-faulted
  CLI::App app{
      "kef: kernel exponential family densities.\n"
      "Fit, evaluate and use unnormalised densities log p~(x) = f(x) + log q0(x)."};
  app.set_version_flag("--version", std::string("kef ") + kef::version());
  app.require_subcommand(1);

  CommandLine c;
  c.declare(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (const std::string unknown = unknown_word_message(app, argc, argv); !unknown.empty()) {
      std::cerr << "kef: " << unknown << "\n";
      return 2;
    }
    app.exit(e);
    return 2;
  }

  // What a command printed must have reached stdout: `kef eval ... > /dev/full` is a failure.
  auto finish = [](int status) {
    std::cout.flush();
    if (std::cout) return status;
    std::cerr << "kef: error: cannot write to standard output (" << std::strerror(errno) << ")\n";
    return status == 0 ? 2 : status;
  };
  // The plugins' code must stay loaded until every exception has been handled: an exception thrown
  // by plugin code may refer to it (its what(), a class of its own), and the models a command holds
  // keep their plugin loaded only while they live. So the registry outlives the handlers below.
  kef::Registry registry;
  try {
    return c.dispatch(registry, finish);
  } catch (const kef::Error& e) {
    std::cerr << "kef: " << e.kind() << ": " << e.what() << "\n";
    return e.exit_status();
  } catch (const std::bad_alloc&) {
    std::string command = "kef";
    for (const CLI::App* sub = &app; sub && !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      command += " " + sub->get_name();
    }
    const kef::OutOfMemoryError e = kef::out_of_memory_error(command);
    std::cerr << "kef: " << e.kind() << ": " << e.what() << "\n";
    return e.exit_status();
  } catch (const std::exception& e) {
    std::cerr << "kef: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
