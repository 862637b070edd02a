// A failed allocation names its size (kef/allocator.hpp): the request that failed, made through Eigen
// (std::malloc) or the throwing operator new from code linked against libkef, is recorded, and
// out_of_memory_error reports it once. The requests here (256 TiB and more) exceed the 47-bit address
// space, so they fail whatever the machine's memory and overcommit setting.
#include <gtest/gtest.h>

#include <new>
#include <string>
#include <vector>

#include "kef/allocator.hpp"
#include "kef/error.hpp"
#include "kef/types.hpp"
#include "test_support.hpp"

namespace kef::failed_allocation_test {
namespace {

// ASan's allocator does not fail a request above its maximum size: it reports it and aborts (and its
// operator new does so whatever allocator_may_return_null says). The e2e test
// Robustness.RunningOutOfMemoryIsOneErrorKindNamingTheStepAndSize covers the sanitizer build through a
// command run with ASan's options.
#define SKIP_UNDER_ASAN()                   \
  if (test::built_with_address_sanitizer()) \
  GTEST_SKIP() << "ASan aborts on an allocation it cannot serve instead of failing it"

// The compiler may drop an allocation whose memory is never used (a malloc and free pair): these are used.
void keep(double* p) { asm volatile("" : : "g"(p) : "memory"); }

TEST(FailedAllocation, AnEigenAllocationThatFailsIsNamedWithItsSize) {
  SKIP_UNDER_ASAN();
  take_failed_allocation_bytes();                            // nothing left from an earlier test
  const Index rows = Index(1) << 22, cols = Index(1) << 23;  // 2^45 doubles: 256 TiB
  try {
    Matrix m(rows, cols);
    keep(m.data());
    FAIL() << "a 256 TiB matrix was allocated";
  } catch (const std::bad_alloc&) {
    const std::string message = out_of_memory_error("fit of model m").what();
    // Eigen asks for the matrix and room to align it: 2^48 bytes and a few more, 281 TB.
    EXPECT_EQ(message.rfind("fit of model m: an allocation of 281 TB failed: ", 0), 0U) << message;
  }
  // Reported once: a later failure that was not recorded is not given this one's size.
  EXPECT_EQ(take_failed_allocation_bytes(), 0.0);
  const std::string later = out_of_memory_error("kef sample").what();
  EXPECT_EQ(later.rfind("kef sample: an allocation failed: ", 0), 0U) << later;
}

TEST(FailedAllocation, AnOperatorNewThatFailsIsNamedWithItsSize) {
  SKIP_UNDER_ASAN();
  take_failed_allocation_bytes();
  try {
    std::vector<double> v(std::size_t(1) << 46);  // 2^49 bytes: 563 TB
    keep(v.data());
    FAIL() << "a 563 TB vector was allocated";
  } catch (const std::bad_alloc&) {
    EXPECT_EQ(take_failed_allocation_bytes(), double(std::size_t(1) << 49));
  }
}

// A size given by the caller (an up-front estimate) is used, and the recorded one is not kept for later.
TEST(FailedAllocation, AGivenSizeIsUsedAndTheRecordedOneForgotten) {
  SKIP_UNDER_ASAN();
  take_failed_allocation_bytes();
  try {
    Matrix m(Index(1) << 22, Index(1) << 23);
    keep(m.data());
    FAIL() << "a 256 TiB matrix was allocated";
  } catch (const std::bad_alloc&) {
    const std::string message = out_of_memory_error("kef sample", 2.5e9).what();
    EXPECT_EQ(message.rfind("kef sample: an allocation of 2.5 GB failed: ", 0), 0U) << message;
  }
  EXPECT_EQ(take_failed_allocation_bytes(), 0.0);
}

}  // namespace
}  // namespace kef::failed_allocation_test
