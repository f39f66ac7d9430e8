// Creation functions: filled tensors, ranges, host data and borrowed memory.

#include <cmath>

#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox {

namespace {

Device device_of(const TensorOptions& o) { return o.device.value_or(default_device()); }

TensorOptions like_options(const Tensor& like, TensorOptions o) {
  OX_CHECK(like.defined(), Value, "*_like", "called with an undefined tensor");
  if (!o.dtype) o.dtype = like.dtype();
  if (!o.device) o.device = like.device();
  return o;
}

// A bare number's dtype: the default float dtype for floats, i64 for ints, bool.
DType dtype_of_value(const Scalar& value) {
  return value.is_floating() ? default_dtype() : value.default_dtype();
}

Tensor filled(const Shape& shape, const Scalar& value, DType dtype, Device device, const char* op) {
  OX_CHECK(scalar_fits(value, dtype), Value, op, "value ", value, " cannot be converted to ", dtype,
           " without overflow");
  Tensor t = make_empty(shape, dtype, device, op);
  return t.fill_(value);
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions o) {
  return as_leaf(make_empty(shape, o.dtype.value_or(default_dtype()), device_of(o), "empty"), o);
}

Tensor full(const Shape& shape, const Scalar& value, TensorOptions o) {
  // As torch.full: the dtype follows the value (f32 for floats, i64 for ints, bool).
  return as_leaf(
      filled(shape, value, o.dtype.value_or(dtype_of_value(value)), device_of(o), "full"), o);
}

Tensor zeros(const Shape& shape, TensorOptions o) {
  return as_leaf(filled(shape, 0, o.dtype.value_or(default_dtype()), device_of(o), "zeros"), o);
}
Tensor ones(const Shape& shape, TensorOptions o) {
  return as_leaf(filled(shape, 1, o.dtype.value_or(default_dtype()), device_of(o), "ones"), o);
}

Tensor empty_like(const Tensor& like, TensorOptions o) {
  return empty(like.shape(), like_options(like, o));
}
Tensor zeros_like(const Tensor& like, TensorOptions o) {
  return zeros(like.shape(), like_options(like, o));
}
Tensor ones_like(const Tensor& like, TensorOptions o) {
  return ones(like.shape(), like_options(like, o));
}
Tensor full_like(const Tensor& like, const Scalar& value, TensorOptions o) {
  return full(like.shape(), value, like_options(like, o));
}

Tensor scalar_tensor(const Scalar& value, TensorOptions o) {
  if (!o.dtype) o.dtype = dtype_of_value(value);
  return full({}, value, o);
}

Tensor arange(const Scalar& end, TensorOptions o) { return arange(0, end, 1, o); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const DType dtype = o.dtype.value_or(integral ? kI64 : default_dtype());
  int64_t n = 0;
  if (integral) {
    const int64_t s0 = start.to_int(), s1 = end.to_int(), st = step.to_int();
    OX_CHECK(st != 0, Value, "arange", "step must be nonzero");
    OX_CHECK((st > 0 && s1 >= s0) || (st < 0 && s1 <= s0), Value, "arange",
             "upper bound and step sign are inconsistent: start ", start, ", end ", end, ", step ",
             step);
    // |s1 - s0| as unsigned cannot overflow; the count is its ceiling division by |step|.
    const uint64_t span = st > 0 ? uint64_t(s1) - uint64_t(s0) : uint64_t(s0) - uint64_t(s1);
    const uint64_t stride = st > 0 ? uint64_t(st) : 0 - uint64_t(st);
    const uint64_t count = span / stride + (span % stride != 0);
    OX_CHECK(count < (uint64_t{1} << 62), Shape, "arange", "would produce ", count, " elements");
    n = static_cast<int64_t>(count);
  } else {
    const double s0 = start.to_double(), s1 = end.to_double(), st = step.to_double();
    OX_CHECK(std::isfinite(s0) && std::isfinite(s1) && std::isfinite(st), Value, "arange", "start ",
             start, ", end ", end, " and step ", step, " must be finite");
    OX_CHECK(st != 0, Value, "arange", "step must be nonzero");
    OX_CHECK((st > 0 && s1 >= s0) || (st < 0 && s1 <= s0), Value, "arange",
             "upper bound and step sign are inconsistent: start ", start, ", end ", end, ", step ",
             step);
    const double count = std::ceil((s1 - s0) / st);
    OX_CHECK(count < 0x1p62, Shape, "arange", "would produce ", count, " elements");
    n = static_cast<int64_t>(count);
  }
  Tensor out = make_empty({n}, dtype, device_of(o), "arange");
  if (n > 0) backend_for(device_of(o), "arange").arange(out.impl()->array(), start, step);
  return as_leaf(out, o);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  OX_CHECK(steps >= 0, Value, "linspace", "number of steps must be non-negative, got ", steps);
  Tensor out = make_empty({steps}, o.dtype.value_or(default_dtype()), device_of(o), "linspace");
  if (steps == 1) out.fill_(start);
  if (steps >= 2) backend_for(device_of(o), "linspace").linspace(out.impl()->array(), start, end);
  return as_leaf(out, o);
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  OX_CHECK(n >= 0 && m.value_or(n) >= 0, Value, "eye", "sizes must be non-negative, got ", n,
           " and ", m.value_or(n));
  Tensor out = zeros({n, m.value_or(n)}, {.dtype = o.dtype, .device = o.device});
  out.diagonal().fill_(1);
  return as_leaf(out, o);
}

Tensor tensor_from_host(const void* data, DType data_dtype, int64_t count, const Shape& shape,
                        TensorOptions o) {
  const int64_t numel = checked_numel(shape, "tensor");
  OX_CHECK(numel == count, Shape, "tensor", count, " values cannot fill shape ", shape, " (", numel,
           " elements)");
  const DType dtype = o.dtype.value_or(data_dtype);
  Tensor out = make_empty(shape, dtype, device_of(o), "tensor");
  const StridedArray host{const_cast<void*>(data), shape, contiguous_strides(shape), data_dtype,
                          Device::cpu()};
  backend_for(device_of(o), "tensor").copy(out.impl()->array(), host, false);
  return as_leaf(out, o);
}

Tensor from_blob(void* data, const Shape& shape, DType dtype, std::function<void(void*)> deleter,
                 std::optional<Strides> strides, Device device) {
  Layout layout = strides ? Layout{shape, *strides, 0} : Layout::contiguous(shape);
  const int64_t numel = checked_numel(shape, "from_blob");
  const auto [lo, hi] = checked_reach(layout, "from_blob");
  int64_t reach = 0;  // elements from `data` to one past the last one the layout reads
  if (numel > 0) {
    OX_CHECK(lo >= 0, Value, "from_blob", "negative strides ", layout.strides,
             " would read before the start of the memory");
    OX_CHECK(!__builtin_add_overflow(hi, 1, &reach), Shape, "from_blob", "strides ", layout.strides,
             " overflow");
  }
  OX_CHECK(data || numel == 0, Value, "from_blob", "null pointer for ", numel, " elements");
  backend_for(device, "from_blob");  // refuses devices this build cannot address
  const int64_t nbytes =
      checked_nbytes(reach, static_cast<int64_t>(dtype_size(dtype)), "from_blob");
  auto storage =
      std::make_shared<Storage>(data, static_cast<size_t>(nbytes), device, std::move(deleter));
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), std::move(layout), dtype));
}

}  // namespace ox
