#pragma once
// The kernel tests on samples in memory: what `kef test two-sample|independence|witness|causal` and
// the Python functions kef.two_sample_test, kef.independence_test, kef.witness and
// kef.causal_discovery compute, one function per test, so that both give the same bits for the same
// seed. Each returns its report as JSON text (the object `kef test ... --json` prints); the caller
// reads the samples and loads the plugins its kernels may need (a multi-scale kernel) first.
#include <cstdint>
#include <string>
#include <vector>

#include "kef/bayesian_witness.hpp"
#include "kef/pc_algorithm.hpp"
#include "kef/registry.hpp"
#include "kef/types.hpp"

namespace kef {

// A sample as the report describes it: its rows, and where it came from for messages ("X (x.npy)",
// "X") and for the report (`file`, left out when empty).
struct TestSample {
  const Matrix* values = nullptr;
  std::string what;
  std::string file;
};

// Options shared by the tests, with the names their callers give them (command-line options or
// Python keywords), so that every error names what the user typed.
struct KernelTestOptions {
  std::string bandwidth = "median";  // "median", "bkl", a positive number (two-sample: "bkl_multiscale")
  std::string bandwidth_y;           // independence: σ on Y (empty: as `bandwidth`)
  std::vector<double> scales;        // two-sample, bkl_multiscale: the starting length scales
  long long permutations = 1000;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string bandwidth_key = "--kernel-bandwidth", bandwidth_y_key = "--kernel-bandwidth-y",
              scales_key = "--kernel-scales", threads_key = "--threads";
};

// The options' own checks (bandwidth rules, scales, permutations), which the tests make first; callers
// that read files make them before reading anything.
void check_kernel_test_options(const KernelTestOptions& options, bool two_sample);

// MMD² (unbiased and biased) with permutation and Gamma p-values; σ pooled over both samples.
std::string two_sample_test_json(Registry& registry, const TestSample& x, const TestSample& y,
                                 const KernelTestOptions& options);
// HSIC (biased and unbiased) on paired rows with permutation and Gamma p-values; σ per sample.
std::string independence_test_json(Registry& registry, const TestSample& x, const TestSample& y,
                                   const KernelTestOptions& options);

struct WitnessRequest {
  std::string bandwidth = "median";  // "median", "bkl" or a positive number
  bool integrate = false;            // with "bkl": the mixture over BKL's HMC draws of ℓ
  double tau2 = 1.0, level = 0.8;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string bandwidth_key = "--kernel-bandwidth", integrate_key = "--integrate-lengthscale",
              threads_key = "--threads";
};
struct WitnessReport {
  std::string json;            // the report (without the caller's output files)
  WitnessPosterior posterior;  // mean, band and sd at each point
  double lengthscale = 0;      // ℓ (BKL's mode when integrated)
  double band_excludes_zero = 0;
};
// The request's own checks (bandwidth rule, integrate), which witness_json makes first.
void check_witness_request(const WitnessRequest& request);
// The Bayesian witness μ_P − μ_Q of two samples at `points` (rows with the samples' columns).
WitnessReport witness_json(const TestSample& x, const TestSample& y, const Matrix& points,
                           const WitnessRequest& request);

struct CausalRequest {
  std::string bandwidth = "median";
  double alpha = 0.05;
  long long permutations = 200, max_given = -1;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string bandwidth_key = "--kernel-bandwidth", threads_key = "--threads";
  const PartialGraph* truth_cpdag = nullptr;  // the true DAG's CPDAG, or none
};
// The PC algorithm with HSIC tests on GP-regression residuals over the columns of `data` (named by
// `variables`): its CPDAG, and with a truth the structural Hamming distance to the truth's CPDAG.
std::string causal_discovery_json(Registry& registry, const TestSample& data,
                                  const std::vector<std::string>& variables, const CausalRequest& request);

}  // namespace kef
