// The Tensor handle: metadata, views and copies.

#include <algorithm>
#include <new>
#include <string>

#include "autograd/record.h"
#include "oxmera/cuda.h"
#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox {

namespace {

// Every tensor's memory comes through here, so here an allocation failure (the allocator's
// OutOfMemory, or std::bad_alloc from an allocator that throws it) becomes one error naming
// the op, the tensor and the bytes.
std::shared_ptr<Storage> allocate_storage(const Shape& shape, DType dtype, Device device,
                                          int64_t nbytes, const char* op) {
  std::string reason;
  try {
    Backend& backend = backend_for(device, op);
    return std::make_shared<Storage>(static_cast<size_t>(nbytes), device,
                                     backend.allocator(device.index()));
  } catch (const std::bad_alloc&) {
    reason = "std::bad_alloc";
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfMemory) throw;
    reason = e.what();
  }
  OX_FAIL(OutOfMemory, op, "cannot allocate ", nbytes, " bytes for a ", dtype, " tensor of shape ",
          shape, " on ", device, " (", reason, ")");
}

}  // namespace

Tensor make_empty(const Shape& shape, DType dtype, Device device, const char* op) {
  const int64_t numel = checked_numel(shape, op);
  const int64_t nbytes = checked_nbytes(numel, static_cast<int64_t>(dtype_size(dtype)), op);
  auto storage = allocate_storage(shape, dtype, device, nbytes, op);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), Layout::contiguous(shape), dtype));
}

Tensor make_view(const Tensor& like, Layout layout) {
  auto impl = std::make_shared<TensorImpl>(like.storage(), std::move(layout), like.dtype());
  impl->set_view_base(like.impl()->is_view() ? like.impl()->view_base() : like.impl_ptr());
  return Tensor(std::move(impl));
}

namespace {

// Writes `src` (already of dst's shape) into `dst` on whichever backend owns the non-CPU side.
void copy_between(const TensorImpl& dst, const TensorImpl& src, const char* op) {
  const Device device = dst.device().is_cpu() ? src.device() : dst.device();
  backend_for(device, op).copy(dst.array(), src.array(), false);
}

}  // namespace

bool has_internal_overlap(const Layout& layout) {
  for (size_t i = 0; i < layout.shape.size(); ++i)
    if (layout.shape[i] > 1 && layout.strides[i] == 0) return true;
  return false;
}

bool may_overlap(const TensorImpl& dst, const TensorImpl& src) {
  if (dst.storage() != src.storage() || dst.layout().numel() == 0 || src.layout().numel() == 0)
    return false;
  const int64_t size = static_cast<int64_t>(dtype_size(dst.dtype()));
  const int64_t src_size = static_cast<int64_t>(dtype_size(src.dtype()));
  const int64_t dst_lo = dst.layout().min_index() * size,
                dst_hi = (dst.layout().max_index() + 1) * size;
  const int64_t src_lo = src.layout().min_index() * src_size,
                src_hi = (src.layout().max_index() + 1) * src_size;
  if (dst_hi <= src_lo || src_hi <= dst_lo) return false;
  // Exactly the same elements in the same order is an elementwise-safe alias.
  return !(dst.layout().offset * size == src.layout().offset * src_size && size == src_size &&
           dst.layout().strides == src.layout().strides);
}

Tensor::Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

const TensorImpl& Tensor::checked(const char* op) const {
  OX_CHECK(impl_, Value, op, "called on an undefined tensor");
  return *impl_;
}

const Shape& Tensor::shape() const { return checked("shape").layout().shape; }
const Strides& Tensor::strides() const { return checked("strides").layout().strides; }
const Layout& Tensor::layout() const { return checked("layout").layout(); }
int64_t Tensor::dim() const { return checked("dim").layout().dim(); }
int64_t Tensor::size(int64_t d) const {
  OX_CHECK(dim() > 0, Index, "size", "dimension ", d, " requested of a 0-d tensor");
  return shape()[static_cast<size_t>(wrap_dim(d, dim(), "size"))];
}
int64_t Tensor::stride(int64_t d) const {
  OX_CHECK(dim() > 0, Index, "stride", "dimension ", d, " requested of a 0-d tensor");
  return strides()[static_cast<size_t>(wrap_dim(d, dim(), "stride"))];
}
int64_t Tensor::storage_offset() const { return checked("storage_offset").layout().offset; }
int64_t Tensor::numel() const { return checked("numel").layout().numel(); }
DType Tensor::dtype() const { return checked("dtype").dtype(); }
Device Tensor::device() const { return checked("device").device(); }
size_t Tensor::element_size() const { return dtype_size(dtype()); }
size_t Tensor::nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
bool Tensor::is_contiguous() const { return checked("is_contiguous").layout().is_contiguous(); }
const std::shared_ptr<Storage>& Tensor::storage() const { return checked("storage").storage(); }
bool Tensor::is_same_storage(const Tensor& other) const {
  return defined() && other.defined() && storage() == other.storage();
}

