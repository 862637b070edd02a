#pragma once
// The data a pipeline fits and evaluates on: train / validation / test splits of one source.
#include <memory>
#include <string>
#include <vector>

#include "kef/model.hpp"
#include "kef/types.hpp"

namespace kef {

struct Dataset {
  Matrix train;
  Matrix validation;  // may have 0 rows
  Matrix test;        // may have 0 rows
  std::vector<std::string> columns;
  ModelPtr truth;  // the exact density, for synthetic sources (in the transformed coordinates)
  std::string provenance;
  Index dim() const { return train.cols(); }
};

}  // namespace kef
