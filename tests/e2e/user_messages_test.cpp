// What a new user meets on the command line: `kef score` and `kef sample` write a CSV file for a .csv
// name (with a header naming the columns), a density plot asked of data it cannot draw says so on
// stderr, and the density plot's axes carry the data's column names.
#include <cairo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::kef_cmd;
using test::write_file;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Rows of two correlated columns named `a` and `b`.
std::string csv_text(const std::string& a, const std::string& b, int rows = 120) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream s;
  s.precision(17);
  s << a << "," << b << "\n";
  for (int i = 0; i < rows; ++i) {
    const double u = z(rng), v = z(rng);
    s << 5.0 + 2.0 * u << "," << 0.5 * u + v << "\n";
  }
  return s.str();
}

// A pipeline fitting a Gaussian to `data` (a CSV file), with `output` appended to [output].
std::string pipeline(const fs::path& data, const std::string& output) {
  return "schema_version = 1\n[data]\ntype = \"file\"\npath = \"" + data.string() +
         "\"\nsplit = { test = 20, validation = 0 }\n[[model]]\nname = \"g\"\n[model.estimator]\n"
         "type = \"gaussian_fit\"\n[output]\n" + output;
}

// The lines of a CSV file, split at commas.
std::vector<std::vector<std::string>> csv_cells(const fs::path& path) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(read_text(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream fields(line);
    std::string cell;
    while (std::getline(fields, cell, ',')) cells.push_back(cell);
    out.push_back(cells);
  }
  return out;
}

TEST(UserMessages, ScoreAndSampleWriteACsvFileForACsvName) {
  const fs::path dir = test::temp_dir("msg-csv");
  const fs::path data = write_file(dir, "d.csv", csv_text("height", "width"));
  const fs::path cfg = write_file(dir, "p.toml", pipeline(data, ""));
  ASSERT_EQ(kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "run").string()).status, 0);
  const std::string model = (dir / "run" / "models" / "g").string();

  ASSERT_EQ(kef_cmd("score " + model + " --data " + data.string() + " --quiet --out " + (dir / "s.npy").string()).status,
            0);
  const auto r = kef_cmd("score " + model + " --data " + data.string() + " --quiet --out " + (dir / "s.csv").string() +
                         " 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto cells = csv_cells(dir / "s.csv");
  ASSERT_EQ(cells.size(), 121u);
  EXPECT_EQ(cells[0], (std::vector<std::string>{"log_p_tilde", "score_height", "score_width"}));
  // The same numbers as the .npy file, bit for bit (17 significant digits read back exactly).
  const Matrix npy = read_npy(dir / "s.npy");
  for (Index i = 0; i < npy.rows(); ++i)
    for (Index j = 0; j < npy.cols(); ++j)
      ASSERT_EQ(std::strtod(cells[static_cast<std::size_t>(i + 1)][static_cast<std::size_t>(j)].c_str(), nullptr),
                npy(i, j))
          << "row " << i << ", column " << j;
  const auto n = kef_cmd("score " + model + " --data " + data.string() + " --normalize --quiet --out " +
                         (dir / "n.csv").string() + " 2>&1");
  ASSERT_EQ(n.status, 0) << n.output;
  EXPECT_EQ(csv_cells(dir / "n.csv")[0][0], "log_p");

  const auto s = kef_cmd("sample " + model + " -n 7 --quiet --out " + (dir / "x.csv").string() + " 2>&1");
  ASSERT_EQ(s.status, 0) << s.output;
  const auto drawn = csv_cells(dir / "x.csv");
  ASSERT_EQ(drawn.size(), 8u);
  EXPECT_EQ(drawn[0], (std::vector<std::string>{"height", "width"}));
}

TEST(UserMessages, APlotOfDataWithMoreThanTwoColumnsIsReportedOnStderr) {
  const fs::path dir = test::temp_dir("msg-plot-dim");
  const fs::path cfg = write_file(dir, "p.toml",
                                  "schema_version = 1\n[data]\ntype = \"synthetic/gaussian\"\ndim = 5\nn = 200\n"
                                  "[[model]]\nname = \"g\"\n[model.estimator]\ntype = \"gaussian_fit\"\n"
                                  "[output]\nplot = true\n");
  const auto r = kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "out").string() + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "warning: " + cfg.string())) << r.output;
  EXPECT_TRUE(contains(r.output, "output.plot: the data has 5 columns")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "density.png"));
}

struct Png {
  int width = 0, height = 0, stride = 0;
  std::vector<unsigned char> bytes;
};

Png read_png(const fs::path& path) {
  Png p;
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(s);
    p.width = cairo_image_surface_get_width(s);
    p.height = cairo_image_surface_get_height(s);
    p.stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    p.bytes.assign(data, data + static_cast<std::size_t>(p.stride) * static_cast<std::size_t>(p.height));
  }
  cairo_surface_destroy(s);
  return p;
}

