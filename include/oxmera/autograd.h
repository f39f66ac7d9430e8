#pragma once
// Reverse-mode automatic differentiation: grad mode, backward and grad over a graph recorded
// on the tensors, gradient hooks, custom functions, and gradcheck. Tensor's own autograd
// methods (requires_grad_, backward, grad, ...) are declared in oxmera/tensor.h.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "oxmera/tensor.h"

namespace ox {

// Whether ops record the graph on this thread (on by default).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// Scoped grad mode: off inside a NoGradGuard, on inside an EnableGradGuard; the previous mode
// comes back when the guard goes away.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

namespace autograd {

class Node;

// Hooks registered on one tensor, run on the gradient that reaches it; a retained gradient
// is accumulated into `retain` (the tensor, if still alive).
struct HookList {
  std::vector<std::pair<int64_t, std::function<Tensor(const Tensor&)>>> fns;
  std::weak_ptr<TensorImpl> retain;
  // A leaf's hooks that run after its gradient was added into .grad (on the leaf).
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> post_accumulate;
};

// Where a gradient goes: output slot `input_nr` of `node` (a null node: nowhere).
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
};

// One recorded op application: given the gradients of its outputs, returns the gradients of
// its inputs (one per edge; an undefined tensor for none).
class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node();  // frees long chains iteratively, not by recursion
  virtual std::string name() const = 0;
  const std::vector<Edge>& next_edges() const { return next_; }
  int64_t num_outputs() const { return static_cast<int64_t>(outputs_.size()); }
  // The recording order: later nodes run first in backward.
  uint64_t sequence_nr() const { return sequence_nr_; }

  // Implementation side, used by the engine and by op recording.
  struct OutputInfo {
    Shape shape;
    DType dtype;
    Device device;
  };
  virtual std::vector<Tensor> apply(std::vector<Tensor> grad_outputs) = 0;
  // Frees what apply needs (saved tensors); applying again then raises.
  virtual void release() {}
  virtual bool is_accumulator() const { return false; }
  std::vector<Edge> next_;
  std::vector<OutputInfo> outputs_;
  // Tensor hooks (and retain_grad) on the gradient arriving at each output slot, if any.
  std::vector<std::shared_ptr<struct HookList>> hooks_;
  uint64_t sequence_nr_ = 0;
};

// Gradients of the sum of outputs[i] * grad_outputs[i] (an undefined or missing grad_output
// means ones, for a one-element output) accumulated into the .grad of every leaf that requires
// grad. retain_graph defaults to create_graph; with create_graph the gradients are recorded
// too, so they can be differentiated again.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// The same gradients, returned for `inputs` instead of accumulated into .grad. An input the
// outputs do not depend on raises unless allow_unused (then its gradient is undefined).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

// Runs fn once the backward pass now running has finished (from a hook or a node's apply;
// outside a backward pass it raises), as torch's Variable._execution_engine.queue_callback.
void queue_callback(std::function<void()> fn);

// ---- Custom functions ------------------------------------------------------------------------

// What a custom function's forward leaves for its backward.
class AutogradContext {
 public:
  // Tensors for backward, checked against in-place changes when read back.
  void save_for_backward(std::vector<Tensor> tensors);
  std::vector<Tensor> get_saved_variables() const;
  // Anything else (sizes, flags) by name.
  std::unordered_map<std::string, Scalar> saved_data;

  // Implementation side.
  std::function<std::vector<Tensor>()> unpack_;
  std::vector<Tensor> to_save_;
};

// A user-defined op with its own backward, as torch::autograd::Function:
//   struct Square : ox::autograd::Function<Square> {
//     static ox::Tensor forward(ox::autograd::AutogradContext* ctx, ox::Tensor x) {
//       ctx->save_for_backward({x});
//       return x * x;
//     }
//     static std::vector<ox::Tensor> backward(ox::autograd::AutogradContext* ctx,
//                                             std::vector<ox::Tensor> grads) {
//       return {2 * ctx->get_saved_variables()[0] * grads[0]};
//     }
//   };
//   ox::Tensor y = Square::apply(x);
// forward runs without recording and returns a Tensor or a std::vector<Tensor>; backward gets
// one gradient per output and returns one per forward argument (undefined for non-tensors).
namespace detail {
using BackwardFn = std::function<std::vector<Tensor>(AutogradContext*, std::vector<Tensor>)>;
std::vector<Tensor> apply_function(const std::string& name, const std::vector<Tensor>& inputs,
                                   const std::vector<int64_t>& input_positions,
                                   int64_t num_arguments,
                                   const std::function<std::vector<Tensor>(AutogradContext*)>& fwd,
                                   BackwardFn bwd);
template <class T>
void collect(std::vector<Tensor>& tensors, std::vector<int64_t>& positions, int64_t& index,
             const T& arg) {
  if constexpr (std::is_same_v<std::decay_t<T>, Tensor>) {
    tensors.push_back(arg);
    positions.push_back(index);
  }
  ++index;
}
}  // namespace detail

template <class Derived>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    std::vector<Tensor> tensors;
    std::vector<int64_t> positions;
    int64_t index = 0;
    (detail::collect(tensors, positions, index, args), ...);
    using Result = decltype(Derived::forward(static_cast<AutogradContext*>(nullptr), args...));
    std::vector<Tensor> outs = detail::apply_function(
        typeid(Derived).name(), tensors, positions, int64_t(sizeof...(Args)),
        [&](AutogradContext* ctx) -> std::vector<Tensor> {
          if constexpr (std::is_same_v<Result, Tensor>) {
            return {Derived::forward(ctx, args...)};
          } else {
            return Derived::forward(ctx, args...);
          }
        },
        [](AutogradContext* ctx, std::vector<Tensor> grads) {
          return Derived::backward(ctx, std::move(grads));
        });
    if constexpr (std::is_same_v<Result, Tensor>) {
      return outs[0];
    } else {
      return outs;
    }
  }
};

// ---- Gradient checking -----------------------------------------------------------------------

struct GradcheckOptions {
  OX_NAMED_FIELDS_ONLY;
  double eps = 1e-6;   // central-difference step
  double atol = 1e-5;  // |analytical - numerical| <= atol + rtol * |numerical|
  double rtol = 1e-3;
};
struct GradcheckResult {
  bool ok = true;
  std::string report;  // on failure: the worst Jacobian entry, both values, and where
  explicit operator bool() const { return ok; }
};
using DifferentiableFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Compares the Jacobian autograd gives for fn's floating outputs with respect to the inputs
// that require grad against central differences. Inputs must be f64 with no elements sharing
// memory (Value error otherwise: perturbing one element would move its aliases too).
GradcheckResult gradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {});
// gradcheck of the gradients themselves (backward with create_graph), with random f64
// cotangents that are checked as inputs too.
GradcheckResult gradgradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                              GradcheckOptions options = {});

// The ops with a vjp rule, by the name of the node they record (what grad_fn()->name() reads),
// sorted. Composites (pad, repeat, einsum, dropout, ...) record the ops they are written with.
// Builds with OXMERA_SANITIZE check that every op node recorded is listed here.
const std::vector<std::string>& differentiable_ops();

}  // namespace autograd
}  // namespace ox
