// The synthetic data sources of the DKEF, Nyström-KEF and DDE papers, with their exact densities.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

#include "densities.hpp"
#include "kef/config.hpp"
#include "kef/data_io.hpp"
#include "kef/data_source.hpp"
#include "kef/memory_budget.hpp"
#include "kef/model_target.hpp"
#include "kef/registry.hpp"
#include "kef/sdk/plugin.hpp"
#include "kef/target.hpp"
#include "kef/number_text.hpp"
#include "truth_model.hpp"

namespace kef::synthetic {

namespace {

// Builds the density from the source's own stream (grid draws its centres there).
using Builder = std::function<DensityPtr(RandomStream& structure)>;

class SyntheticSource final : public Clonable<SyntheticSource, DataSource> {
 public:
  SyntheticSource(std::string type, Index n, bool rotate, Builder build, std::string parameters)
      : type_(std::move(type)),
        n_(n),
        rotate_(rotate),
        build_(std::move(build)),
        parameters_(std::move(parameters)) {}

  SourceData load(RandomStream& rng) override {
    // Separate child streams, so that n does not change the centres or the rotation and the
    // rotation does not change the unrotated samples.
    RandomStream structure = rng.derive("structure");
    DensityPtr density = build_(structure);
    std::optional<Matrix> rotation;
    if (rotate_) {
      RandomStream rotation_stream = rng.derive("rotation");
      rotation = random_orthogonal(density->dim(), rotation_stream);
    }
    auto truth = std::make_shared<TruthModel>(density, rotation, type_);
    RandomStream draws = rng.derive("samples");
    SourceData data;
    data.samples = truth->sample(n_, draws);
    for (Index j = 0; j < density->dim(); ++j) data.columns.push_back(positional_column_name(j));
    data.provenance = type_ + " (" + parameters_ + "), " + std::to_string(n_) +
                      " exact samples, seed " + std::to_string(rng.seed()) + "; " +
                      truth->describe();
    data.truth = std::move(truth);
    return data;
  }

