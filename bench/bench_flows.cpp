// MADE and MAF (plugins/flows) against ../shared/anchors/maf_torch.py on the same data:
//   bench_flows data OUT [--n 10000] [--D 11] [--points 1000000]
//       writes OUT/train.npy (n rows), OUT/valid.npy and OUT/test.npy (1000 rows each) and
//       OUT/points.npy (the rows the density is evaluated at): an 11-D
//       non-Gaussian linear mixture (Laplace, uniform and Gaussian-mixture sources through a random
//       mixing matrix), seeded, so kef and the anchor train on identical rows.
//   bench_flows epoch made|maf OUT [--epochs 3] [--threads 1]
//       the training epochs of the flows plugin on OUT/train.npy: 5 Gaussian MADEs of [100, 100] tanh
//       (maf) or one (made), sequential degrees, float64, Adam (lr 1e-4 / 1e-3, weight decay 1e-6),
//       minibatch 100, the plugin's minibatch loop (flow_estimator.cpp) without the validation pass,
//       each minibatch's two row groups on up to `threads` threads (the same bits for any count);
//       prints seconds_per_epoch (the median over the epochs, as the anchor reports it).
//   bench_flows density OUT [--threads 1]
//       log p, and log p with the score, of a randomly initialised MAF (the same architecture; the
//       plugin's initialisation, standardised by OUT/train.npy's moments) at OUT/points.npy, in the
//       plugin's row chunks over `threads` threads; prints
//       logp_points_per_second and score_points_per_second (best of 3 each).
// Minibatches are sequential; within one, FlowDensity::loss_and_gradient's row groups may run in parallel.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "flow_density.hpp"
#include "flow_model.hpp"
#include "kef/adam.hpp"
#include "kef/allocator.hpp"
#include "kef/linalg.hpp"
#include "kef/npy.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"

using namespace kef;
using bench::Clock;
using bench::seconds_since;

namespace {

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: bench_flows data OUT [--n 10000] [--D 11] [--points 1000000]\n"
               "       bench_flows epoch made|maf OUT [--epochs 3] [--threads 1]\n"
               "       bench_flows density OUT [--threads 1]\n");
  std::exit(2);
}

long option(int argc, char** argv, int first, const std::string& name, long fallback) {
  for (int i = first; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return std::atol(argv[i + 1]);
  return fallback;
}

// Sources: column j mod 3 = 0 Laplace, 1 uniform on [-√3, √3], 2 a two-component Gaussian mixture;
// mixed by a fixed random matrix (seed 7) so the columns are dependent.
Matrix mixture_rows(Index n, Index D, RandomStream& rng) {
  RandomStream mix_rng(7, "flows-mixing");
  const Matrix A = mix_rng.normal_matrix(D, D) / std::sqrt(static_cast<double>(D));
  Matrix S(n, D);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < D; ++j) {
      const double u = rng.uniform();
      switch (j % 3) {
        case 0:
          S(i, j) = u < 0.5 ? std::log(2.0 * u + 1e-300) : -std::log(2.0 * (1.0 - u) + 1e-300);
          break;
        case 1:
          S(i, j) = std::sqrt(3.0) * (2.0 * u - 1.0);
          break;
        default:
          S(i, j) = (u < 0.5 ? -1.5 : 1.5) + 0.5 * rng.normal();
      }
    }
  return S * A.transpose();
}

void column_moments(const Matrix& X, Vector& mean, Vector& sd) {
  const double n = static_cast<double>(X.rows());
  mean = X.colwise().mean().transpose();
  sd = ((X.rowwise() - mean.transpose()).colwise().squaredNorm().transpose() / (n - 1.0)).cwiseSqrt();
}

