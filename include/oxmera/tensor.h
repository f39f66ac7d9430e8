#pragma once
// ox::Tensor: a cheap, shared handle to a TensorImpl (storage + layout + dtype). Views share
// storage and differ only in layout. Creation functions and random numbers live here too.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/core/device.h"
#include "oxmera/core/dtype.h"
#include "oxmera/core/error.h"
#include "oxmera/core/layout.h"
#include "oxmera/core/options.h"

namespace ox {

class TensorImpl;
class TensorIndex;  // oxmera/indexing.h
class Storage;
namespace autograd {
class Node;  // oxmera/autograd.h
}

// Options of creation functions, an aggregate: `ox::zeros({2}, {.dtype = ox::kF64})`.
// An unset dtype means the function's own default (default_dtype(), f32 unless set; i64 for
// integer ranges and indices); an unset device means default_device() (for *_like functions:
// the dtype and device of `like`). `requires_grad` makes the result a leaf that requires grad.
// `TensorOptions(kF64)` is LibTorch's dtype-only constructor.
struct TensorOptions {
  std::optional<DType> dtype = std::nullopt;
  OX_NAMED_FIELDS_ONLY;
  std::optional<Device> device = std::nullopt;
  bool requires_grad = false;
};

// TensorOptions in LibTorch's chainable form, accepted wherever TensorOptions is:
// `ox::dtype(ox::kF64).device(ox::Device::cuda()).requires_grad(true)`,
// `x.options().dtype(ox::kI64)`. Its methods hide the aggregate's fields of the same names.
struct TensorOptionsBuilder : TensorOptions {
  TensorOptionsBuilder dtype(DType value) const {
    TensorOptionsBuilder out = *this;
    out.TensorOptions::dtype = value;
    return out;
  }
  TensorOptionsBuilder device(Device value) const {
    TensorOptionsBuilder out = *this;
    out.TensorOptions::device = value;
    return out;
  }
  TensorOptionsBuilder requires_grad(bool value) const {
    TensorOptionsBuilder out = *this;
    out.TensorOptions::requires_grad = value;
    return out;
  }
  // What a creation function would use: the set values, else the defaults.
  DType dtype() const { return TensorOptions::dtype.value_or(default_dtype()); }
  Device device() const { return TensorOptions::device.value_or(default_device()); }
  bool requires_grad() const { return TensorOptions::requires_grad; }
};
inline TensorOptionsBuilder dtype(DType value) { return TensorOptionsBuilder{}.dtype(value); }
inline TensorOptionsBuilder device(Device value) { return TensorOptionsBuilder{}.device(value); }
inline TensorOptionsBuilder requires_grad(bool value = true) {
  return TensorOptionsBuilder{}.requires_grad(value);
}

// How Tensor::to copies (torch's `non_blocking`): a copy between pinned host memory
// (pin_memory()) and a CUDA device may return before it completes, ordered on the device's
// current stream; a copy to the CPU then lands in pinned memory, which the host reads only after
// synchronizing (ox::synchronize or the stream's). Other copies ignore it.
struct ToOptions {
  OX_NAMED_FIELDS_ONLY;
  bool non_blocking = false;
};

// The dims a reduction runs over: `x.sum(1)`, `x.sum({0, 2})`; empty (`{}`) means all dims.
class DimList {
 public:
  DimList() = default;
  DimList(int64_t dim) : dims_{dim} {}                           // NOLINT: reads like a dim
  DimList(std::initializer_list<int64_t> dims) : dims_(dims) {}  // NOLINT
  DimList(const Dims& dims) : dims_(dims) {}                     // NOLINT
  DimList(const std::vector<int64_t>& dims) : dims_(dims) {}     // NOLINT
  const Dims& dims() const { return dims_; }
  bool empty() const { return dims_.empty(); }

 private:
  Dims dims_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: every method but defined() throws ErrorKind::Value
  explicit Tensor(std::shared_ptr<TensorImpl> impl);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // Metadata.
  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  const Strides& strides() const;
  int64_t dim() const;
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const;
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  size_t element_size() const;
  size_t nbytes() const;
  bool is_contiguous() const;
  const Layout& layout() const;
  const std::shared_ptr<Storage>& storage() const;
  // True when both share storage (a view of one another or of the same tensor).
  bool is_same_storage(const Tensor& other) const;

