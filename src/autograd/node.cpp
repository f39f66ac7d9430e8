// Graph nodes: op nodes with saved tensors, leaf accumulators, grad mode, and the autograd
// methods of Tensor.

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "autograd/record.h"
#include "oxmera/ops.h"

namespace ox {

namespace {
thread_local bool t_grad_enabled = true;
std::atomic<uint64_t> g_sequence{0};
}  // namespace

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

namespace autograd {

namespace {

// Destroying a node can destroy the node before it, and so on: a 100,000-op chain would recurse
// 100,000 deep. Nodes whose last owner is a node being destroyed wait in this list instead.
thread_local std::vector<std::shared_ptr<Node>> t_doomed;
thread_local bool t_destroying = false;

void defer_destruction(std::shared_ptr<Node>& node) {
  if (node && node.use_count() == 1) t_doomed.push_back(std::move(node));
}
// A tensor that is about to die takes its grad_fn with it: move that into the list too.
void defer_destruction(Tensor& t) {
  if (!t.defined() || t.impl_ptr().use_count() != 1) return;
  if (AutogradMeta* meta = t.impl()->autograd()) defer_destruction(meta->grad_fn);
}

// A saved tensor: an input as it is, or an output as an alias without autograd history (its
// grad_fn would be the node saving it). The version at save time detects in-place writes.
class SavedTensor {
 public:
  SavedTensor(const Tensor& t, bool is_output, uint32_t output_nr)
      : tensor_(is_output ? t.detach() : t),
        version_(t.defined() ? t.version() : 0),
        is_output_(is_output),
        output_nr_(output_nr) {}

  Tensor unpack(const std::shared_ptr<Node>& owner) const {
    if (!tensor_.defined()) return tensor_;
    OX_CHECK(tensor_.version() == version_, Value, owner->name(),
             "a tensor it saved for backward (shape ", tensor_.shape(), ", ", tensor_.dtype(),
             ") was modified by an in-place op since (version ", version_, ", now ",
             tensor_.version(), "); compute on a clone() instead");
    if (!is_output_ || !is_grad_enabled()) return tensor_;
    // Recording the gradient (create_graph): the output again, as a result of its node.
    Tensor alias = tensor_.detach();
    AutogradMeta& meta = alias.impl()->autograd_meta();
    meta.grad_fn = owner;
    meta.output_nr = output_nr_;
    return alias;
  }
  Tensor& tensor() { return tensor_; }

 private:
  Tensor tensor_;
  uint64_t version_;
  bool is_output_;
  uint32_t output_nr_;
};

class FunctionNode final : public Node {
 public:
  // An op's name is a string that outlives the node (ops pass literals), and the node name is
  // spelled out only when asked for; other names (custom functions) are copied.
  FunctionNode(const char* name, bool static_name, VjpFn vjp)
      : op_(static_name ? name : nullptr),
        name_(static_name ? std::string() : node_name(name)),
        vjp_(std::move(vjp)) {}

  // "leaky_relu" -> "LeakyReluBackward"; names that already read "...Backward" stay.
  static std::string node_name(std::string_view op) {
    if (op.find("Backward") != std::string_view::npos || op.find('(') != std::string_view::npos)
      return std::string(op);
    std::string out;
    bool upper = true;
    for (char c : op) {
      if (c == '_') {
        upper = true;
        continue;
      }
      out += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
    return out + "Backward";
  }
  ~FunctionNode() override {
    for (SavedTensor& s : saved_) defer_destruction(s.tensor());
  }
  std::string name() const override { return op_ ? node_name(op_) : name_; }

  std::vector<Tensor> apply(std::vector<Tensor> grads) override {
    OX_CHECK(!released_, Value, name(),
             "backward through this graph a second time: its saved tensors were freed by the "
             "first backward; pass retain_graph=true to the first backward");
    std::vector<Tensor> saved;
    saved.reserve(saved_.size());
    for (const SavedTensor& s : saved_) saved.push_back(s.unpack(shared_from_this()));
    std::vector<Tensor> out = vjp_(grads, saved);
    OX_ASSERT(out.size() == inputs_.size(), "vjp of ", name(), " returned ", out.size(),
              " gradients for ", inputs_.size(), " inputs");
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].defined() || !next_[i].node) continue;
      if (out[i].shape() != inputs_[i].shape) out[i] = sum_to(out[i], inputs_[i].shape);
      if (out[i].dtype() != inputs_[i].dtype || out[i].device() != inputs_[i].device)
        out[i] = out[i].to(inputs_[i].device, inputs_[i].dtype);
    }
    return out;
  }
  void release() override {
    released_ = true;
    for (SavedTensor& s : saved_) defer_destruction(s.tensor());
    saved_.clear();
  }