// The same data under two pairs of column names: the figures differ, and only in the axis titles,
// under the panel (x) and at the figure's left edge (y).
TEST(UserMessages, TheDensityPlotsAxesAreTitledWithTheColumnNames) {
  const fs::path dir = test::temp_dir("msg-plot-axes");
  std::vector<Png> pngs;
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"a", "b"}, {"waiting_minutes", "eruption_length"}}) {
    const fs::path data = write_file(dir, a + ".csv", csv_text(a, b));
    const fs::path cfg = write_file(dir, a + ".toml", pipeline(data, "plot = true\nplot_grid = 20\n"));
    const fs::path out = dir / ("out-" + a);
    const auto r = kef_cmd("run " + cfg.string() + " --quiet --output " + out.string() + " 2>&1");
    ASSERT_EQ(r.status, 0) << r.output;
    if (contains(read_text(out / "log.txt"), "font")) GTEST_SKIP() << "no font: the figure has no text";
    pngs.push_back(read_png(out / "density.png"));
  }
  const Png &p = pngs[0], &q = pngs[1];
  ASSERT_GT(p.width, 0);
  ASSERT_EQ(p.width, q.width);
  ASSERT_EQ(p.height, q.height);
  int differing = 0, leftmost = p.width;
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x) {
      const std::size_t at = static_cast<std::size_t>(y) * static_cast<std::size_t>(p.stride) + 4u * static_cast<std::size_t>(x);
      if (std::equal(p.bytes.begin() + static_cast<std::ptrdiff_t>(at), p.bytes.begin() + static_cast<std::ptrdiff_t>(at + 4),
                     q.bytes.begin() + static_cast<std::ptrdiff_t>(at)))
        continue;
      ++differing;
      leftmost = std::min(leftmost, x);
    }
  EXPECT_GT(differing, 50);
  // The y title is at the figure's left edge.
  EXPECT_LT(leftmost, 25);
}

// --memory-limit-gb of score, eval and sample sets the limit a pipeline's `memory_limit_gb` sets: a
// limit below an up-front estimate refuses the command before any work, naming what needs the memory.
TEST(MemoryLimit, ScoreEvalAndSampleTakeTheLimitOfAPipeline) {
  const fs::path dir = test::temp_dir("msg-memory");
  const fs::path data = write_file(dir, "d.csv", csv_text("a", "b"));
  const fs::path cfg = write_file(dir, "p.toml", pipeline(data, ""));
  ASSERT_EQ(kef_cmd("run " + cfg.string() + " --quiet --output " + (dir / "run").string()).status, 0);
  const std::string model = (dir / "run" / "models" / "g").string();
  const std::string tiny = " --memory-limit-gb 1e-7 --quiet";
  const auto s = kef_cmd("sample " + model + " -n 100000 --out " + (dir / "x.npy").string() + tiny + " 2>&1");
  EXPECT_EQ(s.status, 2) << s.output;
  EXPECT_TRUE(contains(s.output, "-n 100000: needs an estimated")) << s.output;
  EXPECT_FALSE(fs::exists(dir / "x.npy"));
  const auto e = kef_cmd("eval " + model + " --data " + data.string() + " --type ksd" + tiny + " 2>&1");
  EXPECT_EQ(e.status, 2) << e.output;
  EXPECT_TRUE(contains(e.output, "bootstrap_draws: needs an estimated")) << e.output;
  EXPECT_TRUE(contains(e.output, "the memory limit (100 bytes)")) << e.output;
  const auto sc = kef_cmd("score " + model + " --data " + data.string() + " --out " + (dir / "s.npy").string() +
                          tiny + " 2>&1");
  EXPECT_EQ(sc.status, 2) << sc.output;
  EXPECT_TRUE(contains(sc.output, "needs an estimated")) << sc.output;
  // A limit above the estimates changes nothing.
  const auto ok = kef_cmd("eval " + model + " --data " + data.string() +
                          " --type ksd --set bootstrap_draws=0 --memory-limit-gb 100 --quiet 2>&1");
  EXPECT_EQ(ok.status, 0) << ok.output;
}

// HMC counts a model's numerical error inside a trajectory as a divergence, but an exception of a plugin
// component (here a kernel that throws, as kef::DataError, std::runtime_error or a class of its own) is
// that plugin's error: exit 2 naming it, no samples written.
TEST(HmcPluginError, AThrowingKernelIsReportedNotCountedAsADivergence) {
  const fs::path dir = test::temp_dir("msg-hmc-plugin");
  Matrix Z(3, 2);
  Z << 0.0, 0.0, 1.0, 0.5, -1.0, 0.2;
  for (const std::string error : {"kef", "std", "custom"}) {
    const fs::path model = dir / ("lite-" + error);
    fs::create_directories(model);
    write_file(model, "model.toml",
               "type = \"lite\"\ndim = 2\ninducing_points = 3\nlambda_alpha = 0.001\n[kernel]\n"
               "type = \"fixture_throwing\"\nerror = \"" + error + "\"\n[base_measure]\ntype = \"gaussian\"\n"
               "std = 4.0\nmean = [0.0]\n");
    write_npy(model / "inducing_points.npy", Z);
    write_npy(model / "alpha.npy", Vector(Vector::Constant(3, 0.1)));
    const fs::path out = dir / "x.npy";
    const auto r = kef_cmd("sample " + model.string() + " -n 5 --quiet --out " + out.string() + " --path " +
                           KEF_THROWING_FIXTURE_DIR + " 2>&1");
    EXPECT_EQ(r.status, 2) << error << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "fixture_throwing: kernel gram failed on purpose")) << r.output;
    EXPECT_FALSE(contains(r.output, "divergen")) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
}

}  // namespace
}  // namespace kef