  // Reading values. item/to_vector convert to T; data_ptr needs T to be the dtype exactly
  // and the tensor to be contiguous on the CPU.
  template <class T>
  T item() const {
    T out{};
    copy_to_host(&out, dtype_of<T>, "item", /*expect_single=*/true);
    return out;
  }
  template <class T>
  std::vector<T> to_vector() const {
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
      auto bytes = std::make_unique<bool[]>(static_cast<size_t>(numel()));
      copy_to_host(bytes.get(), kBool, "to_vector", /*expect_single=*/false);
      return std::vector<bool>(bytes.get(), bytes.get() + numel());
    } else {
      std::vector<T> out(static_cast<size_t>(numel()));
      copy_to_host(out.data(), dtype_of<T>, "to_vector", /*expect_single=*/false);
      return out;
    }
  }
  template <class T>
  T* data_ptr() const {
    return static_cast<T*>(raw_data_ptr(dtype_of<T>));
  }
  void* raw_data_ptr(DType expected) const;
  // The first element's address whatever the strides (accessor's base); CPU, T exactly.
  void* raw_data_ptr_strided(DType expected, const char* op) const;

  // Views: share storage, change the layout only.
  Tensor view(const Shape& shape) const;     // -1 allowed; Shape error when no view exists
  Tensor reshape(const Shape& shape) const;  // a view when possible, a copy otherwise
  Tensor permute(const Dims& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // transpose of a <= 2-d tensor
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start = 0, int64_t end = INT64_MAX, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a dim
  Tensor broadcast_to(const Shape& shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;  // reshape semantics
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor flip(const Dims& dims) const;  // a view with negative strides
  Tensor diagonal(int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1) const;
  // Any strides over this tensor's storage; refused when it would reach outside it.
  Tensor as_strided(const Shape& shape, const Strides& strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;  // sliding windows, last dim
  Tensor detach() const;  // same storage, no autograd history
  // Points this tensor (every handle to it) at `source`'s storage, layout and dtype, keeping
  // its autograd flags, as PyTorch's `param.data = source`: how Module::to converts parameters
  // in place. A tensor that requires grad takes only floating data.
  void set_data(const Tensor& source) const;

  // Copies.
  Tensor contiguous() const;  // this tensor when already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;  // this tensor when nothing changes
  Tensor to(Device device) const;
  Tensor to(Device device, DType dtype) const;
  Tensor to(Device device, ToOptions options) const;
  Tensor to(Device device, DType dtype, ToOptions options) const;
  Tensor cpu() const { return to(Device::cpu()); }
  // A copy of this CPU tensor in page-locked memory (this tensor when it is pinned already),
  // which CUDA copies read and write directly and asynchronously (ox::cuda::pin_memory); a
  // Device error where CUDA is unavailable.
  Tensor pin_memory() const;
  bool is_pinned() const;  // false where CUDA is unavailable

  // In-place writes.
  Tensor& copy_(const Tensor& src);  // broadcasts and converts src into this tensor
  Tensor& fill_(const Scalar& value);
  Tensor& zero_() { return fill_(0); }
  Tensor& uniform_(double from = 0.0, double to = 1.0);
  Tensor& normal_(double mean = 0.0, double std = 1.0);

  std::string str() const;  // as operator<< prints it

  // Autograd (oxmera/autograd.h has grad mode, autograd::grad and custom functions).
  // Only floating tensors can require grad. A leaf is a tensor no recorded op produced.
  Tensor& requires_grad_(bool requires_grad = true);
  bool requires_grad() const;
  bool is_leaf() const;
  // The accumulated gradient of a leaf (or of a tensor that retains its gradient); undefined
  // before any backward reached it. mutable_grad() can reset it (= Tensor()) or zero it.
  Tensor grad() const;
  Tensor& mutable_grad();
  // The node that produced this tensor, or null for a leaf; grad_fn()->name() reads
  // "MulBackward", "MatmulBackward", ...
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Keeps the gradient of a non-leaf in grad() after backward.
  void retain_grad() const;
  bool retains_grad() const;
  // autograd::backward({*this}, {gradient}, ...): gradient may be omitted for one element.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // hook(grad) runs when this tensor's gradient is computed; a defined result replaces the
  // gradient. Returns a handle for remove_hook.
  int64_t register_hook(std::function<Tensor(const Tensor&)> hook) const;
  // On a leaf: hook(leaf) runs after backward has added a gradient into leaf.grad(), as
  // torch's register_post_accumulate_grad_hook. Removed with remove_hook.
  int64_t register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  void remove_hook(int64_t handle) const;
  // How many in-place writes this tensor's storage has seen.
  uint64_t version() const;

  // Elementwise ops as methods; the same as the free functions of ops.h.
  Tensor abs() const;
  Tensor neg() const;
  Tensor sign() const;
  Tensor square() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  // Matrix products as methods; the same as ox::matmul and ox::mm.
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  // In place; refused when the result dtype cannot be cast to this tensor's (an f32 result
  // into an i64 tensor) or when this tensor's elements share memory (an expanded tensor).
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& other);
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(const Scalar& other);
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);

  // LibTorch's method forms of the free functions of ops.h, with their semantics.
  DType scalar_type() const { return dtype(); }
  TensorOptionsBuilder options() const;  // this tensor's dtype and device
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  Tensor cuda() const;  // to the current CUDA device (a Device error where there is none)
  Scalar item() const;  // the one element, as a Scalar of its kind
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  Tensor repeat(const Dims& repeats) const;
  Tensor bmm(const Tensor& other) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor type_as(const Tensor& other) const { return to(other.dtype()); }
  Tensor data() const { return detach(); }  // LibTorch's .data(): no history, same storage
  bool is_floating_point() const { return is_floating(dtype()); }
  int64_t ndimension() const { return dim(); }
  Tensor& set_requires_grad(bool requires_grad) { return requires_grad_(requires_grad); }
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  Tensor reciprocal() const;
  Tensor log_sigmoid() const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  // New tensors with this tensor's dtype and device unless the options say otherwise.
  Tensor new_empty(const Shape& shape, TensorOptions options = {}) const;
  Tensor new_zeros(const Shape& shape, TensorOptions options = {}) const;
  Tensor new_ones(const Shape& shape, TensorOptions options = {}) const;
  Tensor new_full(const Shape& shape, const Scalar& value, TensorOptions options = {}) const;
  // In place (as add_: the result is cast back to this tensor's dtype).
  Tensor& abs_();
  Tensor& neg_();
  Tensor& exp_();
  Tensor& log_();
  Tensor& sqrt_();
  Tensor& rsqrt_();
  Tensor& square_();
  Tensor& sin_();
  Tensor& cos_();
  Tensor& tanh_();
  Tensor& sigmoid_();
  Tensor& relu_();
  Tensor& floor_();
  Tensor& ceil_();
  Tensor& round_();
  Tensor& trunc_();
  Tensor& sign_();
  Tensor& reciprocal_();
  Tensor& pow_(const Scalar& exponent);
  Tensor& pow_(const Tensor& exponent);
  Tensor& clamp_min_(const Scalar& min);
  Tensor& clamp_max_(const Scalar& max);

  // x[i]: the view x.select(0, i), as LibTorch's operator[]; `x[i][j]` chains. Assigning to a
  // temporary tensor writes into it as LibTorch does (`x[0] = 1`, `x[1] = y`: fill_/copy_);
  // assigning to a named tensor rebinds the handle as always.
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor operator[](const Tensor& index) const;  // index_select along dim 0 (integers) or a mask
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& value) && { return copy_(value); }
  Tensor& operator=(const Scalar& value) && { return fill_(value); }
  // Element access for CPU tensors: `auto a = x.accessor<float, 2>(); a[i][j] = 1;` reads and
  // writes through this tensor's strides; T must be the dtype exactly (as data_ptr).
  template <class T, size_t N>
  class Accessor;
  template <class T, size_t N>
  Accessor<T, N> accessor() const;

