// The backward engine: from the roots' gradients, runs every node once all the gradients for
// its outputs have arrived (nodes recorded later first, so the order is fixed), with a work
// list instead of recursion, freeing the graph as it goes unless asked to keep it.

#include <queue>
#include <unordered_map>

#include "autograd/record.h"
#include "oxmera/ops.h"

namespace ox::autograd {

namespace {

struct LaterFirst {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

// The callbacks queued during the backward pass running on this thread (innermost last).
thread_local std::vector<std::vector<std::function<void()>>*> t_callbacks;

void add_into(Tensor& slot, const Tensor& g) { slot = slot.defined() ? slot + g : g; }

// Runs the tensor hooks of output slot `i` of `node`, and keeps a retained gradient.
void run_hooks(Node& node, size_t i, Tensor& g) {
  if (i >= node.hooks_.size() || !node.hooks_[i] || !g.defined()) return;
  HookList& hooks = *node.hooks_[i];
  for (auto& [handle, fn] : hooks.fns) {
    Tensor replaced = fn(g);
    if (replaced.defined()) g = replaced;
  }
  if (auto target = hooks.retain.lock()) {
    Tensor& slot = target->autograd_meta().grad;
    const Tensor add = is_grad_enabled() ? g : g.detach().clone();
    slot = slot.defined() ? slot + add : add;
  }
}

// The gradient for root `i`: given, or ones for a one-element output.
Tensor root_gradient(const Tensor& out, const Tensor& given, size_t i) {
  if (given.defined()) {
    OX_CHECK(given.shape() == out.shape(), Shape, "backward", "gradient ", i, " has shape ",
             given.shape(), " but output ", i, " has shape ", out.shape());
    return given;
  }
  OX_CHECK(out.numel() == 1, Value, "backward", "output ", i, " of shape ", out.shape(),
           " is not a single element: pass a gradient for it");
  return ox::ones_like(out);
}

// What one backward pass computes: into the leaves' .grad (captures empty), or the gradients
// arriving at `captures` (autograd::grad).
std::vector<Tensor> run(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                        bool retain_graph, bool create_graph, const std::vector<Edge>* captures) {
  OX_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), Value, "backward", "got ",
           grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::vector<std::shared_ptr<Node>> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OX_CHECK(outputs[i].defined(), Value, "backward", "output ", i, " is undefined");
    const Edge edge = gradient_edge(outputs[i]);
    OX_CHECK(edge.node, Value, "backward", "output ", i,
             " does not require grad and has no grad_fn");
    const Tensor g =
        root_gradient(outputs[i], i < grad_outputs.size() ? grad_outputs[i] : Tensor(), i);
    auto& slots = buffers[edge.node.get()];
    slots.resize(size_t(edge.node->num_outputs()));
    add_into(slots[edge.input_nr], g);
    roots.push_back(edge.node);
  }
  // How many edges lead into each node reachable from the roots.
  std::unordered_map<Node*, int64_t> pending;
  {
    std::vector<Node*> stack;
    for (const auto& r : roots)
      if (pending.emplace(r.get(), 0).second) stack.push_back(r.get());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges()) {
        if (!e.node) continue;
        auto [it, fresh] = pending.emplace(e.node.get(), 0);
        ++it->second;
        if (fresh) stack.push_back(e.node.get());
      }
    }
  }
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> capture_at;
  std::vector<Tensor> captured;
  if (captures) {
    captured.resize(captures->size());
    for (size_t i = 0; i < captures->size(); ++i)
      if ((*captures)[i].node)
        capture_at[(*captures)[i].node.get()].emplace_back((*captures)[i].input_nr, i);
  }
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, LaterFirst> ready;
  for (const auto& r : roots)
    if (pending[r.get()] == 0) {
      pending[r.get()] = -1;  // queued once
      ready.push(r);
    }

  const bool previous_mode = is_grad_enabled();
  set_grad_enabled(create_graph);
  std::vector<std::function<void()>> callbacks;
  t_callbacks.push_back(&callbacks);
  struct Restore {
    bool mode;
    ~Restore() {
      set_grad_enabled(mode);
      t_callbacks.pop_back();
    }
  } restore{previous_mode};

  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    grads.resize(size_t(node->num_outputs()));
    bool any = false;
    for (size_t i = 0; i < grads.size(); ++i) {
      run_hooks(*node, i, grads[i]);
      any = any || grads[i].defined();
    }
    if (auto it = capture_at.find(node.get()); it != capture_at.end())
      for (auto [slot, index] : it->second) captured[index] = grads[slot];

    std::vector<Tensor> input_grads;
    const bool skip = !any || (captures && node->is_accumulator());
    if (!skip) {
      for (size_t i = 0; i < grads.size(); ++i)
        if (!grads[i].defined()) {
          const Node::OutputInfo& o = node->outputs_[i];
          grads[i] = ox::zeros(o.shape, {.dtype = o.dtype, .device = o.device});
        }
      input_grads = node->apply(std::move(grads));
      if (!retain_graph) node->release();
    }
    const auto& edges = node->next_edges();
    for (size_t j = 0; j < edges.size(); ++j) {
      const Edge& e = edges[j];
      if (!e.node) continue;
      if (j < input_grads.size() && input_grads[j].defined()) {
        auto& slots = buffers[e.node.get()];
        slots.resize(size_t(e.node->num_outputs()));
        add_into(slots[e.input_nr], input_grads[j]);
      }
      if (--pending[e.node.get()] == 0) ready.push(e.node);
    }
  }
  // A callback may queue another; each runs once.
  for (size_t i = 0; i < callbacks.size(); ++i) {
    std::function<void()> fn = std::move(callbacks[i]);
    fn();
  }
  return captured;
}

}  // namespace

void queue_callback(std::function<void()> fn) {
  OX_CHECK(!t_callbacks.empty(), Value, "queue_callback",
           "no backward pass is running on this thread");
  t_callbacks.back()->push_back(std::move(fn));
}

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  run(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  std::vector<Edge> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    OX_CHECK(inputs[i].defined() && inputs[i].requires_grad(), Value, "autograd::grad", "input ", i,
             " does not require grad");
    captures.push_back(gradient_edge(inputs[i]));
  }
  std::vector<Tensor> result =
      run(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, &captures);
  for (size_t i = 0; i < result.size(); ++i)
    OX_CHECK(result[i].defined() || allow_unused, Value, "autograd::grad", "input ", i, " (shape ",
             inputs[i].shape(),
             ") was not used to compute the outputs; pass allow_unused=true to get an undefined "
             "gradient for it");
  return result;
}

}  // namespace ox::autograd
