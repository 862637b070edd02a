// `kef sample MODEL_DIR --given X -n N` (framework/cli/sample_given.cpp) on a saved ε-KDE model fitted on
// standardised data whose target column comes first: N draws of y per row of X, written as full rows in
// the data's column order with x exactly the given row; the draws are in data units, and their mean per
// x matches the model's conditional mean (by quadrature of its density in y); the same seed gives the
// same file for 1 and 2 threads. Bad input exits 2 with a message naming the problem: X with the wrong
// column count (the file, the expected and the actual count), --given for an unconditional model, a
// conditional model without --given, --given with --sampler.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "kef/conditional_model.hpp"
#include "kef/model_archive.hpp"
#include "kef/npy.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// y = 5 + 2 sin(x) + (0.3 + 0.2 |x|) ε as column "y", x ~ U(−3, 3) as column "x" (the target first).
std::string data_csv(Index n) {
  RandomStream rng(3, "sample-given");
  std::ostringstream os;
  os.precision(17);
  os << "y,x\n";
  for (Index i = 0; i < n; ++i) {
    const double x = -3.0 + 6.0 * rng.uniform();
    os << 5.0 + 2.0 * std::sin(x) + (0.3 + 0.2 * std::abs(x)) * rng.normal() << "," << x << "\n";
  }
  return os.str();
}

struct Fixture {
  fs::path dir;
  std::string model;
};

const Fixture& fitted() {
  static const Fixture f = [] {
    Fixture out{test::temp_dir("sample-given"), ""};
    test::write_file(out.dir, "data.csv", data_csv(300));
    const fs::path cfg = test::write_file(out.dir, "p.toml",
                                          "schema_version = 1\n[data]\ntype = \"file\"\npath = \"data.csv\"\n"
                                          "targets = [\"y\"]\nstandardize = true\n"
                                          "[[model]]\nname = \"e\"\n[model.estimator]\ntype = \"eps_kde\"\n"
                                          "epsilon = 0.3\nbandwidth = 0.25\n");
    // A model of whole rows (the unconditional gaussian_fit), from the same file without targets.
    const fs::path plain =
        test::write_file(out.dir, "plain.toml",
                         "schema_version = 1\n[data]\ntype = \"file\"\npath = \"data.csv\"\n"
                         "[[model]]\nname = \"k\"\n[model.estimator]\ntype = \"gaussian_fit\"\n");
    test::CommandResult r =
        test::kef_cmd("run " + cfg.string() + " --quiet --output " + (out.dir / "out").string());
    EXPECT_EQ(r.status, 0) << r.output;
    r = test::kef_cmd("run " + plain.string() + " --quiet --output " + (out.dir / "plain").string());
    EXPECT_EQ(r.status, 0) << r.output;
    out.model = (out.dir / "out" / "models" / "e").string();
    return out;
  }();
  return f;
}

