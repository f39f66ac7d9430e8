#pragma once
// What every op in src/ops does before it calls its primitive: check operands, agree on a
// device, promote, broadcast, allocate.

#include <initializer_list>

#include "oxmera/ops.h"
#include "tensor/tensor_impl.h"

namespace ox::ops {

inline const TensorImpl& impl_of(const Tensor& t, const char* op) {
  OX_CHECK(t.defined(), Value, op, "got an undefined tensor");
  return *t.impl();
}

// The one device all tensor operands are on; a Device error naming both otherwise.
Device common_device(const char* op, std::initializer_list<const Tensor*> tensors);
// The same for elementwise ops, where a 0-d CPU tensor also mixes with tensors of another
// device, as a scalar would (PyTorch's rule); the op moves it there with to(device, dtype).
Device elementwise_device(const char* op, std::initializer_list<const Tensor*> tensors);

// A view of `t` as a kernel argument broadcast to `shape` (stride 0 where it broadcasts).
StridedArray broadcast_array(const Tensor& t, const Shape& shape);

// An array with `dim` moved to the end (a 0-d array stays as it is): row kernels (scans, sort)
// work along the last dim.
StridedArray dim_last(StridedArray a, int64_t dim);

// A 0-d tensor holding `s` converted to `dtype` (integers wrap, as in PyTorch arithmetic).
Tensor scalar_operand(const Scalar& s, DType dtype, Device device);

// Whether a result of dtype `from` may be written into a tensor of dtype `to` in place
// (PyTorch's can_cast: no floating into integer, no number into bool).
bool can_cast(DType from, DType to);

// Adds an operand to a result-type computation.
inline void add_operand(ResultType& rt, const TensorOrScalar& x) {
  if (x.is_scalar()) {
    rt.scalar(x.scalar());
  } else {
    rt.tensor(x.tensor().dtype(), x.tensor().dim() == 0);
  }
}

// What an in-place op computes its result from: self, or a copy of it while autograd records
// (the result's node may save its input, which the write into self would invalidate).
Tensor inplace_source(const Tensor& self);

// Writes `result` into `self` in place, as the in-place ops do when they cannot compute into
// self directly. Refuses a dtype that cannot be cast and a shape that would grow.
Tensor& assign_result(Tensor& self, const Tensor& result, const char* op);

// The gradient of values that an op picked from an input of `shape` along dim d (sort, topk,
// cummax, ...): g added into zeros at the picked positions `index` (of g's shape).
Tensor picked_grad(const Tensor& g, const Tensor& index, const Shape& shape, int64_t d);

// gelu's gradient in one op, g * gelu'(x) for the form `approximate` ("none" or "tanh"), as
// PyTorch's gelu_backward; differentiable again (binary.cpp).
Tensor gelu_backward(const Tensor& g, const Tensor& x, std::string_view approximate);

// relu's gradient in one op from its result y: g where y > 0, else 0 (binary.cpp).
Tensor relu_backward(const Tensor& g, const Tensor& y);

}  // namespace ox::ops
