#pragma once
// The data a pipeline fits and evaluates on: train / validation / test splits of one source.
#include <memory>
#include <string>
#include <vector>

#include "kef/data_transform.hpp"
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
  // Data units -> the coordinates of train/validation/test ([data] standardize or whiten), with the
  // column names; saved with every model so that saved models are used in data units.
  DataTransform transform;
  Index dim() const { return train.cols(); }
};

}  // namespace kef