  const char* op_;
  std::string name_;
  VjpFn vjp_;
  std::vector<SavedTensor> saved_;
  std::vector<OutputInfo> inputs_;
  bool released_ = false;
};

// A leaf's gradient sink: adds what arrives to the leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::string name() const override { return "AccumulateGrad"; }
  bool is_accumulator() const override { return true; }
  std::vector<Tensor> apply(std::vector<Tensor> grads) override {
    accumulate(leaf_->autograd_meta().grad, std::move(grads[0]));
    if (!hooks_.empty() && hooks_[0] && !hooks_[0]->post_accumulate.empty()) {
      const Tensor leaf(leaf_);
      for (auto& [handle, fn] : hooks_[0]->post_accumulate) fn(leaf);
    }
    return {};
  }

  // Out of place, so a gradient tensor handed out earlier never changes under its holder;
  // recorded when the engine runs with create_graph (grad mode on).
  static void accumulate(Tensor& slot, Tensor g) {
    if (!is_grad_enabled()) {
      const bool sole_owner = g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1;
      g = sole_owner ? g.detach() : g.detach().clone();
    }
    slot = slot.defined() ? slot + g : g;
  }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

Node::OutputInfo info_of(const Tensor& t) { return {t.shape(), t.dtype(), t.device()}; }

std::shared_ptr<Node> accumulator_of(const Tensor& leaf) {
  AutogradMeta& meta = leaf.impl()->autograd_meta();
  if (auto node = meta.accumulator.lock()) return node;
  auto node = std::make_shared<AccumulateGrad>(leaf.impl_ptr());
  node->outputs_ = {info_of(leaf)};
  node->hooks_ = {meta.hooks};
  node->sequence_nr_ = g_sequence.fetch_add(1);
  meta.accumulator = node;
  return node;
}

HookList& hooks_of(const Tensor& t) {
  AutogradMeta& meta = t.impl()->autograd_meta();
  if (!meta.hooks) meta.hooks = std::make_shared<HookList>();
  // The node that receives this tensor's gradient runs them.
  if (meta.grad_fn) {
    auto& slots = meta.grad_fn->hooks_;
    if (slots.size() <= meta.output_nr) slots.resize(meta.output_nr + 1);
    slots[meta.output_nr] = meta.hooks;
  } else if (auto acc = meta.accumulator.lock()) {
    acc->hooks_ = {meta.hooks};
  }
  return *meta.hooks;
}

}  // namespace

Node::~Node() {
  for (Edge& e : next_) defer_destruction(e.node);
  if (t_destroying) return;
  t_destroying = true;
  while (!t_doomed.empty()) {
    std::shared_ptr<Node> node = std::move(t_doomed.back());
    t_doomed.pop_back();
    node.reset();  // its own destructor only adds to t_doomed
  }
  t_destroying = false;
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = t.defined() ? t.impl()->autograd() : nullptr;
  if (!meta) return {};
  if (meta->grad_fn) return {meta->grad_fn, meta->output_nr};
  if (meta->requires_grad) return {accumulator_of(t), 0};
  return {};
}

