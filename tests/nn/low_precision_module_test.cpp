// Module::to(kBF16 / kF16): what converts and what stays, state dicts across dtypes, the dtype
// errors that remain, and a small MLP trained in bf16 tracking its f32 twin.

#include <gtest/gtest.h>
#include <oxmera/nn/containers.h>
#include <oxmera/optim/sgd.h>
#include <oxmera/oxmera.h>

#include <cmath>

#include "test_util.h"

namespace {

using namespace ox;
using oxtest::caught;

// The bits of every value of t rounded to `low`, widened to f64.
std::vector<double> rounded(const Tensor& t, DType low) {
  return t.detach().to(low).to(kF64).to_vector<double>();
}

TEST(LowPrecisionModule, ToConvertsFloatingParametersAndBuffers) {
  for (DType low : {kBF16, kF16}) {
    manual_seed(3);
    nn::Sequential net(nn::Linear(4, 3), nn::BatchNorm1d(3), nn::LayerNorm(Shape{3}));
    net->at<nn::LinearImpl>(0)->forward(ones({2, 4})).sum().backward();  // a gradient to convert
    const std::vector<double> weight = rounded(net->at<nn::LinearImpl>(0)->weight, low);
    net->to(low);
    for (const auto& [name, p] : net->named_parameters()) {
      EXPECT_EQ(p.dtype(), low) << name;
      EXPECT_TRUE(p.requires_grad()) << name;
      EXPECT_TRUE(p.is_leaf()) << name;
    }
    EXPECT_EQ(net->at<nn::LinearImpl>(0)->weight.grad().dtype(), low);
    EXPECT_EQ(net->at<nn::LinearImpl>(0)->weight.to(kF64).to_vector<double>(), weight);
    const auto bn = net->at<nn::BatchNorm1dImpl>(1);
    EXPECT_EQ(bn->running_mean.dtype(), low);
    EXPECT_EQ(bn->running_var.dtype(), low);
    EXPECT_EQ(bn->num_batches_tracked.dtype(), kI64);  // as PyTorch: the counter stays i64

    // The state dict holds the 16-bit tensors (and the i64 counter).
    const TensorDict state = net->state_dict();
    EXPECT_EQ(state.at("0.weight").dtype(), low);
    EXPECT_EQ(state.at("1.running_var").dtype(), low);
    EXPECT_EQ(state.at("1.num_batches_tracked").dtype(), kI64);

    // A forward and backward stay in the 16-bit dtype.
    Tensor x = ones({5, 4}, {.dtype = low}).requires_grad_(true);
    Tensor y = net(x);
    EXPECT_EQ(y.dtype(), low);
    y.sum().backward();
    EXPECT_EQ(x.grad().dtype(), low);
    for (const Tensor& p : net->parameters()) EXPECT_EQ(p.grad().dtype(), low);
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

    // And back: to(kF32) widens exactly.
    net->to(kF32);
    EXPECT_EQ(net->at<nn::LinearImpl>(0)->weight.dtype(), kF32);
    EXPECT_EQ(net->at<nn::LinearImpl>(0)->weight.to(kF64).to_vector<double>(), weight);
  }
}

TEST(LowPrecisionModule, ToDeviceAndDtype) {
  nn::Linear fc(3, 2);
  fc->to(Device::cpu(), kBF16);
  EXPECT_EQ(fc->weight.dtype(), kBF16);
  EXPECT_EQ(fc->bias.dtype(), kBF16);
  fc->to(Device::cpu(), kF16);
  EXPECT_EQ(fc->weight.dtype(), kF16);
}

TEST(LowPrecisionModule, StateDictsConvertOnLoad) {
  manual_seed(5);
  nn::Sequential f32_net(nn::Linear(4, 3), nn::BatchNorm1d(3));
  f32_net(randn({6, 4}));  // running statistics away from their initial values
  nn::Sequential bf16_net(nn::Linear(4, 3), nn::BatchNorm1d(3));
  bf16_net->to(kBF16);

  // A bf16 model loads an f32 state dict, rounding each value; the counter stays i64.
  bf16_net->load_state_dict(f32_net->state_dict());
  const TensorDict loaded_state = bf16_net->state_dict();
  for (const auto& [name, t] : f32_net->state_dict()) {
    const Tensor& loaded = loaded_state.at(name);
    EXPECT_EQ(loaded.dtype(), is_floating(t.dtype()) ? kBF16 : kI64) << name;
    EXPECT_EQ(loaded.to(kF64).to_vector<double>(), rounded(t, kBF16)) << name;
  }
  // And an f32 model loads the bf16 one's, widening exactly.
  nn::Sequential back(nn::Linear(4, 3), nn::BatchNorm1d(3));
  back->load_state_dict(bf16_net->state_dict());
  for (const auto& [name, t] : bf16_net->state_dict()) {
    EXPECT_EQ(back->state_dict().at(name).dtype(), is_floating(t.dtype()) ? kF32 : kI64);
    EXPECT_EQ(back->state_dict().at(name).to(kF64).to_vector<double>(),
              t.to(kF64).to_vector<double>())
        << name;
  }
}

TEST(LowPrecisionModule, OtherDtypesAreStillErrors) {
  nn::Linear fc(3, 2);
  fc->to(kBF16);
  // Modules do not promote: an input of another dtype names both.
  for (DType other : {kF32, kF16, kF64}) {
    const Error e = caught([&] { fc(ones({2, 3}, {.dtype = other})); });
    EXPECT_EQ(e.kind(), ErrorKind::DType);
    EXPECT_TRUE(oxtest::contains(e, "[Linear]")) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "bf16") && oxtest::contains(e, std::string(dtype_name(other))))
        << e.what();
  }
  nn::LSTM lstm(3, 4);
  lstm->to(kF16);
  const Error e = caught([&] { lstm(ones({5, 2, 3}, {.dtype = kBF16})); });
  EXPECT_EQ(e.kind(), ErrorKind::DType);
  EXPECT_TRUE(oxtest::contains(e, "[LSTM]") && oxtest::contains(e, "bf16") &&
              oxtest::contains(e, "f16"))
      << e.what();
  // Non-floating dtypes are refused, naming the dtype; the module is left as it was.
  for (DType refused : {kI32, kI64, kU8, kBool}) {
    const Error r = caught([&] { fc->to(refused); });
    EXPECT_EQ(r.kind(), ErrorKind::DType);
    EXPECT_TRUE(oxtest::contains(r, "Module.to") &&
                oxtest::contains(r, std::string(dtype_name(refused))))
        << r.what();
    EXPECT_EQ(fc->weight.dtype(), kBF16);
  }
}

