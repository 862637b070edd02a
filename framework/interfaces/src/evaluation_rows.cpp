#include "kef/evaluation_rows.hpp"

#include "kef/error.hpp"

namespace kef {

KeySpec split_key(std::string doc) {
  return KeySpec::string("split", std::move(doc), std::string("test"))
      .one_of({"test", "validation", "train"});
}

namespace {

void check_dimension(const std::string& who, const Model& model, const std::string& name, const Matrix& X) {
  if (X.cols() != model.dim())
    throw DataError(who + ": model " + name + " has dimension " + std::to_string(model.dim()) +
                    ", the data " + std::to_string(X.cols()));
}

}  // namespace

const Matrix& evaluation_rows(const EvalInput& in, const Config& cfg, const std::string& who,
                              Index min_rows) {
  return evaluation_rows(in, cfg.string("split"), KeySites(cfg), who, min_rows);
}

const Matrix& evaluation_rows(const EvalInput& in, const std::string& split, const KeySites& sites,
                              const std::string& who, Index min_rows) {
  const Matrix& X = split == "test"         ? in.data.test
                    : split == "validation" ? in.data.validation
                                            : in.data.train;
  if (X.rows() == 0) sites.fail("split", who + ": the " + split + " split is empty");
  if (X.rows() < min_rows) {
    const std::string rows = X.rows() == 1 ? "1 row" : std::to_string(X.rows()) + " rows";
    sites.fail("split", who + ": the " + split + " split has " + rows + "; it needs at least " +
                            std::to_string(min_rows));
  }
  check_dimension(who, in.model, in.model_name, X);
  if (in.other) check_dimension(who, *in.other, in.other_name, X);
  return X;
}

}  // namespace kef
