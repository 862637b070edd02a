// Thread budget and the thread pool behind parallel_for.
#include "kef/parallel.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

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

namespace {

// Bodies of serial loops under way on this thread (pool loops are marked by Pool::in_loop_); bodies
// never throw (parallel_for catches inside them), so plain increments balance.
thread_local int t_body_depth = 0;

// The threads behind parallel_for. Idle workers block on a condition variable instead of spinning:
// with OpenMP (libgomp spins between parallel regions) a DKEF run took 63 s instead of 30 s next to
// two busy processes on 2 cores, and the waking latency a blocked worker costs (tens of µs) is
// nothing against kef's work items. One loop runs on the pool at a time; a loop started inside
// another one's body, or while another thread's loop holds the pool, runs serially in its caller
// (as nested OpenMP regions do), which keeps results independent of the schedule either way.
class Pool {
 public:
  void run(Index n, int threads, void (*body)(void*, Index), void* context) {
    if (in_loop_) return serial(n, body, context);  // checked first: run_mutex_ may be this thread's
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) return serial(n, body, context);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(workers_.size()) < threads - 1) workers_.emplace_back([this] { work(); });
      body_ = body;
      context_ = context;
      n_ = n;
      next_.store(0, std::memory_order_relaxed);
      wanted_ = threads - 1;
      joined_ = finished_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    in_loop_ = true;
    drain();
    in_loop_ = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return finished_ == wanted_; });
  }

 private:
  static void serial(Index n, void (*body)(void*, Index), void* context) {
    ++t_body_depth;
    for (Index i = 0; i < n; ++i) body(context, i);
    --t_body_depth;
  }

  void drain() {
    for (Index i = next_.fetch_add(1, std::memory_order_relaxed); i < n_; i = next_.fetch_add(1, std::memory_order_relaxed))
      body_(context_, i);
  }

  void work() {
    in_loop_ = true;  // a pool thread never starts a nested pool loop
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (joined_ == wanted_) continue;  // enough workers for this loop already
      ++joined_;
      lock.unlock();
      drain();
      lock.lock();
      if (++finished_ == wanted_) done_.notify_one();
    }
  }

  std::mutex run_mutex_;  // held by the thread whose loop uses the pool
  std::mutex mutex_;      // guards the job fields below and the counters
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::uint64_t generation_ = 0;
  void (*body_)(void*, Index) = nullptr;
  void* context_ = nullptr;
  Index n_ = 0;
  std::atomic<Index> next_{0};
  int wanted_ = 0, joined_ = 0, finished_ = 0;
  static thread_local bool in_loop_;

 public:
  static bool in_loop() { return in_loop_; }
};

thread_local bool Pool::in_loop_ = false;

// Never destroyed: workers wait for work until the process exits, and a pool torn down by static
// destruction could be used by another static's destructor.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

void pool_parallel_for(Index n, int threads, void (*body)(void*, Index), void* context) {
  if (n <= 0) return;
  threads = static_cast<int>(std::clamp<Index>(threads, 1, n));
  if (threads == 1) {
    ++t_body_depth;
    for (Index i = 0; i < n; ++i) body(context, i);
    --t_body_depth;
    return;
  }
  // body never throws: parallel_for catches every exception inside it.
  pool().run(n, threads, body, context);
}

bool in_parallel_body() { return t_body_depth > 0 || Pool::in_loop(); }

}  // namespace detail
}  // namespace kef