TEST(SampleGiven, DrawsPerRowInDataUnitsWithTheGivenXAndTheModelsMean) {
  const Fixture& f = fitted();
  Matrix X(3, 1);
  X << -2.0, 0.5, 1.5;
  write_npy(f.dir / "x.npy", X);
  const Index n = 4000;
  const std::string out = (f.dir / "s.npy").string();
  test::CommandResult r = test::kef_cmd("sample " + f.model + " --given " + (f.dir / "x.npy").string() +
                                        " -n " + std::to_string(n) + " --seed 4 --threads 1 --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("exact conditional sampler"), std::string::npos) << r.output;
  const Matrix S = read_npy(out);
  ASSERT_EQ(S.rows(), 3 * n);
  ASSERT_EQ(S.cols(), 2);
  // The same seed on 2 threads: the same file.
  r = test::kef_cmd("sample " + f.model + " --given " + (f.dir / "x.npy").string() + " -n " +
                    std::to_string(n) + " --seed 4 --threads 2 --out " + (f.dir / "s2.npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_npy(f.dir / "s2.npy"), S);

  // The model's conditional mean and sd of y in data units, by quadrature of its density in the model's
  // coordinates (standardised; y_data = (y_model − offset) / scale).
  const SavedModel saved = load_saved_model(f.model, test::plugin_registry());
  const ConditionalModel& c = *saved.model->conditional();
  const double ax = saved.transform.matrix(1, 1), bx = saved.transform.offset[1];
  const double ay = saved.transform.matrix(0, 0), by = saved.transform.offset[0];
  for (Index i = 0; i < 3; ++i) {
    const auto block = S.middleRows(i * n, n);
    // x is the given row itself, in the data's second column; y the first.
    EXPECT_TRUE((block.col(1).array() == X(i, 0)).all()) << i;
    const Index G = 4001;
    Matrix grid(G, 1);
    for (Index g = 0; g < G; ++g) grid(g, 0) = -10.0 + 20.0 * g / (G - 1.0);
    const Vector lp = c.log_unnormalized(Matrix::Constant(G, 1, ax * X(i, 0) + bx), grid);
    double z = 0, m1 = 0, m2 = 0;
    for (Index g = 0; g < G; ++g) {
      const double w = std::exp(lp[g]), y = (grid(g, 0) - by) / ay;
      z += w;
      m1 += w * y;
      m2 += w * y * y;
    }
    const double mean = m1 / z, sd = std::sqrt(m2 / z - mean * mean);
    const double got = block.col(0).mean();
    // 4.5 standard errors of the sample mean of n independent draws.
    EXPECT_NEAR(got, mean, 4.5 * sd / std::sqrt(static_cast<double>(n))) << "x = " << X(i, 0);
    const double got_sd = std::sqrt((block.col(0).array() - got).square().sum() / (n - 1.0));
    EXPECT_NEAR(got_sd, sd, 0.1 * sd) << "x = " << X(i, 0);
  }
  // The data-units mean follows the truth's shape: 5 + 2 sin(x), roughly (ε-KDE smooths it).
  EXPECT_LT(S.middleRows(0, n).col(0).mean(), S.middleRows(2 * n, n).col(0).mean());
}

TEST(SampleGiven, BadInputExitsTwoNamingTheProblem) {
  const Fixture& f = fitted();
  write_npy(f.dir / "wide.npy", Matrix(Matrix::Zero(4, 2)));
  const std::string wide = (f.dir / "wide.npy").string(), out = (f.dir / "bad.npy").string();
  test::CommandResult r = test::kef_cmd("sample " + f.model + " --given " + wide + " -n 5 --out " + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--given " + wide + ": has 2 columns"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("expected 1 columns, got 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("inputs x [x], targets y [y]"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));

  Matrix nan_x(2, 1);
  nan_x << 0.0, std::nan("");
  write_npy(f.dir / "nan.npy", nan_x);
  r = test::kef_cmd("sample " + f.model + " --given " + (f.dir / "nan.npy").string() + " -n 5 --out " + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("nan.npy: row 1 (0-based)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("non-finite value"), std::string::npos) << r.output;

  // A conditional model without --given.
  r = test::kef_cmd("sample " + f.model + " -n 5 --out " + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("is a conditional density p(y | x)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--given X.npy"), std::string::npos) << r.output;

  // --given for a model of whole rows.
  write_npy(f.dir / "x1.npy", Matrix(Matrix::Zero(2, 1)));
  const std::string plain = (f.dir / "plain" / "models" / "k").string();
  r = test::kef_cmd("sample " + plain + " --given " + (f.dir / "x1.npy").string() + " -n 5 --out " + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("not a conditional density p(y | x); drop --given"), std::string::npos) << r.output;

  // --given does not combine with a target sampler.
  r = test::kef_cmd("sample " + f.model + " --given " + (f.dir / "x1.npy").string() +
                    " --sampler rwm -n 5 --out " + out);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("does not combine with --sampler"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace kef
