// Distributed reductions (kef/distributed_reduce.hpp) on K processes simulated in one: K threads, each
// with a communicator whose all_gather meets the others'. Everything a distributed run adds (group
// ownership, encoding, exchange, error agreement) runs as under mpirun; only MPI's transport is
// replaced, and tests/mpi/mpirun_test.sh covers that with the real kef command.
#include "kef/distributed_reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ais.hpp"
#include "closed_form_gradient.hpp"
#include "kef/byte_codec.hpp"
#include "kef/communicator.hpp"
#include "kef/context.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"
#include "kef/hmc.hpp"
#include "kef/importance_sampling.hpp"
#include "kef/lite_model.hpp"
#include "kef/mmd_test.hpp"
#include "kef/npy.hpp"
#include "kef/parallel.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
#include "kef/student_t_proposal.hpp"
#include "pipeline_text.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

// The meeting point of K simulated processes: all_gather returns when all K have called it.
class FakeWorld {
 public:
  explicit FakeWorld(int size)
      : size_(size), slots_(static_cast<std::size_t>(size)), steps_(static_cast<std::size_t>(size)) {}
  int size() const { return size_; }
  std::vector<std::string> gather(int rank, CollectiveStep step, const std::string& payload) {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    slots_[static_cast<std::size_t>(rank)] = payload;
    steps_[static_cast<std::size_t>(rank)] = step;
    ++bytes_;
    if (++arrived_ == size_) {
      result_ = slots_;
      result_steps_ = steps_;
      arrived_ = 0;
      ++generation_;
      ++collectives_;
      met_.notify_all();
    } else {
      met_.wait(lock, [&] { return generation_ != generation; });
    }
    for (CollectiveStep s : result_steps_)
      if (s != step) throw std::logic_error("simulated processes out of step");
    return result_;
  }
  int collectives() const { return collectives_; }

 private:
  int size_;
  std::mutex mutex_;
  std::condition_variable met_;
  std::vector<std::string> slots_, result_;
  std::vector<CollectiveStep> steps_, result_steps_;
  int arrived_ = 0, collectives_ = 0;
  std::uint64_t generation_ = 0, bytes_ = 0;
};