void* Tensor::raw_data_ptr(DType expected) const {
  const TensorImpl& impl = checked("data_ptr");
  OX_CHECK(impl.dtype() == expected, DType, "data_ptr", "tensor has dtype ", impl.dtype(),
           ", asked for ", expected);
  OX_CHECK(impl.device().is_cpu(), Device, "data_ptr", "tensor is on ", impl.device(),
           "; call .cpu() first");
  OX_CHECK(impl.layout().is_contiguous(), Value, "data_ptr", "tensor of shape ", shape(),
           " and strides ", strides(), " is not contiguous; call .contiguous() first");
  return impl.data();
}

void* Tensor::raw_data_ptr_strided(DType expected, const char* op) const {
  const TensorImpl& impl = checked(op);
  OX_CHECK(impl.dtype() == expected, DType, op, "tensor has dtype ", impl.dtype(), ", asked for ",
           expected);
  OX_CHECK(impl.device().is_cpu(), Device, op, "tensor is on ", impl.device(),
           "; call .cpu() first");
  return impl.data();
}

void Tensor::copy_to_host(void* out, DType out_dtype, const char* op, bool expect_single) const {
  const TensorImpl& impl = checked(op);
  if (expect_single)
    OX_CHECK(impl.layout().numel() == 1, Value, op, "a tensor of shape ", impl.layout().shape,
             " has ", impl.layout().numel(), " elements, not one");
  const Shape& s = impl.layout().shape;
  const StridedArray host{out, s, contiguous_strides(s), out_dtype, Device::cpu()};
  backend_for(impl.device(), op).copy(host, impl.array(), false);
}

// ---- Views --------------------------------------------------------------------------------

namespace {

// A view whose layout is `same_view` of this tensor's, recorded for autograd as a general view.
template <class F>
Tensor general_view(const Tensor& base, const char* op, const char* name, F same_view) {
  OX_CHECK(base.defined(), Value, op, "called on an undefined tensor");
  Tensor view = make_view(base, same_view(base.layout()));
  return autograd::record_view(base, std::move(view), name, autograd::ViewKind::General, {},
                               same_view);
}

}  // namespace

Tensor Tensor::view(const Shape& new_shape) const {
  const Layout& l = checked("view").layout();
  const Shape target = infer_shape(new_shape, l.numel(), "view");
  std::optional<Layout> viewed = l.view(target);
  OX_CHECK(viewed, Shape, "view", "cannot view shape ", l.shape, " with strides ", l.strides,
           " as ", target, " without copying; use reshape()");
  return autograd::record_view(*this, make_view(*this, *std::move(viewed)), "ViewBackward",
                               autograd::ViewKind::Reshape);
}

Tensor Tensor::reshape(const Shape& new_shape) const {
  const Layout& l = checked("reshape").layout();
  const Shape target = infer_shape(new_shape, l.numel(), "reshape");
  if (std::optional<Layout> viewed = l.view(target))
    return autograd::record_view(*this, make_view(*this, *std::move(viewed)), "ReshapeBackward",
                                 autograd::ViewKind::Reshape);
  return contiguous().view(target);
}

