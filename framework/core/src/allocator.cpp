#include "kef/allocator.hpp"

#include <malloc.h>

namespace kef {

bool keep_freed_memory() {
  // 1 GiB: larger blocks are rare and big enough that mmap's cost is negligible next to their use.
  constexpr int kThreshold = 1 << 30;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kThreshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, kThreshold) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace kef