class FakeCommunicator final : public Communicator {
 public:
  FakeCommunicator(FakeWorld& world, int rank) : world_(&world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  std::vector<std::string> all_gather(CollectiveStep step, const std::string& payload) const override {
    return world_->gather(rank_, step, payload);
  }

 private:
  FakeWorld* world_;
  int rank_;
};

// Runs body(communicator, rank) on K threads; returns each rank's exception (or null).
std::vector<std::exception_ptr> on_ranks(int K, const std::function<void(const Communicator&, int)>& body,
                                         FakeWorld* world_out = nullptr) {
  FakeWorld local(K);
  FakeWorld& world = world_out ? *world_out : local;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(K));
  std::vector<std::thread> threads;
  for (int r = 0; r < K; ++r)
    threads.emplace_back([&, r] {
      const FakeCommunicator comm(world, r);
      try {
        body(comm, r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(const Matrix& a, const Matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

// Values of very different magnitudes: their sum depends on the order of the additions.
std::vector<double> uneven_values(Index n) {
  RandomStream rng(17, "uneven");
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = rng.normal() * std::pow(10.0, 8.0 * rng.uniform() - 4.0);
  return v;
}

struct Part {
  double sum = 0;
  Index count = 0;
  Matrix outer;    // Σ (x, x²)(x, x²)ᵀ
  Vector scratch;  // workspace: never exchanged
};

Part part_init() {
  Part p;
  p.outer = Matrix::Zero(2, 2);
  return p;
}
void part_combine(Part& into, const Part& p) {
  into.sum += p.sum;
  into.count += p.count;
  into.outer += p.outer;
}

Part reduce_values(const std::vector<double>& v, const Context& context, Index max_groups,
                   std::vector<Index>* touched = nullptr) {
  const Index n = static_cast<Index>(v.size());
  return ordered_reduce(
      n, context, part_init,
      [&](Index i, Part& p) {
        const double x = v[static_cast<std::size_t>(i)];
        p.sum += x;
        ++p.count;
        p.scratch = Vector::Constant(2, x);
        Vector u(2);
        u << x, x * x;
        p.outer += u * u.transpose();
        if (touched) (*touched)[static_cast<std::size_t>(i)] += 1;
      },
      part_combine, max_groups, [](Part& p) { return std::tie(p.sum, p.count, p.outer); });
}

// The brute-force twin: kef/parallel.hpp's ordered_reduce, one process, the same groups.
Part reduce_values_one_process(const std::vector<double>& v, Index max_groups) {
  return ordered_reduce(
      static_cast<Index>(v.size()), 1, part_init,
      [&](Index i, Part& p) {
        const double x = v[static_cast<std::size_t>(i)];
        p.sum += x;
        ++p.count;
        Vector u(2);
        u << x, x * x;
        p.outer += u * u.transpose();
      },
      part_combine, max_groups);
}

TEST(DistributedReduce, EveryRankGetsTheSingleProcessResultBitForBit) {
  for (Index n : {1, 3, 7, 50, 301}) {
    const std::vector<double> v = uneven_values(n);
    for (Index groups : {1, 4, 8, 1000}) {
      const Part want = reduce_values_one_process(v, groups);
      for (int K = 1; K <= 5; ++K) {
        std::vector<Part> got(static_cast<std::size_t>(K));
        const auto errors = on_ranks(K, [&](const Communicator& comm, int r) {
          Context c(1, 1);
          c.set_communicator(comm);
          got[static_cast<std::size_t>(r)] = reduce_values(v, c, groups);
        });
        for (int r = 0; r < K; ++r) {
          ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
          const Part& g = got[static_cast<std::size_t>(r)];
          EXPECT_TRUE(same_bits(g.sum, want.sum))
              << "n " << n << " groups " << groups << " K " << K << " rank " << r;
          EXPECT_EQ(g.count, n);
          EXPECT_TRUE(same_bits(g.outer, want.outer)) << "n " << n << " groups " << groups << " K " << K;
        }
      }
    }
  }
}

TEST(DistributedReduce, TheTestDataAreOrderSensitive) {
  // Otherwise the test above could not tell a reduction in another order from the right one.
  const std::vector<double> v = uneven_values(301);
  double sequential = 0;
  for (double x : v) sequential += x;
  const Part grouped = reduce_values_one_process(v, 8);
  EXPECT_FALSE(same_bits(sequential, grouped.sum));
}

TEST(DistributedReduce, EachItemIsAccumulatedOnExactlyOneRank) {
  const std::vector<double> v = uneven_values(50);
  const int K = 3;
  std::vector<std::vector<Index>> touched(K, std::vector<Index>(50, 0));
  on_ranks(K, [&](const Communicator& comm, int r) {
    Context c(1, 1);
    c.set_communicator(comm);
    (void)reduce_values(v, c, 8, &touched[static_cast<std::size_t>(r)]);
  });
  for (Index i = 0; i < 50; ++i) {
    Index total = 0;
    for (int r = 0; r < K; ++r) total += touched[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
    EXPECT_EQ(total, 1) << "item " << i;
  }
  // Rank 0 owns groups 0..1 of 8 (8·1/3 = 2): items [0, 12).
  for (Index i = 0; i < 50; ++i) EXPECT_EQ(touched[0][static_cast<std::size_t>(i)], i < 12 ? 1 : 0) << i;
}

TEST(DistributedReduce, AnErrorOnOneRankIsTheSameErrorOnEveryRank) {
  const std::vector<double> v = uneven_values(40);
  // Items 33 and 25 fail: one process reports the lowest failing group's error (item 25's).
  auto run = [&](const Context& c) {
    return ordered_reduce(
        40, c, [] { return 0.0; },
        [&](Index i, double& s) {
          if (i == 25 || i == 33) throw DataError("row " + std::to_string(i) + ": not finite");
          s += v[static_cast<std::size_t>(i)];
        },
        [](double& a, double b) { a += b; }, 8, [](double& s) { return std::tie(s); });
  };
  const std::string want = test::message_of<DataError>([&] { run(Context(1, 1)); });
  EXPECT_EQ(want, "row 25: not finite");
  for (int K : {2, 3, 4}) {
    const auto errors = on_ranks(K, [&](const Communicator& comm, int) {
      Context c(1, 1);
      c.set_communicator(comm);
      run(c);
    });
    for (int r = 0; r < K; ++r) {
      ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " of " << K << " did not fail";
      try {
        std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
      } catch (const DataError& e) {
        EXPECT_EQ(std::string(e.what()), want) << "rank " << r << " of " << K;
      } catch (...) {
        ADD_FAILURE() << "rank " << r << ": not a DataError";
      }
    }
  }
}

TEST(DistributedReduce, InsideAParallelLoopEachProcessReducesAlone) {
  // The processes cannot meet from a parallel loop's bodies (their order differs between processes):
  // a reduction there computes every group locally, and no collective happens.
  const std::vector<double> v = uneven_values(64);
  const Part want = reduce_values_one_process(v, 8);
  FakeWorld world(2);
  std::vector<double> got(4, 0.0);
  on_ranks(
      2,
      [&](const Communicator& comm, int r) {
        Context c(1, 2);
        c.set_communicator(comm);
        parallel_for(2, 2,
                     [&](Index j) { got[static_cast<std::size_t>(2 * r + j)] = reduce_values(v, c, 8).sum; });
      },
      &world);
  EXPECT_EQ(world.collectives(), 0);
  for (double g : got) EXPECT_TRUE(same_bits(g, want.sum));
}

TEST(DistributedReduce, EncodingRoundTripsEveryType) {
  Matrix m = Matrix::Random(3, 4);
  Vector w = Vector::Random(5);
  std::vector<Matrix> list = {Matrix::Random(2, 2), Matrix()};
  double d = -0.0;
  Index k = -7;
  ByteWriter out;
  encode(out, std::tie(m, w, list, d, k));
  std::string bytes = out.take();
  Matrix m2;
  Vector w2;
  std::vector<Matrix> list2;
  double d2 = 1;
  Index k2 = 0;
  ByteReader in(bytes);
  decode(in, std::tie(m2, w2, list2, d2, k2));
  EXPECT_TRUE(in.at_end());
  EXPECT_TRUE(same_bits(m, m2));
  EXPECT_TRUE(same_bits(Matrix(w), Matrix(w2)));
  ASSERT_EQ(list2.size(), 2u);
  EXPECT_TRUE(same_bits(list[0], list2[0]));
  EXPECT_EQ(list2[1].size(), 0);
  EXPECT_TRUE(same_bits(d, d2));
  EXPECT_EQ(k2, -7);
  // A truncated message is an error, not a read past the end.
  ByteReader short_in(std::string_view(bytes).substr(0, bytes.size() - 1));
  EXPECT_THROW(decode(short_in, std::tie(m2, w2, list2, d2, k2)), Error);
}

TEST(DistributedReduce, MmdOnSeveralProcessesIsTheSingleProcessTest) {
  // The Gram blocks' sums and their row sums and diagonals (the Gamma null needs them per row).
  const test::PointPair p = test::random_points(90, 70, 3, 4, "mmd");
  const KernelPtr k =
      test::plugin_registry().make_kernel(test::config_from("type = \"gaussian\"\nsigma = 1.3"), {});
  auto run = [&](const Context& c) {
    RandomStream rng(6, "perm");
    return mmd_test(*k, p.X, p.Y, 30, rng, c, 16, true);
  };
  const MmdTest want = run(Context(1, 1));
  for (int K : {2, 3}) {
    std::vector<MmdTest> got(static_cast<std::size_t>(K));
    const auto errors = on_ranks(K, [&](const Communicator& comm, int r) {
      Context c(1, 1);
      c.set_communicator(comm);
      got[static_cast<std::size_t>(r)] = run(c);
    });
    for (int r = 0; r < K; ++r) {
      ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
      const MmdTest& g = got[static_cast<std::size_t>(r)];
      EXPECT_TRUE(same_bits(g.mmd2, want.mmd2)) << K;
      EXPECT_TRUE(same_bits(g.mmd2_biased, want.mmd2_biased)) << K;
      EXPECT_TRUE(same_bits(Matrix(g.permuted), Matrix(want.permuted))) << K;
      EXPECT_TRUE(same_bits(g.gamma_p_value, want.gamma_p_value)) << K;
    }
  }
}

TEST(DistributedReduce, AnInputErrorOnOneProcessIsOneErrorOnEveryProcessBeforeAnyWork) {
  // Rank 1 cannot read its data file (a file system the others see differently); rank 0 can. The
  // processes agree after reading, so both throw rank 1's DataError and nothing is written.
  const auto dir = test::temp_dir("mpi-one-bad");
  std::string csv = "a,b\n";
  RandomStream rng(2, "csv");
  for (int i = 0; i < 200; ++i)
    csv += std::to_string(rng.normal()) + "," + std::to_string(rng.normal()) + "\n";
  test::write_file(dir, "data.csv", csv);
  const std::string body = R"(
[[model]]
name = "lite"
[model.estimator]
type = "lite"
inducing_points = 10
[model.kernel]
type = "gaussian"
sigma = 1.0
[model.base_measure]
type = "gaussian"
std = 3.0
)";
  const auto good = test::write_file(
      dir, "good.toml", "schema_version = 1\n[data]\ntype = \"file\"\npath = \"data.csv\"\n" + body);
  const auto bad = test::write_file(
      dir, "bad.toml", "schema_version = 1\n[data]\ntype = \"file\"\npath = \"gone.csv\"\n" + body);
  std::vector<std::exception_ptr> errors = on_ranks(2, [&](const Communicator& comm, int r) {
    RunOptions o;
    o.quiet = true;
    o.threads = 1;
    o.communicator = &comm;
    o.output_dir = (dir / "out").string();
    (void)run_pipeline((r == 0 ? good : bad).string(), o);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
    } catch (const DataError& e) {
      EXPECT_TRUE(test::contains(e.what(), "gone.csv")) << "rank " << r << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": not a DataError: " << e.what();
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

// Whole pipelines on 1, 2 and 3 simulated processes: the lite, Nyström, importance-sampling, score
// matching, FSSD and KSD sums are all distributed, and results.json must be the same text. Timing
// fields go, and so do the durations some notes quote ("..., 0.0087 s"): they differ between any two
// runs.
nlohmann::json without_timing(nlohmann::json j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [key, value] : j.items()) {
      bool timing = false;
      for (const std::string t : {"seconds", "evaluation_seconds", "proposals_per_second"})
        timing = timing || key == t || (key.size() > t.size() && key.ends_with("." + t));
      if (!timing) out[key] = without_timing(value);
      if (key == "notes" && out[key].is_array())
        for (auto& note : out[key])
          if (note.is_string())
            note = std::regex_replace(note.get<std::string>(), std::regex(R"(\b[0-9.]+(e[-+]?[0-9]+)? s\b)"),
                                      "T s");
    }
    return out;
  } else if (j.is_array()) {
    for (auto& value : j) value = without_timing(value);
  }
  return j;
}

const std::string kPipeline = test::PipelineText()
      .data("split = { test = 300, validation = 0 }")
      .lite("lite", 40, 1.2, 3.0)
      .model("name = \"nystrom\"\n[model.estimator]\ntype = \"nystrom\"\ninducing_points = 25\nchunk_rows = 64\n[model.kernel]\ntype = \"gaussian\"\nsigma = 1.2\n[model.base_measure]\ntype = \"gaussian\"\nstd = 3.0")
      .evaluate("log_likelihood", "method = \"importance\"\nsamples = 20000\nchunk_size = 512\nbound_percentile_samples = 5000\nbound_rho_samples = 5000\nbound_variance_samples = 5000")
      .evaluate("score_matching_loss")
      .evaluate("fssd", "J = 4\nnull_draws = 100")
      .evaluate("ksd", "bootstrap_draws = 20")
      .str();

TEST(DistributedReduce, APipelineOnSeveralProcessesWritesTheSingleProcessResults) {
  RandomStream rng(8, "rows");
  Matrix X(1200, 2);
  for (Index i = 0; i < X.rows(); ++i) {
    X(i, 0) = rng.normal();
    X(i, 1) = 0.5 * X(i, 0) * X(i, 0) + 0.5 * rng.normal();
  }
  const Config pipeline = Config::parse_string(kPipeline, "distributed.toml");
  RunOptions options;
  options.quiet = true;
  options.threads = 1;
  const nlohmann::json want = without_timing(
      nlohmann::json::parse(run_pipeline(pipeline, InMemoryData{X, {}}, options).results_json));
  ASSERT_EQ(want["status"], "complete");
  for (int K : {2, 3}) {
    FakeWorld world(K);
    std::vector<std::string> got(static_cast<std::size_t>(K));
    const auto errors = on_ranks(
        K,
        [&](const Communicator& comm, int r) {
          RunOptions o = options;
          o.communicator = &comm;
          got[static_cast<std::size_t>(r)] = run_pipeline(pipeline, InMemoryData{X, {}}, o).results_json;
        },
        &world);
    // Every distributed sum met: the lite and Nyström systems, Ẑ and the bound's three samples, the
    // score matching loss, FSSD's and KSD's sums, at least.
    EXPECT_GE(world.collectives(), 9) << K;
    for (int r = 0; r < K; ++r) {
      ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " of " << K;
      EXPECT_EQ(without_timing(nlohmann::json::parse(got[static_cast<std::size_t>(r)])).dump(1), want.dump(1))
          << "rank " << r << " of " << K;
    }
  }
}

// ---- DKEF (plugins/dkef, kef/closed_form_gradient.hpp) ----

const std::string kDeepKernel = "type = \"deep\"\ncomponents = 1\nlayers = 2\nwidth = 4\nsigma_init = 1.3";
const std::string kLearningQ0 = "type = \"generalized_normal\"\nmean = 0.1\nstd = 1.5\nbeta = 1.7";

// 260 training and 230 validation rows: 11 and 10 row blocks, more than the 8 runs of blocks the
// processes share, so runs of several blocks (and one straddling training and validation) occur.
test::MetaProblem dkef_problem() {
  return test::make_meta_problem(kDeepKernel, kLearningQ0, 3, 260, 230, 7, 31, "mpi-dkef");
}

TEST(DistributedReduce, DkefValidationLossIsTheSingleProcessOneAndTheGradientPathsLoss) {
  const test::MetaProblem p = dkef_problem();
  const double want =
      closed_form_validation_loss(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la, p.lc, Context(1, 1));
  // The minibatch gradient's loss is summed in the same runs of blocks: the same number.
  const ClosedFormGradient g = closed_form_validation_gradient(*p.kernel, *p.base, p.train, p.validation, p.Z,
                                                               p.la, p.lc, Context(1, 2));
  EXPECT_TRUE(same_bits(g.loss, want));
  for (int K : {2, 3}) {
    FakeWorld world(K);
    std::vector<double> got(static_cast<std::size_t>(K));
    const auto errors = on_ranks(
        K,
        [&](const Communicator& comm, int r) {
          Context c(1, 1);
          c.set_communicator(comm);
          got[static_cast<std::size_t>(r)] =
              closed_form_validation_loss(*p.kernel, *p.base, p.train, p.validation, p.Z, p.la, p.lc, c);
        },
        &world);
    EXPECT_EQ(world.collectives(), 2) << K;  // the fit's sums, the loss's sum
    for (int r = 0; r < K; ++r) {
      ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
      EXPECT_TRUE(same_bits(got[static_cast<std::size_t>(r)], want)) << "rank " << r << " of " << K;
    }
  }
}

TEST(DistributedReduce, DkefStage2IsTheSingleProcessOneWithAndWithoutKeptStacks) {
  struct Outcome {
    FrozenKernelGradient first, second;
    double loss = 0;
    bool keeps = false;
  };
  // Two gradients with q0 moved in between (stage 2's steps), then a loss at other λ.
  auto run = [](test::MetaProblem& p, bool learns, std::size_t budget, const Context& c) {
    const FrozenKernelMetaProblem frozen(*p.kernel, *p.base, p.train, p.validation, p.Z, learns, c, budget);
    Outcome o;
    o.keeps = frozen.keeps_stacks();
    o.first = frozen.gradient(p.la, p.lc);
    if (learns) p.base->set_parameters(p.base->parameters() - 0.05 * o.first.base);
    o.second = frozen.gradient(p.la, p.lc);
    o.loss = frozen.loss(0.3, 0.004);
    return o;
  };
  auto same = [](const FrozenKernelGradient& a, const FrozenKernelGradient& b) {
    return same_bits(a.loss, b.loss) && same_bits(Matrix(a.alpha), Matrix(b.alpha)) &&
           same_bits(a.log_lambda_alpha, b.log_lambda_alpha) && same_bits(a.log_lambda_c, b.log_lambda_c) &&
           same_bits(Matrix(a.base), Matrix(b.base));
  };
  for (bool learns : {false, true}) {
    for (std::size_t budget : {FrozenKernelMetaProblem::kDefaultStackBudgetBytes, std::size_t{0}}) {
      test::MetaProblem one = dkef_problem();
      const Outcome want = run(one, learns, budget, Context(1, 1));
      EXPECT_EQ(want.keeps, learns && budget > 0);
      for (int K : {2, 3}) {
        // Each simulated process has its own kernel and base measure (stage 2 moves q0's parameters).
        std::vector<test::MetaProblem> problems;
        for (int r = 0; r < K; ++r) problems.push_back(dkef_problem());
        std::vector<Outcome> got(static_cast<std::size_t>(K));
        FakeWorld world(K);
        const auto errors = on_ranks(
            K,
            [&](const Communicator& comm, int r) {
              Context c(1, 1);
              c.set_communicator(comm);
              got[static_cast<std::size_t>(r)] =
                  run(problems[static_cast<std::size_t>(r)], learns, budget, c);
            },
            &world);
        // The statistics; and with q0 learning two passes per gradient and one per loss.
        EXPECT_EQ(world.collectives(), learns ? 1 + 2 + 2 + 1 : 1) << K;
        for (int r = 0; r < K; ++r) {
          ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
          const Outcome& o = got[static_cast<std::size_t>(r)];
          const std::string where = "learns " + std::to_string(learns) + " budget " + std::to_string(budget) +
                                    " rank " + std::to_string(r) + " of " + std::to_string(K);
          EXPECT_EQ(o.keeps, want.keeps) << where;
          EXPECT_TRUE(same(o.first, want.first)) << where;
          EXPECT_TRUE(same(o.second, want.second)) << where;
          EXPECT_TRUE(same_bits(o.loss, want.loss)) << where;
        }
      }
    }
  }
}

// ---- HMC chains and AIS (kef/hmc.hpp, kef/ais.hpp) ----

// A lite model of the DKEF problem's kernel and q0 (no exact sampler, so HMC).
std::shared_ptr<LiteModel> hmc_model() {
  const test::MetaProblem p = test::make_meta_problem(
      "type = \"gaussian\"\nsigma = 1.1", "type = \"gaussian\"\nstd = 2.0", 2, 60, 30, 12, 41, "mpi-hmc");
  RandomStream rng(5, "alpha");
  return std::make_shared<LiteModel>(p.kernel, p.base, p.Z, Vector(0.3 * rng.normal_matrix(12, 1)));
}

TEST(DistributedReduce, HmcChainsOnSeveralProcessesAreTheSingleProcessDraws) {
  const auto model = hmc_model();
  HmcOptions o;
  o.chains = 10;
  o.chains_per_batch = 3;  // 4 groups, the last of one chain; 5 processes leave one without a group
  o.warmup = 40;
  o.samples = 30;
  o.init = HmcInit::BaseMeasure;
  auto run = [&](const Context& c, HmcDiagnostics& d) {
    RandomStream rng(7, "hmc");
    return run_hmc(*model, rng, o, c, &d);
  };
  HmcDiagnostics want_d;
  const Matrix want = run(Context(1, 1), want_d);
  for (int K : {2, 3, 5}) {
    std::vector<Matrix> got(static_cast<std::size_t>(K));
    std::vector<HmcDiagnostics> got_d(static_cast<std::size_t>(K));
    FakeWorld world(K);
    const auto errors = on_ranks(
        K,
        [&](const Communicator& comm, int r) {
          Context c(1, 1);
          c.set_communicator(comm);
          got[static_cast<std::size_t>(r)] = run(c, got_d[static_cast<std::size_t>(r)]);
        },
        &world);
    EXPECT_EQ(world.collectives(), 1) << K;
    for (int r = 0; r < K; ++r) {
      ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
      const HmcDiagnostics& d = got_d[static_cast<std::size_t>(r)];
      EXPECT_TRUE(same_bits(got[static_cast<std::size_t>(r)], want)) << "rank " << r << " of " << K;
      EXPECT_EQ(d.acceptance_rate, want_d.acceptance_rate) << "rank " << r << " of " << K;
      EXPECT_EQ(d.step_size, want_d.step_size) << "rank " << r << " of " << K;
      EXPECT_EQ(d.divergences, want_d.divergences) << "rank " << r << " of " << K;
      EXPECT_TRUE(same_bits(d.inverse_mass, want_d.inverse_mass)) << "rank " << r << " of " << K;
      EXPECT_TRUE(same_bits(Matrix(d.ess), Matrix(want_d.ess))) << "rank " << r << " of " << K;
    }
  }
}

TEST(DistributedReduce, AHmcStartingPointErrorIsTheSingleProcessErrorOnEveryProcess) {
  // Chains 4 and 7 (groups 1 and 2 of 3) start where log p~ is not finite: one process names chain 4.
  const auto model = hmc_model();
  HmcOptions o;
  o.chains = 9;
  o.chains_per_batch = 3;
  o.warmup = 5;
  o.samples = 5;
  o.init = HmcInit::Points;
  o.init_points = Matrix::Zero(9, 2);
  for (Index c = 0; c < 9; ++c) o.init_points(c, 0) = 0.1 * static_cast<double>(c);
  o.init_points(4, 1) = 1e200;
  o.init_points(7, 1) = 1e200;
  // With as many distinct rows as chains, chain c starts at row c.
  auto run = [&](const Context& c) {
    RandomStream rng(7, "hmc");
    return run_hmc(*model, rng, o, c);
  };
  const std::string want = test::message_of<NumericalError>([&] { run(Context(1, 1)); });
  ASSERT_TRUE(test::contains(want, "chain 4")) << want;
  for (int K : {2, 3}) {
    const auto errors = on_ranks(K, [&](const Communicator& comm, int) {
      Context c(1, 1);
      c.set_communicator(comm);
      run(c);
    });
    for (int r = 0; r < K; ++r) {
      ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
      try {
        std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
      } catch (const NumericalError& e) {
        EXPECT_EQ(std::string(e.what()), want) << "rank " << r << " of " << K;
      } catch (...) {
        ADD_FAILURE() << "rank " << r << ": not a NumericalError";
      }
    }
  }
}

TEST(DistributedReduce, AisOnSeveralProcessesIsTheSingleProcessEstimate) {
  const auto model = hmc_model();
  RandomStream data_rng(3, "ais-fit");
  const StudentTProposal q = StudentTProposal::fit(2.0 * data_rng.normal_matrix(200, 2), 5.0);
  AisOptions o;
  o.particles = 40;
  o.particles_per_batch = 16;  // 3 blocks and groups of particles
  o.pilot_particles = 20;
  o.temperatures = 8;
  o.leapfrog_steps = 4;
  struct Outcome {
    AisPilot pilot;
    AisResult forward;
  };
  auto run = [&](const Context& c) {
    const RandomStream stream(11, "ais");
    Outcome out;
    out.pilot = ais_pilot(*model, q, stream.derive("pilot"), o, c);
    out.forward = ais_forward(*model, q, out.pilot, stream.derive("forward"), o, c);
    return out;
  };
  const Outcome want = run(Context(1, 1));
  for (int K : {2, 3}) {
    std::vector<Outcome> got(static_cast<std::size_t>(K));
    const auto errors = on_ranks(K, [&](const Communicator& comm, int r) {
      Context c(1, 1);
      c.set_communicator(comm);
      got[static_cast<std::size_t>(r)] = run(c);
    });
    for (int r = 0; r < K; ++r) {
      ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r;
      const Outcome& g = got[static_cast<std::size_t>(r)];
      EXPECT_EQ(g.pilot.step_sizes, want.pilot.step_sizes) << "rank " << r << " of " << K;
      EXPECT_TRUE(same_bits(Matrix(g.forward.log_weights), Matrix(want.forward.log_weights)))
          << "rank " << r << " of " << K;
      EXPECT_TRUE(same_bits(g.forward.log_z, want.forward.log_z)) << "rank " << r << " of " << K;
      EXPECT_TRUE(same_bits(g.forward.mean_acceptance, want.forward.mean_acceptance)) << "rank " << r;
      EXPECT_EQ(g.forward.divergences, want.forward.divergences) << "rank " << r;
    }
  }
}

// Whole pipelines of tests/mpi's mpirun configs, in process: results.json and the fitted models' log
// densities and scores on the test rows, bit for bit.
void expect_pipeline_on_processes_is_single(const std::string& file, const std::vector<int>& sizes) {
  const std::filesystem::path path = test::source_dir() / "tests" / "mpi" / file;
  const Config pipeline = Config::parse_file(path.string());
  // The in-memory entry point (the configs' synthetic source is checked, not read): a banana of 1500 rows.
  RandomStream data_rng(8, "rows");
  Matrix X(1500, 2);
  for (Index i = 0; i < X.rows(); ++i) {
    X(i, 0) = 2.0 * data_rng.normal();
    X(i, 1) = 0.3 * X(i, 0) * X(i, 0) + data_rng.normal();
  }
  RunOptions options;
  options.quiet = true;
  options.threads = 1;
  const RunResult want = run_pipeline(pipeline, InMemoryData{X, {}}, options);
  const nlohmann::json want_json = without_timing(nlohmann::json::parse(want.results_json));
  ASSERT_EQ(want_json["status"], "complete");
  RandomStream rng(12, "probe");
  const Matrix probe = 1.5 * rng.normal_matrix(40, 2);
  for (int K : sizes) {
    std::vector<RunResult> got(static_cast<std::size_t>(K));
    const auto errors = on_ranks(K, [&](const Communicator& comm, int r) {
      RunOptions o = options;
      o.communicator = &comm;
      got[static_cast<std::size_t>(r)] = run_pipeline(pipeline, InMemoryData{X, {}}, o);
    });
    for (int r = 0; r < K; ++r) {
      ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << file << " rank " << r << " of " << K;
      const RunResult& g = got[static_cast<std::size_t>(r)];
      EXPECT_EQ(without_timing(nlohmann::json::parse(g.results_json)).dump(1), want_json.dump(1))
          << file << " rank " << r << " of " << K;
      ASSERT_EQ(g.models.size(), want.models.size());
      for (std::size_t m = 0; m < want.models.size(); ++m) {
        EXPECT_TRUE(same_bits(Matrix(g.models[m].second->log_unnormalized(probe)),
                              Matrix(want.models[m].second->log_unnormalized(probe))))
            << file << " model " << want.models[m].first << " rank " << r << " of " << K;
        EXPECT_TRUE(same_bits(g.models[m].second->score(probe), want.models[m].second->score(probe)))
            << file << " model " << want.models[m].first << " rank " << r << " of " << K;
      }
    }
  }
}

// A data file read by rows (kef/training_rows.hpp): tests/mpi/lite_rows.toml on a CSV file of 2001
// rows, as one process and on 2 and 3 simulated ones; results.json and every saved file but the log
// must be the same bytes, and the log must say the training split was read by rows.
std::string file_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// x0 and x1 a bent cloud; `noise`, a third column, is what `exclude` removes in one of the runs.
std::filesystem::path rows_csv(const std::filesystem::path& dir, Index bad_row = -1) {
  std::string csv = "x0,noise,x1\n";
  RandomStream rng(21, "rows");
  char buf[128];
  for (Index i = 0; i < 2001; ++i) {
    const double x = rng.normal(), y = 0.5 * x * x + 0.4 * rng.normal(), z = rng.normal();
    if (i == bad_row)
      std::snprintf(buf, sizeof buf, "%.17g,%.17g,NA\n", x, z);
    else
      std::snprintf(buf, sizeof buf, "%.17g,%.17g,%.17g\n", x, z, y);
    csv += buf;
  }
  return test::write_file(dir, "rows.csv", csv);
}

void expect_rows_runs_are_single(const std::string& tag, const std::vector<std::string>& extra,
                                 const std::string& config_name = "lite_rows.toml",
                                 const std::vector<std::string>& files = {
                                     "models/lite/alpha.npy", "models/lite/inducing_points.npy",
                                     "models/lite/model.toml", "models/nystrom/model.toml",
                                     "models/nystrom/points.npy", "models/nystrom/coefficients.npy"},
                                 bool npy = false, const std::string& log_says = "the training split is read by rows") {
  const auto dir = test::temp_dir("mpi-rows-" + tag);
  auto data = rows_csv(dir);
  if (npy) {  // the same rows as a .npy file (names x0, noise, x1 become 0, 1, 2)
    write_npy(dir / "rows.npy", read_table(data).values);
    data = dir / "rows.npy";
  }
  RunOptions options;
  options.quiet = true;
  options.threads = 1;
  options.overrides = {"data.path=" + data.string()};
  options.overrides.insert(options.overrides.end(), extra.begin(), extra.end());
  const std::string config = (test::source_dir() / "tests" / "mpi" / config_name).string();
  options.output_dir = (dir / "one").string();
  (void)run_pipeline(config, options);
  const std::string want = without_timing(nlohmann::json::parse(file_text(dir / "one" / "results.json"))).dump(1);
  EXPECT_FALSE(test::contains(file_text(dir / "one" / "log.txt"), "read by rows"));
  for (int K : {2, 3}) {
    const auto out = dir / ("k" + std::to_string(K));
    const auto errors = on_ranks(K, [&](const Communicator& comm, int) {
      RunOptions o = options;
      o.communicator = &comm;
      o.output_dir = out.string();
      (void)run_pipeline(config, o);
    });
    for (int r = 0; r < K; ++r) ASSERT_FALSE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " of " << K;
    EXPECT_EQ(without_timing(nlohmann::json::parse(file_text(out / "results.json"))).dump(1), want) << K;
    EXPECT_TRUE(test::contains(file_text(out / "log.txt"), log_says)) << K << ": " << file_text(out / "log.txt");
    for (const std::string& f : files) {
      ASSERT_TRUE(std::filesystem::exists(dir / "one" / f)) << f;
      EXPECT_EQ(file_text(out / f), file_text(dir / "one" / f)) << tag << ": " << f << ", " << K << " processes";
    }
  }
}

TEST(DistributedReduce, ADataFileReadByRowsGivesTheSingleProcessRunOnTwoAndThreeProcesses) {
  // The file's columns chosen by `columns` (in another order), and by `exclude`.
  expect_rows_runs_are_single("columns", {"data.columns=[\"x1\", \"x0\"]"});
  expect_rows_runs_are_single("exclude", {"data.exclude=[\"noise\"]"});
  expect_rows_runs_are_single("unshuffled", {"data.columns=[\"x0\", \"x1\"]", "data.shuffle=false"});
  // standardize and whiten: statistics of the first rows read in blocks, each row mapped as it is read.
  expect_rows_runs_are_single("standardize", {"data.exclude=[\"noise\"]", "data.standardize=true",
                                              "data.statistics_rows=1500"});
  expect_rows_runs_are_single("whiten", {"data.whiten=true"});
  // Asked not to: every process holds the split, and the log says why.
  expect_rows_runs_are_single("held", {"data.read_by_rows=false"}, "lite_rows.toml",
                              {"models/lite/alpha.npy", "models/nystrom/coefficients.npy"}, false,
                              "every process holds the whole training split ([data] read_by_rows = false)");
}

// The other consumers of the split that read it by position or in blocks (tests/mpi/rows_consumers.toml):
// the median bandwidth, the log-likelihood's data-fitted proposals, AIS's start and quadrature box,
// HMC's starting rows for mmd and mmd_two_sample, and the saved training split.
TEST(DistributedReduce, EveryEvaluatorAndTheSavedSplitReadTheFileByRowsAsOneProcessReadsItsSplit) {
  expect_rows_runs_are_single("consumers", {"data.exclude=[\"noise\"]"}, "rows_consumers.toml",
                              {"models/lite/alpha.npy", "models/lite/model.toml", "data/train.npy",
                               "data/test.npy", "data/validation.npy"});
}

// [tune]'s candidates are fitted on the split as the models are (here by rows), and scored on the
// validation split.
TEST(DistributedReduce, ATuneGridSearchReadsTheFileByRowsAsOneProcessReadsItsSplit) {
  expect_rows_runs_are_single("tune", {"tune.model=\"lite\"", "tune.grid.estimator.lambda_alpha=[1e-3, 1e-2]",
                                       "data.split={test=500, validation=300}"});
}

// DKEF (tests/mpi/dkef_rows.toml): on a .npy file its minibatches, early-stopping rows, inducing points
// and block sums read the file by position; a .csv file, which each scattered read would scan again,
// is held by every process, and the log says why. Both give the single-process run.
TEST(DistributedReduce, DkefReadsANpyFileByRowsAndHoldsACsvFileAsOneProcessDoes) {
  const std::vector<std::string> files = {"models/dkef-deep/model.toml", "models/dkef-deep/alpha.npy",
                                          "models/dkef-gauss/model.toml", "models/dkef-gauss/alpha.npy"};
  expect_rows_runs_are_single("dkef-npy", {"data.exclude=[\"x1\"]"}, "dkef_rows.toml", files, true);
  expect_rows_runs_are_single("dkef-csv", {"data.exclude=[\"noise\"]"}, "dkef_rows.toml", files, false,
                              "every process holds the whole training split (estimator `dkef` reads scattered "
                              "training rows at every step");
}

TEST(DistributedReduce, ABadValueInOneProcessesShareOfAFileReadByRowsIsTheSingleProcessError) {
  // Row 1700 (line 1702) lies in the last process's share of the file: every process must stop with
  // the error one process reports, before any fit, and nothing is written (all three columns are read,
  // and the missing value is in the last).
  const auto dir = test::temp_dir("mpi-rows-bad");
  const auto data = rows_csv(dir, 1700);
  RunOptions options;
  options.quiet = true;
  options.threads = 1;
  options.overrides = {"data.path=" + data.string()};
  options.output_dir = (dir / "out").string();
  const std::string config = (test::source_dir() / "tests" / "mpi" / "lite_rows.toml").string();
  std::string single;
  try {
    (void)run_pipeline(config, options);
  } catch (const DataError& e) {
    single = e.what();
  }
  ASSERT_TRUE(test::contains(single, "line 1702")) << single;
  for (int K : {2, 3}) {
    const auto errors = on_ranks(K, [&](const Communicator& comm, int) {
      RunOptions o = options;
      o.communicator = &comm;
      (void)run_pipeline(config, o);
    });
    for (int r = 0; r < K; ++r) {
      ASSERT_TRUE(errors[static_cast<std::size_t>(r)]) << "rank " << r << " of " << K << " did not fail";
      try {
        std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
      } catch (const DataError& e) {
        EXPECT_EQ(std::string(e.what()), single) << "rank " << r << " of " << K;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": not a DataError: " << e.what();
      }
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  }
}

TEST(DistributedReduce, ADkefPipelineOnTwoAndThreeProcessesIsTheSingleProcessRun) {
  expect_pipeline_on_processes_is_single("dkef_stage2.toml", {2, 3});
}

TEST(DistributedReduce, AnHmcAndAisPipelineOnTwoAndThreeProcessesIsTheSingleProcessRun) {
  expect_pipeline_on_processes_is_single("hmc_ais.toml", {2, 3});
}

}  // namespace
}  // namespace kef