namespace {

// record without the registry check: custom functions and internal bookkeeping nodes.
void record_unlisted(const char* name, bool static_name, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs, const std::vector<Tensor>& saved,
                     VjpFn vjp) {
  auto node = std::make_shared<FunctionNode>(name, static_name, std::move(vjp));
  node->sequence_nr_ = g_sequence.fetch_add(1);
  node->next_.reserve(inputs.size());
  node->inputs_.reserve(inputs.size());
  node->saved_.reserve(saved.size());
  node->outputs_.reserve(outputs.size());
  for (const Tensor& in : inputs) {
    node->next_.push_back(in.defined() && in.requires_grad() ? gradient_edge(in) : Edge{});
    node->inputs_.push_back(in.defined() ? info_of(in) : Node::OutputInfo{{}, kF32, Device::cpu()});
  }
  for (const Tensor& s : saved) {
    uint32_t slot = 0;
    bool is_output = false;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (s.defined() && s.impl() == outputs[i].impl()) is_output = true, slot = uint32_t(i);
    node->saved_.emplace_back(s, is_output, slot);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    for (const Tensor& in : inputs)
      OX_ASSERT(!in.defined() || in.impl() != out.impl(), name, " records an input as its output");
    node->outputs_.push_back(info_of(out));
    AutogradMeta& meta = out.impl()->autograd_meta();
    meta.grad_fn = node;
    meta.output_nr = uint32_t(i);
    meta.requires_grad = true;
  }
}

}  // namespace

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            const std::vector<Tensor>& saved, VjpFn vjp) {
#ifdef OXMERA_CHECK_OP_REGISTRY
  const std::string node = FunctionNode::node_name(name);
  const std::vector<std::string>& listed = differentiable_ops();
  OX_CHECK(std::binary_search(listed.begin(), listed.end(), node), Internal, name,
           "records the node ", node, ", which ox::autograd::differentiable_ops() does not list ",
           "(src/autograd/op_list.cpp)");
#endif
  record_unlisted(name, true, inputs, outputs, saved, std::move(vjp));
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  const int64_t lead = g.dim() - int64_t(shape.size());
  OX_ASSERT(lead >= 0, "sum_to: gradient of shape ", g.shape(), " smaller than ", shape);
  Dims dims;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[size_t(d - lead)] == 1 && g.shape()[size_t(d)] != 1)) dims.push_back(d);
  Tensor out = dims.empty() ? g : ox::sum(g, dims, /*keepdim=*/true);
  return lead > 0 || out.shape() != shape ? out.reshape(shape) : out;
}

void check_inplace(const Tensor& self, const char* op) {
  if (!is_grad_enabled()) return;
  const auto is_grad_leaf = [](const TensorImpl& t) {
    const AutogradMeta* meta = t.autograd();
    return meta && meta->requires_grad && !meta->grad_fn;
  };
  OX_CHECK(!is_grad_leaf(*self.impl()), Value, op, "a leaf tensor that requires grad (shape ",
           self.shape(), ") cannot be modified in place; do it under ox::NoGradGuard, or on a ",
           "clone()");
  OX_CHECK(!self.impl()->is_view() || !is_grad_leaf(*self.impl()->view_base()), Value, op,
           "a view (shape ", self.shape(), ") of a leaf tensor that requires grad cannot be ",
           "modified in place; do it under ox::NoGradGuard, or on a clone()");
}

void overwritten(const Tensor& self) {
  if (!is_grad_enabled() || self.is_leaf()) return;
  record_unlisted(
      "OverwriteBackward", true, {}, {self}, {},
      [](const std::vector<Tensor>&, const std::vector<Tensor>&) { return std::vector<Tensor>{}; });
}

// ---- Custom functions ------------------------------------------------------------------------

void AutogradContext::save_for_backward(std::vector<Tensor> tensors) {
  to_save_ = std::move(tensors);
}
std::vector<Tensor> AutogradContext::get_saved_variables() const {
  return unpack_ ? unpack_() : to_save_;
}