Tensor Tensor::permute(const Dims& dims) const {
  return autograd::record_view(*this, make_view(*this, checked("permute").layout().permute(dims)),
                               "PermuteBackward", autograd::ViewKind::Permute, dims);
}
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const Layout& l = checked("transpose").layout();
  Dims dims = Dims::filled(size_t(l.dim()), 0);
  for (int64_t d = 0; d < l.dim(); ++d) dims[size_t(d)] = d;
  if (l.dim() > 0)
    std::swap(dims[size_t(wrap_dim(d0, l.dim(), "transpose"))],
              dims[size_t(wrap_dim(d1, l.dim(), "transpose"))]);
  return autograd::record_view(*this, make_view(*this, l.transpose(d0, d1)), "TransposeBackward",
                               autograd::ViewKind::Permute, dims);
}
Tensor Tensor::t() const {
  OX_CHECK(dim() <= 2, Shape, "t", "expects a tensor with <= 2 dimensions, got shape ", shape());
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return general_view(*this, "narrow", "NarrowBackward",
                      [=](const Layout& l) { return l.narrow(d, start, length); });
}
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  return general_view(*this, "slice", "SliceBackward",
                      [=](const Layout& l) { return l.slice(d, start, end, step); });
}
Tensor Tensor::select(int64_t d, int64_t index) const {
  return general_view(*this, "select", "SelectBackward",
                      [=](const Layout& l) { return l.select(d, index); });
}
Tensor Tensor::expand(const Shape& target) const {
  return autograd::record_view(*this, make_view(*this, checked("expand").layout().expand(target)),
                               "ExpandBackward", autograd::ViewKind::Expand);
}
Tensor Tensor::broadcast_to(const Shape& target) const {
  broadcast_shapes(shape(), target, "broadcast_to");  // names both shapes on failure
  return expand(target);
}
Tensor Tensor::squeeze() const {
  return autograd::record_view(*this, make_view(*this, checked("squeeze").layout().squeeze()),
                               "SqueezeBackward", autograd::ViewKind::Reshape);
}
Tensor Tensor::squeeze(int64_t d) const {
  return autograd::record_view(*this, make_view(*this, checked("squeeze").layout().squeeze(d)),
                               "SqueezeBackward", autograd::ViewKind::Reshape);
}
Tensor Tensor::unsqueeze(int64_t d) const {
  return autograd::record_view(*this, make_view(*this, checked("unsqueeze").layout().unsqueeze(d)),
                               "UnsqueezeBackward", autograd::ViewKind::Reshape);
}
Tensor Tensor::flip(const Dims& dims) const {
  return autograd::record_view(*this, make_view(*this, checked("flip").layout().flip(dims)),
                               "FlipBackward", autograd::ViewKind::Flip, dims);
}
Tensor Tensor::diagonal(int64_t offset, int64_t d0, int64_t d1) const {
  return general_view(*this, "diagonal", "DiagonalBackward",
                      [=](const Layout& l) { return l.diagonal(offset, d0, d1); });
}
Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  return general_view(*this, "unfold", "UnfoldBackward",
                      [=](const Layout& l) { return l.unfold(d, size, step); });
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  const Shape& s = checked("flatten").layout().shape;
  if (s.empty()) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  OX_CHECK(start_dim <= end_dim, Value, "flatten", "start_dim ", start_dim, " comes after end_dim ",
           end_dim);
  Shape target(s.begin(), s.begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= s[d];
  target.push_back(merged);
  for (int64_t d = end_dim + 1; d < dim(); ++d) target.push_back(s[d]);
  return reshape(target);
}

Tensor Tensor::unflatten(int64_t d, const Shape& sizes) const {
  const Shape& s = checked("unflatten").layout().shape;
  OX_CHECK(!sizes.empty(), Shape, "unflatten", "sizes must not be empty");
  d = wrap_dim(d, dim(), "unflatten");
  const Shape inner = infer_shape(sizes, s[d], "unflatten");
  Shape target(s.begin(), s.begin() + d);
  for (int64_t v : inner) target.push_back(v);
  for (int64_t i = d + 1; i < dim(); ++i) target.push_back(s[i]);
  return view(target);
}

Tensor Tensor::as_strided(const Shape& new_shape, const Strides& new_strides,
                          std::optional<int64_t> offset) const {
  const TensorImpl& impl = checked("as_strided");
  Layout l{new_shape, new_strides, offset.value_or(impl.layout().offset)};
  OX_CHECK(l.offset >= 0, Index, "as_strided", "negative storage offset ", l.offset);
  const auto [lo, hi] = checked_reach(l, "as_strided");
  if (checked_numel(new_shape, "as_strided") > 0) {
    const auto capacity = static_cast<int64_t>(impl.storage()->nbytes() / dtype_size(impl.dtype()));
    OX_CHECK(lo >= 0 && hi < capacity, Index, "as_strided", "shape ", new_shape, ", strides ",
             new_strides, " and offset ", l.offset, " reach elements ", lo, " to ", hi,
             " of a storage holding ", capacity);
  }
  return autograd::record_as_strided(*this, make_view(*this, std::move(l)));
}

Tensor Tensor::detach() const {
  const TensorImpl& impl = checked("detach");
  return Tensor(std::make_shared<TensorImpl>(impl.storage(), impl.layout(), impl.dtype()));
}

void Tensor::set_data(const Tensor& source) const {
  TensorImpl& impl = const_cast<TensorImpl&>(checked("set_data"));
  OX_CHECK(source.defined(), Value, "set_data", "the source tensor is undefined");
  OX_CHECK(!requires_grad() || is_floating(source.dtype()), DType, "set_data",
           "a tensor that requires grad cannot take ", source.dtype(), " data");
  impl.set_data(source.storage(), source.layout(), source.dtype());
}

// ---- Copies -------------------------------------------------------------------------------

Tensor Tensor::contiguous() const {
  return checked("contiguous").layout().is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  const TensorImpl& impl = checked("clone");
  Tensor out = make_empty(impl.layout().shape, impl.dtype(), impl.device(), "clone");
  copy_between(*out.impl(), impl, "clone");
  if (autograd::needs_grad({this}))
    autograd::record("CloneBackward", {*this}, {out}, {},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                       return std::vector<Tensor>{g[0]};
                     });
  return out;
}

