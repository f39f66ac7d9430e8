// Gradients through views: a view's gradient goes back to the elements of the base it reads.
// Reshapes, permutes, expands and flips have direct rules. A view that reads each base element
// at most once (narrow, select, slice, chunk, split, diagonal, ...) gets zeros of the base's
// shape with the gradient copied into the same view of them. Any other layout (unfold's
// overlapping windows, as_strided) maps each view element to its base element through an index
// tensor and adds the gradients there (index_add), which sums elements read more than once.
// None of these reads a value back to the host.

#include <algorithm>
#include <utility>
#include <vector>

#include "autograd/record.h"
#include "oxmera/indexing.h"
#include "oxmera/ops.h"

namespace ox::autograd {

namespace {

// Whether no two elements of the layout share an address, by a sufficient test: with the dims
// ordered by stride, each stride steps past everything the smaller dims reach (PyTorch's
// as_strided backward uses the same). Views that fail it may still be injective; they take
// the general path, which is right for any layout.
bool reads_each_element_once(const Layout& l) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // |stride|, size
  for (size_t i = 0; i < l.shape.size(); ++i) {
    if (l.shape[i] == 0) return true;
    if (l.shape[i] > 1)
      dims.emplace_back(l.strides[i] < 0 ? -l.strides[i] : l.strides[i], l.shape[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;  // the largest offset the dims so far reach
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return false;
    reach += stride * (size - 1);
  }
  return true;
}

// grad of base from grad of view, where positions[v] is the base's logical index (row-major)
// of view element v, or -1 for none (`may_miss`: some may be).
Tensor scatter_back(const Tensor& g, const Tensor& positions, const Shape& base_shape,
                    bool may_miss) {
  Tensor index = positions.reshape({-1});
  Tensor flat_g = g.reshape({-1});
  if (may_miss) {
    const Tensor outside = ox::lt(index, 0);
    index = ox::where(outside, 0, index);
    flat_g = ox::where(outside, 0, flat_g);
  }
  const Tensor zeros = ox::zeros({checked_numel(base_shape, "view backward")},
                                 {.dtype = g.dtype(), .device = g.device()});
  return ox::index_add(zeros, 0, index, flat_g).reshape(base_shape);
}

}  // namespace

Tensor record_view(const Tensor& base, Tensor view, const char* name, ViewKind kind, Dims dims,
                   std::function<Layout(const Layout&)> same_view) {
  if (!needs_grad({&base})) return view;
  const Shape base_shape = base.shape();
  VjpFn vjp;
  switch (kind) {
    case ViewKind::Reshape:
      vjp = [base_shape](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        return std::vector<Tensor>{g[0].reshape(base_shape)};
      };
      break;
    case ViewKind::Permute:
      vjp = [dims](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        Dims inverse = Dims::filled(dims.size(), 0);
        for (size_t i = 0; i < dims.size(); ++i)
          inverse[size_t(wrap_dim(dims[i], int64_t(dims.size()), "permute"))] = int64_t(i);
        return std::vector<Tensor>{g[0].permute(inverse)};
      };
      break;
    case ViewKind::Expand:  // the node sums the gradient back to the base's shape
      vjp = [](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        return std::vector<Tensor>{g[0]};
      };
      break;
    case ViewKind::Flip:
      vjp = [dims](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        return std::vector<Tensor>{g[0].flip(dims)};
      };
      break;
    case ViewKind::General:
      vjp = [base_shape, same_view](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        Tensor grad = ox::zeros(base_shape, {.dtype = g[0].dtype(), .device = g[0].device()});
        const Layout view = same_view(grad.layout());
        if (reads_each_element_once(view)) {
          grad.as_strided(view.shape, view.strides, view.offset).copy_(g[0]);
          return std::vector<Tensor>{grad};
        }
        // The same view of a tensor holding each base element's logical index.
        const Tensor index =
            ox::arange(checked_numel(base_shape, "view backward"), {.device = g[0].device()})
                .reshape(base_shape);
        const Tensor positions = Tensor(std::make_shared<TensorImpl>(
            index.storage(), same_view(index.layout()), index.dtype()));
        return std::vector<Tensor>{scatter_back(g[0], positions, base_shape, false)};
      };
      break;
  }
  record(name, {base}, {view}, {}, std::move(vjp));
  return view;
}

namespace {

// For each element of a tensor laid out as `view` over a storage of `storage_elems` elements,
// the logical index of the element of the tensor laid out as `base` at the same position.
Tensor positions_in(const Layout& base, const Layout& view, int64_t storage_elems, Device device) {
  const TensorOptions i64{.dtype = kI64, .device = device};
  const Tensor storage = ox::arange(storage_elems, i64);
  auto at = [&](const Layout& l) {
    return Tensor(std::make_shared<TensorImpl>(storage.storage(), l, kI64));
  };
  Tensor owner = ox::full({storage_elems}, -1, i64);  // -1: not in the base
  owner.index_put_({at(base).reshape({-1})},
                   ox::arange(checked_numel(base.shape, "view backward"), i64));
  return ox::index_select(owner, 0, at(view).reshape({-1}));
}

int64_t storage_elements(const Tensor& t) {
  return int64_t(t.storage()->nbytes() / dtype_size(t.dtype()));
}

}  // namespace

Tensor record_as_strided(const Tensor& base, Tensor view) {
  if (!needs_grad({&base})) return view;
  const Shape base_shape = base.shape();
  const Layout base_layout = base.layout(), view_layout = view.layout();
  const int64_t storage_elems = storage_elements(base);
  record("AsStridedBackward", {base}, {view}, {},
         [=](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
           const Tensor positions =
               positions_in(base_layout, view_layout, storage_elems, g[0].device());
           return std::vector<Tensor>{scatter_back(g[0], positions, base_shape, true)};
         });
  return view;
}

void record_view_write(const Tensor& view, const Tensor& src) {
  const Tensor base(view.impl()->view_base());
  // The base before the write, as an input: a handle of its own with the old history.
  Tensor old_base(std::make_shared<TensorImpl>(base.storage(), base.layout(), base.dtype()));
  if (const AutogradMeta* m = base.impl()->autograd()) {
    AutogradMeta& old = old_base.impl()->autograd_meta();
    old.requires_grad = m->requires_grad;
    old.grad_fn = m->grad_fn;
    old.output_nr = m->output_nr;
  }
  const Tensor source = src.impl() == base.impl() ? old_base : src;
  const Shape base_shape = base.shape(), view_shape = view.shape();
  const Layout base_layout = base.layout(), view_layout = view.layout();
  const int64_t storage_elems = storage_elements(base);
  record("copy_slices", {old_base, source}, {base}, {},
         [=](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
           const Tensor at = positions_in(base_layout, view_layout, storage_elems, g[0].device());
           const Tensor flat = g[0].reshape({-1});
           return std::vector<Tensor>{ox::scatter(flat, 0, at, 0).reshape(base_shape),
                                      ox::index_select(flat, 0, at).reshape(view_shape)};
         });
  record_as_strided(base, view);
}

}  // namespace ox::autograd
