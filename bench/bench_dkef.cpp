// One DKEF stage-1 step, the same model, sizes and step as ../shared/anchors/dkef_torch.py:
// R Gaussian kernels on MLP features (L layers of width W, skip connection), M learned inducing
// points, learned generalised-normal q0 (μ = 0, σ = 2, β = 2 initially), λ_α = λ_C = 1e-2, α in
// closed form on a fit batch of nt rows, the score-matching loss on a disjoint batch of nv rows, the
// exact meta-gradient for every parameter group and an Adam step (lr 1e-3) on all of them.
//   bench_dkef [--D 11] [--R 3] [--W 30] [--L 3] [--M 300] [--nt 100] [--nv 100]
//              [--steps 30] [--warmup 5] [--threads 2]
// Data: 10000 standard-normal rows of dimension D, like the anchor. Prints "key value" lines:
//   seconds_per_step (median over the timed steps), the share of it in the meta-gradient, final_loss.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "closed_form_gradient.hpp"
#include "kef/adam.hpp"
#include "kef/allocator.hpp"
#include "kef/config.hpp"
#include "kef/parallel.hpp"
#include "kef/random.hpp"
#include "kef/registry.hpp"

using namespace kef;
using bench::Clock;
using bench::seconds_since;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Matrix rows_of(const Matrix& X, const std::vector<Index>& idx, std::size_t begin, std::size_t count) {
  Matrix out(static_cast<Index>(count), X.cols());
  for (std::size_t i = 0; i < count; ++i) out.row(static_cast<Index>(i)) = X.row(idx[begin + i]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, long> opt = {{"D", 11},  {"R", 3},      {"W", 30},     {"L", 3},       {"M", 300},
                                     {"nt", 100}, {"nv", 100}, {"steps", 30}, {"warmup", 5}, {"threads", 2}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc || !opt.count(a.substr(2))) {
      std::fprintf(stderr, "usage: bench_dkef [--D 11] [--R 3] [--W 30] [--L 3] [--M 300] [--nt 100] [--nv 100] "
                           "[--steps 30] [--warmup 5] [--threads 2]\n");
      return 2;
    }
    opt[a.substr(2)] = std::atol(argv[++i]);
  }
  const Index D = opt["D"], M = opt["M"], nt = opt["nt"], nv = opt["nv"];
  const int threads = static_cast<int>(opt["threads"]);
  const Context context(1, threads, nullptr, "--threads");
  kef::keep_freed_memory();  // as the kef command does (kef/allocator.hpp)
  Registry reg;
  reg.load_plugins({KEF_BENCH_PLUGIN_DIR});

  RandomStream rng(0, "bench-dkef");
  const Index rows = 10000;
  const Matrix data = rng.normal_matrix(rows, D);
  RandomStream kernel_rng = rng.derive("kernel");
  auto kernel = reg.make_kernel(
      Config::parse_string("type = \"deep\"\ncomponents = " + std::to_string(opt["R"]) + "\nlayers = " +
                               std::to_string(opt["L"]) + "\nwidth = " + std::to_string(opt["W"]) +
                               (opt["R"] > 3 ? "\nsigma_init = 1.0" : ""),
                           "bench"),
      BuildContext{D, &reg, &kernel_rng});
  auto base = reg.make_base_measure(
      Config::parse_string("type = \"generalized_normal\"\nmean = 0.0\nstd = 2.0\nbeta = 2.0", "bench"),
      BuildContext{D, &reg});
  base->check_dimension(D);

  // θ = [kernel | Z (column-major) | log λ_α, log λ_C | q0], as the dkef estimator lays it out.
  const Index nk = kernel->parameter_count(), nz = M * D, nb = base->parameter_count();
  Vector theta(nk + nz + 2 + nb);
  theta.head(nk) = kernel->parameters();
  {
    auto idx = sample_without_replacement(rows, M, rng);
    Matrix Z = rows_of(data, idx, 0, idx.size());
    theta.segment(nk, nz) = Eigen::Map<const Vector>(Z.data(), nz);
  }
  theta.segment(nk + nz, 2).setConstant(std::log(1e-2));
  theta.tail(nb) = base->parameters();

  Adam adam(AdamOptions{1e-3});
  RandomStream batches = rng.derive("batches");
  std::vector<double> step_seconds, gradient_seconds;
  double loss = 0;
  for (long step = 0; step < opt["warmup"] + opt["steps"]; ++step) {
    auto idx = sample_without_replacement(rows, nt + nv, batches);
    for (std::size_t i = idx.size() - 1; i > 0; --i)
      std::swap(idx[i], idx[static_cast<std::size_t>(batches.uniform_int(i + 1))]);
    const Matrix Dt = rows_of(data, idx, 0, static_cast<std::size_t>(nt));
    const Matrix Dv = rows_of(data, idx, static_cast<std::size_t>(nt), static_cast<std::size_t>(nv));

    const auto t0 = Clock::now();
    const Matrix Z = Eigen::Map<const Matrix>(theta.data() + nk, M, D);
    ClosedFormGradient g = closed_form_validation_gradient(
        *kernel, *base, Dt, Dv, Z, std::exp(theta[nk + nz]), std::exp(theta[nk + nz + 1]), context);
    const double t_grad = seconds_since(t0);
    Vector grad(theta.size());
    grad.head(nk) = g.kernel;
    grad.segment(nk, nz) = Eigen::Map<const Vector>(g.inducing.data(), nz);
    grad[nk + nz] = g.log_lambda_alpha;
    grad[nk + nz + 1] = g.log_lambda_c;
    grad.tail(nb) = g.base;
    theta = adam.step(theta, grad);
    kernel->set_parameters(theta.head(nk));
    base->set_parameters(theta.tail(nb));
    const double t_step = seconds_since(t0);
    loss = g.loss;
    if (step >= opt["warmup"]) {
      step_seconds.push_back(t_step);
      gradient_seconds.push_back(t_grad);
    }
  }
  std::printf("threads %d\nD %ld\nM %ld\nparameters %ld\n", threads, static_cast<long>(D), static_cast<long>(M),
              static_cast<long>(theta.size()));
  std::printf("seconds_per_step %.6f\ngradient_seconds %.6f\nfinal_loss %.6g\n", median(step_seconds),
              median(gradient_seconds), loss);
  return 0;
}
