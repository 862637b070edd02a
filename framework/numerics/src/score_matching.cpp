#include "kef/score_matching.hpp"

#include <cmath>
#include <string>
#include <tuple>

#include "kef/distributed_reduce.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {
constexpr Index kEvalChunk = 2048;

// Per-row sums over fixed chunks, reduced in chunk order: identical for any thread count.
template <class RowTerm>
double chunked_mean(const Matrix& X, const Context& context, const std::vector<bool>* rows, RowTerm term,
                    Index* used_out) {
  const Index n = X.rows();
  const Index chunks = (n + kEvalChunk - 1) / kEvalChunk;
  // One partial per chunk (max_groups = chunks), folded in chunk order.
  struct Sum {
    double total = 0;
    Index used = 0;
  };
  const Sum sum = ordered_reduce(
      chunks, context, [] { return Sum(); },
      [&](Index c, Sum& part) {
        const Index begin = c * kEvalChunk, len = std::min(kEvalChunk, n - begin);
        const Vector v = term(X.middleRows(begin, len), begin);
        double s = 0;
        for (Index i = 0; i < len; ++i) {
          if (rows && !(*rows)[static_cast<std::size_t>(begin + i)]) continue;
          s += v[i];
          ++part.used;
        }
        part.total += s;
      },
      [](Sum& into, const Sum& part) {
        into.total += part.total;
        into.used += part.used;
      },
      std::max<Index>(chunks, 1), [](Sum& s) { return std::tie(s.total, s.used); });
  const double total = sum.total;
  const Index used = sum.used;
  if (used_out) *used_out = used;
  if (used == 0) throw DataError("score-based metric: no rows to evaluate");
  return total / static_cast<double>(used);
}

void check_rows_finite(const Matrix& m, Index offset, const char* what, const std::vector<bool>* rows) {
  for (Index i = 0; i < m.rows(); ++i) {
    if (rows && !(*rows)[static_cast<std::size_t>(offset + i)]) continue;
    for (Index d = 0; d < m.cols(); ++d)
      if (!std::isfinite(m(i, d)))
        throw NumericalError(std::string(what) + " is not finite at data row " + std::to_string(offset + i) +
                             " (coordinate " + std::to_string(d) + ", value " + std::to_string(m(i, d)) +
                             ")");
  }
}
}  // namespace

double score_matching_objective(const Matrix& score, const Matrix& laplacian, std::string_view where) {
  if (score.rows() == 0) throw DataError(std::string(where) + ": no rows");
  check_finite(score, std::string(where) + ": score");
  check_finite(laplacian, std::string(where) + ": Hessian diagonal");
  return (laplacian.array() + 0.5 * score.array().square()).rowwise().sum().mean();
}

double score_matching_loss(const Model& model, const Matrix& X, const Context& context,
                           const std::vector<bool>* rows) {
  return chunked_mean(
      X, context, rows,
      [&](const auto& block, Index offset) {
        Matrix s, l;
        model.score_and_laplacian(block, s, l);
        check_rows_finite(s, offset, "the model's score", rows);
        check_rows_finite(l, offset, "the model's Hessian diagonal", rows);
        return Vector((l.array() + 0.5 * s.array().square()).rowwise().sum());
      },
      nullptr);
}

double conditional_score_matching_loss(const ConditionalModel& model, const Matrix& X, const Matrix& Y,
                                       const Context& context) {
  if (X.rows() != Y.rows())
    throw Error("conditional score matching: " + std::to_string(X.rows()) + " inputs x for " +
                std::to_string(Y.rows()) + " targets y");
  return chunked_mean(
      X, context, nullptr,
      [&](const auto& block, Index offset) {
        Matrix s, l;
        model.score_and_laplacian(block, Y.middleRows(offset, block.rows()), s, l);
        check_rows_finite(s, offset, "the model's score in y", nullptr);
        check_rows_finite(l, offset, "the model's second derivatives in y", nullptr);
        return Vector((l.array() + 0.5 * s.array().square()).rowwise().sum());
      },
      nullptr);
}

double fisher_divergence(const Model& model, const Model& truth, const Matrix& X, const Context& context,
                         const std::vector<bool>* rows) {
  return chunked_mean(
      X, context, rows,
      [&](const auto& block, Index offset) {
        Matrix s = model.score(block);
        Matrix t = truth.score(block);
        check_rows_finite(s, offset, "the model's score", rows);
        check_rows_finite(t, offset, "the true score", rows);
        return Vector(0.5 * (s - t).rowwise().squaredNorm());
      },
      nullptr);
}

}  // namespace kef
