// Density figures: the grid against pointwise evaluation (the brute-force twin of the batched,
// parallel evaluation), clipping and error rules, the PNG's size and the colour of known cells, the
// 1-D normalisation, captions, and the montage.
#include <cairo.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>

#include "kef/constants.hpp"
#include "kef/density_plot.hpp"
#include "kef/error.hpp"
#include "kef/png_montage.hpp"
#include "png_reader.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

namespace fs = std::filesystem;

// log p~ given pointwise; rows are evaluated one by one, so its values cannot depend on batching.
class FunctionModel final : public Model {
 public:
  FunctionModel(Index dim, std::function<double(const Vector&)> f) : dim_(dim), f_(std::move(f)) {}
  Index dim() const override { return dim_; }
  std::string type_name() const override { return "test_function"; }
  Vector log_unnormalized(const Matrix& X) const override {
    Vector v(X.rows());
    for (Index i = 0; i < X.rows(); ++i) v[i] = f_(X.row(i).transpose());
    return v;
  }
  Matrix score(const Matrix& X) const override { return Matrix::Zero(X.rows(), X.cols()); }
  void score_and_laplacian(const Matrix& X, Matrix& s, Matrix& l) const override {
    s = score(X);
    l = Matrix::Zero(X.rows(), X.cols());
  }
  std::string describe() const override { return "test function model"; }

 private:
  Index dim_;
  std::function<double(const Vector&)> f_;
};

// A correlated Gaussian, log p~ = −½ (x − m)ᵀ A (x − m) + 2.
FunctionModel gaussian_2d() {
  return FunctionModel(2, [](const Vector& x) {
    const double a = x[0] - 0.3, b = x[1] + 0.2;
    return -0.5 * (1.5 * a * a + 2 * 0.4 * a * b + 0.8 * b * b) + 2.0;
  });
}

ModelPtr fit_lite(const Matrix& train) {
  Registry& reg = test::plugin_registry();
  auto kernel = reg.make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.0"), {});
  auto base = reg.make_base_measure(test::config_from("type = \"gaussian\"\nstd = 3.0"), {});
  auto est = reg.make_estimator(test::config_from("type = \"lite\"\ninducing_points = 60"),
                                EstimatorParts{kernel, base, &reg}, {});
  Context context = Context(5, 2).child("fit");
  FitReport report;
  Matrix empty(0, train.cols());
  FitInput in{train, empty, context, report};
  return est->fit(in);
}

Matrix banana_like(Index n, std::uint64_t seed) {
  RandomStream rng(seed, "data");
  Matrix X = rng.normal_matrix(n, 2);
  X.col(1) = X.col(1) * 0.5 + X.col(0).array().square().matrix() * 0.4;
  return X;
}

// Pointwise twin: every cell centre evaluated on its own, then max subtraction and clipping.
Matrix brute_force_grid(const Model& m, const PlotExtent& e, Index cells, double floor) {
  const double dx = (e.xmax - e.xmin) / cells, dy = (e.ymax - e.ymin) / cells;
  Matrix raw(cells, cells);
  for (Index r = 0; r < cells; ++r)
    for (Index c = 0; c < cells; ++c) {
      Matrix p(1, 2);
      p << e.xmin + (c + 0.5) * dx, e.ymin + (r + 0.5) * dy;
      raw(r, c) = m.log_unnormalized(p)[0];
    }
  const double max = raw.maxCoeff();
  return (raw.array() - max).max(floor).matrix();
}

