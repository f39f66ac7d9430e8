#include "ops/op_util.h"

#include "autograd/record.h"

namespace ox::ops {

namespace {

// The first of the defined tensors that `counts` selects, after checking that all of those are
// on its device (a Device error naming two that differ); null when none is selected.
template <class Counts>
const Tensor* one_device(const char* op, std::initializer_list<const Tensor*> tensors,
                         Counts counts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined() || !counts(*t)) continue;
    if (!first) {
      first = t;
      continue;
    }
    OX_CHECK(t->device() == first->device(), Device, op, "expected all tensors on one device, got ",
             first->device(), " and ", t->device());
  }
  return first;
}

}  // namespace

Device common_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = one_device(op, tensors, [](const Tensor&) { return true; });
  OX_CHECK(first, Value, op, "needs at least one tensor operand");
  return first->device();
}

Device elementwise_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const auto not_cpu_scalar = [](const Tensor& t) {
    return !(t.dim() == 0 && t.device().is_cpu());
  };
  if (const Tensor* first = one_device(op, tensors, not_cpu_scalar)) return first->device();
  return common_device(op, tensors);  // only 0-d CPU tensors: the CPU
}

StridedArray dim_last(StridedArray a, int64_t dim) {
  if (a.shape.empty()) return a;
  const auto d = static_cast<size_t>(dim);
  const int64_t size = a.shape[d], stride = a.strides[d];
  a.shape.erase(a.shape.begin() + d);
  a.strides.erase(a.strides.begin() + d);
  a.shape.push_back(size);
  a.strides.push_back(stride);
  return a;
}

StridedArray broadcast_array(const Tensor& t, const Shape& shape) {
  StridedArray a = t.impl()->array();
  if (a.shape == shape) return a;
  Layout expanded = t.layout().expand(shape);
  a.shape = std::move(expanded.shape);
  a.strides = std::move(expanded.strides);
  return a;
}

Tensor scalar_operand(const Scalar& s, DType dtype, Device device) {
  Tensor t = make_empty({}, dtype, device, "scalar");
  backend_for(device, "scalar").fill(t.impl()->array(), s);
  return t;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

Tensor inplace_source(const Tensor& self) {
  return autograd::needs_grad({&self}) ? self.clone() : self;
}

Tensor picked_grad(const Tensor& g, const Tensor& index, const Shape& shape, int64_t d) {
  if (shape.empty()) return g;  // a 0-d input picks itself
  return scatter_add(zeros(shape, {.dtype = g.dtype(), .device = g.device()}), d, index, g);
}

Tensor& assign_result(Tensor& self, const Tensor& result, const char* op) {
  OX_CHECK(can_cast(result.dtype(), self.dtype()), DType, op, "result type ", result.dtype(),
           " can't be cast to the output dtype ", self.dtype());
  OX_CHECK(result.shape() == self.shape(), Shape, op, "output of shape ", self.shape(),
           " doesn't match the broadcast shape ", result.shape());
  return self.copy_(result);
}

}  // namespace ox::ops
