#pragma once
// How ops record themselves for backward. An op that computes through a backend primitive
// checks needs_grad, computes without recording, then calls record with a vjp written in public
// ops (so it runs on every backend and can be differentiated again).

#include <functional>
#include <initializer_list>
#include <vector>

#include "oxmera/autograd.h"
#include "tensor/tensor_impl.h"

namespace ox::autograd {

// Whether an op on these operands records: grad mode is on and one of them requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// vjp(grads, saved) returns one gradient per input (undefined: none). grads has one defined
// tensor per output. A returned gradient may have the broadcast shape or the compute dtype:
// the node sums it back to the input's shape and casts it to the input's dtype.
using VjpFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads,
                                                const std::vector<Tensor>& saved)>;

// Makes `outputs` the results of a new node `name` (a string that outlives the graph: ops pass
// literals) over `inputs`. `saved` tensors come back to
// the vjp as they were (an in-place change since raises); outputs among them are kept without
// a reference cycle. Outputs must be tensors of their own (not aliases of an input handle).
void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            const std::vector<Tensor>& saved, VjpFn vjp);

// g summed over the dims it was broadcast along, back to `shape`.
Tensor sum_to(const Tensor& g, const Shape& shape);

// Called by in-place ops before they write `self` under grad mode: refuses a leaf that requires
// grad and a view of a tensor that requires grad, naming the op.
void check_inplace(const Tensor& self, const char* op);

// After an in-place op replaced every element of `self` (fill_, uniform_): a tensor with history
// no longer depends on it.
void overwritten(const Tensor& self);

// f() computed without recording (an op with its own rule runs its internals this way).
template <class F>
auto without_grad(F&& f) {
  NoGradGuard no_grad;
  return f();
}

// The node and slot that receive t's gradient (its grad_fn, or a leaf's accumulator).
Edge gradient_edge(const Tensor& t);

// How a view's gradient goes back to its base.
enum class ViewKind {
  Reshape,  // same elements in the same order: reshape the gradient
  Permute,  // dims reordered: permute back (dims = the permutation)
  Expand,   // broadcast: sum over the expanded dims
  Flip,     // reversed dims: flip again (dims = the flipped dims)
  General,  // any other layout (narrow, select, diagonal, unfold, as_strided, ...)
};
// Records `view` (of `base`) for backward when base requires grad. For General views,
// same_view must apply the view's layout transformation to any layout of base's shape.
Tensor record_view(const Tensor& base, Tensor view, const char* name, ViewKind kind, Dims dims = {},
                   std::function<Layout(const Layout&)> same_view = {});
// as_strided: storage positions, not a transformation of base's logical layout.
Tensor record_as_strided(const Tensor& base, Tensor view);

// After `src` was copied into `view` (a view) while recording: the view's base gets a new node
// over its old history and src (its gradient zeroed where the view lies, src's the gradient
// there), and the view becomes a view of the new base. Other views of the base made before
// the write keep their old history (PyTorch regenerates theirs).
void record_view_write(const Tensor& view, const Tensor& src);

}  // namespace ox::autograd
