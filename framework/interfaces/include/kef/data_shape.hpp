#pragma once
// What a pipeline knows before its first fit: the sizes of the splits, the data's dimension, and what
// the fitted models will be able to do. Components check themselves against it (Estimator::check,
// Evaluator::check, Evaluator::check_model) so that `kef validate` and the start of `kef run` refuse a
// configuration that could only fail after minutes of fitting.
#include <optional>
#include <string>
#include <string_view>

#include "kef/facets.hpp"
#include "kef/types.hpp"

namespace kef {

struct DataShape {
  Index dim = -1;
  Index train_rows = 0;
  Index validation_rows = 0;
  Index test_rows = 0;
  bool has_truth = false;  // the source knows the exact density
  Index target_dim = 0;    // columns of y ([data] targets); 0: unconditional data

  // Rows of "train", "validation" or "test"; -1 for any other name.
  Index rows(std::string_view split) const {
    if (split == "train") return train_rows;
    if (split == "validation") return validation_rows;
    if (split == "test") return test_rows;
    return -1;
  }
};

// One model an evaluator will run on, as the plan knows it before fitting.
struct PlannedModel {
  std::string name;
  std::optional<FacetSet> facets;  // what the fitted model will have; empty: the estimator does not say
};

}  // namespace kef
