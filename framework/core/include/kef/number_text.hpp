#pragma once
// Numbers as text in messages, notes and provenance: printf's %g with a given number of significant
// digits (what `std::ostream << double` prints at that precision), and a matrix row as "(a, b, c)".
#include <string>

#include "kef/types.hpp"

namespace kef {

std::string number_text(double value, int significant = 6);

// Row r of X as "(x_r0, x_r1, ...)", each entry at the stream's default precision (6 digits).
std::string row_text(const Matrix& X, Index r);

}  // namespace kef