TEST(DensityGrid, EqualsPointwiseEvaluationMinusTheMaximum) {
  // 97² = 9409 cells: several full batches and a partial one.
  const PlotExtent e{-3, 3.5, -2, 5};
  FunctionModel g = gaussian_2d();
  LogDensityGrid grid = log_density_grid(g, "gauss", e, 97, -9.0, Context(1, 3));
  ASSERT_EQ(grid.values.rows(), 97);
  ASSERT_EQ(grid.values.cols(), 97);
  // Row-by-row model: the values cannot depend on batching, so the twin must agree exactly.
  EXPECT_EQ((grid.values - brute_force_grid(g, e, 97, -9.0)).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(grid.values.maxCoeff(), 0.0);
  EXPECT_NEAR(grid.x[0], -3 + 0.5 * 6.5 / 97, 1e-15);
  EXPECT_NEAR(grid.y[96], 5 - 0.5 * 7.0 / 97, 1e-15);

  // A lite model evaluates batches with matrix products, whose summation order may differ between a
  // 1-row and a 2048-row product: values (|log p~| ≲ 50 here) may differ by a few ulp of the sum of
  // |terms| over M = 60 inducing points; 1e-9 allows that sum up to ~1e5.
  ModelPtr lite = fit_lite(banana_like(800, 1));
  LogDensityGrid lg = log_density_grid(*lite, "lite", e, 97, -9.0, Context(1, 2));
  EXPECT_LT((lg.values - brute_force_grid(*lite, e, 97, -9.0)).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_GT((lg.values.array() > -9.0).count(), 100) << "the figure must show some structure";
}

TEST(DensityGrid, DoesNotDependOnTheThreadCount) {
  ModelPtr lite = fit_lite(banana_like(800, 2));
  const PlotExtent e{-4, 4, -3, 5};
  LogDensityGrid one = log_density_grid(*lite, "lite", e, 150, -9.0, Context(1, 1));
  for (int threads : {2, 3, 8}) {
    LogDensityGrid many = log_density_grid(*lite, "lite", e, 150, -9.0, Context(1, threads));
    EXPECT_EQ((one.values - many.values).cwiseAbs().maxCoeff(), 0.0) << threads << " threads";
  }
}

TEST(DensityGrid, ClipsAtTheFloorAndDrawsOutsideABoundedSupportAsTheFloor) {
  // Uniform-plus-slope density on the unit square, −inf outside (like synthetic/square and cosine).
  FunctionModel bounded(2, [](const Vector& x) {
    if (std::abs(x[0]) > 1 || std::abs(x[1]) > 1) return -kInf;
    return 6.0 * x[0];  // spans 12 > 9: the left part is clipped too
  });
  const PlotExtent e{-2, 2, -2, 2};
  LogDensityGrid g = log_density_grid(bounded, "square", e, 40, -9.0, Context(1, 1));
  EXPECT_EQ(g.values.minCoeff(), -9.0);
  EXPECT_EQ(g.values.maxCoeff(), 0.0);
  for (Index r = 0; r < 40; ++r)
    for (Index c = 0; c < 40; ++c) {
      const bool inside = std::abs(g.x[c]) <= 1 && std::abs(g.y[r]) <= 1;
      // The model's own value (through the std::function, so the compiler cannot fuse 6x − max
      // into one FMA here and round differently from the library).
      Matrix p(1, 2);
      p << g.x[c], g.y[r];
      const double expected = inside ? std::max(bounded.log_unnormalized(p)[0] - g.max, -9.0) : -9.0;
      ASSERT_EQ(g.values(r, c), expected) << r << ", " << c;
    }
  // The maximum is taken over finite values only: the cell centre nearest x0 = 1 from inside.
  EXPECT_DOUBLE_EQ(g.max, 6.0 * 0.95);
  // A floor of −2 clips more.
  LogDensityGrid g2 = log_density_grid(bounded, "square", e, 40, -2.0, Context(1, 1));
  EXPECT_EQ(g2.values.minCoeff(), -2.0);
}

TEST(DensityGrid, NanInfinityOrNoSupportAreErrorsNamingTheModel) {
  const PlotExtent e{-1, 1, -1, 1};
  FunctionModel nan_model(2, [](const Vector& x) {
    return x[0] > 0.5 ? std::numeric_limits<double>::quiet_NaN() : -x.squaredNorm();
  });
  try {
    log_density_grid(nan_model, "broken-model", e, 20, -9.0, Context(1, 1));
    FAIL() << "NaN must be an error";
  } catch (const NumericalError& err) {
    EXPECT_NE(std::string(err.what()).find("model broken-model"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("NaN"), std::string::npos) << err.what();
  }
  FunctionModel inf_model(2, [](const Vector& x) { return x[1] > 0 ? kInf : 0.0; });
  EXPECT_THROW(log_density_grid(inf_model, "inf", e, 20, -9.0, Context(1, 1)), NumericalError);
  FunctionModel empty(2, [](const Vector&) { return -kInf; });
  EXPECT_THROW(log_density_grid(empty, "empty", e, 20, -9.0, Context(1, 1)), NumericalError);
  // NaN also fails the whole figure, before anything is written.
  fs::path file = test::temp_dir("plot-nan") / "d.png";
  Matrix train = Matrix::Zero(3, 2);
  EXPECT_THROW(write_density_plot(file, {{"broken-model", &nan_model, {}}}, std::nullopt, train, Matrix(0, 2),
                                  Context(1, 2), DensityPlotOptions{.grid = 20, .extent = e}),
               NumericalError);
  EXPECT_FALSE(fs::exists(file));
  // Bad extents and options are configuration errors.
  FunctionModel g = gaussian_2d();
  EXPECT_THROW(log_density_grid(g, "g", PlotExtent{1, 0, 0, 1}, 20, -9.0, Context(1, 1)), ConfigError);
  EXPECT_THROW(write_density_plot(file, {{"g", &g, {}}}, std::nullopt, train, Matrix(0, 2), Context(1, 2),
                                  DensityPlotOptions{.grid = 1}),
               ConfigError);
}

TEST(DensityPlot, WritesAPngWhoseCellsHaveTheColourOfTheirValue) {
  FunctionModel model = gaussian_2d();
  FunctionModel truth(2, [](const Vector& x) { return -0.5 * x.squaredNorm(); });
  const PlotExtent e{-4, 4, -4, 4};
  DensityPlotOptions o;
  o.grid = 25;
  o.min_panel_pixels = 200;  // k = 8 pixels per cell
  o.show_points = false;
  o.extent = e;
  o.footnote = "SM: held-out score matching loss";
  fs::path file = test::temp_dir("plot-png") / "density.png";
  Matrix train = banana_like(50, 3);
  DensityPlotResult r = write_density_plot(file,
                                           {{"model",
                                             &model,
                                             {"SM \xe2\x88\x92"
                                              "1.00",
                                              "FD 0.100"}}},
                                           PlotModel{"truth",
                                                     &truth,
                                                     {"SM \xe2\x88\x92"
                                                      "1.00"}},
                                           train, Matrix(0, 2), Context(1, 2), o);
  ASSERT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file.string() + ".kef-tmp"));
  Png png = read_png(file);
  EXPECT_EQ(png.width, r.width);
  EXPECT_EQ(png.height, r.height);
  ASSERT_EQ(r.panels.size(), 2u);
  EXPECT_EQ(r.cell_pixels, 8);
  EXPECT_EQ(r.panels[0].size, 200);
  EXPECT_GT(r.panels[1].x, r.panels[0].x + 200);

  const FunctionModel* models[] = {&truth, &model};
  for (int p = 0; p < 2; ++p) {
    // Expected values from the analytic density at the cell centres, independently of the grid code.
    const double h = 8.0 / 25;
    double max = -kInf;
    for (int r2 = 0; r2 < 25; ++r2)
      for (int c2 = 0; c2 < 25; ++c2) {
        Vector x(2);
        x << -4 + (c2 + 0.5) * h, -4 + (r2 + 0.5) * h;
        max = std::max(max, models[p]->log_unnormalized(x.transpose())[0]);
      }
    for (int row : {0, 3, 11, 12, 13, 20, 24})
      for (int col : {0, 7, 12, 13, 24}) {
        Vector x(2);
        x << -4 + (col + 0.5) * h, -4 + (row + 0.5) * h;
        const double v = std::max(models[p]->log_unnormalized(x.transpose())[0] - max, -9.0);
        // Row 0 (ymin) is the bottom row of the image; sample the middle of the cell's 8x8 block.
        const int px = r.panels[p].x + col * 8 + 4, py = r.panels[p].y + (24 - row) * 8 + 4;
        EXPECT_EQ(png.at(px, py), viridis((v + 9.0) / 9.0)) << "panel " << p << " cell " << row << ", " << col;
      }
  }
  // The truth's maximum is at the centre cell (12, 12): the top of the colormap.
  EXPECT_EQ(png.at(r.panels[0].x + 12 * 8 + 4, r.panels[0].y + 12 * 8 + 4),
            (std::array<std::uint8_t, 3>{0xfd, 0xe7, 0x25}));
  // A corner is far below the floor: the bottom of the colormap.
  EXPECT_EQ(png.at(r.panels[0].x + 2, r.panels[0].y + 2), (std::array<std::uint8_t, 3>{0x44, 0x01, 0x54}));
}

TEST(DensityPlot, TrainingPointsAreOverlaidWhereTheyAre) {
  FunctionModel truth(2, [](const Vector& x) { return -0.5 * x.squaredNorm(); });
  DensityPlotOptions o;
  o.grid = 40;
  o.extent = PlotExtent{-4, 4, -4, 4};
  Matrix train(1, 2);
  train << 1.0, -2.0;
  fs::path dir = test::temp_dir("plot-points");
  DensityPlotResult with = write_density_plot(dir / "with.png", {}, PlotModel{"truth", &truth, {}}, train,
                                              Matrix(0, 2), Context(1, 2), o);
  o.show_points = false;
  write_density_plot(dir / "without.png", {}, PlotModel{"truth", &truth, {}}, train, Matrix(0, 2),
                     Context(1, 2), o);
  Png a = read_png(dir / "with.png"), b = read_png(dir / "without.png");
  ASSERT_EQ(a.pixels.size(), b.pixels.size());
  const auto& p = with.panels[0];
  const int px = p.x + static_cast<int>((1.0 + 4) / 8 * p.size), py = p.y + static_cast<int>((4 - (-2.0)) / 8 * p.size);
  EXPECT_NE(a.at(px, py), b.at(px, py)) << "a point is drawn at its data coordinates";
  int changed = 0;
  for (int y = p.y; y < p.y + p.size; ++y)
    for (int x = p.x; x < p.x + p.size; ++x)
      if (a.at(x, y) != b.at(x, y)) {
        ++changed;
        EXPECT_LE(std::hypot(x - px, y - py), 4.0) << "pixel " << x << ", " << y << " changed far from the point";
      }
  EXPECT_GT(changed, 0);
}

TEST(DensityPlot, OneDimensionalCurvesAreNormalisedOnTheGrid) {
  // N(0.5, 0.7²) with an arbitrary offset. On ±9σ the trapezoid rule is exact to rounding for a
  // Gaussian (its error decays like exp(−2π²σ²/h²)), and the truncated tails weigh < 1e-18, so only
  // the rounding of ~400 additions remains: 1e-12 relative to the peak bounds it.
  const double m = 0.5, s = 0.7;
  FunctionModel gauss(1, [&](const Vector& x) { return -0.5 * std::pow((x[0] - m) / s, 2) + 3.0; });
  DensityCurve c = normalized_density_curve(gauss, "g", -6, 7, 401, Context(1, 2));
  ASSERT_EQ(c.x.size(), 401);
  EXPECT_EQ(c.x[0], -6.0);
  EXPECT_EQ(c.x[400], 7.0);
  const double peak = 1 / (s * std::sqrt(2 * M_PI));
  for (Index i = 0; i < c.x.size(); ++i) {
    const double exact = peak * std::exp(-0.5 * std::pow((c.x[i] - m) / s, 2));
    ASSERT_NEAR(c.density[i], exact, 1e-12 * peak) << c.x[i];
  }
  // Bounded support: zero outside, still normalised on the grid.
  FunctionModel uniform(1, [](const Vector& x) { return std::abs(x[0]) <= 1 ? 0.0 : -kInf; });
  DensityCurve u = normalized_density_curve(uniform, "u", -2, 2, 401, Context(1, 1));
  double z = 0;
  for (Index i = 0; i + 1 < u.x.size(); ++i) z += 0.5 * (u.density[i] + u.density[i + 1]) * (u.x[i + 1] - u.x[i]);
  EXPECT_NEAR(z, 1.0, 1e-12);
  EXPECT_EQ(u.density[0], 0.0);
  FunctionModel nan_model(1, [](const Vector& x) { return x[0] > 0 ? std::nan("") : 0.0; });
  EXPECT_THROW(normalized_density_curve(nan_model, "n", -1, 1, 50, Context(1, 1)), NumericalError);

  // The whole 1-D figure: truth and model curves over a histogram.
  RandomStream rng(3, "1d");
  Matrix train = rng.normal_matrix(300, 1) * s;
  train.array() += m;
  fs::path file = test::temp_dir("plot-1d") / "d.png";
  FunctionModel wide(1, [](const Vector& x) { return -0.5 * x[0] * x[0]; });
  DensityPlotResult r =
      write_density_plot(file,
                         {{"wide",
                           &wide,
                           {"SM \xe2\x88\x92"
                            "0.5"}}},
                         PlotModel{"truth", &gauss, {}}, train, Matrix(0, 1), Context(1, 2));
  Png png = read_png(file);
  EXPECT_EQ(png.width, r.width);
  EXPECT_EQ(png.height, r.height);
  EXPECT_LT(r.extent.xmin, train.minCoeff());
  EXPECT_GT(r.extent.xmax, train.maxCoeff());
  EXPECT_THROW(
      write_density_plot(file, {{"nan", &nan_model, {}}}, std::nullopt, train, Matrix(0, 1), Context(1, 2)),
      NumericalError);
}

TEST(DensityPlot, OnlyOneAndTwoDimensionalDataArePlotted) {
  FunctionModel m3(3, [](const Vector& x) { return -x.squaredNorm(); });
  Matrix train = Matrix::Zero(5, 3);
  EXPECT_FALSE(density_plot_supported(3));
  EXPECT_THROW(write_density_plot(test::temp_dir("plot-3d") / "d.png", {{"m", &m3, {}}}, std::nullopt, train,
                                  Matrix(0, 3), Context(1, 2)),
               DataError);
}

TEST(DensityPlot, ExtentFromQuantilesPaddedAndSquare) {
  // x uniform on 0..1000 steps, y on a quarter of that span: quantiles 0.1% and 99.9% of 1001
  // equally spaced values are the 1st and 999th (floor/ceil of 0.001·1000 and 0.999·1000).
  Matrix X(1001, 2);
  for (Index i = 0; i <= 1000; ++i) X.row(i) << i * 0.01, 5.0 + i * 0.0025;
  PlotExtent e = data_extent(X);
  const double lo = 0.01, hi = 9.99, pad = 0.15 * (hi - lo);
  EXPECT_NEAR(e.xmin, lo - pad, 1e-12);
  EXPECT_NEAR(e.xmax, hi + pad, 1e-12);
  EXPECT_NEAR(e.ymax - e.ymin, e.xmax - e.xmin, 1e-12) << "square";
  EXPECT_NEAR(0.5 * (e.ymin + e.ymax), 5.0 + 0.5 * (0.0025 + 2.4975), 1e-12) << "centred on the y range";
  // One far outlier does not stretch the extent.
  X(0, 0) = 1e6;
  EXPECT_LT(data_extent(X).xmax, 20.0);
  // Constant data still gives a window around it.
  PlotExtent c = data_extent(Matrix::Constant(10, 1, 3.0));
  EXPECT_LT(c.xmin, 3.0);
  EXPECT_GT(c.xmax, 3.0);
}

TEST(Viridis, PublishedAnchorsAndIncreasingLightness) {
  EXPECT_EQ(viridis(0.0), (std::array<std::uint8_t, 3>{0x44, 0x01, 0x54}));
  EXPECT_EQ(viridis(0.5), (std::array<std::uint8_t, 3>{0x21, 0x91, 0x8c}));
  EXPECT_EQ(viridis(1.0), (std::array<std::uint8_t, 3>{0xfd, 0xe7, 0x25}));
  EXPECT_EQ(viridis(-1.0), viridis(0.0));
  EXPECT_EQ(viridis(2.0), viridis(1.0));
  // Perceptual: relative luminance (Rec. 709 weights on linearised sRGB) increases along the map.
  auto lin = [](double c) { c /= 255; return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); };
  double previous = -1;
  for (int i = 0; i <= 100; ++i) {
    const auto c = viridis(i / 100.0);
    const double y = 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
    EXPECT_GT(y, previous) << i;
    previous = y;
  }
}