// Twenty SGD steps of a 2-layer MLP on a fixed regression batch, in bf16 and in f32 from the
// same (bf16-rounded) initialization: the bf16 losses follow the f32 ones. bf16 keeps 8 bits of
// mantissa, so each parameter update is rounded to ~0.4% of the parameter; over 20 steps the
// loss stays within 5% (+0.01) of the f32 run's, and falls by as much.
TEST(LowPrecisionModule, Bf16MlpTracksF32Training) {
  const auto train = [](DType dt) {
    manual_seed(11);
    nn::Sequential net(nn::Linear(16, 32), nn::ReLU(), nn::Linear(32, 4));
    net->to(kBF16);
    net->to(dt);
    const Tensor x = randn({64, 16}).to(kBF16).to(dt);
    const Tensor w = randn({16, 4}).to(kBF16).to(dt);
    const Tensor target = ox::tanh(matmul(x, w)).to(kBF16).to(dt);
    optim::SGD sgd(net->parameters(), {.lr = 0.1, .momentum = 0.9});
    std::vector<double> losses;
    for (int step = 0; step < 20; ++step) {
      sgd.zero_grad();
      Tensor loss = nn::functional::mse_loss(net(x), target);
      EXPECT_EQ(loss.dtype(), dt);
      loss.backward();
      sgd.step();
      losses.push_back(loss.item<double>());
    }
    for (const Tensor& p : net->parameters()) EXPECT_EQ(p.dtype(), dt);
    return losses;
  };
  const std::vector<double> low = train(kBF16), ref = train(kF32);
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(low[i], ref[i], 0.01 + 0.05 * ref[i]) << "step " << i;
  EXPECT_LT(ref.back(), 0.7 * ref.front());  // the f32 run learns, and so does bf16 with it
  EXPECT_LT(low.back(), 0.7 * low.front());
}

}  // namespace
