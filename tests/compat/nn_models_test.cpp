// Whole LibTorch programs' models through the compatibility header: the official MNIST example's
// Net (verbatim apart from the include), a DCGAN generator/discriminator, an LSTM language model,
// and the torch::nn::Module / Sequential / Functional / init surface they use.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "compat/mnist_net.h"
#include "test_util.h"

namespace {

using oxtest::shape_of;
using V = std::vector<int64_t>;

using compat_test::Net;

TEST(CompatNnModels, MnistNetTrainsWithSgd) {
  torch::manual_seed(1);
  torch::Device device(torch::kCPU);
  auto model = std::make_shared<Net>();
  model->to(device);
  EXPECT_EQ(model->parameters().size(), 8u);
  auto names = model->named_parameters().keys();
  EXPECT_EQ(names.front(), "conv1.weight");
  EXPECT_EQ(names.back(), "fc2.bias");
  EXPECT_EQ(shape_of(model->conv2->weight), (V{20, 10, 5, 5}));
  EXPECT_EQ(shape_of(model->fc1->weight), (V{50, 320}));

  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  auto data = torch::randn({16, 1, 28, 28});
  auto targets = torch::randint(10, {16});

  // Dropout draws differ from step to step; compare losses in eval mode, around a training step.
  model->eval();
  const float before = torch::nll_loss(model->forward(data), targets).item<float>();
  model->train();
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
  }
  model->eval();
  torch::NoGradGuard no_grad;
  const float after = torch::nll_loss(model->forward(data), targets).item<float>();
  EXPECT_LT(after, before);
  auto output = model->forward(data);
  EXPECT_EQ(shape_of(output), (V{16, 10}));
  auto pred = output.argmax(1);
  EXPECT_EQ(pred.dtype(), torch::kLong);
}

// ---- DCGAN (pytorch/examples cpp/dcgan)
// -----------------------------------------------------------
namespace nn = torch::nn;
struct DCGANGeneratorImpl : nn::Module {
  DCGANGeneratorImpl(int kNoiseSize)
      : conv1(nn::ConvTranspose2dOptions(kNoiseSize, 256, 4).bias(false)),
        batch_norm1(256),
        conv2(nn::ConvTranspose2dOptions(256, 128, 3).stride(2).padding(1).bias(false)),
        batch_norm2(128),
        conv3(nn::ConvTranspose2dOptions(128, 64, 4).stride(2).padding(1).bias(false)),
        batch_norm3(64),
        conv4(nn::ConvTranspose2dOptions(64, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));
    x = torch::relu(batch_norm2(conv2(x)));
    x = torch::relu(batch_norm3(conv3(x)));
    x = torch::tanh(conv4(x));
    return x;
  }
  // The example declares the convolutions first (a -Wreorder warning); here in initialization
  // order.
  nn::ConvTranspose2d conv1;
  nn::BatchNorm2d batch_norm1;
  nn::ConvTranspose2d conv2;
  nn::BatchNorm2d batch_norm2;
  nn::ConvTranspose2d conv3;
  nn::BatchNorm2d batch_norm3;
  nn::ConvTranspose2d conv4;
};
TORCH_MODULE(DCGANGenerator);

nn::Sequential make_discriminator() {
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 64, 4).stride(2).padding(1).bias(false)),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(64, 128, 4).stride(2).padding(1).bias(false)),
      nn::BatchNorm2d(128), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(128, 256, 4).stride(2).padding(1).bias(false)),
      nn::BatchNorm2d(256), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(256, 1, 3).stride(1).padding(0).bias(false)), nn::Sigmoid());
}