namespace {

// An uninitialized contiguous CPU tensor in the page-locked memory of `device`'s backend.
Tensor empty_pinned_for(Device device, const Shape& shape, DType dtype) {
  Allocator* pinned = backend_for(device, "to").pinned_host_allocator();
  OX_CHECK(pinned != nullptr, Internal, "to", "the backend of ", device, " has no pinned memory");
  int64_t numel = 1;
  for (const int64_t n : shape) numel *= n;
  auto storage = std::make_shared<Storage>(static_cast<size_t>(numel) * dtype_size(dtype),
                                           Device::cpu(), *pinned);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), Layout::contiguous(shape), dtype));
}

}  // namespace

Tensor Tensor::to(DType dt) const { return to(device(), dt); }
Tensor Tensor::to(Device d) const { return to(d, dtype(), ToOptions{}); }
Tensor Tensor::to(Device d, DType dt) const { return to(d, dt, ToOptions{}); }
Tensor Tensor::to(Device d, ToOptions options) const { return to(d, dtype(), options); }
Tensor Tensor::to(Device d, DType dt, ToOptions options) const {
  const TensorImpl& impl = checked("to");
  if (d == impl.device() && dt == impl.dtype()) return *this;
  // Non-blocking only between pinned host memory and a CUDA device: the result of a copy to the
  // host is pinned, and the host side is kept from reuse until the copy completes.
  const Device from = impl.device();
  const bool to_host = d.is_cpu() && from.type() == DeviceType::CUDA;
  const bool to_device = from.is_cpu() && d.type() == DeviceType::CUDA;
  const bool async = options.non_blocking && cuda::is_available() &&
                     (to_host || (to_device && cuda::is_pinned(*this)));
  Tensor out = async && to_host ? empty_pinned_for(from, impl.layout().shape, dt)
                                : make_empty(impl.layout().shape, dt, d, "to");
  if (async) {
    const Device device = to_host ? from : d;
    backend_for(device, "to").copy(out.impl()->array(), impl.array(), true);
    cuda::record_stream(to_host ? out : *this, cuda::current_stream(device.index()));
  } else {
    copy_between(*out.impl(), impl, "to");
  }
  if (autograd::needs_grad({this}) && is_floating(dt))  // the node casts the gradient back
    autograd::record("ToCopyBackward", {*this}, {out}, {},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                       return std::vector<Tensor>{g[0]};
                     });
  return out;
}

Tensor Tensor::pin_memory() const { return cuda::pin_memory(*this); }
bool Tensor::is_pinned() const { return cuda::is_pinned(*this); }

Tensor& Tensor::copy_(const Tensor& src) {
  const TensorImpl& dst = checked("copy_");
  OX_CHECK(src.defined(), Value, "copy_", "source is an undefined tensor");
  OX_CHECK(!has_internal_overlap(dst.layout()), Value, "copy_", "destination of shape ",
           dst.layout().shape, " and strides ", dst.layout().strides,
           " has elements sharing memory (an expanded tensor); clone() it first");
  const Shape& target = dst.layout().shape;
  OX_CHECK(broadcast_shapes(src.shape(), target, "copy_") == target, Shape, "copy_",
           "source of shape ", src.shape(), " cannot be broadcast to destination shape ", target);
  const bool track = autograd::needs_grad({this, &src});
  if (track) autograd::check_inplace(*this, "copy_");
  Tensor source = src.expand(target);
  if (may_overlap(dst, *source.impl())) source = source.clone();
  copy_between(dst, *source.impl(), "copy_");
  dst.storage()->bump_version();
  // A view's write goes into its base's history (and the view reads the new base); otherwise
  // this tensor's history is now src's (reduced back to src's shape and dtype).
  if (track && dst.is_view())
    autograd::record_view_write(*this, src);
  else if (track)
    autograd::record("CopyBackward", {src.is_same_storage(*this) ? src.detach() : src}, {*this}, {},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                       return std::vector<Tensor>{g[0]};
                     });
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) {
  const TensorImpl& impl = checked("fill_");
  OX_CHECK(!has_internal_overlap(impl.layout()), Value, "fill_", "tensor of shape ",
           impl.layout().shape, " has elements sharing memory (an expanded tensor)");
  OX_CHECK(scalar_fits(value, impl.dtype()), Value, "fill_", "value ", value,
           " cannot be converted to ", impl.dtype(), " without overflow");
  const bool track = autograd::needs_grad({this});
  if (track && impl.is_view())  // recorded as a write into the base
    return copy_(
        full(impl.layout().shape, value, {.dtype = impl.dtype(), .device = impl.device()}));
  if (track) autograd::check_inplace(*this, "fill_");
  backend_for(impl.device(), "fill_").fill(impl.array(), value);
  impl.storage()->bump_version();
  if (track) autograd::overwritten(*this);
  return *this;
}

}  // namespace ox