 private:
  std::string type_;
  Index n_;
  bool rotate_;
  Builder build_;
  std::string parameters_;
};

// "dim = 2, radius = 5, noise = 0.2": every declared key but n, for the provenance text.
std::string parameters_text(const Config& cfg, const KeyList& keys) {
  std::string text;
  for (const KeySpec& key : keys) {
    if (key.name == "n") continue;
    if (!cfg.has(key.name) && std::holds_alternative<std::monostate>(key.default_value)) continue;
    std::string value;
    switch (key.kind) {
      case ValueKind::Boolean:
        value = cfg.boolean(key.name) ? "true" : "false";
        break;
      case ValueKind::Integer:
        value = std::to_string(cfg.integer(key.name));
        break;
      case ValueKind::NumberList: {
        for (double v : cfg.numbers(key.name))
          value += (value.empty() ? "" : ", ") + number_text(v);
        value = "[" + value + "]";
        break;
      }
      default:
        value = number_text(cfg.number(key.name));
        break;
    }
    text += (text.empty() ? "" : ", ") + key.name + " = " + value;
  }
  return text;
}

KeySpec n_key() {
  return KeySpec::integer("n", "number of samples drawn (the host splits them)", 10000).positive();
}
KeySpec dim_key(std::int64_t min, const std::string& extra) {
  return KeySpec::integer("dim", "dimension D; " + extra, 2).at_least(double(min));
}
KeySpec rotate_key(bool def) {
  return KeySpec::boolean("rotate",
                          "rotate by a random orthogonal matrix drawn from the seed (the truth is "
                          "rotated too)",
                          def);
}
KeySpec positive_number(const std::string& name, const std::string& doc, double def) {
  return KeySpec::number(name, doc, def).positive();
}

// Radii of a ring mixture: a non-empty list of positive numbers.
std::vector<double> read_radii(const Config& cfg) {
  std::vector<double> radii = cfg.numbers("radii");
  if (radii.empty()) cfg.fail("radii", "needs at least one radius (got an empty list)");
  for (double r : radii)
    if (!(r > 0.0) || !std::isfinite(r))
      cfg.fail("radii", "every radius must be positive and finite (expected > 0, got " +
                            number_text(r) + ")");
  return radii;
}

// Ring mixtures pick ring k with probability ∝ radius, as in the papers (uniform density along the
// circles overall).
DensityPtr rings_density(Index dim, const std::vector<double>& radii, double noise,
                         const std::string& name) {
  std::string text;
  for (double r : radii) text += (text.empty() ? "" : ", ") + number_text(r);
  return make_rings(dim, radii, radii, noise,
                    name + ": rings of radii {" + text +
                        "} (weights proportional to radius), "
                        "radial noise N(0, " +
                        number_text(noise) +
                        "^2), uniform angle; p(x) = "
                        "f(|x|)/(2 pi |x|)");
}

// Distinct vertices of {0,1}^D, drawn by rejection (D ≤ 20, so duplicates are rare).
Matrix cube_vertices(Index dim, RandomStream& rng) {
  if (dim == 2) return (Matrix(2, 2) << 0.0, 1.0, 1.0, 1.0).finished();  // as in DDE
  std::vector<std::uint64_t> chosen;
  const std::uint64_t count = std::uint64_t{1} << dim;
  while (Index(chosen.size()) < dim) {
    const std::uint64_t v = rng.uniform_int(count);
    if (std::find(chosen.begin(), chosen.end(), v) == chosen.end()) chosen.push_back(v);
  }
  Matrix means(dim, dim);
  for (Index k = 0; k < dim; ++k)
    for (Index j = 0; j < dim; ++j) means(k, j) = double((chosen[k] >> j) & 1u);
  return means;
}

struct SourceDefinition {
  ComponentInfo info;
  std::function<Builder(const Config&)> prepare;  // reads (and checks) keys, returns the builder
};

SourceDefinition source(std::string type, std::string summary, std::string reference, KeyList keys,
                        std::function<Builder(const Config&)> prepare) {
  SourceDefinition def;
  def.info.type = std::move(type);
  def.info.summary = std::move(summary);
  def.info.reference = std::move(reference);
  def.info.keys = std::move(keys);
  def.prepare = std::move(prepare);
  return def;
}

const char* const kDkef = "Wenliang et al. 2019 (DKEF), Sec. 4.1";
const char* const kDde = "Dai et al. 2019 (DDE), Sec. 6";
const char* const kNystrom = "Sutherland et al. 2018 (Nystrom KEF), Sec. 5";
const std::string kExtrasUnit = "coordinates after the first two are N(0, 1)";
const std::string kExtrasNoise = "coordinates after the first two are N(0, noise^2)";

SourceDefinition funnel() {
  return source("synthetic/funnel",
                "Funnel: x0 ~ N(0, std^2), x_{1:} ~ N(0, min(exp(-x0), max_variance))", kDkef,
                {n_key(), dim_key(2, "all of x_{1:} share the variance v(x0)"), rotate_key(true),
                 positive_number("std", "standard deviation of x0", 2.0),
                 positive_number("max_variance",
                                 "clip of the variance v = min(exp(-x0), max_variance)", 10.0)},
                [](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  const double s = c.number("std"), v = c.number("max_variance");
                  return [=](RandomStream&) { return make_funnel(d, s, v); };
                });
}

SourceDefinition banana() {
  return source("synthetic/banana", "Banana: x0 ~ N(0, std^2), x1 ~ N(b (x0^2 - std^2), 1)", kDkef,
                {n_key(), dim_key(2, kExtrasUnit), rotate_key(true),
                 positive_number("std", "standard deviation of x0", 2.0),
                 KeySpec::number("bananicity", "curvature b of the mean of x1", 0.2)},
                [](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  const double s = c.number("std"), b = c.number("bananicity");
                  return [=](RandomStream&) { return make_banana(d, s, b); };
                });
}

SourceDefinition ring() {
  return source("synthetic/ring", "Ring: radius ~ N(radius, noise^2), uniform angle", kDkef,
                {n_key(), dim_key(2, kExtrasNoise), rotate_key(false),
                 positive_number("radius", "radius of the ring", 5.0),
                 positive_number("noise", "standard deviation of the radius", 0.2)},
                [](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  const double r = c.number("radius"), s = c.number("noise");
                  return [=](RandomStream&) { return rings_density(d, {r}, s, "ring"); };
                });
}

SourceDefinition square() {
  return source("synthetic/square", "Square: uniform on [-half_width, half_width]^D", kDkef,
                {n_key(), dim_key(2, "every coordinate is uniform"), rotate_key(true),
                 positive_number("half_width", "half the side of the cube", 3.0)},
                [](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  const double a = c.number("half_width");
                  return [=](RandomStream&) { return make_square(d, a); };
                });
}

SourceDefinition cosine() {
  return source("synthetic/cosine",
                "Cosine: x0 ~ U(-half_width, half_width), x1 ~ N(A cos(w x0), noise^2)", kDkef,
                {n_key(), dim_key(2, kExtrasUnit), rotate_key(true),
                 positive_number("half_width", "x0 is uniform on [-half_width, half_width]", 4.0),
                 KeySpec::number("amplitude", "amplitude A of the mean of x1", 3.0),
                 KeySpec::number("frequency", "angular frequency w of the mean of x1", 2.0),
                 positive_number("noise", "standard deviation of x1 around its mean", 1.0)},
                [](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  const double a = c.number("half_width"), amplitude = c.number("amplitude"),
                               w = c.number("frequency"), s = c.number("noise");
                  return [=](RandomStream&) { return make_cosine(d, a, amplitude, w, s); };
                });
}

SourceDefinition mog() {
  return source(
      "synthetic/mog", "Two Gaussians N((+-separation/2, 0, ...), std^2 I), equal weights", kDkef,
      {n_key(), dim_key(2, "the means are zero beyond x0"), rotate_key(false),
       positive_number("std", "standard deviation of each component", 0.5),
       KeySpec::number("separation", "distance between the two means", 8.0).non_negative()},
      [](const Config& c) -> Builder {
        const Index d = c.integer("dim");
        const double s = c.number("std"), half = c.number("separation") / 2;
        return [=](RandomStream&) {
          Matrix means = Matrix::Zero(2, d);
          means(0, 0) = half;
          means(1, 0) = -half;
          return make_gaussian_mixture({0.5, 0.5}, means, {s, s},
                                       "mog: equal mixture of N((+-" + number_text(half) +
                                           ", 0, ...), " + number_text(s) + "^2 I)");
        };
      });
}

// mor and rings differ only in their default noise and provenance.
SourceDefinition ring_mixture(const std::string& name, const std::string& reference, double noise) {
  return source("synthetic/" + name, "Rings of radii 1, 3, 5 (weights proportional to radius)",
                reference,
                {n_key(), dim_key(2, kExtrasNoise), rotate_key(false),
                 KeySpec::numbers("radii", "radii of the rings", std::vector<double>{1, 3, 5}),
                 positive_number("noise", "standard deviation of the radius", noise)},
                [name](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  const std::vector<double> radii = read_radii(c);
                  const double s = c.number("noise");
                  return [=](RandomStream&) { return rings_density(d, radii, s, name); };
                });
}

SourceDefinition grid() {
  return source(
      "synthetic/grid", "D Gaussians N(v, std^2 I) at distinct vertices v of {0,1}^D",
      std::string(kDde) + "; " + kNystrom,
      {n_key(),
       dim_key(1, "at most 20; the D vertices are drawn from the seed ((0,1), (1,1) for D = 2)")
           .at_most(20),
       rotate_key(false), positive_number("std", "standard deviation of each component", 0.1)},
      [](const Config& c) -> Builder {
        const Index d = c.integer("dim");
        const double s = c.number("std");
        return [=](RandomStream& rng) {
          return make_gaussian_mixture(std::vector<double>(size_t(d), 1.0), cube_vertices(d, rng),
                                       std::vector<double>(size_t(d), s),
                                       "grid: equal mixture of N(v, " + number_text(s) +
                                           "^2 I) over " + std::to_string(d) +
                                           " distinct vertices v of the unit cube");
        };
      });
}

SourceDefinition two_moons() {
  return source("synthetic/two_moons", "Two moons exp(-U(z)) of Rezende & Mohamed (2015)", kDde,
                {n_key(), dim_key(2, kExtrasUnit + " (a kef extension)"), rotate_key(false)},
                [](const Config& c) -> Builder {
                  const Index d = c.integer("dim");
                  return [=](RandomStream&) { return make_two_moons(d); };
                });
}

SourceDefinition gaussian() {
  return source(
      "synthetic/gaussian", "Isotropic Gaussian N(mean, std^2 I)", "kef (tests and examples)",
      {n_key(),
       KeySpec::integer("dim",
                        "dimension D (default: the length of mean when it has several "
                        "entries, else 2)")
           .at_least(1)
           .optional(),
       rotate_key(false),
       KeySpec::numbers("mean", "mean: one number (broadcast) or one per dimension",
                        std::vector<double>{0.0}),
       positive_number("std", "standard deviation of every coordinate", 1.0)},
      [](const Config& c) -> Builder {
        std::vector<double> mean = c.numbers("mean");
        if (mean.empty()) c.fail("mean", "needs at least one number (got an empty list)");
        // dim has no declared default, so has() tells whether the user gave it.
        const Index d = c.has("dim")      ? Index(c.integer("dim"))
                        : mean.size() > 1 ? Index(mean.size())
                                          : 2;
        if (mean.size() == 1) mean.assign(size_t(d), mean[0]);
        if (Index(mean.size()) != d) {
          c.fail("mean", "has the wrong length (expected 1 or dim = " + std::to_string(d) +
                             ", got " + std::to_string(mean.size()) + ")");
        }
        const double s = c.number("std");
        const Matrix means = Eigen::Map<const Matrix>(mean.data(), 1, d);
        return [=](RandomStream&) {
          return make_gaussian_mixture({1.0}, means, {s},
                                       "gaussian: N(mean, " + number_text(s) + "^2 I) in " +
                                           std::to_string(d) + " dimensions");
        };
      });
}

SourceDefinition mixture_1d() {
  return source("synthetic/mixture_1d", "0.3 N(-1, 0.2^2) + 0.7 N(1, 1) in one dimension",
                "Wenliang et al. 2019 (DKEF), Fig. 1", {n_key()}, [](const Config&) -> Builder {
                  return [](RandomStream&) {
                    return make_gaussian_mixture({0.3, 0.7}, (Matrix(2, 1) << -1.0, 1.0).finished(),
                                                 {0.2, 1.0},
                                                 "mixture_1d: 0.3 N(-1, 0.2^2) + 0.7 N(1, 1^2)");
                  };
                });
}

std::vector<SourceDefinition> definitions() {
  return {funnel(),
          banana(),
          ring(),
          square(),
          cosine(),
          mog(),
          ring_mixture("mor", kDkef, 0.2),
          grid(),
          ring_mixture("rings", std::string(kNystrom) + "; " + kDde, 0.1),
          two_moons(),
          gaussian(),
          mixture_1d()};
}

// The same truths as sampler targets (kef/target.hpp): their log density only, which is what a
// gradient-free sampler may use (kef sample --sampler kahmc --target synthetic/banana). The keys are
// the source's without `n`; `rotate` defaults to false here, so a target is the textbook density
// unless asked otherwise (the rotation is drawn from the BuildContext's stream).
void register_target(PluginRegistrar& registrar, const SourceDefinition& def) {
  ComponentInfo info = def.info;
  info.summary += " (as a sampler target: log density only)";
  KeyList keys;
  for (const KeySpec& key : def.info.keys) {
    if (key.name == "n") continue;
    keys.push_back(key.name == "rotate" ? rotate_key(false) : key);
  }
  info.keys = keys;
  const std::string type = def.info.type;
  auto prepare = def.prepare;
  registrar.add<Target>(
      std::move(info),
      [type, keys, prepare](const Config& cfg, const BuildContext& ctx) -> std::unique_ptr<Target> {
        Builder build = prepare(cfg);
        RandomStream fallback(0, "target");
        RandomStream& rng = ctx.rng ? *ctx.rng : fallback;
        RandomStream structure = rng.derive("structure");
        DensityPtr density = build(structure);
        std::optional<Matrix> rotation;
        const bool has_rotate =
            std::any_of(keys.begin(), keys.end(), [](const KeySpec& k) { return k.name == "rotate"; });
        if (has_rotate && cfg.boolean("rotate")) {
          RandomStream rotation_stream = rng.derive("rotation");
          rotation = random_orthogonal(density->dim(), rotation_stream);
        }
        auto truth = std::make_shared<TruthModel>(density, rotation, type);
        const std::string parameters = parameters_text(cfg, keys);
        return std::make_unique<ModelTarget>(truth,
                                             type + (parameters.empty() ? "" : " (" + parameters + ")"));
      });
}

void register_components(PluginRegistrar& registrar) {
  for (const SourceDefinition& def : definitions()) register_target(registrar, def);
  for (SourceDefinition& def : definitions()) {
    const std::string type = def.info.type;
    const KeyList keys = def.info.keys;
    auto prepare = def.prepare;
    registrar.add_data_source(
        std::move(def.info),
        [type, keys, prepare](const Config& cfg,
                              const BuildContext&) -> std::unique_ptr<DataSource> {
          Builder build = prepare(cfg);
          const bool has_rotate = std::any_of(keys.begin(), keys.end(),
                                              [](const KeySpec& k) { return k.name == "rotate"; });
          const bool rotate = has_rotate && cfg.boolean("rotate");
          // The rows drawn and their copies in the shuffled splits, before any is drawn (sources
          // without a `dim` key draw 1 or 2 columns).
          const double dim = cfg.has("dim") ? static_cast<double>(cfg.integer("dim")) : 2.0;
          require_memory(8.0 * 3.0 * static_cast<double>(cfg.integer("n")) * dim, cfg.where("n"),
                         "the synthetic rows (n, dim)");
          return std::make_unique<SyntheticSource>(type, Index(cfg.integer("n")), rotate,
                                                   std::move(build), parameters_text(cfg, keys));
        });
  }
}

}  // namespace

}  // namespace kef::synthetic

static void register_synthetic(kef::PluginRegistrar& registrar) {
  kef::synthetic::register_components(registrar);
}

KEF_PLUGIN("synthetic", "0.1.0",
           "Synthetic data sets of the DKEF, Nystrom-KEF and DDE papers with exact densities",
           register_synthetic)