  // Python's x[...] and x[...] = value (oxmera/indexing.h): integers, ox::Slice, ox::None,
  // ox::Ellipsis, bools, and bool or integer tensors. Without tensors the result is a view.
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  Tensor index(const std::vector<TensorIndex>& indices) const;
  Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value);
  Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value);
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& value);
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Scalar& value);

  // Reductions and scans as methods; the same as the free functions of ops.h.
  Tensor sum(DimList dims = {}, bool keepdim = false,
             std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(DimList dims = {}, bool keepdim = false,
              std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // values, indices
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(DimList dims = {}, bool keepdim = false) const;
  Tensor amin(DimList dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(DimList dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor std(DimList dims = {}, double correction = 1, bool keepdim = false) const;
  Tensor logsumexp(DimList dims = {}, bool keepdim = false) const;
  Tensor norm(double p = 2, DimList dims = {}, bool keepdim = false) const;
  Tensor norm(std::string_view p, DimList dims = {}, bool keepdim = false) const;
  Tensor all(DimList dims = {}, bool keepdim = false) const;
  Tensor any(DimList dims = {}, bool keepdim = false) const;
  Tensor count_nonzero(DimList dims = {}) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  // Sorting as methods; the same as the free functions of ops.h.
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false,
                                  bool stable = true) const;  // values, indices
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = true) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;

 private:
  void copy_to_host(void* out, DType out_dtype, const char* op, bool expect_single) const;
  const TensorImpl& checked(const char* op) const;

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// What Tensor::accessor<T, N> returns: `a[i]` is an Accessor<T, N - 1> (a T& at N == 1), with
// sizes and strides borrowed from the tensor, which must outlive it. Indices are not checked
// (as LibTorch's); sizes(i) tells the bounds.
template <class T, size_t N>
class Tensor::Accessor {
 public:
  Accessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  decltype(auto) operator[](int64_t i) const {
    if constexpr (N == 1) {
      return data_[i * strides_[0]];
    } else {
      return Accessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
    }
  }
  int64_t size(size_t d) const { return sizes_[d]; }
  int64_t stride(size_t d) const { return strides_[d]; }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <class T, size_t N>
Tensor::Accessor<T, N> Tensor::accessor() const {
  static_assert(N > 0, "accessor<T, N> needs N >= 1; use item<T>() for a 0-d tensor");
  OX_CHECK(dim() == static_cast<int64_t>(N), Shape, "accessor", "a ", dim(), "-d tensor of shape ",
           shape(), " read through a ", N, "-d accessor");
  OX_CHECK(device().is_cpu(), Device, "accessor", "the tensor is on ", device(),
           "; accessors read CPU memory (call .cpu() first)");
  // The base pointer at storage_offset, with the tensor's own strides.
  T* base = static_cast<T*>(raw_data_ptr_strided(dtype_of<std::remove_const_t<T>>, "accessor"));
  return Accessor<T, N>(base, shape().data(), strides().data());
}

// ---- Creation ----------------------------------------------------------------------------

Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, const Scalar& value, TensorOptions options = {});
// The *_like forms take the dtype and device of `like` unless the options say otherwise.
Tensor empty_like(const Tensor& like, TensorOptions options = {});
Tensor zeros_like(const Tensor& like, TensorOptions options = {});
Tensor ones_like(const Tensor& like, TensorOptions options = {});
Tensor full_like(const Tensor& like, const Scalar& value, TensorOptions options = {});
// [start, end) by step; the dtype is i64 when all three are integers, else f32.
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions options = {});
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});

