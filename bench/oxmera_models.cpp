// oxmera's training-step rows: forward, backward and optimizer step of the models of
// shared/WORKLOADS.md (mlp_step, cnn_step, chargpt_step), as a user writes them.

#include <oxmera/oxmera.h>

#include <functional>
#include <map>

#include "harness.h"

namespace oxbench {

namespace {

ox::Tensor host(const ox::Shape& shape, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return ox::tensor(random_floats(numel, seed), shape);
}

ox::Tensor classes(const ox::Shape& shape, int64_t count, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return ox::tensor(random_classes(numel, count, seed)).reshape(shape);
}

// Median seconds of one training step of model on (x, y).
template <class Model, class Optimizer>
Timing time_steps(Model& model, Optimizer& opt, const ox::Tensor& x, const ox::Tensor& y,
                  int64_t classes_out) {
  return median_seconds([&] {
    opt.zero_grad();
    const ox::Tensor logits = model(x).reshape({-1, classes_out});
    ox::nn::functional::cross_entropy(logits, y.reshape({-1})).backward();
    opt.step();
  });
}

Timing mlp_step() {
  ox::manual_seed(0);
  ox::nn::Sequential model(ox::nn::Linear(784, 512), ox::nn::ReLU(), ox::nn::Linear(512, 256),
                           ox::nn::ReLU(), ox::nn::Linear(256, 10));
  ox::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  return time_steps(model, opt, host({kMlpBatch, 784}, kSeedA), classes({kMlpBatch}, 10, kSeedB),
                    10);
}

Timing cnn_step() {
  ox::manual_seed(0);
  ox::nn::Sequential model(ox::nn::Conv2d(1, 32, 3), ox::nn::ReLU(), ox::nn::MaxPool2d(2),
                           ox::nn::Conv2d(32, 64, 3), ox::nn::ReLU(), ox::nn::MaxPool2d(2),
                           ox::nn::Flatten(), ox::nn::Linear(1600, 128), ox::nn::ReLU(),
                           ox::nn::Linear(128, 10));
  ox::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  return time_steps(model, opt, host({kCnnBatch, 1, 28, 28}, kSeedA),
                    classes({kCnnBatch}, 10, kSeedB), 10);
}

// A character GPT: token and position embeddings, pre-LayerNorm blocks with causal attention
// and a GELU MLP (4x), a final LayerNorm and the vocabulary head.
class CharGptImpl : public ox::nn::Module {
 public:
  CharGptImpl() : Module("CharGpt") {
    tokens = register_module("tokens", ox::nn::Embedding(kGptVocab, kGptWidth));
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
    head = register_module("head", ox::nn::Linear(kGptWidth, kGptVocab));
  }
  ox::Tensor forward(const ox::Tensor& idx) {
    ox::Tensor x = tokens(idx) + positions(ox::arange(idx.size(1), {.dtype = ox::kI64}));
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

Timing chargpt_step() {
  ox::manual_seed(0);
  CharGpt model;
  ox::optim::AdamW opt(model->parameters(), {.lr = 3e-4});
  return time_steps(model, opt, classes({kGptBatch, kGptContext}, kGptVocab, kSeedA),
                    classes({kGptBatch, kGptContext}, kGptVocab, kSeedB), kGptVocab);
}

}  // namespace

Timing oxmera_model_seconds(std::string_view id) {
  static const std::map<std::string_view, std::function<Timing()>> table = {
      {"mlp_step", mlp_step}, {"cnn_step", cnn_step}, {"chargpt_step", chargpt_step}};
  const auto it = table.find(id);
  return it == table.end() ? std::nullopt : it->second();
}

}  // namespace oxbench
