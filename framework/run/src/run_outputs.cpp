#include "run_outputs.hpp"

#include <fstream>
#include <optional>
#include <utility>
#include <vector>

#include "kef/density_plot.hpp"
#include "kef/error.hpp"
#include "kef/npy.hpp"

namespace kef::pipeline_detail {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

void write_run_plot(const Plan& plan, const std::map<std::string, ModelPtr>& fitted, const Json& models,
                    const fs::path& staging, const Context& context, std::ostream& log) {
  const Index D = plan.data.dim();
  if (!density_plot_supported(D)) {
    log << "density plot: skipped, the data has dimension " << D
        << " (plots are drawn for 1-D and 2-D data)\n";
    return;
  }
  std::vector<std::pair<std::string, double>> all_metrics;
  std::vector<PlotModel> panels;
  std::optional<PlotModel> truth;
  if (plan.data.truth) truth = PlotModel{"truth", plan.data.truth.get(), {}};
  for (const auto& mp : plan.models) {
    std::vector<std::pair<std::string, double>> metrics;
    for (const auto& [k, v] : models.at(mp.name).at("metrics").items())
      metrics.emplace_back(k, v.get<double>());
    all_metrics.insert(all_metrics.end(), metrics.begin(), metrics.end());
    panels.push_back(PlotModel{mp.name, fitted.at(mp.name).get(), metrics_caption(metrics, false)});
    // The truth's metrics are computed on the same test rows for every model: take the first model's.
    if (truth && truth->caption.empty()) truth->caption = metrics_caption(metrics, true);
  }
  DensityPlotOptions options = plan.plot_options;
  options.footnote = metrics_legend(all_metrics);
  // The axes are the data's columns, in the coordinates the models were fitted in.
  for (const std::string& column : plan.data.columns)
    options.axis_labels.push_back(plan.data.transform.identity() ? column
                                                                 : column + " (" + plan.data.transform.model_space() + ")");
  DensityPlotResult r = write_density_plot(staging / "density.png", panels, truth, plan.data.train,
                                           plan.data.test, context, options);
  log << "density plot: density.png, " << r.width << " x " << r.height << " pixels, extent x ["
      << r.extent.xmin << ", " << r.extent.xmax << "]";
  if (D == 2) log << " y [" << r.extent.ymin << ", " << r.extent.ymax << "]";
  log << ", grid " << options.grid << "\n";
  for (const auto& n : r.notes) log << n << "\n";
}

void write_splits(const Plan& plan, const fs::path& staging) {
  fs::create_directories(staging / "data");
  if (plan.data.train_rows) {
    // A training split left in the data file (a distributed run) is copied a block at a time.
    const TrainingRows& rows = *plan.data.train_rows;
    write_npy_blocks(staging / "data" / "train.npy", rows.rows(), rows.cols(), 65536,
                     [&](Index b, Index e) { return plan.data.transform.to_data(rows.range(b, e)); });
  } else {
    write_npy(staging / "data" / "train.npy", plan.data.transform.to_data(plan.data.train));
  }
  write_npy(staging / "data" / "validation.npy", plan.data.transform.to_data(plan.data.validation));
  write_npy(staging / "data" / "test.npy", plan.data.transform.to_data(plan.data.test));
}

void write_results(const Json& results, const fs::path& staging) {
  std::ofstream out(staging / "results.json");
  out << results.dump(2) << "\n";
  out.close();  // the data reaches the disk here, not at the <<: check after it
  if (!out) throw Error((staging / "results.json").string() + ": cannot write (disk full?)");
}

}  // namespace kef::pipeline_detail
