#pragma once
// A saved model evaluated on rows of its data, in data units (the Jacobian of the model's coordinates
// included): what `kef score` and the Python package's Model.log_density / Model.score compute. A density
// of whole rows gives log p~(x) and ∇ₓ log p~(x); a conditional density p(y | x) takes the same whole
// rows, x and y being the columns its roles name, and gives log p~(y | x) and ∇_y log p~(y | x).
#include <optional>
#include <string>

#include "kef/column_roles.hpp"
#include "kef/conditional_model.hpp"
#include "kef/model.hpp"
#include "kef/model_archive.hpp"

namespace kef {

class ModelRows {
 public:
  explicit ModelRows(const SavedModel& saved);

  bool conditional() const { return conditional_ != nullptr; }
  Index row_columns() const { return model_->dim(); }
  // Columns of score(): D, or the number of target columns of a conditional model.
  Index score_columns() const;
  // Whether log_density(rows, true) can subtract an exact normaliser (log Z, or log Z(x) per row).
  bool has_exact_normalizer() const;
  // "log p~(x)" / "log p(y | x)" for messages.
  std::string quantity(bool normalized) const;

  // One value per row; `normalized` needs has_exact_normalizer() (Error otherwise: callers check first).
  Vector log_density(const Matrix& rows, bool normalized) const;
  Matrix score(const Matrix& rows) const;

 private:
  ModelPtr model_;  // in data units
  const ConditionalModel* conditional_ = nullptr;
  ColumnRoles roles_;
  std::optional<double> log_z_;  // the whole-row density's normaliser
};

}  // namespace kef
