#pragma once
// Parallel loops over a fixed set of work items. Work is split into items whose boundaries never
// depend on the thread count, and reductions over items happen afterwards in item order, so results
// are bitwise identical for any number of threads.
#include <exception>
#include <mutex>

#include "kef/types.hpp"

namespace kef {

// The process-wide default (from --threads, or the number of cores).
int default_threads();
void set_default_threads(int threads);

namespace detail {
void pool_parallel_for(Index n, int threads, void (*body)(void*, Index), void* context);
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

}  // namespace kef
