// Thread budget and the OpenMP loop behind parallel_for.
#include "kef/parallel.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

#include "kef/error.hpp"

namespace kef {
namespace {

// kef parallelises over fixed work items; if Eigen or OpenBLAS split products across threads as
// well, results would depend on the thread count and threads would be oversubscribed. Runs when
// libkef is loaded.
const bool kEigenSingleThreaded = [] {
  Eigen::setNbThreads(1);
  openblas_set_num_threads(1);
  return true;
}();

std::atomic<int> g_threads_override{0};

int threads_from_environment() {
  const char* text = std::getenv("KEF_THREADS");
  if (!text || !*text) return 0;  // set but empty counts as unset, as for most tools
  const std::string value(text);
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (!std::isdigit(static_cast<unsigned char>(value[0])) || end != value.c_str() + value.size() ||
      errno == ERANGE || n < 1 || n > 1 << 16) {
    throw ConfigError("KEF_THREADS: invalid thread count (expected a positive integer, got '" + value +
                      "'); unset it to use every core");
  }
  return static_cast<int>(n);
}

}  // namespace

int default_threads() {
  (void)kEigenSingleThreaded;
  if (int n = g_threads_override.load(std::memory_order_relaxed); n > 0) return n;
  // Read on every call (it is cheap) so a later setenv, e.g. in a test, takes effect.
  if (int n = threads_from_environment(); n > 0) return n;
  return std::max(1u, std::thread::hardware_concurrency());
}

void set_default_threads(int threads) {
  if (threads < 1) {
    throw ConfigError("threads: invalid thread count (expected a positive integer, got " +
                      std::to_string(threads) + ")");
  }
  g_threads_override.store(threads, std::memory_order_relaxed);
}

namespace detail {

void omp_parallel_for(Index n, int threads, void (*body)(void*, Index), void* context) {
  if (n <= 0) return;
  threads = static_cast<int>(std::clamp<Index>(threads, 1, n));
  if (threads == 1) {
    // No team for serial runs: keeps stack traces simple and avoids OpenMP start-up cost.
    for (Index i = 0; i < n; ++i) body(context, i);
    return;
  }
  // body never throws: parallel_for catches every exception inside it.
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (Index i = 0; i < n; ++i) body(context, i);
}

}  // namespace detail
}  // namespace kef
