#pragma once
// a·b + c for hand-written polynomial loops: one fused, singly rounded instruction when the build
// targets FMA hardware (KEF_ARCH=native on any x86-64 since 2013), else a multiply and an add. Not
// std::fma unconditionally: without the instruction it is a library call per term, and loops using
// it would stop vectorising. Error analyses in kef assume at most the unfused rounding.
#include <cmath>

namespace kef {

inline double multiply_add(double a, double b, double c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

}  // namespace kef