inline Tensor empty(const Shape& s, DType dt) { return empty(s, {.dtype = dt}); }
inline Tensor zeros(const Shape& s, DType dt) { return zeros(s, {.dtype = dt}); }
inline Tensor ones(const Shape& s, DType dt) { return ones(s, {.dtype = dt}); }
inline Tensor full(const Shape& s, const Scalar& v, DType dt) { return full(s, v, {.dtype = dt}); }

// From host values. The dtype follows the C++ type (float f32, double f64, int32_t i32,
// int64_t i64, bool, ...) unless the options give one, in which case values convert.
// `count` elements of `data_dtype` at `data`, which must equal the shape's element count.
Tensor tensor_from_host(const void* data, DType data_dtype, int64_t count, const Shape& shape,
                        TensorOptions options = {});
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, TensorOptions options = {}) {
  const auto n = static_cast<int64_t>(values.size());
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    auto bytes = std::make_unique<bool[]>(values.size());
    std::copy(values.begin(), values.end(), bytes.get());
    return tensor_from_host(bytes.get(), kBool, n, shape, options);
  } else {
    return tensor_from_host(values.data(), dtype_of<T>, n, shape, options);
  }
}
template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions options = {}) {
  return tensor(values, {static_cast<int64_t>(values.size())}, options);
}
// A braced list of C++ `int` literals makes i64, as torch.tensor([1, 2]) does: nobody writes
// `{1, 2}` meaning 32 bits. (A std::vector<int32_t> still makes i32.)
template <class T>
using list_element_t = std::conditional_t<std::is_same_v<T, int>, int64_t, T>;
// And a braced list of floating literals takes the default dtype (f32 unless set), as
// torch::tensor({5.5, 3.0}) does; a std::vector<double> stays f64.
template <class T>
TensorOptions list_options(TensorOptions options) {
  if (std::is_floating_point_v<T> && !options.dtype) options.dtype = default_dtype();
  return options;
}

