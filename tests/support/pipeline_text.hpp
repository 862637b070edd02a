#pragma once
// The TOML text of a small test pipeline, built from defaults and setters instead of written out in
// each test.
#include <string>
#include <vector>

#include "kef/types.hpp"

namespace kef::test {

// By default: schema_version = 1, seed = 3, [data] 1200 rows of synthetic/banana split 200 test and no
// validation rows, and one lite model named "lite" (60 inducing points, Gaussian kernel σ = 1.5,
// Gaussian base measure std = 4.0); no evaluators. str() writes the header, [data], the models, the
// [plugins] paths, the [[evaluate]] tables and the appended text, in that order, with every key on a
// line of its own (so a test can replace one line of the text to make a bad pipeline).
class PipelineText {
 public:
  PipelineText& seed(int seed);
  PipelineText& no_seed();
  // [data] type = "synthetic/banana" with n rows and split = { test = ..., validation = ... }.
  PipelineText& banana(Index n, Index test, Index validation = 0);
  // [data]'s body, verbatim (without the [data] line).
  PipelineText& data(const std::string& body);
  // Further lines of [data] (standardize = true, ...).
  PipelineText& data_keys(const std::string& keys);
  // Adds a lite model (the default model is written only when none is added); estimator_keys are
  // further lines of [model.estimator].
  PipelineText& lite(const std::string& name, Index inducing_points, double sigma = 1.5, double base_std = 4.0,
                     const std::string& estimator_keys = "");
  // The same with the [model.base_measure] table's body given verbatim.
  PipelineText& lite(const std::string& name, Index inducing_points, double sigma, const std::string& base_measure);
  // Adds a [[model]] whose body (the text after the [[model]] line) is given verbatim.
  PipelineText& model(const std::string& body);
  // Adds an [[evaluate]] table of this type; keys are further lines of it.
  PipelineText& evaluate(const std::string& type, const std::string& keys = "");
  // Adds a directory to [plugins] paths.
  PipelineText& plugin_path(const std::string& dir);
  // Text written last, verbatim (an [output] or [tune] table, top-level keys go in header()).
  PipelineText& append(const std::string& toml);
  // Top-level lines written after the seed, before [data].
  PipelineText& header(const std::string& toml);

  std::string str() const;
  operator std::string() const { return str(); }

 private:
  bool has_seed_ = true;
  int seed_ = 3;
  std::string header_;
  std::string data_ = banana_body(1200, 200, 0);
  std::vector<std::string> models_;
  std::vector<std::string> evaluators_;
  std::vector<std::string> plugin_paths_;
  std::string tail_;

  static std::string banana_body(Index n, Index test, Index validation);
};

// A double as TOML writes it in the tests: the shortest text that reads back as the same value, with
// ".0" on whole numbers (4.0, 1.5, 0.9, 1e-05).
std::string toml_number(double value);

}  // namespace kef::test
