#pragma once
// The matrix-op core shared by matmul.cpp and einsum.cpp.

#include "ops/op_util.h"

namespace ox::ops {

// beta * input + alpha * (a @ b) through the backend's matmul primitive. a [..., M, K] and
// b [..., K, N] share a dtype (not bool) and a device; their batch dims broadcast (any counts);
// `input` (undefined: none, beta unused) broadcasts to the result [batch..., M, N] and is
// converted to its dtype. The caller has checked K and named the shapes.
Tensor batched_product(const Tensor& a, const Tensor& b, const char* op, const Tensor& input = {},
                       const Scalar& beta = 0, const Scalar& alpha = 1);

// The dtype the operands of a matrix op compute in (result_type), refusing bool.
DType matmul_dtype(const char* op, std::initializer_list<const Tensor*> operands);

}  // namespace ox::ops
