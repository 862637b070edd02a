#include "kef/model_rows.hpp"

#include "data_units_model.hpp"
#include "kef/conditional_sampling.hpp"
#include "kef/error.hpp"

namespace kef {

ModelRows::ModelRows(const SavedModel& saved) : model_(make_data_units_model(saved.model, saved.transform)) {
  conditional_ = model_->conditional();
  if (conditional_)
    roles_ = conditional_roles(saved, *conditional_);
  else
    log_z_ = model_->log_normalizer();
}

Index ModelRows::score_columns() const { return conditional_ ? conditional_->target_dim() : model_->dim(); }

bool ModelRows::has_exact_normalizer() const {
  if (!conditional_) return log_z_.has_value();
  // A conditional model answers per x; with no rows it says whether it knows Z(x) at all.
  return conditional_->log_normalizer(Matrix(0, conditional_->input_dim())).has_value();
}

std::string ModelRows::quantity(bool normalized) const {
  return std::string(normalized ? "log p" : "log p~") + (conditional_ ? "(y | x)" : "(x)");
}

Vector ModelRows::log_density(const Matrix& rows, bool normalized) const {
  if (!conditional_) {
    Vector v = model_->log_unnormalized(rows);
    if (normalized) {
      if (!log_z_) throw Error("ModelRows: the model has no exact normaliser");
      v.array() -= *log_z_;
    }
    return v;
  }
  const Matrix X = roles_.inputs_of(rows);
  Vector v = conditional_->log_unnormalized(X, roles_.targets_of(rows));
  if (normalized) {
    const std::optional<Vector> log_z = conditional_->log_normalizer(X);
    if (!log_z) throw Error("ModelRows: the model has no exact normaliser");
    v -= *log_z;
  }
  return v;
}

Matrix ModelRows::score(const Matrix& rows) const {
  if (!conditional_) return model_->score(rows);
  return conditional_->score(roles_.inputs_of(rows), roles_.targets_of(rows));
}

}  // namespace kef
