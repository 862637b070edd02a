// parallel_for and the thread budget. Tests touching KEF_THREADS come before the one that sets the
// process-wide override, because an override cannot be cleared.
#include "kef/parallel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kef/error.hpp"
#include "kef/random.hpp"

namespace kef {
namespace {

// Sets an environment variable for one scope and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Per-item work with its own random stream and an Eigen product, like a real chunked evaluation.
std::vector<double> run(int threads) {
  const Index n = 64;
  std::vector<double> out(static_cast<std::size_t>(n));
  RandomStream root(11, "parallel");
  parallel_for(n, threads, [&](Index i) {
    RandomStream r = root.derive(static_cast<std::uint64_t>(i));
    const Matrix a = r.normal_matrix(40, 40);
    const Matrix p = a * a.transpose();
    double s = 0;
    for (int k = 0; k < 1000; ++k) s += r.normal() * r.gamma(1.5);
    out[static_cast<std::size_t>(i)] = s + p.sum();
  });
  return out;
}

TEST(ParallelFor, ResultsIdenticalForAnyThreadCount) {
  const std::vector<double> one = run(1);
  for (int threads : {2, 4}) {
    const std::vector<double> many = run(threads);
    ASSERT_EQ(many.size(), one.size());
    EXPECT_EQ(std::memcmp(many.data(), one.data(), one.size() * sizeof(double)), 0) << threads << " threads";
  }
}

TEST(ParallelFor, EveryIndexRunsExactlyOnce) {
  for (int threads : {-3, 0, 1, 2, 4, 100}) {
    const Index n = 257;
    std::vector<std::atomic<int>> calls(static_cast<std::size_t>(n));
    parallel_for(n, threads, [&](Index i) { calls[static_cast<std::size_t>(i)]++; });
    for (Index i = 0; i < n; ++i) EXPECT_EQ(calls[static_cast<std::size_t>(i)].load(), 1) << threads;
  }
  int calls = 0;
  parallel_for(0, 4, [&](Index) { ++calls; });
  parallel_for(-5, 4, [&](Index) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, LowestFailingIndexIsRethrown) {
  for (int threads : {1, 2, 4}) {
    try {
      parallel_for(200, threads, [](Index i) {
        if (i == 3) {
          // Fail late, so that with several threads higher indices fail first in time.
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
          throw DataError("item " + std::to_string(i));
        }
        if (i == 7 || i == 50 || i == 199) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL() << "no exception";
    } catch (const DataError& e) {  // the original type survives the rethrow
      EXPECT_STREQ(e.what(), "item 3") << threads;
    }
  }
}

// A loop started inside another loop's body runs serially in that body's thread (no deadlock on the
// pool), and every index of both levels runs once.
TEST(ParallelFor, NestedLoopsRunSeriallyInsideAndComplete) {
  const Index outer = 16, inner = 33;
  std::vector<std::atomic<int>> calls(static_cast<std::size_t>(outer * inner));
  parallel_for(outer, 4, [&](Index i) {
    const auto id = std::this_thread::get_id();
    parallel_for(inner, 4, [&](Index j) {
      EXPECT_EQ(std::this_thread::get_id(), id);
      calls[static_cast<std::size_t>(i * inner + j)]++;
    });
  });
  for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
}

// Loops from several user threads at once: one uses the pool, the others run in their own thread;
// all complete with every index once. Then thousands of short loops in a row (lost wake-ups or a
// worker joining a finished loop would hang or double-count here).
TEST(ParallelFor, ConcurrentCallersAndManyShortLoops) {
  std::vector<std::thread> users;
  std::vector<std::vector<std::atomic<int>>> calls(4);
  for (auto& c : calls) c = std::vector<std::atomic<int>>(500);
  for (std::size_t u = 0; u < calls.size(); ++u)
    users.emplace_back(
        [&, u] { parallel_for(500, 3, [&](Index i) { calls[u][static_cast<std::size_t>(i)]++; }); });
  for (auto& t : users) t.join();
  for (const auto& c : calls)
    for (const auto& k : c) EXPECT_EQ(k.load(), 1);
  std::atomic<long> total{0};
  for (int loop = 0; loop < 5000; ++loop) parallel_for(3, 3, [&](Index i) { total += i + 1; });
  EXPECT_EQ(total.load(), 5000L * 6);
}

// With 2 threads and items that wait for each other, both threads must really be running: item 0
// waits (bounded) until item 1 has started.
TEST(ParallelFor, TwoThreadsRunItemsConcurrently) {
  std::atomic<bool> second_started{false};
  bool overlapped = false;
  parallel_for(2, 2, [&](Index i) {
    if (i == 1) {
      second_started = true;
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!second_started && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    overlapped = second_started;
  });
  EXPECT_TRUE(overlapped);
}

TEST(Threads, EnvironmentVariable) {
  {
    ScopedEnv env("KEF_THREADS", nullptr);
    EXPECT_EQ(default_threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
  {
    ScopedEnv env("KEF_THREADS", "3");
    EXPECT_EQ(default_threads(), 3);
  }
  for (const char* bad : {"0", "-2", "abc", "4x", " 3"}) {
    ScopedEnv env("KEF_THREADS", bad);
    try {
      default_threads();
      FAIL() << "accepted KEF_THREADS='" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("KEF_THREADS"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("got '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Threads, EigenDoesNotMultithread) { EXPECT_EQ(Eigen::nbThreads(), 1); }

TEST(Threads, SetDefaultThreads) {
  EXPECT_THROW(set_default_threads(0), ConfigError);
  EXPECT_THROW(set_default_threads(-1), ConfigError);
  set_default_threads(2);
  EXPECT_EQ(default_threads(), 2);
  ScopedEnv env("KEF_THREADS", "5");  // an explicit setting (--threads) wins over the environment
  EXPECT_EQ(default_threads(), 2);
}

// parallel_for_chunks covers [0, n) with chunks fixed by n and the chunk size, whatever the threads.
TEST(ParallelForChunks, CoversEveryRowOnceInFixedChunks) {
  for (const Index n : {Index{0}, Index{1}, Index{255}, Index{256}, Index{257}, Index{1000}}) {
    for (int threads : {1, 2, 3}) {
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      std::vector<std::pair<Index, Index>> chunks;
      std::mutex m;
      parallel_for_chunks(n, 256, threads, [&](Index begin, Index rows) {
        std::lock_guard<std::mutex> lock(m);
        chunks.emplace_back(begin, rows);
        for (Index i = begin; i < begin + rows; ++i) seen[static_cast<std::size_t>(i)]++;
      });
      for (Index i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], 1) << n << " " << i;
      std::sort(chunks.begin(), chunks.end());
      ASSERT_EQ(static_cast<Index>(chunks.size()), (n + 255) / 256) << n;
      for (std::size_t c = 0; c < chunks.size(); ++c) {
        EXPECT_EQ(chunks[c].first, static_cast<Index>(c) * 256);
        EXPECT_EQ(chunks[c].second, std::min<Index>(256, n - static_cast<Index>(c) * 256));
      }
    }
  }
}

// ordered_reduce against its brute-force twin: the same runs summed sequentially in run order.
TEST(OrderedReduce, EqualsTheSequentialFoldOfTheSameRunsForAnyThreadCount) {
  const Index n = 1001;
  RandomStream r(3, "ordered_reduce");
  std::vector<double> x(static_cast<std::size_t>(n));
  for (auto& v : x) v = r.normal() * std::pow(10.0, 8.0 * r.uniform() - 4.0);  // sums that depend on order
  for (const Index groups : {Index{1}, Index{8}, Index{37}, n, n + 5}) {
    const Index g = std::max<Index>(1, std::min(n, groups));
    double twin = 0;
    for (Index k = 0; k < g; ++k) {
      double part = 0;
      for (Index i = k * n / g; i < (k + 1) * n / g; ++i) part += x[static_cast<std::size_t>(i)];
      twin = k == 0 ? part : twin + part;
    }
    for (int threads : {1, 2, 3}) {
      const double got = ordered_reduce(
          n, threads, [] { return 0.0; }, [&](Index i, double& p) { p += x[static_cast<std::size_t>(i)]; },
          [](double& into, double p) { into += p; }, groups);
      EXPECT_EQ(std::memcmp(&got, &twin, sizeof got), 0) << groups << " groups, " << threads << " threads";
    }
  }
  // No items: one run, init() untouched.
  EXPECT_EQ(ordered_reduce(
                0, 2, [] { return 7.0; }, [](Index, double&) {}, [](double& a, double b) { a += b; }),
            7.0);
}

}  // namespace
}  // namespace kef
