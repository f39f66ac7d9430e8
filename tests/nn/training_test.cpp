// End-to-end: modules, losses and optimizers together learn what they should.

#include <gtest/gtest.h>
#include <oxmera/optim.h>
#include <oxmera/oxmera.h>

#include "test_util.h"

namespace {

using namespace ox;

TEST(Training, MlpFitsXor) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(2, 8), nn::Tanh(), nn::Linear(8, 1));
  optim::Adam opt(model->parameters(), {.lr = 0.05});
  const Tensor x = tensor({{0.f, 0.f}, {0.f, 1.f}, {1.f, 0.f}, {1.f, 1.f}});
  const Tensor y = tensor({{0.f}, {1.f}, {1.f}, {0.f}});
  double loss = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor l = nn::functional::binary_cross_entropy_with_logits(model(x), y);
    l.backward();
    opt.step();
    loss = l.item<double>();
  }
  EXPECT_LT(loss, 0.05);
  const std::vector<float> p = sigmoid(model(x)).to_vector<float>();
  EXPECT_LT(p[0], 0.1f);
  EXPECT_GT(p[1], 0.9f);
  EXPECT_GT(p[2], 0.9f);
  EXPECT_LT(p[3], 0.1f);
}

// 64 random 1x12x12 images with random labels among 4 classes: memorizing them needs the
// convolution, pooling, linear layers, the loss and the optimizer all to be right.
TEST(Training, SmallCnnOverfits64Images) {
  manual_seed(1);
  const Tensor images = randn({64, 1, 12, 12});
  const Tensor labels = randint(0, 4, {64});
  nn::Sequential model(nn::Conv2d(1, 8, 3, {.padding = 1}), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Conv2d(8, 16, 3, {.padding = 1}), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Flatten(), nn::Linear(16 * 3 * 3, 32), nn::ReLU(), nn::Linear(32, 4));
  optim::Adam opt(model->parameters(), {.lr = 3e-3});
  for (int step = 0; step < 150; ++step) {
    opt.zero_grad();
    nn::functional::cross_entropy(model(images), labels).backward();
    opt.step();
  }
  model->eval();
  const Tensor predicted = model(images).argmax(1);
  const double accuracy = (predicted == labels).to(kF64).mean().item<double>();
  EXPECT_EQ(accuracy, 1.0);
}

}  // namespace
