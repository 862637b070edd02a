#include "kef/number_text.hpp"

#include <cstdio>

namespace kef {

std::string number_text(double value, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string row_text(const Matrix& X, Index r) {
  std::string out = "(";
  for (Index d = 0; d < X.cols(); ++d) out += (d ? ", " : "") + number_text(X(r, d));
  return out + ")";
}

}  // namespace kef