// Only known headline metrics reach a title: diagnostics and unknown metrics (my_metric) stay in results.json.
TEST(Captions, ShortLabelsDiagnosticsLeftOutTruthMetricsSeparated) {
  const std::vector<std::pair<std::string, double>> metrics = {
      {"score_matching_loss", -0.905418}, {"score_matching_loss_truth", -0.927106}, {"fisher_divergence", 0.100389},
      {"true_log_likelihood", -3.51349},  {"mmd_bandwidth", 1.2},                   {"hmc_acceptance", 0.8},
      {"sm.score_matching_loss", 12345.0}, {"my_metric", 2.5e-5}};
  const std::string minus = "\xe2\x88\x92";
  EXPECT_EQ(metrics_caption(metrics, false),
            (std::vector<std::string>{"SM " + minus + "0.905", "FD 0.100", "sm.SM 1.23e4"}));
  EXPECT_EQ(metrics_caption(metrics, true), (std::vector<std::string>{"SM " + minus + "0.927", "LL " + minus + "3.51"}));
  const std::string legend = metrics_legend(metrics);
  EXPECT_NE(legend.find("SM: held-out score matching loss"), std::string::npos) << legend;
  EXPECT_NE(legend.find("FD: Fisher divergence"), std::string::npos) << legend;
  EXPECT_EQ(legend.find("MMD"), std::string::npos) << legend;
  EXPECT_EQ(format_short(0.0), "0");
  EXPECT_EQ(format_short(1234.6), "1235");
  EXPECT_EQ(format_short(-12.0), minus + "12.0");
  EXPECT_EQ(format_short(100.0), "100");
}

