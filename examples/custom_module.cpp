// Writing your own module, as subclassing torch.nn.Module: parameters, buffers and child
// modules are registered by name, and the holder made by OX_MODULE gives the LibTorch-style
// handle (`ResidualMlp block(16, 64); block(x)`). Then printing, named_parameters and a
// state_dict round trip into a freshly initialized copy.
//
// Exits 1 if a check fails.

#include <oxmera/oxmera.h>

#include <cstdio>
#include <iostream>

namespace nn = ox::nn;

// x + gate * fc2(gelu(fc1(norm(x - input_mean)))): a pre-norm residual MLP block.
class ResidualMlpImpl : public nn::Module {
 public:
  // The name given to Module is what printing shows; the children are listed below it. (A leaf
  // module overrides pretty_print to show its settings, as Linear's "in_features=...".)
  ResidualMlpImpl(int64_t dim, int64_t hidden) : Module("ResidualMlp") {
    // Children: their parameters appear under "norm.weight", "fc1.bias", ...
    norm = register_module("norm", nn::LayerNorm(ox::Shape{dim}));
    fc1 = register_module("fc1", nn::Linear(dim, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, dim));
    // A raw parameter, as nn.Parameter. Zero at first, so a new block is the identity and deep
    // stacks of them start out stable.
    gate = register_parameter("gate", ox::zeros({1}));
    // A buffer: saved in the state_dict and moved by to(), but not trained (as register_buffer).
    input_mean = register_buffer("input_mean", ox::zeros({dim}));
  }

  ox::Tensor forward(const ox::Tensor& x) {
    return x + gate * fc2(ox::gelu(fc1(norm(x - input_mean))));
  }

  // Holders start empty (nullptr) and are filled by register_module in the constructor.
  nn::LayerNorm norm = nullptr;
  nn::Linear fc1 = nullptr, fc2 = nullptr;
  ox::Tensor gate, input_mean;
};
OX_MODULE(ResidualMlp);  // defines the holder `ResidualMlp`, a shared_ptr<ResidualMlpImpl>

// A model built from the block: modules nest to any depth.
class TinyNetImpl : public nn::Module {
 public:
  TinyNetImpl() : Module("TinyNet") {
    block1 = register_module("block1", ResidualMlp(16, 64));
    block2 = register_module("block2", ResidualMlp(16, 64));
    head = register_module("head", nn::Linear(16, 3));
  }
  ox::Tensor forward(const ox::Tensor& x) { return head(block2(block1(x))); }

  ResidualMlp block1 = nullptr, block2 = nullptr;
  nn::Linear head = nullptr;
};
OX_MODULE(TinyNet);

// Largest absolute difference between two tensors of one shape.
double max_abs_diff(const ox::Tensor& a, const ox::Tensor& b) {
  return ox::max(ox::abs(a - b)).item<double>();
}

int main() {
  ox::manual_seed(0);
  bool ok = true;
  const auto check = [&](bool condition, const char* what) {
    std::printf("%s: %s\n", condition ? "ok    " : "FAILED", what);
    ok = ok && condition;
  };

  TinyNet model;
  std::cout << model << "\n";  // the nested repr, as print(model)

  // Dotted names in registration order: own tensors first, then each child's.
  int64_t count = 0;
  for (const auto& [name, parameter] : model->named_parameters()) {
    std::cout << "  " << name << " " << parameter.shape() << "\n";
    count += parameter.numel();
  }
  std::printf("%lld trainable values; buffers: %zu\n", (long long)count,
              model->named_buffers().size());

  // A block starts as the identity, since its gate is zero.
  const ox::Tensor x = ox::randn({4, 16});
  check(max_abs_diff(model->block1(x), x) == 0, "a new block is the identity");

  // Gradients reach every parameter, including the raw `gate` (and none reach the buffer).
  model(x).square().sum().backward();
  check(model->block1->gate.grad().defined(), "gate has a gradient");
  check(!model->block1->input_mean.requires_grad(), "the buffer is not trained");

  // Train the gates a little so the state differs from a fresh initialization.
  {
    ox::NoGradGuard no_grad;
    model->block1->gate.fill_(0.5);
    model->block2->gate.fill_(-0.25);
  }

  // state_dict: parameters and buffers by dotted name (detached views of the module's tensors).
  const ox::TensorDict state = model->state_dict();
  std::printf("state_dict keys: %zu (parameters and buffers)\n", state.size());

  TinyNet copy;  // a fresh model: different random weights, gates at zero
  const ox::Tensor expected = model(x);
  check(max_abs_diff(copy(x), expected) > 0, "a fresh model computes something else");
  copy->load_state_dict(state);  // strict: any missing or unexpected key is an error
  check(max_abs_diff(copy(x), expected) == 0, "after load_state_dict the outputs are identical");

  // A non-strict load reports what did not match instead of throwing.
  ox::TensorDict partial = state;
  partial.erase("head.bias");
  const nn::LoadStateResult result = copy->load_state_dict(partial, /*strict=*/false);
  check(result.missing_keys.size() == 1 && result.missing_keys[0] == "head.bias",
        "a non-strict load lists the missing key");

  return ok ? 0 : 1;
}
