#include "kef/conditional_sampling.hpp"

#include "kef/error.hpp"
#include "kef/facets.hpp"
#include "kef/pipeline.hpp"

namespace kef {

ColumnRoles conditional_roles(const SavedModel& saved, const ConditionalModel& model) {
  if (saved.transform.roles.conditional()) return saved.transform.roles;
  ColumnRoles r;
  for (Index j = 0; j < model.target_dim(); ++j) r.targets.push_back(model.input_dim() + j);
  return r;
}

std::string conditional_columns_text(const SavedModel& saved, const ConditionalModel* model) {
  const std::string t = column_roles_text(saved.transform, saved.model->dim());
  if (!t.empty() || model == nullptr) return t;
  return "inputs x the first " + std::to_string(model->input_dim()) + ", targets y the last " +
         std::to_string(model->target_dim());
}

ConditionalDraws sample_conditional(const SavedModel& saved, const Matrix& given, Index n, Context& context,
                                    const std::string& given_label, const std::string& n_label,
                                    const std::string& model_label) {
  if (n < 1) throw ConfigError(n_label + " " + std::to_string(n) + ": expected a positive number of samples");
  const ConditionalModel* c = saved.model->conditional();
  const FacetSet facets = saved.model->facets();
  if (c == nullptr)
    throw ConfigError(given_label + ": " + model_label + " (" + saved.model->type_name() +
                      ") is a density of whole rows, not a conditional density p(y | x); drop " +
                      given_label.substr(0, given_label.find(' ')));
  if (!facets.has(Facet::ConditionalSampler))
    throw ConfigError(given_label + ": " + model_label + " (" + saved.model->type_name() +
                      ") has no conditional sampler (it has: " + facets.text() + ")");
  const Index Dx = c->input_dim(), Dy = c->target_dim();
  const ColumnRoles roles = conditional_roles(saved, *c);
  if (given.cols() != Dx)
    throw DataError(given_label + ": has " + std::to_string(given.cols()) + " columns, " + model_label +
                    " takes its " + std::to_string(Dx) + " input columns x (expected " + std::to_string(Dx) +
                    " columns, got " + std::to_string(given.cols()) +
                    "; columns of the model: " + conditional_columns_text(saved, c) + ")");
  if (given.rows() < 1) throw DataError(given_label + ": has no rows");
  if (static_cast<double>(given.rows()) * static_cast<double>(n) > 1e9)
    throw ConfigError(n_label + " " + std::to_string(n) + " with " + std::to_string(given.rows()) +
                      " rows in " + given_label + ": more than 10^9 draws");
  // Each x repeated n times, in data units; to the model's coordinates through the full rows (the
  // transform does not mix inputs and targets, so the target columns' zeros leave x's block exact).
  const Index rows = given.rows() * n;
  Matrix Xrep(rows, Dx);
  for (Index i = 0; i < given.rows(); ++i) Xrep.middleRows(i * n, n) = given.row(i).replicate(n, 1);
  const Matrix Xm = roles.inputs_of(saved.transform.to_model(roles.join(Xrep, Matrix::Zero(rows, Dy))));
  const Matrix Ym = c->sample(Xm, context.rng());
  // Back to data units; the x columns are the given rows themselves (not a round trip of them).
  const Matrix Ydata = roles.targets_of(saved.transform.to_data(roles.join(Xm, Ym)));
  ConditionalDraws out;
  out.rows = roles.join(Xrep, Ydata);
  out.approximate = facets.has(Facet::ApproximateSampler);
  if (!out.rows.allFinite())
    throw NumericalError(given_label + ": " + model_label + " drew non-finite values");
  return out;
}

}  // namespace kef
