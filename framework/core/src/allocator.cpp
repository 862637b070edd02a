#include "kef/allocator.hpp"

#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <new>

namespace {

// Written only on the failure path; zero-initialised before any code runs, so the wrappers may be
// called from anywhere (the sanitizers' runtimes, static initialisers).
std::atomic<std::size_t> failed_bytes{0};

void record_failure(std::size_t bytes) {
  if (bytes > 0) failed_bytes.store(bytes, std::memory_order_relaxed);
}

}  // namespace

// The linker's --wrap (framework/CMakeLists.txt): every call to malloc, realloc and the throwing
// operator new and new[] (plain and over-aligned) in an object linked with it reaches these, and
// __real_X is the original. The nothrow forms are not wrapped: their callers expect and handle a null.
extern "C" {
void* __real_malloc(std::size_t size);
void* __real_realloc(void* ptr, std::size_t size);
void* __real__Znwm(std::size_t size);
void* __real__Znam(std::size_t size);
void* __real__ZnwmSt11align_val_t(std::size_t size, std::align_val_t alignment);
void* __real__ZnamSt11align_val_t(std::size_t size, std::align_val_t alignment);

__attribute__((visibility("default"))) void* __wrap_malloc(std::size_t size) {
  void* p = __real_malloc(size);
  if (!p) record_failure(size);
  return p;
}

__attribute__((visibility("default"))) void* __wrap_realloc(void* ptr, std::size_t size) {
  void* p = __real_realloc(ptr, size);
  if (!p) record_failure(size);
  return p;
}

__attribute__((visibility("default"))) void* __wrap__Znwm(std::size_t size) {
  try {
    return __real__Znwm(size);
  } catch (const std::bad_alloc&) {
    record_failure(size);
    throw;
  }
}

__attribute__((visibility("default"))) void* __wrap__Znam(std::size_t size) {
  try {
    return __real__Znam(size);
  } catch (const std::bad_alloc&) {
    record_failure(size);
    throw;
  }
}

__attribute__((visibility("default"))) void* __wrap__ZnwmSt11align_val_t(std::size_t size,
                                                                         std::align_val_t alignment) {
  try {
    return __real__ZnwmSt11align_val_t(size, alignment);
  } catch (const std::bad_alloc&) {
    record_failure(size);
    throw;
  }
}

__attribute__((visibility("default"))) void* __wrap__ZnamSt11align_val_t(std::size_t size,
                                                                         std::align_val_t alignment) {
  try {
    return __real__ZnamSt11align_val_t(size, alignment);
  } catch (const std::bad_alloc&) {
    record_failure(size);
    throw;
  }
}
}

namespace kef {

bool keep_freed_memory() {
  // 1 GiB: larger blocks are rare and big enough that mmap's cost is negligible next to their use.
  constexpr int kThreshold = 1 << 30;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kThreshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, kThreshold) == 1;
  return mmap_ok && trim_ok;
}

double take_failed_allocation_bytes() {
  return static_cast<double>(failed_bytes.exchange(0, std::memory_order_relaxed));
}

}  // namespace kef