void write_solid_png(const fs::path& file, int w, int h, double r, double g, double b) {
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
  cairo_t* cr = cairo_create(s);
  cairo_set_source_rgb(cr, r, g, b);
  cairo_paint(cr);
  cairo_destroy(cr);
  ASSERT_EQ(cairo_surface_write_to_png(s, file.c_str()), CAIRO_STATUS_SUCCESS);
  cairo_surface_destroy(s);
}

TEST(Montage, SizesAddUpAndImagesLandInTheirCells) {
  fs::path dir = test::temp_dir("montage");
  write_solid_png(dir / "a.png", 30, 20, 1, 0, 0);
  write_solid_png(dir / "b.png", 50, 10, 0, 0, 1);
  write_solid_png(dir / "c.png", 10, 40, 0, 1, 0);
  MontageResult one = write_png_montage({dir / "a.png", dir / "b.png", dir / "c.png"}, 1, dir / "col.png");
  EXPECT_EQ(one.width, 50);
  EXPECT_EQ(one.height, 20 + 10 + 40);
  Png col = read_png(dir / "col.png");
  EXPECT_EQ(col.width, 50);
  EXPECT_EQ(col.height, 70);
  using C = std::array<std::uint8_t, 3>;
  EXPECT_EQ(col.at(29, 19), (C{255, 0, 0}));
  EXPECT_EQ(col.at(40, 5), (C{255, 255, 255})) << "background right of the narrower image";
  EXPECT_EQ(col.at(49, 20), (C{0, 0, 255}));
  EXPECT_EQ(col.at(5, 69), (C{0, 255, 0}));

  MontageResult two = write_png_montage({dir / "a.png", dir / "b.png", dir / "c.png"}, 2, dir / "grid.png");
  EXPECT_EQ(two.width, 30 + 50);
  EXPECT_EQ(two.height, 20 + 40);
  Png grid = read_png(dir / "grid.png");
  EXPECT_EQ(grid.at(30, 0), (C{0, 0, 255}));
  EXPECT_EQ(grid.at(30, 15), (C{255, 255, 255}));
  EXPECT_EQ(grid.at(0, 20), (C{0, 255, 0}));

  std::ofstream(dir / "text.png") << "not a png";
  EXPECT_THROW(write_png_montage({dir / "a.png", dir / "text.png"}, 1, dir / "bad.png"), DataError);
  EXPECT_THROW(write_png_montage({dir / "missing.png"}, 1, dir / "bad.png"), DataError);
  EXPECT_THROW(write_png_montage({dir / "a.png"}, 0, dir / "bad.png"), ConfigError);
  EXPECT_THROW(write_png_montage({dir / "a.png"}, 1, dir / "no-such-dir" / "bad.png"), ConfigError);
  EXPECT_FALSE(fs::exists(dir / "bad.png"));
}