TEST(CompatNnModels, DcganShapesAndAdamMatchesOxmerasAdamBitForBit) {
  constexpr int kNoiseSize = 100;
  torch::manual_seed(7);
  DCGANGenerator generator(kNoiseSize);
  torch::manual_seed(7);
  DCGANGenerator twin(kNoiseSize);  // the same initial weights
  nn::Sequential discriminator = make_discriminator();
  EXPECT_EQ(discriminator->size(), 10u);

  auto noise = torch::randn({4, kNoiseSize, 1, 1});
  auto fake = generator->forward(noise);
  EXPECT_EQ(shape_of(fake), (V{4, 1, 28, 28}));
  EXPECT_LE(fake.abs().max().item<float>(), 1.0f);
  auto score = discriminator->forward(fake);
  EXPECT_EQ(shape_of(score), (V{4, 1, 1, 1}));
  EXPECT_GT(score.min().item<float>(), 0.0f);
  EXPECT_LT(score.max().item<float>(), 1.0f);

  torch::optim::Adam g_opt(generator->parameters(),
                           torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
  ox::optim::Adam ox_opt(twin->parameters(), {.lr = 2e-4, .betas = {0.5, 0.999}});
  auto labels = torch::ones({4, 1, 1, 1});
  for (int step = 0; step < 2; ++step) {
    for (auto* pair : {&generator, &twin}) {
      auto& g = *pair;
      g->zero_grad();
      auto loss = torch::binary_cross_entropy(discriminator->forward(g->forward(noise)), labels);
      loss.backward();
    }
    g_opt.step();
    ox_opt.step();
  }
  auto a = generator->parameters(), b = twin->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  EXPECT_EQ(g_opt.param_groups()[0].params().size(), a.size());
}

// ---- An LSTM language model
// -----------------------------------------------------------------------
struct LanguageModelImpl : torch::nn::Module {
  LanguageModelImpl(int64_t vocab, int64_t embedding, int64_t hidden)
      : embed(register_module("embed", torch::nn::Embedding(vocab, embedding))),
        lstm(register_module(
            "lstm",
            torch::nn::LSTM(
                torch::nn::LSTMOptions(embedding, hidden).num_layers(2).batch_first(true)))),
        head(register_module("head", torch::nn::Linear(hidden, vocab))) {}
  torch::Tensor forward(torch::Tensor tokens) {
    auto [output, state] = lstm->forward(embed->forward(tokens));
    hidden_state = std::get<0>(state);
    return head->forward(output);
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear head{nullptr};
  torch::Tensor hidden_state;
};
TORCH_MODULE(LanguageModel);

TEST(CompatNnModels, LstmLanguageModelShapesAndBackward) {
  torch::manual_seed(3);
  constexpr int64_t kVocab = 30, kBatch = 4, kSteps = 9;
  LanguageModel model(kVocab, 16, 24);
  auto tokens = torch::randint(kVocab, {kBatch, kSteps + 1});
  auto input = tokens.narrow(1, 0, kSteps), target = tokens.narrow(1, 1, kSteps);
  auto logits = model(input);
  EXPECT_EQ(shape_of(logits), (V{kBatch, kSteps, kVocab}));
  EXPECT_EQ(shape_of(model->hidden_state), (V{2, kBatch, 24}));  // never batch-first
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  float first = 0, last = 0;
  for (int step = 0; step < 5; ++step) {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(input).reshape({-1, kVocab}),
                                                     target.reshape({-1}));
    loss.backward();
    if (step == 0) {
      first = loss.item<float>();
      EXPECT_NEAR(first, std::log(double(kVocab)), 0.5);
      for (const auto& item : model->named_parameters()) {
        ASSERT_TRUE(item.second.grad().defined()) << item.first;
        EXPECT_GT(item.second.grad().abs().sum().item<float>(), 0.0f) << item.first;
      }
    }
    last = loss.item<float>();
    optimizer.step();
  }
  EXPECT_LT(last, first);
}

// ---- Module surface
// ------------------------------------------------------------------------------
struct BlockImpl : torch::nn::Module {
  BlockImpl() {
    fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(4, 3).bias(false)));
    scale = register_parameter("scale", torch::ones({3}));
    count = register_buffer("count", torch::zeros({1}));
  }
  torch::Tensor forward(torch::Tensor x) { return fc(x) * scale; }
  torch::nn::Linear fc{nullptr};
  torch::Tensor scale, count;
};
TORCH_MODULE(Block);