template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options = {}) {
  return tensor(std::vector<list_element_t<T>>(values.begin(), values.end()),
                list_options<T>(options));
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows, TensorOptions options = {}) {
  std::vector<list_element_t<T>> flat;
  const size_t width = rows.size() ? rows.begin()->size() : 0;
  for (const auto& row : rows) {
    OX_CHECK(row.size() == width, Shape, "tensor", "ragged nested list: rows of ", width, " and ",
             row.size(), " elements");
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return tensor(flat, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)},
                list_options<T>(options));
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks,
              TensorOptions options = {}) {
  std::vector<list_element_t<T>> flat;
  int64_t rows = -1, width = -1;
  for (const auto& block : blocks) {
    OX_CHECK(rows < 0 || int64_t(block.size()) == rows, Shape, "tensor",
             "ragged nested list: blocks of ", rows, " and ", block.size(), " rows");
    rows = static_cast<int64_t>(block.size());
    for (const auto& row : block) {
      OX_CHECK(width < 0 || int64_t(row.size()) == width, Shape, "tensor",
               "ragged nested list: rows of ", width, " and ", row.size(), " elements");
      width = static_cast<int64_t>(row.size());
      flat.insert(flat.end(), row.begin(), row.end());
    }
  }
  return tensor(flat,
                {int64_t(blocks.size()), std::max<int64_t>(rows, 0), std::max<int64_t>(width, 0)},
                list_options<T>(options));
}
// A 0-d tensor holding one number.
Tensor scalar_tensor(const Scalar& value, TensorOptions options = {});

// Wraps memory the caller owns. `deleter` (may be empty) runs when the last tensor using
// the memory goes away. Strides default to contiguous; `data` must hold every element
// the layout reaches.
Tensor from_blob(void* data, const Shape& shape, DType dtype,
                 std::function<void(void*)> deleter = {},
                 std::optional<Strides> strides = std::nullopt, Device device = Device::cpu());

// ---- Random numbers (counter-based Philox4x32-10; see docs/RANDOM.md) ---------------------

// A seed and a position in its stream. Every draw takes a block of counters that depends only
// on the number of elements, so results never depend on thread counts or devices.
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  // Reserves `blocks` Philox counters and returns the first; safe to call from many threads.
  uint64_t advance(uint64_t blocks) { return std::atomic_ref<uint64_t>(offset_).fetch_add(blocks); }

 private:
  uint64_t seed_;
  alignas(8) uint64_t offset_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = {},
               Generator* gen = nullptr);
Tensor randint(int64_t high, const Shape& shape, TensorOptions options = {},
               Generator* gen = nullptr);
Tensor randperm(int64_t n, TensorOptions options = {}, Generator* gen = nullptr);
// The dtype and device of `like` unless the options say otherwise.
Tensor rand_like(const Tensor& like, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randn_like(const Tensor& like, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randint_like(const Tensor& like, int64_t low, int64_t high, TensorOptions options = {},
                    Generator* gen = nullptr);
// 1 with probability p (per element of `p`, or the scalar p), 0 otherwise; float dtype.
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
Tensor bernoulli(const Shape& shape, double p, TensorOptions options = {},
                 Generator* gen = nullptr);

}  // namespace ox
