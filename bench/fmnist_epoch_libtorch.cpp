// fmnist_epoch, LibTorch's side: the epoch of fmnist_epoch_oxmera.cpp as a LibTorch user writes
// it over in-memory tensors (index_select of each batch from the whole training set), on the
// same standardized pixels, batch order and initial weights.

#include "harness.h"

#ifdef OXMERA_BENCH_TORCH

#include <torch/torch.h>

#include <chrono>

namespace oxbench {

namespace {

// A view of the oxmera-owned buffer: read only, never resized.
torch::Tensor images_of(const ImageSplit& s) {
  return torch::from_blob(const_cast<float*>(s.images), {s.count, 1, 28, 28}, torch::kFloat32);
}
torch::Tensor labels_of(const ImageSplit& s) {
  return torch::from_blob(const_cast<int64_t*>(s.labels), {s.count}, torch::kInt64);
}

void shared_init(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  int64_t fan_in = 1;
  uint64_t seed = kFmnistInitSeed;
  for (torch::Tensor& p : model.parameters()) {
    if (p.dim() > 1) fan_in = p.numel() / p.size(0);
    std::vector<float> values = default_init(p.numel(), fan_in, seed++);
    p.copy_(torch::from_blob(values.data(), p.sizes(), torch::kFloat32));
  }
}

std::optional<double> g_accuracy;

}  // namespace

std::optional<double> libtorch_accuracy(std::string_view id) {
  return id == "fmnist_epoch" ? g_accuracy : std::nullopt;
}

Timing libtorch_fmnist_epoch() {
  const FashionMnist& data = fashion_mnist();
  if (!data.missing.empty()) return std::nullopt;
  const torch::Tensor images = images_of(data.train), labels = labels_of(data.train);
  std::vector<int64_t> order = permutation(data.train.count, kFmnistOrderSeed);

  namespace nn = torch::nn;
  nn::Sequential model(
      nn::Conv2d(nn::Conv2dOptions(1, 32, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Conv2d(nn::Conv2dOptions(32, 64, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Flatten(), nn::Linear(1600, 128), nn::ReLU(), nn::Linear(128, 10));
  const auto step = [&](torch::optim::Adam& opt, const torch::Tensor& x, const torch::Tensor& y) {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    opt.step();
  };
  {  // Warm-up, as oxmera's side: a few steps, then the weights start over.
    torch::optim::Adam warm(model->parameters(), torch::optim::AdamOptions(1e-3));
    for (int64_t i = 0; i < 3; ++i)
      step(warm, images.narrow(0, i * kCnnBatch, kCnnBatch),
           labels.narrow(0, i * kCnnBatch, kCnnBatch));
  }
  shared_init(*model);
  model->train();
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const torch::Tensor batch_order =
      torch::from_blob(order.data(), {data.train.count}, torch::kInt64);
  for (int64_t start = 0; start < data.train.count; start += kCnnBatch) {
    const torch::Tensor index =
        batch_order.narrow(0, start, std::min(kCnnBatch, data.train.count - start));
    step(opt, images.index_select(0, index), labels.index_select(0, index));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  torch::NoGradGuard no_grad;
  model->eval();
  const torch::Tensor test_images = images_of(data.test), test_labels = labels_of(data.test);
  int64_t correct = 0;
  for (int64_t start = 0; start < data.test.count; start += 1000) {
    const int64_t len = std::min<int64_t>(1000, data.test.count - start);
    const torch::Tensor predicted = model->forward(test_images.narrow(0, start, len)).argmax(1);
    correct += predicted.eq(test_labels.narrow(0, start, len)).sum().item<int64_t>();
  }
  g_accuracy = double(correct) / double(data.test.count);
  return seconds;
}

}  // namespace oxbench

#else

namespace oxbench {
std::optional<double> libtorch_accuracy(std::string_view) { return std::nullopt; }
Timing libtorch_fmnist_epoch() { return std::nullopt; }
}  // namespace oxbench

#endif
