#pragma once
// The names of the elementwise family's kernels (kernels/elementwise.cu, kernels/copy.cu) as the
// launchers' KernelTables build them: "<prefix><row>_<dtype>". Shared with the host test that
// finds every name the op layer can ask for in the embedded PTX.

#include <array>
#include <string>

#include "core/elementwise_ops.h"
#include "oxmera/core/dtype.h"

namespace ox::cuda::detail {

// Rows of the unary and binary tables: the op codes' names (unique; some public names repeat).
#define OX_ROW_NAME(code, name, cls, functor) #code,
inline std::array<std::string, kUnaryOpCount> unary_rows() { return {OX_UNARY_OPS(OX_ROW_NAME)}; }
inline std::array<std::string, kBinaryOpCount> binary_rows() {
  return {OX_BINARY_OPS(OX_ROW_NAME)};
}
#undef OX_ROW_NAME

// Rows of the copy table: the destination dtype (ox_copy_<to>_<from>).
inline std::array<std::string, kNumDTypes> copy_rows() {
  std::array<std::string, kNumDTypes> rows;
  for (int d = 0; d < kNumDTypes; ++d) rows[size_t(d)] = std::string(dtype_name(DType(d)));
  return rows;
}

inline std::string unary_kernel_name(UnaryOp op, DType dtype) {
  return "ox_unary_" + unary_rows()[size_t(op)] + "_" + std::string(dtype_name(dtype));
}
inline std::string binary_kernel_name(BinaryOp op, DType dtype) {
  return "ox_binary_" + binary_rows()[size_t(op)] + "_" + std::string(dtype_name(dtype));
}
inline std::string copy_kernel_name(DType to, DType from) {
  return "ox_copy_" + copy_rows()[size_t(to)] + "_" + std::string(dtype_name(from));
}

}  // namespace ox::cuda::detail
