// Speed of the Stein evaluators (plugin `stein`), the same work as bench/stein_numpy.py.
//   bench_stein N D J OUTDIR [NULL_DRAWS BOOTSTRAP_DRAWS]     (BOOTSTRAP_DRAWS < 0: FSSD only)
// Writes OUTDIR/X.npy (N x D standard normal) and OUTDIR/V.npy (J x D locations), then times, on all
// threads, the fssd test (given locations, σ fixed) and the ksd statistic and test (Gaussian kernel, same
// σ) of the model N(0.1·1, I) through the registry, as a pipeline would run them. Best of 3 (KSD test:
// best of 2). Output lines are "key value" for bench/run.sh to parse.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "kef/allocator.hpp"
#include "kef/config.hpp"
#include "kef/npy.hpp"
#include "kef/parallel.hpp"
#include "kef/progress.hpp"
#include "kef/random.hpp"
#include "kef/registry.hpp"

using namespace kef;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kSigma = 4.0;  // ≈ the median distance of standard normal data in D = 10 (√(2D))
constexpr double kShift = 0.1;

class ShiftedGaussian final : public Model {
 public:
  explicit ShiftedGaussian(Index d) : d_(d) {}
  Index dim() const override { return d_; }
  std::string type_name() const override { return "bench/gaussian"; }
  Vector log_unnormalized(const Matrix& X) const override {
    return -0.5 * (X.array() - kShift).matrix().rowwise().squaredNorm();
  }
  Matrix score(const Matrix& X) const override { return (kShift - X.array()).matrix(); }
  void score_and_laplacian(const Matrix& X, Matrix& S, Matrix& L) const override {
    S = score(X);
    L = Matrix::Constant(X.rows(), X.cols(), -1.0);
  }
  std::string describe() const override { return "N(0.1, I)"; }

 private:
  Index d_;
};

struct Timed {
  double seconds = std::numeric_limits<double>::infinity();
  EvaluationResult result;
};

Timed time_evaluator(Registry& reg, const std::string& toml, const Model& model, const Dataset& data, int reps) {
  RandomStream init(1, "bench-init");
  auto e = reg.make_evaluator(Config::parse_string(toml, "bench"), BuildContext{data.dim(), &reg, &init, -1});
  Timed t;
  for (int r = 0; r < reps; ++r) {
    Context context = Context(1, default_threads()).child("bench");
    EvalInput in{model, "bench", data, context, nullptr, ""};
    const auto t0 = Clock::now();
    t.result = e->evaluate(in);
    t.seconds = std::min(t.seconds, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return t;
}

double metric(const EvaluationResult& r, const std::string& key) {
  for (const auto& [k, v] : r.metrics)
    if (k == key) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

int main(int argc, char** argv) {
  kef::keep_freed_memory();  // as the kef command does (kef/allocator.hpp)
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_stein N D J OUTDIR [NULL_DRAWS BOOTSTRAP_DRAWS]\n");
    return 2;
  }
  const Index N = std::atol(argv[1]), D = std::atol(argv[2]), J = std::atol(argv[3]);
  const std::filesystem::path out = argv[4];
  const long null_draws = argc > 5 ? std::atol(argv[5]) : 2000, boot = argc > 6 ? std::atol(argv[6]) : 1000;
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});
  RandomStream rng(7, "bench-stein-data");
  Dataset data;
  data.train = rng.normal_matrix(N, D);
  data.test = data.train;
  const Matrix V = rng.normal_matrix(J, D);
  std::filesystem::create_directories(out);
  write_npy(out / "X.npy", data.test);
  write_npy(out / "V.npy", V);
  ShiftedGaussian model(D);
  const std::string sigma = std::to_string(kSigma);

  const Timed f = time_evaluator(reg,
                                 "type = \"fssd\"\nlocations = \"given\"\nlocations_file = \"" + (out / "V.npy").string() +
                                     "\"\nbandwidth = " + sigma + "\nnull_draws = " + std::to_string(null_draws),
                                 model, data, 3);
  // Flops (multiply-adds count 2) no implementation of these formulas avoids: FSSD's covariance of the
  // N x DJ features, N·(DJ)² with its symmetry (NumPy's np.cov does twice that; the null's
  // eigenvalues or draws come on top: kef's zᵀCz with the triangle is (DJ)² per draw); the KSD
  // bootstrap, N²·B (each of the N²/2 distinct h_ij meets each of the B weight vectors once).
  const double P = double(D) * double(J);
  std::printf("threads %d\neigen_gemm_gflops %.1f\nfssd_cov_flops %.4g\nfssd_null_flops %.4g\n", default_threads(),
              bench::eigen_gemm_gflops(default_threads()), double(N) * P * P, double(null_draws) * P * P);
  std::printf("fssd_seconds %.6f\nfssd2 %.17g\nfssd_pvalue %g\n", f.seconds, metric(f.result, "fssd2"),
              metric(f.result, "fssd_pvalue"));
  if (boot < 0) return 0;
  const Timed ks = time_evaluator(reg, "type = \"ksd\"\nbandwidth = " + sigma + "\nbootstrap_draws = 0", model, data, 3);
  std::printf("ksd_stat_seconds %.6f\nksd2 %.17g\n", ks.seconds, metric(ks.result, "ksd2"));
  const Timed kt = time_evaluator(
      reg, "type = \"ksd\"\nbandwidth = " + sigma + "\nbootstrap_draws = " + std::to_string(boot), model, data, 2);
  std::printf("ksd_test_seconds %.6f\nksd_pvalue %g\nksd_bootstrap_flops %.4g\n", kt.seconds, metric(kt.result, "ksd_pvalue"),
              double(N) * double(N) * double(boot));
  return 0;
}
