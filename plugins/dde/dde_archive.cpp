#include "dde_archive.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace kef::dde {

void save_expansion_and_networks(ModelWriter& w, const KernelExpansion& f, double lambda,
                                 const Architecture& a, const network::Network& generator,
                                 const network::Network& dual) {
  Config& m = w.manifest();
  m.set("gamma", f.gamma);
  m.set("lambda", lambda);
  m.set("noise_dim", static_cast<std::int64_t>(a.noise_dim));
  m.set("width", static_cast<std::int64_t>(a.width));
  m.set("generator_depth", static_cast<std::int64_t>(a.generator_depth));
  m.set("dual_depth", static_cast<std::int64_t>(a.dual_depth));
  // Only when ν's width differs from g's: models of one width keep kef 0.3's manifest.
  if (a.dual_hidden() != a.width) m.set("dual_width", static_cast<std::int64_t>(a.dual_hidden()));
  if (f.random_features()) {
    m.set("basis", std::string("random_features"));
    w.write_array("omega", f.omega);
    w.write_array("phase", f.phase);
  } else {
    w.write_array("points", f.points);
  }
  w.write_array("alpha", f.alpha);
  w.write_array("generator_parameters", generator.parameters());
  w.write_array("dual_parameters", dual.parameters());
}

SavedParts load_expansion_and_networks(const ModelReader& r, Architecture& a) {
  a.noise_dim = r.positive_integer("noise_dim");
  a.width = r.positive_integer("width");
  a.generator_depth = r.positive_integer("generator_depth");
  a.dual_depth = r.positive_integer("dual_depth");
  a.dual_width = r.manifest().has("dual_width") ? r.positive_integer("dual_width") : 0;
  KernelExpansion f;
  f.gamma = r.positive_number("gamma");
  const double lambda = r.positive_number("lambda");
  const Index columns = a.cond_dim + a.dim;
  const std::string basis = r.manifest().has("basis") ? r.manifest().string("basis") : "centres";
  if (basis != "centres" && basis != "random_features")
    r.fail("basis = \"" + basis + "\": expected \"centres\" or \"random_features\"");
  const char* array = basis == "random_features" ? "omega" : "points";
  Matrix& rows = basis == "random_features" ? f.omega : f.points;
  rows = r.read_array(array);
  if (rows.cols() != columns || rows.rows() < 1)
    r.fail(std::string(array) + ".npy has shape " + std::to_string(rows.rows()) + " x " +
           std::to_string(rows.cols()) + ", expected n x " + std::to_string(columns));
  if (!rows.allFinite()) r.fail(std::string(array) + ".npy has non-finite values");
  if (f.random_features()) f.phase = r.read_vector("phase", f.omega.rows());
  f.alpha = r.read_vector("alpha", rows.rows());
  SavedParts p{std::move(f), lambda, make_generator(a), make_dual(a)};
  p.generator.set_parameters(r.read_vector("generator_parameters", p.generator.parameter_count()));
  p.dual.set_parameters(r.read_vector("dual_parameters", p.dual.parameter_count()));
  return p;
}

}  // namespace kef::dde
