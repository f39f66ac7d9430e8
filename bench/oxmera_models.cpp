// oxmera's training-step rows: forward, backward and optimizer step of the models of
// docs/WORKLOADS.md (mlp_step, cnn_step, chargpt_step), as a user writes them.

#include <oxmera/oxmera.h>

#include <functional>
#include <map>

#include "harness.h"
#include "models.h"

namespace oxbench {

namespace {

ox::Tensor classes(const ox::Shape& shape, int64_t count, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return ox::tensor(random_classes(numel, count, seed)).reshape(shape);
}

// Median seconds of one training step of model on (x, y); with `amp`, the forward pass and the
// loss run under bf16 autocast (the parameters stay f32), as a mixed-precision user writes it.
template <class Model, class Optimizer>
Timing time_steps(Model& model, Optimizer& opt, const ox::Tensor& x, const ox::Tensor& y,
                  int64_t classes_out, bool amp = false) {
  return median_seconds([&] {
    opt.zero_grad();
    ox::Tensor loss;
    {
      ox::amp::Autocast autocast(ox::DeviceType::CPU, ox::kBF16, amp);
      const ox::Tensor logits = model(x).reshape({-1, classes_out});
      loss = ox::nn::functional::cross_entropy(logits, y.reshape({-1}));
    }
    loss.backward();
    opt.step();
  });
}

Timing mlp_step() {
  ox::manual_seed(0);
  ox::nn::Sequential model = mlp_model();
  ox::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  return time_steps(model, opt, host({kMlpBatch, 784}, kSeedA), classes({kMlpBatch}, 10, kSeedB),
                    10);
}

Timing cnn_step(bool amp) {
  ox::manual_seed(0);
  ox::nn::Sequential model = cnn_model();
  ox::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  return time_steps(model, opt, host({kCnnBatch, 1, 28, 28}, kSeedA),
                    classes({kCnnBatch}, 10, kSeedB), 10, amp);
}

Timing chargpt_step(bool amp) {
  ox::manual_seed(0);
  CharGpt model(kGptVocab);
  ox::optim::AdamW opt(model->parameters(), {.lr = 3e-4});
  return time_steps(model, opt, classes({kGptBatch, kGptContext}, kGptVocab, kSeedA),
                    classes({kGptBatch, kGptContext}, kGptVocab, kSeedB), kGptVocab, amp);
}

}  // namespace

Timing oxmera_model_seconds(std::string_view id) {
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
      {"fmnist_epoch", oxmera_fmnist_epoch}};
  const auto it = table.find(id);
  return it == table.end() ? std::nullopt : it->second();
}

}  // namespace oxbench