TEST(CompatNnModels, ModuleSurface) {
  Block block;
  auto names = block->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "fc.weight"}));
  EXPECT_EQ(block->named_buffers().keys(), (std::vector<std::string>{"count"}));
  EXPECT_TRUE(block->is_training());
  block->eval();
  EXPECT_FALSE(block->is_training());
  EXPECT_FALSE(block->fc->is_training());
  block->train();
  auto x = torch::randn({2, 4});
  block(x).sum().backward();
  EXPECT_TRUE(block->fc->weight.grad().defined());
  block->zero_grad();
  EXPECT_FALSE(block->fc->weight.grad().defined());
  block->to(torch::kDouble);
  EXPECT_EQ(block->scale.dtype(), torch::kDouble);
  EXPECT_EQ(block(x.to(torch::kDouble)).dtype(), torch::kDouble);

  torch::nn::ModuleList list(torch::nn::Linear(2, 2), torch::nn::ReLU());
  EXPECT_EQ(list->size(), 2u);
  torch::nn::ModuleDict dict;
  dict->insert("proj", torch::nn::Linear(2, 5));
  EXPECT_TRUE(dict->contains("proj"));
  EXPECT_EQ(shape_of(dict->at<torch::nn::LinearImpl>("proj")->weight), (V{5, 2}));
}

TEST(CompatNnModels, SequentialWithFunctionalAndInit) {
  torch::nn::Sequential seq(torch::nn::Linear(3, 4), torch::nn::Functional(torch::relu),
                            torch::nn::Linear(4, 5),
                            torch::nn::Functional(torch::log_softmax, 1, torch::nullopt));
  EXPECT_EQ(seq->size(), 4u);
  auto first = seq->at<torch::nn::LinearImpl>(0);
  auto last = seq->at<torch::nn::LinearImpl>(2);
  torch::nn::init::constant_(first->weight, 0.5);
  torch::nn::init::zeros_(first->bias);
  torch::nn::init::normal_(last->weight, 0.0, 0.1);
  torch::nn::init::constant_(last->bias, 0.25);
  auto x = torch::tensor({{1.0f, -2.0f, 4.0f}});
  auto h = torch::relu(torch::matmul(x, first->weight.t()));  // each 0.5 * 3 = 1.5
  EXPECT_TRUE(torch::allclose(h, torch::full({1, 4}, 1.5)));
  auto expected = torch::log_softmax(torch::matmul(h, last->weight.t()) + last->bias, 1);
  EXPECT_TRUE(torch::allclose(seq->forward(x), expected));
  EXPECT_EQ(seq->parameters().size(), 4u);

  // A lambda works as a Functional too.
  torch::nn::Functional twice([](torch::Tensor t) { return t * 2; });
  EXPECT_TRUE(torch::equal(twice(torch::ones({2})), torch::full({2}, 2.0)));

  // Initializers' statistics: xavier_uniform_ bound sqrt(6 / (fan_in + fan_out)), kaiming_normal_
  // (fan_out, relu) std sqrt(2 / fan_out).
  auto w = torch::empty({200, 300});
  torch::nn::init::xavier_uniform_(w);
  EXPECT_LE(w.abs().max().item<float>(), std::sqrt(6.0 / 500));
  EXPECT_GT(w.abs().max().item<float>(), 0.95 * std::sqrt(6.0 / 500));
  torch::nn::init::kaiming_normal_(w, 0.0, torch::kFanOut, torch::kReLU);
  EXPECT_NEAR(w.std().item<float>(), std::sqrt(2.0 / 200), 0.02 * std::sqrt(2.0 / 200));
  torch::nn::init::kaiming_uniform_(w);  // LibTorch's defaults: a = 0, fan_in, leaky_relu
  EXPECT_LE(w.abs().max().item<float>(), std::sqrt(6.0 / 300) * 1.0001);
  EXPECT_DOUBLE_EQ(torch::nn::init::calculate_gain(torch::kTanh), 5.0 / 3);
  EXPECT_NEAR(torch::nn::init::calculate_gain(torch::kLeakyReLU, 0.2), std::sqrt(2.0 / (1 + 0.04)),
              1e-12);
}

}  // namespace
