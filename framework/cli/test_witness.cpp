// `kef test witness X Y --grid ...` (test_subcommands.hpp): the Bayesian witness function μ_P − μ_Q
// on a grid with its central credible band, as text or JSON, a CSV and a figure.
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "cli_support.hpp"
#include "kef/bayesian_witness.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/kernel_tests.hpp"
#include "kef/linalg.hpp"
#include "kef/line_plot.hpp"
#include "kef/number_text.hpp"
#include "test_subcommands.hpp"

namespace kef_cli {

CLI::App* add_witness_command(CLI::App& test, WitnessFlags& f, int& threads) {
  CLI::App* w = test.add_subcommand(
      "witness",
      "Where do X and Y differ? The Bayesian witness function μ_P − μ_Q on a grid, with a credible band");
  w->add_option("X", f.x_file, "first sample (.npy, or .csv with a header row)")->required();
  w->add_option("Y", f.y_file, "second sample (.npy or .csv), same columns as X")->required();
  w->add_option("--grid", f.grid,
                "points to evaluate the witness at: `a:b:n` (n evenly spaced values from a to b, 1-D data) "
                "or a .npy/.csv file with the samples' columns")
      ->required();
  w->add_option("--kernel-bandwidth", f.bandwidth,
                "Gaussian ℓ: `median` (pooled sample), `bkl` (Bayesian kernel learning on the pooled sample, "
                "the posterior mode) or a positive number");
  w->add_flag("--integrate-lengthscale", f.integrate,
              "with --kernel-bandwidth bkl: integrate over ℓ (the mixture over BKL's HMC draws of ℓ) "
              "instead of fixing ℓ at its mode");
  w->add_option("--tau2", f.tau2, "τ², the embedding likelihood's noise variance (default 1)")
      ->check(CLI::Range(1e-12, 1e12));
  w->add_option("--level", f.level, "probability of the central credible band (default 0.8)")
      ->check(CLI::Range(1e-6, 1.0 - 1e-6));
  w->add_option("--out", f.out, "CSV of the witness: x (or x1..xD), mean, lower, upper, sd");
  w->add_option("--plot", f.plot, "PNG of the witness with its band (1-D only)");
  w->add_option("--seed", f.seed, "seed of BKL's landmarks and HMC (default 0)")->check(seed_value());
  w->add_option("--threads", threads, "worker threads (results do not depend on it)")
      ->check(integer_in(1, kMaxThreads));
  w->add_flag("--json", f.json, "print one JSON object instead of text");
  return w;
}

namespace {

// `a:b:n` (a < b, n >= 2), or a data file of points. ConfigError / DataError naming --grid.
kef::Matrix read_witness_grid(const std::string& spec, kef::Index dim) {
  const auto c1 = spec.find(':');
  if (c1 == std::string::npos) {
    kef::Matrix G;
    try {
      G = kef::read_table(spec).values;
    } catch (const kef::DataError& e) {
      throw kef::DataError(std::string("--grid: ") + e.what());
    }
    if (G.rows() == 0)
      throw kef::DataError("--grid " + spec + ": no points (an empty grid); give at least one row");
    if (G.cols() != dim)
      throw kef::DataError("--grid " + spec + ": " + std::to_string(G.cols()) +
                           " columns, but the samples have " + std::to_string(dim));
    kef::check_finite(G, "--grid " + spec);
    return G;
  }
  const auto c2 = spec.find(':', c1 + 1);
  auto number = [&](std::string_view t, double& v) {
    const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && ec == std::errc() && p == t.data() + t.size() && std::isfinite(v);
  };
  double a = 0, b = 0, n = 0;
  const std::string_view sv(spec);
  if (c2 == std::string::npos || spec.find(':', c2 + 1) != std::string::npos ||
      !number(sv.substr(0, c1), a) || !number(sv.substr(c1 + 1, c2 - c1 - 1), b) ||
      !number(sv.substr(c2 + 1), n) || n != std::floor(n))
    throw kef::ConfigError(
        "--grid: expected a:b:n (numbers a < b and an integer count n >= 2) or a file, got `" + spec + "`");
  if (n < 2)
    throw kef::ConfigError("--grid " + spec + ": " + kef::number_text(n) +
                           " points (an empty or one-point grid); expected n >= 2");
  if (n > 1e6) throw kef::ConfigError("--grid " + spec + ": more than 10^6 points");
  if (!(a < b)) throw kef::ConfigError("--grid " + spec + ": expected a < b");
  if (dim != 1)
    throw kef::DataError("--grid " + spec + ": a:b:n is a 1-D grid, but the samples have " +
                         std::to_string(dim) + " columns; give the points as a file");
  const auto count = static_cast<kef::Index>(n);
  kef::Matrix G(count, 1);
  for (kef::Index i = 0; i < count; ++i)
    G(i, 0) = a + (b - a) * static_cast<double>(i) / static_cast<double>(count - 1);
  return G;
}

// The CSV goes to a temporary name, then into place: a failed write leaves no half file.
void write_witness_csv(const std::string& out, const kef::Matrix& G, const kef::WitnessPosterior& w) {
  namespace fs = std::filesystem;
  const fs::path tmp = out + ".tmp";
  {
    std::ofstream f(tmp);
    f.precision(17);
    if (G.cols() == 1) {
      f << "x";
    } else {
      for (kef::Index d = 0; d < G.cols(); ++d) f << (d ? "," : "") << "x" << d + 1;
    }
    f << ",mean,lower,upper,sd\n";
    for (kef::Index i = 0; i < G.rows(); ++i) {
      for (kef::Index d = 0; d < G.cols(); ++d) f << G(i, d) << ",";
      f << w.mean[i] << "," << w.lower[i] << "," << w.upper[i] << "," << w.sd[i] << "\n";
    }
    f.close();
    if (!f) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw kef::ConfigError("--out " + out + ": cannot write (disk full?)");
    }
  }
  fs::rename(tmp, out);
}

}  // namespace

