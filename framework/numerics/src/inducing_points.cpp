#include "kef/inducing_points.hpp"

#include <string>

#include "kef/linalg.hpp"

namespace kef {

void check_inducing_count(Index m, Index train_rows, const KeySites& sites, std::string_view key) {
  if (m > train_rows)
    sites.fail(key, std::to_string(m) + " inducing points but only " + std::to_string(train_rows) +
                        " training rows");
}

Matrix draw_inducing_points(const Matrix& train, Index m, const RandomStream& stream, const KeySites& sites,
                            std::string_view key) {
  check_inducing_count(m, train.rows(), sites, key);
  RandomStream pick = stream.derive("inducing_points");
  return random_rows(train, m, pick);
}

Matrix draw_inducing_points(const TrainingRows& train, Index m, const RandomStream& stream, const KeySites& sites,
                            std::string_view key) {
  check_inducing_count(m, train.rows(), sites, key);
  RandomStream pick = stream.derive("inducing_points");
  // random_rows' draw: the same positions, so the same rows as from the whole split.
  return train.pick(sample_without_replacement(train.rows(), m, pick));
}

}  // namespace kef
