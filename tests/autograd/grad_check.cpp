#include "autograd/grad_check.h"

#include <gtest/gtest.h>

namespace ox_test {

namespace {

std::set<std::string>& covered() {
  static std::set<std::string> names;
  return names;
}

// Every node reachable from t's grad_fn (accumulators excluded).
void collect_nodes(const ox::Tensor& t, std::set<std::string>& names) {
  std::vector<std::shared_ptr<ox::autograd::Node>> todo;
  std::set<const ox::autograd::Node*> seen;
  if (t.grad_fn()) todo.push_back(t.grad_fn());
  while (!todo.empty()) {
    const std::shared_ptr<ox::autograd::Node> node = todo.back();
    todo.pop_back();
    if (!node || node->is_accumulator() || !seen.insert(node.get()).second) continue;
    names.insert(node->name());
    for (const ox::autograd::Edge& e : node->next_edges()) todo.push_back(e.node);
  }
}

}  // namespace

void expect_gradcheck(const std::string& what, const GradFn& fn,
                      const std::vector<ox::Tensor>& inputs, bool twice,
                      ox::autograd::GradcheckOptions options) {
  const ox::autograd::DifferentiableFn wrapped = [&fn](const std::vector<ox::Tensor>& in) {
    return std::vector<ox::Tensor>{fn(in)};
  };
  const auto first = ox::autograd::gradcheck(wrapped, inputs, options);
  EXPECT_TRUE(first) << what << ": " << first.report;
  bool passed = static_cast<bool>(first);
  if (twice) {
    const auto second = ox::autograd::gradgradcheck(wrapped, inputs, options);
    EXPECT_TRUE(second) << what << " (second order): " << second.report;
    passed = passed && static_cast<bool>(second);
  }
  if (passed) collect_nodes(fn(inputs), covered());
}

const std::set<std::string>& gradchecked_nodes() { return covered(); }

ox::Tensor values(const ox::Shape& shape, double lo, double hi, uint64_t seed) {
  ox::Generator gen(seed);
  return ox::rand(shape, {.dtype = ox::kF64}, &gen) * (hi - lo) + lo;
}

ox::Tensor leaf(const ox::Tensor& t) { return t.detach().clone().requires_grad_(); }

ox::Tensor transposed_leaf(const ox::Tensor& t) {
  return t.detach().transpose(-2, -1).contiguous().transpose(-2, -1).requires_grad_();
}

ox::Tensor sliced_leaf(const ox::Tensor& t) {
  const ox::Tensor d = t.detach();
  const int64_t n = d.size(-1);
  return ox::cat({d.unsqueeze(-1), d.unsqueeze(-1)}, -1)
      .flatten(-2)
      .slice(-1, 0, 2 * n, 2)
      .requires_grad_();
}

}  // namespace ox_test
