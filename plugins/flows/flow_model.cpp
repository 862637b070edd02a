#include "flow_model.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "kef/error.hpp"
#include "kef/network/batch_norm.hpp"
#include "kef/parallel.hpp"

namespace kef::flows {

namespace {

constexpr Index kChunkRows = 1024;

Vector degrees_vector(const std::vector<Index>& d) {
  Vector v(static_cast<Index>(d.size()));
  for (std::size_t i = 0; i < d.size(); ++i) v[static_cast<Index>(i)] = static_cast<double>(d[i]);
  return v;
}

void write_made(ModelWriter& w, const std::string& prefix, const Made& m) {
  w.write_array(prefix + "_parameters", m.net().parameters());
  w.write_array(prefix + "_order", degrees_vector(m.degrees().inputs));
  for (std::size_t l = 0; l < m.degrees().hidden.size(); ++l)
    w.write_array(prefix + "_degrees" + std::to_string(l), degrees_vector(m.degrees().hidden[l]));
}

std::vector<Index> read_degrees(const ModelReader& r, const std::string& name, Index size, Index lo,
                                Index hi) {
  const Vector v = r.read_vector(name, size);
  std::vector<Index> out;
  for (Index i = 0; i < size; ++i) {
    if (v[i] != std::round(v[i]) || v[i] < static_cast<double>(lo) || v[i] > static_cast<double>(hi))
      r.fail(name + ".npy: entry " + std::to_string(i) + " is not an integer degree in [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
    out.push_back(static_cast<Index>(v[i]));
  }
  return out;
}

MadeDegrees read_made_degrees(const ModelReader& r, const std::string& prefix, const FlowArchitecture& a) {
  MadeDegrees m;
  m.inputs = read_degrees(r, prefix + "_order", a.dim, 1, a.dim);
  for (std::size_t l = 0; l < a.hidden_units.size(); ++l)
    m.hidden.push_back(read_degrees(r, prefix + "_degrees" + std::to_string(l), a.hidden_units[l], 0, a.dim));
  return m;
}

}  // namespace

Vector chunked_log_density(const FlowDensity& density, const Matrix& X, int threads) {
  Vector out(X.rows());
  parallel_for_chunks(X.rows(), kChunkRows, X.rows() > kChunkRows ? threads : 1, [&](Index begin, Index len) {
    out.segment(begin, len) = density.log_density(X.middleRows(begin, len));
  });
  return out;
}

FlowModel::FlowModel(std::string kind, FlowDensity density)
    : kind_(std::move(kind)), density_(std::move(density)) {
  if (density_.training()) throw Error("flow model: the density must be in evaluation mode");
}

FacetSet FlowModel::facets() const {
  return {Facet::LogDensity, Facet::NormalizedDensity, Facet::Score, Facet::Laplacian, Facet::Sampler};
}

Vector FlowModel::log_unnormalized(const Matrix& X) const {
  return chunked_log_density(density_, X, default_threads());
}

Matrix FlowModel::score(const Matrix& X) const {
  if (X.cols() != dim())
    throw DataError("flow model: data has " + std::to_string(X.cols()) + " columns, the model dimension " +
                    std::to_string(dim()));
  Matrix out(X.rows(), X.cols());
  parallel_for_chunks(X.rows(), kChunkRows, X.rows() > kChunkRows ? default_threads() : 1,
                      [&](Index begin, Index len) {
                        Matrix s;
                        density_.log_density_and_score(X.middleRows(begin, len), s);
                        out.middleRows(begin, len) = s;
                      });
  return out;
}

void FlowModel::score_and_laplacian(const Matrix& X, Matrix& score, Matrix& laplacian) const {
  if (X.cols() != dim())
    throw DataError("flow model: data has " + std::to_string(X.cols()) + " columns, the model dimension " +
                    std::to_string(dim()));
  score.resize(X.rows(), X.cols());
  laplacian.resize(X.rows(), X.cols());
  // Forward mode carries 1 + 2D channels: smaller chunks keep the stacks near a few MB.
  const Index chunk = std::max<Index>(16, kChunkRows / (1 + 2 * dim()));
  parallel_for_chunks(X.rows(), chunk, X.rows() > chunk ? default_threads() : 1, [&](Index begin, Index len) {
    Matrix s, l;
    density_.log_density_score_laplacian(X.middleRows(begin, len), s, l);
    score.middleRows(begin, len) = s;
    laplacian.middleRows(begin, len) = l;
  });
}

Matrix FlowModel::sample(Index n, RandomStream& rng) const {
  if (n < 0) throw Error("flow model: cannot draw " + std::to_string(n) + " samples");
  return density_.sample(n, rng);
}

std::string FlowModel::describe() const {
  const FlowArchitecture& a = density_.architecture();
  std::ostringstream os;
  os << kind_ << ": ";
  if (a.coupling)
    os << a.layers << " affine coupling layer" << (a.layers > 1 ? "s" : "") << " (shift net "
       << network::activation_name(a.shift_activation) << ")";
  else if (a.layers > 0)
    os << a.layers << " Gaussian MADE" << (a.layers > 1 ? "s" : "");
  if (a.layers > 0 && a.components > 0) os << " on ";
  if (a.components > 0) os << "a MADE with " << a.components << "-component Gaussian mixtures";
  if (a.components == 0) os << " on N(0, I)";
  os << ", hidden units [";
  for (std::size_t l = 0; l < a.hidden_units.size(); ++l) os << (l ? ", " : "") << a.hidden_units[l];
  os << "] " << network::activation_name(a.activation) << (a.batch_norm ? ", batch norm" : "") << ", "
     << density_.parameter_count() << " parameters, dimension " << a.dim;
  return os.str();
}

void FlowModel::save(ModelWriter& w) const {
  const FlowArchitecture& a = density_.architecture();
  Config& m = w.manifest();
  m.set("dim", static_cast<std::int64_t>(a.dim));
  m.set("kind", kind_);
  std::vector<double> hidden(a.hidden_units.begin(), a.hidden_units.end());
  m.set("hidden_units", hidden);
  m.set("activation", network::activation_name(a.activation));
  m.set("layers", static_cast<std::int64_t>(a.layers));
  m.set("components", static_cast<std::int64_t>(a.components));
  m.set("batch_norm", a.batch_norm);
  m.set("batch_norm_epsilon", a.batch_norm_epsilon);
  m.set("coupling", a.coupling);
  if (a.coupling) m.set("shift_activation", network::activation_name(a.shift_activation));
  for (const auto& [k, v] : fit_info_) m.set(k, v);
  for (const auto& [k, v] : fit_counts_) m.set(k, v);
  w.write_array("shift", density_.shift());
  w.write_array("scale", density_.scale());
  for (Index k = 0; k < density_.layer_count(); ++k) {
    const std::string s = std::to_string(k);
    if (a.coupling)
      w.write_array("coupling" + s + "_parameters", density_.coupling(k).parameters());
    else
      write_made(w, "made" + s, density_.made(k));
    if (density_.has_batch_norm()) {
      const auto& bn = density_.batch_norm(k);
      const auto& layer = static_cast<const network::BatchNorm&>(bn.layer(0));
      w.write_array("bn" + s + "_parameters", bn.parameters());
      w.write_array("bn" + s + "_mean", layer.running_mean());
      w.write_array("bn" + s + "_variance", layer.running_variance());
    }
  }
  if (density_.has_mixture_base()) write_made(w, "base", density_.base());
}

ModelPtr FlowModel::load(const ModelReader& r, Registry& /*registry*/) {
  const Config& m = r.manifest();
  for (const char* key : {"dim", "kind", "hidden_units", "activation", "layers", "components", "batch_norm",
                          "batch_norm_epsilon"})
    if (!m.has(key)) r.fail(std::string("model.toml has no `") + key + "`");
  FlowArchitecture a;
  a.dim = m.integer("dim");
  if (a.dim < 1) r.fail("model.toml `dim` must be at least 1");
  a.hidden_units.clear();
  for (double h : m.numbers("hidden_units")) {
    if (h != std::round(h) || h < 1) r.fail("model.toml `hidden_units` must hold integers >= 1");
    a.hidden_units.push_back(static_cast<Index>(h));
  }
  if (a.hidden_units.empty()) r.fail("model.toml `hidden_units` is empty");
  try {
    a.activation = network::activation_from_name(m.string("activation"));
  } catch (const Error& e) {
    r.fail(std::string("model.toml `activation`: ") + e.what());
  }
  a.layers = m.integer("layers");
  a.components = m.integer("components");
  if (a.layers < 0 || a.components < 0 || a.layers + (a.components > 0 ? 1 : 0) < 1)
    r.fail("model.toml `layers` and `components` must be >= 0 with at least one MADE");
  a.batch_norm = m.boolean("batch_norm");
  a.batch_norm_epsilon = m.number("batch_norm_epsilon");
  if (!(a.batch_norm_epsilon > 0.0)) r.fail("model.toml `batch_norm_epsilon` must be > 0");
  a.coupling = m.has("coupling") && m.boolean("coupling");
  if (a.coupling) {
    if (!m.has("shift_activation")) r.fail("model.toml has no `shift_activation` (coupling layers)");
    try {
      a.shift_activation = network::activation_from_name(m.string("shift_activation"));
    } catch (const Error& e) {
      r.fail(std::string("model.toml `shift_activation`: ") + e.what());
    }
    if (a.components > 0) r.fail("model.toml: coupling layers take no mixture base (`components` must be 0)");
  }
  const std::string kind = m.string("kind");
  const Vector shift = r.read_vector("shift", a.dim), scale = r.read_vector("scale", a.dim);
  if ((scale.array() <= 0.0).any()) r.fail("scale.npy has entries <= 0");
  std::vector<MadeDegrees> degrees;
  for (Index k = 0; k < a.layers && !a.coupling; ++k)
    degrees.push_back(read_made_degrees(r, "made" + std::to_string(k), a));
  if (a.components > 0) degrees.push_back(read_made_degrees(r, "base", a));
  FlowDensity density = [&] {
    try {
      return FlowDensity(a, shift, scale, degrees);
    } catch (const Error& e) {
      r.fail(e.what());
    }
  }();
  auto load_net = [&](network::Network& net, const std::string& name) {
    net.set_parameters(r.read_vector(name, net.parameter_count()));
  };
  for (Index k = 0; k < a.layers; ++k) {
    const std::string s = std::to_string(k);
    if (a.coupling) {
      Coupling& c = density.coupling(k);
      c.set_parameters(r.read_vector("coupling" + s + "_parameters", c.parameter_count()));
    } else {
      load_net(density.made(k).net(), "made" + s + "_parameters");
    }
    if (a.batch_norm) {
      auto& bn = density.batch_norm(k);
      load_net(bn, "bn" + s + "_parameters");
      const Vector mean = r.read_vector("bn" + s + "_mean", a.dim),
                   var = r.read_vector("bn" + s + "_variance", a.dim);
      if ((var.array() < 0.0).any()) r.fail("bn" + s + "_variance.npy has negative entries");
      static_cast<network::BatchNorm&>(bn.layer(0)).set_running_statistics(mean, var);
    }
  }
  if (a.components > 0) load_net(density.base().net(), "base_parameters");
  return std::make_shared<FlowModel>(kind, std::move(density));
}

}  // namespace kef::flows
