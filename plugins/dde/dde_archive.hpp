#pragma once
// What the unconditional and the conditional DDE models save alike: γ, λ and the network sizes in
// model.toml; the expansion's points and α and both networks' parameters as arrays. Each model writes
// and reads its own dimensions and its p0 around these.
#include "dde_core.hpp"
#include "kef/model_archive.hpp"
#include "kef/network/network.hpp"

namespace kef::dde {

void save_expansion_and_networks(ModelWriter& w, const KernelExpansion& f, double lambda,
                                 const Architecture& a, const network::Network& generator,
                                 const network::Network& dual);

struct SavedParts {
  KernelExpansion f;
  double lambda;
  network::Network generator, dual;
};
// `a` arrives with the dimensions the model read (dim, cond_dim); the network sizes are read into it.
// The points must have cond_dim + dim columns. Every failure names the file or key (ModelReader::fail).
SavedParts load_expansion_and_networks(const ModelReader& r, Architecture& a);

}  // namespace kef::dde
