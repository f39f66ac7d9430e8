#pragma once
// What an ox::Tensor handle points to.

#include <memory>

#include "backend/backend.h"
#include "oxmera/core/layout.h"
#include "oxmera/tensor.h"
#include "tensor/storage.h"

namespace ox {

namespace autograd {
struct HookList;
}

// What autograd keeps on a tensor (allocated when it first requires grad).
struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;    // null for a leaf
  uint32_t output_nr = 0;                     // which output of grad_fn this tensor is
  std::weak_ptr<autograd::Node> accumulator;  // a leaf's AccumulateGrad node, while a graph uses it
  std::shared_ptr<autograd::HookList> hooks;
};

class TensorImpl {
 public:
  TensorImpl(std::shared_ptr<Storage> storage, Layout layout, DType dtype)
      : storage_(std::move(storage)), layout_(std::move(layout)), dtype_(dtype) {}

  const std::shared_ptr<Storage>& storage() const { return storage_; }
  const Layout& layout() const { return layout_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  // Address of element [0, ..., 0].
  void* data() const {
    return static_cast<char*>(storage_->data()) +
           layout_.offset * static_cast<int64_t>(dtype_size(dtype_));
  }
  StridedArray array() const { return {data(), layout_.shape, layout_.strides, dtype_, device()}; }

  void set_data(std::shared_ptr<Storage> storage, Layout layout, DType dtype) {
    storage_ = std::move(storage);
    layout_ = std::move(layout);
    dtype_ = dtype;
  }

  // Made by a view op (shares its storage with the tensor it was made from, its base: the
  // first tensor of a chain of views, which autograd rewrites when the view is written).
  bool is_view() const { return view_base_ != nullptr; }
  const std::shared_ptr<TensorImpl>& view_base() const { return view_base_; }
  void set_view_base(std::shared_ptr<TensorImpl> base) { view_base_ = std::move(base); }

  // Null until autograd first touches this tensor.
  AutogradMeta* autograd() const { return autograd_.get(); }
  AutogradMeta& autograd_meta() {
    if (!autograd_) autograd_ = std::make_unique<AutogradMeta>();
    return *autograd_;
  }

 private:
  std::shared_ptr<Storage> storage_;
  Layout layout_;
  DType dtype_;
  std::unique_ptr<AutogradMeta> autograd_;
  std::shared_ptr<TensorImpl> view_base_;
};

// A new, uninitialised contiguous tensor; checks element and byte counts before allocating.
Tensor make_empty(const Shape& shape, DType dtype, Device device, const char* op);
// `t`, made a leaf that requires grad when the options ask (requires_grad_'s checks apply).
inline Tensor as_leaf(Tensor t, const TensorOptions& o) {
  if (o.requires_grad) t.requires_grad_(true);
  return t;
}
// A tensor over `like`'s storage with a different layout (a view).
Tensor make_view(const Tensor& like, Layout layout);
// Whether some element is reached by two indices (a stride 0 over a dim of size > 1): such a
// tensor cannot be written elementwise.
bool has_internal_overlap(const Layout& layout);
// Whether writing `dst` elementwise could change elements of `src` before they are read (they
// share memory, and not as the very same elements in the same order).
bool may_overlap(const TensorImpl& dst, const TensorImpl& src);

}  // namespace ox
