#include "lite_estimator.hpp"

#include <algorithm>
#include <filesystem>

#include "kef/clone_shared.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/inducing_points.hpp"
#include "kef/linalg.hpp"
#include "kef/lite_model.hpp"
#include "kef/lite_system.hpp"
#include "kef/memory_budget.hpp"

namespace kef::lite {

const OptionsSpec<LiteOptions>& lite_options() {
  using O = LiteOptions;
  static const OptionsSpec<O> spec = [] {
    OptionsSpec<O> s;
    s.integer("inducing_points", &O::inducing_points,
              "number of inducing points, a seeded random subset of the training rows")
        .optional()
        .at_least(1);
    s.path("inducing_points_file", &O::inducing_points_file,
           "inducing points from a file (.npy or .csv), one per row, "
           "relative to the pipeline file")
        .optional();
    s.number("lambda_alpha", &O::lambda_alpha, "ridge penalty λ_α on ‖α‖²", 1e-3).positive();
    s.number("lambda_h", &O::lambda_h, "RKHS-norm penalty λ_H on ‖f‖²_H", 0.0).non_negative();
    s.number("lambda_c", &O::lambda_c, "curvature penalty λ_C on the mean squared ∂²_d log p~", 0.0)
        .non_negative();
    s.integer("chunk_rows", &O::chunk_rows,
              "rows per accumulation chunk (0: automatic, about 4 MB of stacks)", 0)
        .non_negative();
    return s;
  }();
  return spec;
}

KeyList lite_keys() { return lite_options().keys(); }

LiteEstimator::LiteEstimator(const Config& cfg, const EstimatorParts& parts)
    : opt_(lite_options().read(cfg)), sites_(cfg), kernel_(parts.kernel), base_(parts.base_measure) {
  if (opt_.inducing_points.has_value() == opt_.inducing_points_file.has_value())
    sites_.fail(opt_.inducing_points ? "inducing_points_file" : "",
                "give exactly one of `inducing_points` (a count) and `inducing_points_file`");
  lambda_alpha_ = opt_.lambda_alpha;
  lambda_h_ = opt_.lambda_h;
  lambda_c_ = opt_.lambda_c;
  chunk_rows_ = opt_.chunk_rows;
}

Estimator* LiteEstimator::clone_raw() const {
  auto* copy = new LiteEstimator(*this);
  if (kernel_) copy->kernel_ = clone_shared(kernel_);
  if (base_) copy->base_ = clone_shared(base_);
  return copy;
}

Matrix LiteEstimator::choose_inducing_points(const Matrix& train, RandomStream& rng) const {
  if (opt_.inducing_points) {
    return draw_inducing_points(train, *opt_.inducing_points, rng, sites_);
  }
  const std::filesystem::path& p = *opt_.inducing_points_file;
  if (!std::filesystem::exists(p)) sites_.fail("inducing_points_file", "no such file " + p.string());
  Matrix Z = read_table(p).values;
  if (Z.cols() != train.cols())
    sites_.fail("inducing_points_file", p.string() + " has " + std::to_string(Z.cols()) +
                                            " columns, the data has " + std::to_string(train.cols()));
  if (Z.rows() == 0) sites_.fail("inducing_points_file", p.string() + " has no rows");
  return Z;
}

void LiteEstimator::check(const DataShape& data) const {
  if (!opt_.inducing_points) return;
  check_inducing_count(*opt_.inducing_points, data.train_rows, sites_);
  // The system of M inducing points (G, its factor and the curvature term: M x M each) and a chunk's
  // derivative stacks (rows x D x M, two orders), before any is allocated.
  if (data.dim < 1) return;
  const double M = static_cast<double>(*opt_.inducing_points), D = static_cast<double>(data.dim);
  const double chunk = opt_.chunk_rows > 0 ? static_cast<double>(opt_.chunk_rows) : 4e6 / 8.0 / (2.0 * D * M);
  require_memory(8.0 * (4.0 * M * M + 2.0 * std::max(chunk, 1.0) * D * M), sites_.where("inducing_points"),
                 "the lite system (inducing_points, chunk_rows)");
}

std::optional<FacetSet> LiteEstimator::facets() const {
  FacetSet f{Facet::LogDensity, Facet::Score, Facet::Laplacian};
  if (base_ && base_->can_sample()) f |= Facet::BaseMeasureRatio;
  return f;
}

ModelPtr LiteEstimator::fit(const FitInput& in) {
  // A distributed run reading its data by rows passes the training split as rows to read (the same
  // rows, the same draws, the same sums: kef/training_rows.hpp).
  const Index train_rows = in.train_rows ? in.train_rows->rows() : in.train.rows();
  Matrix Z = in.train_rows && opt_.inducing_points
                 ? draw_inducing_points(*in.train_rows, *opt_.inducing_points, in.context.rng(), sites_)
                 : choose_inducing_points(in.train, in.context.rng());
  base_->check_dimension(in.train.cols());
  LiteAccumulateOptions opt;
  opt.need_U = lambda_c_ > 0;
  opt.chunk_rows = chunk_rows_;
  opt.progress = &in.context.progress();
  LiteSystem sys = in.train_rows ? accumulate_lite_system(*kernel_, *base_, *in.train_rows, Z, opt, in.context)
                                 : accumulate_lite_system(*kernel_, *base_, in.train, Z, opt, in.context);
  Matrix K;
  if (lambda_h_ > 0) K = kernel_->gram(Z, Z);
  LiteSolution sol = solve_lite_system(sys, K, lambda_alpha_, lambda_h_, lambda_c_);
  in.report.iterations = 1;
  in.report.values["inducing_points"] = static_cast<double>(Z.rows());
  in.report.values["jitter"] = sol.jitter;
  if (sol.jitter > 0)
    in.report.notes.push_back("the lite system needed jitter " + std::to_string(sol.jitter) +
                              " on its diagonal to factorise");
  // The model gets its own copies: changing this estimator's kernel later leaves it unchanged.
  auto model = std::make_shared<kef::LiteModel>(clone_shared(kernel_), clone_shared(base_), Z, sol.alpha);
  model->set_fit_info({{"lambda_alpha", lambda_alpha_},
                       {"lambda_h", lambda_h_},
                       {"lambda_c", lambda_c_},
                       {"jitter", sol.jitter}},
                      {{"train_rows", static_cast<std::int64_t>(train_rows)}});
  return model;
}

}  // namespace kef::lite
