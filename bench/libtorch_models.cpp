// LibTorch's training-step rows: the models of oxmera_models.cpp, written as a LibTorch user
// writes them (its C++ modules; torch 1.13 has no norm_first encoder layer, so the pre-norm
// block is spelled out around torch::nn::MultiheadAttention).

#include "harness.h"

#ifdef OXMERA_BENCH_TORCH

#include <torch/torch.h>

#include "libtorch_models.h"

#include <functional>
#include <map>

namespace oxbench {

torch::nn::Sequential libtorch_cnn_model() {
  namespace nn = torch::nn;
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 32, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Conv2d(nn::Conv2dOptions(32, 64, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Flatten(), nn::Linear(1600, 128), nn::ReLU(), nn::Linear(128, 10));
}

namespace {

torch::Tensor host(std::vector<int64_t> shape, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<float> values = random_floats(numel, seed);
  return torch::from_blob(values.data(), shape, torch::kFloat32).clone();
}

torch::Tensor classes(std::vector<int64_t> shape, int64_t count, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<int64_t> values = random_classes(numel, count, seed);
  return torch::from_blob(values.data(), shape, torch::kInt64).clone();
}

// With `bf16`, the twin of oxmera's autocast rows: LibTorch's C++ API has no autocast, so the
// model and its floating inputs are cast to bf16 by hand and the loss is taken in f32, where
// autocast would put it.
template <class Model, class Optimizer>
Timing time_steps(Model& model, Optimizer& opt, const torch::Tensor& x, const torch::Tensor& y,
                  int64_t classes_out, bool bf16 = false) {
  const torch::Tensor input = bf16 && x.is_floating_point() ? x.to(torch::kBFloat16) : x;
  return median_seconds([&] {
    opt.zero_grad();
    torch::Tensor logits = model->forward(input).reshape({-1, classes_out});
    if (bf16) logits = logits.to(torch::kFloat32);
    torch::nn::functional::cross_entropy(logits, y.reshape({-1})).backward();
    opt.step();
  });
}

Timing mlp_step() {
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(784, 512), torch::nn::ReLU(),
                              torch::nn::Linear(512, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  return time_steps(model, opt, host({kMlpBatch, 784}, kSeedA), classes({kMlpBatch}, 10, kSeedB),
                    10);
}

Timing cnn_step(bool bf16) {
  torch::manual_seed(0);
  torch::nn::Sequential model = libtorch_cnn_model();
  if (bf16) model->to(torch::kBFloat16);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  return time_steps(model, opt, host({kCnnBatch, 1, 28, 28}, kSeedA),
                    classes({kCnnBatch}, 10, kSeedB), 10, bf16);
}

struct BlockImpl : torch::nn::Module {
  BlockImpl()
      : norm1(register_module("norm1",
                              torch::nn::LayerNorm(torch::nn::LayerNormOptions({kGptWidth})))),
        attn(register_module("attn",
                             torch::nn::MultiheadAttention(
                                 torch::nn::MultiheadAttentionOptions(kGptWidth, kGptHeads)))),
        norm2(register_module("norm2",
                              torch::nn::LayerNorm(torch::nn::LayerNormOptions({kGptWidth})))),
        fc1(register_module("fc1", torch::nn::Linear(kGptWidth, 4 * kGptWidth))),
        fc2(register_module("fc2", torch::nn::Linear(4 * kGptWidth, kGptWidth))) {}
  // x: [T, B, C] (the module's sequence-first layout); mask: [T, T] bool, true = masked out.
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask) {
    const torch::Tensor h = norm1(x);
    x = x + std::get<0>(attn->forward(h, h, h, torch::Tensor(), /*need_weights=*/false, mask));
    return x + fc2(torch::gelu(fc1(norm2(x))));
  }
  torch::nn::LayerNorm norm1;
  torch::nn::MultiheadAttention attn;
  torch::nn::LayerNorm norm2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Block);

struct CharGptImpl : torch::nn::Module {
  CharGptImpl()
      : tokens(register_module("tokens", torch::nn::Embedding(kGptVocab, kGptWidth))),
        positions(register_module("positions", torch::nn::Embedding(kGptContext, kGptWidth))),
        norm(register_module("norm",
                             torch::nn::LayerNorm(torch::nn::LayerNormOptions({kGptWidth})))),
        head(register_module("head", torch::nn::Linear(kGptWidth, kGptVocab))) {
    for (int64_t i = 0; i < kGptBlocks; ++i)
      blocks.push_back(register_module("block" + std::to_string(i), Block()));
  }
  torch::Tensor forward(const torch::Tensor& idx) {
    const int64_t t = idx.size(1);
    const torch::Tensor mask = torch::ones({t, t}, torch::kBool).triu(1);
    torch::Tensor x = (tokens(idx) + positions(torch::arange(t))).transpose(0, 1);
    for (Block& block : blocks) x = block->forward(x, mask);
    return head(norm(x.transpose(0, 1)));
  }
  torch::nn::Embedding tokens, positions;
  std::vector<Block> blocks;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};
TORCH_MODULE(CharGpt);

Timing chargpt_step(bool bf16) {
  torch::manual_seed(0);
  CharGpt model;
  if (bf16) model->to(torch::kBFloat16);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-4));
  return time_steps(model, opt, classes({kGptBatch, kGptContext}, kGptVocab, kSeedA),
                    classes({kGptBatch, kGptContext}, kGptVocab, kSeedB), kGptVocab, bf16);
}

}  // namespace

Timing libtorch_model_seconds(std::string_view id) {
  static const std::map<std::string_view, std::function<Timing()>> table = {
      {"mlp_step", mlp_step},
      {"mlp_step_busy",
       [] {
         const CpuHog hog;
         return mlp_step();
       }},
      {"cnn_step", [] { return cnn_step(false); }},
      {"chargpt_step", [] { return chargpt_step(false); }},
      {"cnn_step_amp", [] { return cnn_step(true); }},
      {"chargpt_step_amp", [] { return chargpt_step(true); }},
      {"fmnist_epoch", libtorch_fmnist_epoch}};
  const auto it = table.find(id);
  return it == table.end() ? std::nullopt : it->second();
}

}  // namespace oxbench

#else

namespace oxbench {
Timing libtorch_model_seconds(std::string_view) { return std::nullopt; }
}  // namespace oxbench

#endif
