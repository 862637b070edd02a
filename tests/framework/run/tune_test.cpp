// Bandwidths and tuning: `sigma = "median"` (the value and its provenance in
// results.json, against a brute-force median), and the [tune] grid search (every candidate's score,
// the best one chosen and fitted exactly as a run with its values would fit it, errors before fitting).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "kef/random.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::read_json;
using test::write_file;
using test::kef_cmd;
using Result = test::CommandResult;
using Json = nlohmann::json;

using test::replaced;

TEST(MedianSigma, TheChosenValueIsTheMedianDistanceOfTheTrainingRowsAndIsRecorded) {
  const fs::path dir = test::temp_dir("median-sigma");
  // 300 rows in data units (scale 40), the first 250 the training split (shuffle = false).
  RandomStream rng(5, "median");
  const Matrix X = 40.0 * rng.normal_matrix(300, 2);
  std::ostringstream csv;
  csv.precision(17);
  csv << "a,b\n";
  for (Index n = 0; n < 300; ++n) csv << X(n, 0) << "," << X(n, 1) << "\n";
  write_file(dir, "data.csv", csv.str());
  const std::string cfg = R"(schema_version = 1
[data]
type = "file"
path = "data.csv"
shuffle = false
split = { test = 50 }
[[model]]
name = "m"
[model.estimator]
type = "lite"
inducing_points = 30
[model.kernel]
type = "gaussian"
sigma = "median"
[model.base_measure]
type = "gaussian"
std = 100.0
)";
  const fs::path p = write_file(dir, "p.toml", cfg);
  Result v = kef_cmd("validate " + p.string());
  ASSERT_EQ(v.status, 0) << v.output;
  Result r = kef_cmd("run " + p.string() + " --quiet --output " + (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  // Brute force: every pair of the 250 training rows, sorted.
  std::vector<double> d;
  for (Index i = 0; i < 250; ++i)
    for (Index j = i + 1; j < 250; ++j) d.push_back((X.row(i) - X.row(j)).norm());
  std::sort(d.begin(), d.end());
  ASSERT_EQ(d.size() % 2, 1u);  // 31125 pairs: the middle one
  const double median = d[d.size() / 2];
  const Json j = read_json(dir / "out" / "results.json");
  const Json& chosen = j["models"]["m"]["chosen"]["model[0].kernel.sigma"];
  EXPECT_NEAR(chosen["value"].get<double>(), median, 1e-12 * median);
  EXPECT_NE(chosen["rule"].get<std::string>().find("median heuristic"), std::string::npos);
  EXPECT_NE(chosen["rule"].get<std::string>().find("first 250 training rows"), std::string::npos);
  EXPECT_EQ(j["config"]["model"][0]["kernel"]["sigma"].get<double>(), chosen["value"].get<double>());
  std::ifstream log(dir / "out" / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("model[0].kernel.sigma = "), std::string::npos) << text;

  Result bad =
      kef_cmd("validate " + write_file(dir, "bad.toml", replaced(cfg, "\"median\"", "\"mean\"")).string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("model[0].kernel.sigma: expected a number or \"median\""), std::string::npos)
      << bad.output;
}

// A lite model tuned over σ and λ_α on 1200 banana rows with a validation split.
const std::string kTune = test::PipelineText()
                              .banana(1200, 200, 200)
                              .lite("lite", 60, 1.0)
                              .evaluate("score_matching_loss")
                              .append("[tune]\n[tune.grid.kernel]\nsigma = [0.3, 1.0, 3.0]\n"
                                      "[tune.grid.estimator]\nlambda_alpha = [1e-4, 1e-2]\n");

TEST(Tune, EveryCandidateIsScoredAndTheBestIsFittedAsARunWithItsValues) {
  const fs::path dir = test::temp_dir("tune");
  Result r = kef_cmd("run " + write_file(dir, "p.toml", kTune).string() + " --quiet --output " +
                     (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Json j = read_json(dir / "out" / "results.json");
  const Json& t = j["tuning"];
  EXPECT_EQ(t["model"], "lite");
  EXPECT_EQ(t["metric"], "score_matching_loss");
  EXPECT_EQ(t["goal"], "min");
  EXPECT_EQ(t["evaluator"]["split"], "validation");
  ASSERT_EQ(t["candidates"].size(), 6u);
  std::size_t argmin = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(t["candidates"][i]["score"].is_number()) << t["candidates"][i];
    if (t["candidates"][i]["score"].get<double>() < t["candidates"][argmin]["score"].get<double>())
      argmin = i;
  }
  // Every (lambda_alpha, sigma) pair appears once.
  std::set<std::pair<double, double>> pairs;
  for (const auto& c : t["candidates"])
    pairs.insert(
        {c["values"]["estimator.lambda_alpha"].get<double>(), c["values"]["kernel.sigma"].get<double>()});
  EXPECT_EQ(pairs.size(), 6u);
  EXPECT_EQ(t["chosen_index"], argmin);
  EXPECT_EQ(t["chosen"], t["candidates"][argmin]["values"]);
  const double sigma = t["chosen"]["kernel.sigma"].get<double>();
  const double lambda = t["chosen"]["estimator.lambda_alpha"].get<double>();
  EXPECT_EQ(j["config"]["model"][0]["kernel"]["sigma"].get<double>(), sigma);
  EXPECT_EQ(j["config"]["model"][0]["estimator"]["lambda_alpha"].get<double>(), lambda);
  EXPECT_NE(r.output.find("tune lite (score_matching_loss, lowest wins, on the validation split)"),
            std::string::npos)
      << r.output;

  // The kept fit is the one a plain run with the chosen values gives: identical test metrics.
  std::ostringstream set;
  set.precision(17);
  set << " --set model.lite.kernel.sigma=" << sigma << " --set model.lite.estimator.lambda_alpha=" << lambda;
  std::string plain = kTune;
  plain = plain.substr(0, plain.find("[tune]"));
  Result p = kef_cmd("run " + write_file(dir, "plain.toml", plain).string() + set.str() +
                     " --quiet --output " + (dir / "plain").string());
  ASSERT_EQ(p.status, 0) << p.output;
  const Json jp = read_json(dir / "plain" / "results.json");
  EXPECT_EQ(jp["models"]["lite"]["metrics"]["score_matching_loss"],
            j["models"]["lite"]["metrics"]["score_matching_loss"]);
}

TEST(Tune, LogLikelihoodScoresPickTheHighest) {
  const fs::path dir = test::temp_dir("tune-ll");
  const std::string cfg =
      std::string(kTune) + "[tune.evaluate]\ntype = \"log_likelihood\"\nmethod = \"quadrature\"\ngrid = 64\n";
  Result r = kef_cmd("run " + write_file(dir, "p.toml", cfg).string() + " --quiet --output " +
                     (dir / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Json t = read_json(dir / "out" / "results.json")["tuning"];
  EXPECT_EQ(t["goal"], "max");
  std::size_t argmax = 0;
  for (std::size_t i = 0; i < t["candidates"].size(); ++i)
    if (t["candidates"][i]["score"].get<double>() > t["candidates"][argmax]["score"].get<double>())
      argmax = i;
  EXPECT_EQ(t["chosen_index"], argmax);
}

TEST(Tune, BadSearchesFailBeforeAnyFit) {
  const fs::path dir = test::temp_dir("tune-bad");
  struct Case {
    std::string from, to, expect;
  };
  const Case cases[] = {
      {"[tune]\n", "[tune]\nmodel = \"other\"\n", "tune.model: no [[model]] named \"other\""},
      {"sigma = [0.3, 1.0, 3.0]", "sigma = [0.3, -1.0]", "kernel.sigma"},
      {"[tune.grid.estimator]", "[tune.grid.evaluate]",
       "tune.grid.evaluate: expected a table named estimator"},
      {"validation = 200", "validation = 0", "tune.evaluate: the validation split is empty"},
      {"[tune]\n", "[tune]\nmax_candidates = 5\n", "has 6 candidates, more than max_candidates = 5"},
      {"lambda_alpha = [1e-4, 1e-2]", "lambda_alpha = [1e-4, 1e-2]\n[tune.evaluate]\ntype = \"fssd\"",
       "tuning scores with score_matching_loss or log_likelihood"},
      {"[tune.grid.estimator]\nlambda_alpha = [1e-4, 1e-2]",
       "[tune.grid.estimator]\ninducing_points = [60, 5000]", "inducing points but only"},
  };
  for (const auto& c : cases) {
    const fs::path p = write_file(dir, "p.toml", replaced(kTune, c.from, c.to));
    Result v = kef_cmd("validate " + p.string());
    EXPECT_EQ(v.status, 2) << c.to << ": " << v.output;
    EXPECT_NE(v.output.find(c.expect), std::string::npos) << c.to << ": " << v.output;
    Result r = kef_cmd("run " + p.string() + " --output " + (dir / "out").string());
    EXPECT_EQ(r.status, 2) << c.to << ": " << r.output;
    EXPECT_EQ(r.output.find("tune lite ["), std::string::npos) << "no candidate may be fitted: " << r.output;
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
}

}  // namespace
}  // namespace kef
