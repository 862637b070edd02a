#pragma once
// Parallel loops over a fixed set of work items. Work is split into items whose boundaries never
// depend on the thread count, and reductions over items happen afterwards in item order, so results
// are bitwise identical for any number of threads.
#include <algorithm>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "kef/types.hpp"

namespace kef {

// The process-wide default (from --threads, or the number of cores).
int default_threads();
void set_default_threads(int threads);

namespace detail {
void pool_parallel_for(Index n, int threads, void (*body)(void*, Index), void* context);
// Whether this thread is running the body of a parallel_for (of any thread count). A distributed
// reduction (kef/distributed_reduce.hpp) started there runs on this process alone: the processes of a
// run meet in a collective only from the code all of them run in the same order.
bool in_parallel_body();
}

// Runs f(i) for i in [0, n) on up to `threads` threads. If any call throws, the exception of the
// lowest failing index is rethrown after the loop (so errors are deterministic too).
template <class F>
void parallel_for(Index n, int threads, F&& f) {
  struct Context {
    F* f;
    std::mutex mutex;
    Index error_index = -1;
    std::exception_ptr error;
  } ctx{&f, {}, -1, nullptr};
  auto body = [](void* raw, Index i) {
    auto* c = static_cast<Context*>(raw);
    try {
      (*c->f)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(c->mutex);
      if (c->error_index < 0 || i < c->error_index) {
        c->error_index = i;
        c->error = std::current_exception();
      }
    }
  };
  detail::pool_parallel_for(n, threads, body, &ctx);
  if (ctx.error) std::rethrow_exception(ctx.error);
}

// Runs f(begin, rows) over [0, n) cut into consecutive chunks of `chunk` rows (the last one shorter).
// The chunks are fixed by n and `chunk`, never by the thread count, so anything f writes per row (or
// per chunk, then reduced in chunk order) is the same for any number of threads.
template <class F>
void parallel_for_chunks(Index n, Index chunk, int threads, F&& f) {
  const Index chunks = (n + chunk - 1) / chunk;
  parallel_for(chunks, threads, [&](Index c) {
    const Index begin = c * chunk;
    f(begin, std::min(chunk, n - begin));
  });
}

// Reduces items [0, n) over up to `threads` threads with a result bitwise independent of the thread
// count. The items are cut into at most max_groups contiguous runs (a number fixed by the problem,
// never by the thread count); each run starts from init() and accumulate(item, partial)s its items in
// order on one thread, then combine(result, partial) folds the runs in order. With max_groups >= n
// every item is its own run: per-item partials summed in item order. One parallel region per
// reduction (under oversubscription every barrier can cost a scheduler quantum); a run's partial can
// also carry its workspace (kernel stacks, feature matrices), reused from item to item.
template <class Init, class Accumulate, class Combine>
auto ordered_reduce(Index n, int threads, Init&& init, Accumulate&& accumulate, Combine&& combine,
                    Index max_groups = 8) {
  using Partial = decltype(init());
  const Index groups = std::max<Index>(1, std::min(n, max_groups));
  std::vector<Partial> parts;
  parts.reserve(static_cast<std::size_t>(groups));
  for (Index g = 0; g < groups; ++g) parts.push_back(init());
  parallel_for(groups, threads, [&](Index g) {
    for (Index i = g * n / groups; i < (g + 1) * n / groups; ++i)
      accumulate(i, parts[static_cast<std::size_t>(g)]);
  });
  Partial result = std::move(parts[0]);
  for (Index g = 1; g < groups; ++g) combine(result, parts[static_cast<std::size_t>(g)]);
  return result;
}

}  // namespace kef