namespace detail {

namespace {

// A Function's name as its author wrote it ("Swish", not the mangled "5Swish"), without its
// namespaces, as PyTorch names a custom function's node.
std::string function_name(const std::string& mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  const size_t scope = name.rfind("::");
  return scope == std::string::npos ? name : name.substr(scope + 2);
}

}  // namespace

std::vector<Tensor> apply_function(const std::string& name, const std::vector<Tensor>& inputs,
                                   const std::vector<int64_t>& input_positions,
                                   int64_t num_arguments,
                                   const std::function<std::vector<Tensor>(AutogradContext*)>& fwd,
                                   BackwardFn bwd) {
  auto ctx = std::make_shared<AutogradContext>();
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    outs = fwd(ctx.get());
  }
  if (!needs_grad(inputs)) return outs;
  // A forward that returns an input as it is gets a new handle, so the input keeps its history.
  for (Tensor& out : outs)
    for (const Tensor& in : inputs)
      if (out.defined() && in.defined() && out.impl() == in.impl()) out = out.detach();
  const std::string label = function_name(name) + "Backward";
  const std::vector<Tensor> to_save = ctx->to_save_;
  ctx->to_save_.clear();
  record_unlisted(
      label.c_str(), false, inputs, outs, to_save,
      [ctx, bwd, input_positions, num_arguments, n = to_save.size()](
          const std::vector<Tensor>& grads, const std::vector<Tensor>& saved) {
        ctx->unpack_ = [&saved] { return saved; };
        std::vector<Tensor> per_argument = bwd(ctx.get(), grads);
        ctx->unpack_ = nullptr;
        // As LibTorch: gradients past the arguments passed (a defaulted
        // argument's) may be returned if they are undefined; they are dropped.
        while (int64_t(per_argument.size()) > num_arguments && !per_argument.back().defined())
          per_argument.pop_back();
        OX_CHECK(int64_t(per_argument.size()) == num_arguments, Value, "custom Function",
                 "backward returned ", per_argument.size(), " gradients for ", num_arguments,
                 " forward arguments (extra ones must be undefined)");
        std::vector<Tensor> per_input;
        for (int64_t pos : input_positions) per_input.push_back(per_argument[size_t(pos)]);
        (void)n;
        return per_input;
      });
  return outs;
}

}  // namespace detail
}  // namespace autograd

// ---- Tensor's autograd methods ---------------------------------------------------------------

Tensor& Tensor::requires_grad_(bool requires_grad) {
  const TensorImpl& impl = checked("requires_grad_");
  OX_CHECK(!requires_grad || is_floating(impl.dtype()), DType, "requires_grad_",
           "only floating point tensors can require gradients, got ", impl.dtype());
  AutogradMeta& meta = impl_->autograd_meta();
  OX_CHECK(!meta.grad_fn || requires_grad, Value, "requires_grad_",
           "only leaves can stop requiring grad; use detach() for a tensor outside the graph");
  meta.requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const {
  const AutogradMeta* meta = checked("requires_grad").autograd();
  return meta && (meta->requires_grad || meta->grad_fn);
}

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = checked("is_leaf").autograd();
  return !meta || !meta->grad_fn;
}

Tensor Tensor::grad() const {
  const AutogradMeta* meta = checked("grad").autograd();
  return meta ? meta->grad : Tensor();
}

Tensor& Tensor::mutable_grad() {
  checked("mutable_grad");
  return impl_->autograd_meta().grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const AutogradMeta* meta = checked("grad_fn").autograd();
  return meta ? meta->grad_fn : nullptr;
}

void Tensor::retain_grad() const {
  OX_CHECK(requires_grad(), Value, "retain_grad", "called on a tensor that doesn't require grad");
  if (is_leaf()) return;  // leaves keep their gradient anyway
  autograd::hooks_of(*this).retain = impl_;
}

bool Tensor::retains_grad() const {
  const AutogradMeta* meta = checked("retains_grad").autograd();
  return meta && meta->grad_fn && meta->hooks && !meta->hooks->retain.expired();
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

namespace {
int64_t next_hook_handle() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1);
}
}  // namespace

int64_t Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  OX_CHECK(requires_grad(), Value, "register_hook",
           "cannot register a hook on a tensor that doesn't require grad");
  const int64_t handle = next_hook_handle();
  autograd::hooks_of(*this).fns.emplace_back(handle, std::move(hook));
  return handle;
}

int64_t Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  OX_CHECK(requires_grad(), Value, "register_post_accumulate_grad_hook",
           "cannot register a hook on a tensor that doesn't require grad");
  OX_CHECK(!grad_fn(), Value, "register_post_accumulate_grad_hook",
           "post accumulate grad hooks cannot be registered on non-leaf tensors");
  const int64_t handle = next_hook_handle();
  autograd::hooks_of(*this).post_accumulate.emplace_back(handle, std::move(hook));
  return handle;
}

void Tensor::remove_hook(int64_t handle) const {
  const AutogradMeta* meta = checked("remove_hook").autograd();
  if (!meta || !meta->hooks) return;
  const auto same = [handle](const auto& h) { return h.first == handle; };
  std::erase_if(meta->hooks->fns, same);
  std::erase_if(meta->hooks->post_accumulate, same);
}

uint64_t Tensor::version() const { return checked("version").storage()->version(); }

}  // namespace ox