// --width scales the whole montage: the 50 x 70 column at width 25 is 25 x 35, and the centre of each
// solid block keeps its colour (filtering only mixes colours within a pixel or two of an edge).
TEST(Montage, WidthScalesTheWholeFigure) {
  fs::path dir = test::temp_dir("montage-width");
  write_solid_png(dir / "a.png", 30, 20, 1, 0, 0);
  write_solid_png(dir / "b.png", 50, 10, 0, 0, 1);
  write_solid_png(dir / "c.png", 10, 40, 0, 1, 0);
  MontageResult m = write_png_montage({dir / "a.png", dir / "b.png", dir / "c.png"}, 1, dir / "small.png", 25);
  EXPECT_EQ(m.width, 25);
  EXPECT_EQ(m.height, 35);
  Png small = read_png(dir / "small.png");
  ASSERT_EQ(small.width, 25);
  ASSERT_EQ(small.height, 35);
  using C = std::array<std::uint8_t, 3>;
  EXPECT_EQ(small.at(7, 5), (C{255, 0, 0}));    // a: x 0..15, y 0..10
  EXPECT_EQ(small.at(12, 12), (C{0, 0, 255}));  // b: x 0..25, y 10..15
  EXPECT_EQ(small.at(2, 27), (C{0, 255, 0}));   // c: x 0..5,  y 15..35
  EXPECT_EQ(small.at(20, 27), (C{255, 255, 255}));
  EXPECT_THROW(write_png_montage({dir / "a.png"}, 1, dir / "bad.png", -1), ConfigError);
}

}  // namespace
}  // namespace kef
