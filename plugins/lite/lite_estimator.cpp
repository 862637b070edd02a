#include "lite_estimator.hpp"

#include <filesystem>

#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_system.hpp"
#include "kef/lite_model.hpp"

namespace kef::lite {

KeyList lite_keys() {
  return {
      KeySpec::integer("inducing_points", "number of inducing points, a seeded random subset of the training rows")
          .optional()
          .at_least(1),
      KeySpec::string("inducing_points_file", "inducing points from a file (.npy or .csv), one per row, "
                                              "relative to the pipeline file")
          .optional(),
      KeySpec::number("lambda_alpha", "ridge penalty λ_α on ‖α‖²", 1e-3).positive(),
      KeySpec::number("lambda_h", "RKHS-norm penalty λ_H on ‖f‖²_H", 0.0).non_negative(),
      KeySpec::number("lambda_c", "curvature penalty λ_C on the mean squared ∂²_d log p~", 0.0).non_negative(),
      KeySpec::integer("chunk_rows", "rows per accumulation chunk (0: automatic, about 4 MB of stacks)", 0)
          .non_negative(),
  };
}

LiteEstimator::LiteEstimator(const Config& cfg, const EstimatorParts& parts)
    : cfg_(cfg), kernel_(parts.kernel), base_(parts.base_measure) {
  if (cfg.has("inducing_points") == cfg.has("inducing_points_file"))
    cfg.fail(cfg.has("inducing_points") ? "inducing_points_file" : "",
             "give exactly one of `inducing_points` (a count) and `inducing_points_file`");
  lambda_alpha_ = cfg.number("lambda_alpha");
  lambda_h_ = cfg.number("lambda_h");
  lambda_c_ = cfg.number("lambda_c");
  chunk_rows_ = cfg.integer("chunk_rows");
}

Matrix LiteEstimator::choose_inducing_points(const Matrix& train, RandomStream& rng) const {
  if (cfg_.has("inducing_points")) {
    const Index m = cfg_.integer("inducing_points");
    if (m > train.rows())
      cfg_.fail("inducing_points", std::to_string(m) + " inducing points but only " +
                                       std::to_string(train.rows()) + " training rows");
    RandomStream pick = rng.derive("inducing_points");
    return random_rows(train, m, pick);
  }
  std::filesystem::path p = cfg_.string("inducing_points_file");
  if (p.is_relative()) p = std::filesystem::path(cfg_.source()).parent_path() / p;
  if (!std::filesystem::exists(p)) cfg_.fail("inducing_points_file", "no such file " + p.string());
  Matrix Z = read_table(p).values;
  if (Z.cols() != train.cols())
    cfg_.fail("inducing_points_file", p.string() + " has " + std::to_string(Z.cols()) +
                                          " columns, the data has " + std::to_string(train.cols()));
  if (Z.rows() == 0) cfg_.fail("inducing_points_file", p.string() + " has no rows");
  return Z;
}

std::optional<FacetSet> LiteEstimator::facets() const {
  FacetSet f{Facet::LogDensity, Facet::Score, Facet::Laplacian};
  if (base_ && base_->can_sample()) f |= Facet::BaseMeasureRatio;
  return f;
}

ModelPtr LiteEstimator::fit(const FitInput& in) {
  Matrix Z = choose_inducing_points(in.train, in.context.rng());
  base_->check_dimension(in.train.cols());
  LiteAccumulateOptions opt;
  opt.need_U = lambda_c_ > 0;
  opt.chunk_rows = chunk_rows_;
  opt.progress = &in.context.progress();
  LiteSystem sys = accumulate_lite_system(*kernel_, *base_, in.train, Z, opt, in.context);
  Matrix K;
  if (lambda_h_ > 0) K = kernel_->gram(Z, Z);
  LiteSolution sol = solve_lite_system(sys, K, lambda_alpha_, lambda_h_, lambda_c_);
  in.report.iterations = 1;
  in.report.values["inducing_points"] = static_cast<double>(Z.rows());
  in.report.values["jitter"] = sol.jitter;
  if (sol.jitter > 0)
    in.report.notes.push_back("the lite system needed jitter " + std::to_string(sol.jitter) +
                              " on its diagonal to factorise");
  auto model = std::make_shared<kef::LiteModel>(kernel_, base_, Z, sol.alpha);
  model->set_fit_info({{"lambda_alpha", lambda_alpha_},
                       {"lambda_h", lambda_h_},
                       {"lambda_c", lambda_c_},
                       {"train_rows", static_cast<double>(in.train.rows())},
                       {"jitter", sol.jitter}});
  return model;
}

}  // namespace kef::lite