flows::FlowDensity make_density(const Matrix& X, Index layers, std::uint64_t seed) {
  flows::FlowArchitecture arch;
  arch.dim = X.cols();
  arch.hidden_units = {100, 100};
  arch.activation = network::ActivationKind::tanh;
  arch.layers = layers;
  Vector shift, scale;
  column_moments(X, shift, scale);
  flows::FlowDensity d(arch, shift, scale, flows::flow_degrees(arch, false, nullptr));
  RandomStream init(seed, "init");
  d.initialize(init);
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run_data(const std::filesystem::path& out, Index n, Index D, Index points) {
  std::filesystem::create_directories(out);
  RandomStream rng(1, "flows-bench-data");
  write_npy(out / "train.npy", mixture_rows(n, D, rng));
  write_npy(out / "valid.npy", mixture_rows(1000, D, rng));
  write_npy(out / "test.npy", mixture_rows(1000, D, rng));
  write_npy(out / "points.npy", mixture_rows(points, D, rng));
  std::printf("rows_train %ld dims %ld\n", static_cast<long>(n), static_cast<long>(D));
  return 0;
}

// The plugin's epoch (flow_estimator.cpp): shuffle, then per minibatch the loss gradient, the weight
// decay term, an Adam step and the new parameters.
int run_epoch(const std::string& model, const std::filesystem::path& out, long epochs, int threads) {
  const Matrix X = read_npy(out / "train.npy");
  const bool maf = model == "maf";
  flows::FlowDensity density = make_density(X, maf ? 5 : 1, 1);
  Adam adam(AdamOptions{maf ? 1e-4 : 1e-3, 0.9, 0.999, 1e-8}, "bench");
  RandomStream shuffle(1, "minibatches");
  const Index N = X.rows(), B = 100;
  const double weight_decay = 1e-6;
  Vector theta = density.parameters();
  Vector grad;
  std::vector<Index> perm(static_cast<std::size_t>(N));
  std::vector<double> times;
  double loss_sum = 0.0;
  density.set_training(true);
  for (long e = 0; e < epochs; ++e) {
    const auto t0 = Clock::now();
    for (Index i = 0; i < N; ++i) perm[static_cast<std::size_t>(i)] = i;
    for (std::size_t i = perm.size() - 1; i > 0; --i)
      std::swap(perm[i], perm[static_cast<std::size_t>(shuffle.uniform_int(i + 1))]);
    loss_sum = 0.0;
    for (Index b = 0; b < N; b += B) {
      const Index len = std::min<Index>(B, N - b);
      const Matrix batch = gather_rows(X, perm, static_cast<std::size_t>(b), static_cast<std::size_t>(len));
      loss_sum += density.loss_and_gradient(batch, grad, threads) * static_cast<double>(len);
      grad += weight_decay * theta;
      adam.step_in_place(theta, grad);
      density.set_parameters(theta);
    }
    times.push_back(seconds_since(t0));
  }
  std::printf("model %s parameters %ld\n", model.c_str(), static_cast<long>(density.parameter_count()));
  std::printf("seconds_per_epoch %.6f\n", median(times));
  std::printf("last_epoch_train_loss %.8g\n", loss_sum / static_cast<double>(N));
  return 0;
}

int run_density(const std::filesystem::path& out, int threads) {
  const Matrix X = read_npy(out / "train.npy");
  const flows::FlowDensity density = make_density(X, 5, 1);
  const Matrix P = read_npy(out / "points.npy");
  const Index points = P.rows();
  const Index chunk = 1024;  // the plugin's row chunks (flow_model.cpp)
  double best_lp = 1e30, best_score = 1e30, checksum = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    const Vector lp = flows::chunked_log_density(density, P, threads);
    best_lp = std::min(best_lp, seconds_since(t0));
    t0 = Clock::now();
    Vector lp2(points);
    Matrix score(points, X.cols());
    parallel_for_chunks(points, chunk, threads, [&](Index begin, Index len) {
      Matrix s;
      lp2.segment(begin, len) = density.log_density_and_score(P.middleRows(begin, len), s);
      score.middleRows(begin, len) = s;
    });
    best_score = std::min(best_score, seconds_since(t0));
    checksum = lp.mean() + score.mean();
  }
  std::printf("points %ld threads %d checksum %.10g\n", static_cast<long>(points), threads, checksum);
  std::printf("logp_seconds %.6f\nlogp_points_per_second %.6g\n", best_lp,
              static_cast<double>(points) / best_lp);
  std::printf("score_seconds %.6f\nscore_points_per_second %.6g\n", best_score,
              static_cast<double>(points) / best_score);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) usage();
  kef::keep_freed_memory();  // as the kef command does (kef/allocator.hpp)
  const std::string mode = argv[1];
  if (mode == "data")
    return run_data(argv[2], option(argc, argv, 3, "n", 10000), option(argc, argv, 3, "D", 11),
                    option(argc, argv, 3, "points", 1000000));
  if (mode == "epoch") {
    if (argc < 4 || (std::string(argv[2]) != "made" && std::string(argv[2]) != "maf")) usage();
    return run_epoch(argv[2], argv[3], option(argc, argv, 4, "epochs", 3),
                     static_cast<int>(option(argc, argv, 4, "threads", 1)));
  }
  if (mode == "density") return run_density(argv[2], static_cast<int>(option(argc, argv, 3, "threads", 1)));
  usage();
}
