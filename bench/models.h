#pragma once
// The models of docs/WORKLOADS.md as oxmera modules, shared by the benchmark rows
// (oxmera_models.cpp) and the recipes of `oxmera train`.

#include <oxmera/oxmera.h>

#include "harness.h"

namespace oxbench {

// An f32 tensor of `shape` filled by random_floats(seed): the rows' inputs.
inline ox::Tensor host(const ox::Shape& shape, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return ox::tensor(random_floats(numel, seed), shape);
}

// MLP 784-512-256-10 with ReLU, on flattened images.
inline ox::nn::Sequential mlp_model() {
  return ox::nn::Sequential(ox::nn::Flatten(), ox::nn::Linear(784, 512), ox::nn::ReLU(),
                            ox::nn::Linear(512, 256), ox::nn::ReLU(), ox::nn::Linear(256, 10));
}

// Conv2d(1,32,3)-ReLU-MaxPool2-Conv2d(32,64,3)-ReLU-MaxPool2-Flatten-Linear(1600,128)-ReLU-
// Linear(128,10), on 1x28x28 images.
inline ox::nn::Sequential cnn_model() {
  return ox::nn::Sequential(ox::nn::Conv2d(1, 32, 3), ox::nn::ReLU(), ox::nn::MaxPool2d(2),
                            ox::nn::Conv2d(32, 64, 3), ox::nn::ReLU(), ox::nn::MaxPool2d(2),
                            ox::nn::Flatten(), ox::nn::Linear(1600, 128), ox::nn::ReLU(),
                            ox::nn::Linear(128, 10));
}

// A character GPT: token and position embeddings (context kGptContext), kGptBlocks pre-LayerNorm
// blocks with causal attention and a GELU MLP (4x), a final LayerNorm and the vocabulary head.
class CharGptImpl : public ox::nn::Module {
 public:
  explicit CharGptImpl(int64_t vocab) : Module("CharGpt") {
    tokens = register_module("tokens", ox::nn::Embedding(vocab, kGptWidth));
    positions = register_module("positions", ox::nn::Embedding(kGptContext, kGptWidth));
    for (int64_t i = 0; i < kGptBlocks; ++i)
      blocks->push_back(ox::nn::TransformerEncoderLayer(kGptWidth, kGptHeads,
                                                        {.dim_feedforward = 4 * kGptWidth,
                                                         .dropout = 0.0,
                                                         .activation = "gelu",
                                                         .batch_first = true,
                                                         .norm_first = true}));
    register_module("blocks", blocks);
    norm = register_module("norm", ox::nn::LayerNorm(ox::Shape{kGptWidth}));
    head = register_module("head", ox::nn::Linear(kGptWidth, vocab));
  }
  // ids i64 [B, T] with T <= kGptContext: logits [B, T, vocab].
  ox::Tensor forward(const ox::Tensor& ids) {
    ox::Tensor x = tokens(ids) +
                   positions(ox::arange(ids.size(1), {.dtype = ox::kI64, .device = ids.device()}));
    for (const auto& block : *blocks)
      x = std::static_pointer_cast<ox::nn::TransformerEncoderLayerImpl>(block)->forward(
          x, ox::Tensor(), ox::Tensor(), /*is_causal=*/true);
    return head(norm(x));
  }
  ox::nn::Embedding tokens = nullptr, positions = nullptr;
  ox::nn::ModuleList blocks;
  ox::nn::LayerNorm norm = nullptr;
  ox::nn::Linear head = nullptr;
};
OX_MODULE(CharGpt);

}  // namespace oxbench