int cmd_witness(const WitnessFlags& f, int threads) {
  kef::WitnessRequest r;
  r.bandwidth = f.bandwidth;
  r.integrate = f.integrate;
  r.tau2 = f.tau2;
  r.level = f.level;
  r.seed = f.seed;
  r.threads = threads;
  kef::check_witness_request(r);  // arguments first, before any data file is read
  if (!f.out.empty()) check_output_file("--out", f.out);
  if (!f.plot.empty()) check_output_file("--plot", f.plot);
  const kef::Matrix X = read_test_sample("X", f.x_file), Y = read_test_sample("Y", f.y_file);
  if (X.cols() != Y.cols())
    throw kef::DataError("Y (" + f.y_file + "): " + std::to_string(Y.cols()) + " columns, but X (" +
                         f.x_file + ") has " + std::to_string(X.cols()) +
                         "; the witness compares samples of the same dimension");
  const kef::Matrix G = read_witness_grid(f.grid, X.cols());
  if (!f.plot.empty() && G.cols() != 1)
    throw kef::ConfigError("--plot " + f.plot + ": the figure is for 1-D samples; these have " +
                           std::to_string(G.cols()) + " columns (use --out for the values)");
  const kef::WitnessReport report =
      kef::witness_json(kef::TestSample{&X, "X (" + f.x_file + ")", f.x_file},
                        kef::TestSample{&Y, "Y (" + f.y_file + ")", f.y_file}, G, r);
  const kef::WitnessPosterior& w = report.posterior;
  const double fraction = report.band_excludes_zero;
  if (!f.out.empty()) write_witness_csv(f.out, G, w);
  auto j = nlohmann::ordered_json::parse(report.json);
  const nlohmann::ordered_json& bw = j["bandwidth"];
  if (!f.plot.empty()) {
    kef::LineSeries s{"posterior mean, central " + kef::number_text(100 * f.level, 3) + "% band", G.col(0),
                      w.mean, w.lower, w.upper};
    kef::LineSeries zero{"0 (no difference)", kef::Vector(2), kef::Vector::Zero(2), {}, {}};
    zero.x << G(0, 0), G(G.rows() - 1, 0);
    kef::LinePlotOptions po;
    po.title = "Bayesian witness function μ_P − μ_Q";
    po.x_label = "x";
    po.y_label = "witness";
    po.footnote = std::to_string(X.rows()) + " vs " + std::to_string(Y.rows()) +
                  " points · ℓ = " + kef::number_text(report.lengthscale, 3) + " (" +
                  bw["rule"].get<std::string>() + ") · band excludes 0 on " +
                  kef::number_text(100 * fraction, 3) + "% of the grid";
    kef::write_line_plot(f.plot, {s, zero}, po);
  }
  if (!f.out.empty()) j["out"] = f.out;
  if (!f.plot.empty()) j["plot"] = f.plot;
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "Bayesian witness function: " << X.rows() << " x " << X.cols() << " (" << f.x_file << ") vs "
            << Y.rows() << " x " << Y.cols() << " (" << f.y_file << "), " << G.rows() << " points\n"
            << "  bandwidth = " << kef::number_text(report.lengthscale, 6) << " ("
            << bw["how"].get<std::string>() << ")\n"
            << "  central " << kef::number_text(100 * f.level, 3) << "% band excludes 0 at "
            << kef::number_text(100 * fraction, 4)
            << "% of the points; max |mean| = " << kef::number_text(j["max_abs_mean"].get<double>(), 4)
            << ", max sd = " << kef::number_text(j["max_sd"].get<double>(), 4) << "\n";
  if (!f.out.empty()) std::cout << "  values: " << f.out << "\n";
  if (!f.plot.empty()) std::cout << "  figure: " << f.plot << "\n";
  return 0;
}

}  // namespace kef_cli
