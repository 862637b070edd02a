#pragma once
// The infinities that log-space code compares against and returns (an empty log-sum-exp is −inf, a
// point outside a support has log density −inf) and the quiet NaN that marks a value not computed,
// named once for the library and the plugins: files that each defined their own copy could not share
// a translation unit (CMAKE_UNITY_BUILD).
#include <limits>

namespace kef {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNegInf = -kInf;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace kef
