#pragma once
// Private: the exact density of y = A x + c when x has density `inner`, so a synthetic truth stays
// exact after the host standardises or whitens the data.
#include "kef/model.hpp"

namespace kef {

ModelPtr make_affine_model(ModelPtr inner, const Matrix& A, const Vector& c);

}  // namespace kef
