// LibTorch's MNIST example (pytorch/examples cpp/mnist/mnist.cpp) end to end through the
// compatibility header: its Net, its train() and test() loops and its main() body, changed only in
// the include, the data root (the installed Fashion-MNIST test split), a cap on the batches per
// pass so the test stays short, and returning the numbers instead of printing them. Training must
// lower the loss and beat chance on images it did not train on, as LibTorch does.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "compat/mnist_net.h"

namespace {

const char* const kDataRoot = "/usr/share/datasets/fashion-mnist";
const int64_t kTrainBatchSize = 64;
const int64_t kTestBatchSize = 1000;
const size_t kTrainBatches = 120;  // of 157: the first 7680 images
const size_t kTestBatches = 2;

using compat_test::Net;

// The example's train(), returning the mean loss of the first and the last ten batches.
template <typename DataLoader>
std::pair<double, double> train(Net& model, torch::Device device, DataLoader& data_loader,
                                torch::optim::Optimizer& optimizer) {
  model.train();
  size_t batch_idx = 0;
  std::vector<double> losses;
  for (auto& batch : data_loader) {
    if (batch_idx++ == kTrainBatches) break;
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model.forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    losses.push_back(loss.template item<float>());
  }
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) {
    first += losses[i] / 10;
    last += losses[losses.size() - 1 - i] / 10;
  }
  return {first, last};
}

// The example's test(), over batches past the ones trained on; returns (mean loss, accuracy).
template <typename DataLoader>
std::pair<double, double> test(Net& model, torch::Device device, DataLoader& data_loader) {
  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int32_t correct = 0;
  int64_t seen = 0;
  size_t batch_idx = 0;
  for (const auto& batch : data_loader) {
    if (batch_idx++ < 8) continue;  // 8000 images, past the 7680 trained on
    if (batch_idx > 8 + kTestBatches) break;
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model.forward(data);
    test_loss += torch::nll_loss(output, targets,
                                 /*weight=*/{}, torch::Reduction::Sum)
                     .template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
    seen += data.size(0);
  }
  return {test_loss / seen, double(correct) / seen};
}

TEST(CompatMnistExample, TrainsAndTestsAsInLibTorchsExample) {
  if (!std::filesystem::exists(std::string(kDataRoot) + "/t10k-images-idx3-ubyte") &&
      !std::filesystem::exists(std::string(kDataRoot) + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "no Fashion-MNIST files under " << kDataRoot;
  torch::manual_seed(1);

  torch::DeviceType device_type;
  if (torch::cuda::is_available()) {
    device_type = torch::kCUDA;
  } else {
    device_type = torch::kCPU;
  }
  torch::Device device(device_type);

  Net model;
  model.to(device);

  auto train_dataset =
      torch::data::datasets::MNIST(kDataRoot, torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
          .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  EXPECT_EQ(train_dataset_size, 10000u);
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), kTrainBatchSize);

  auto test_dataset =
      torch::data::datasets::MNIST(kDataRoot, torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
          .map(torch::data::transforms::Stack<>());
  auto test_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(test_dataset), kTestBatchSize);

  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));

  const auto [first, last] = train(model, device, *train_loader, optimizer);
  const auto [test_loss, accuracy] = test(model, device, *test_loader);
  // ln 10 = 2.30 at the start. LibTorch 1.13 running this same code (with its own <torch/torch.h>,
  // one thread) gives first 2.30, last 1.88, test loss 1.70, accuracy 0.49; oxmera's random
  // streams differ (init, dropout), so the bounds leave room for another draw.
  EXPECT_GT(first, 2.1);
  EXPECT_LT(last, first - 0.2) << "first " << first << ", last " << last;
  EXPECT_LT(test_loss, 2.0);
  EXPECT_GT(accuracy, 0.3) << "test loss " << test_loss;  // chance is 0.1
}

}  // namespace
