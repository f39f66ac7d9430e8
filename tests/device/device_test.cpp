// Devices without a GPU: the CUDA device played by the host stand-in (device_stand_in.h), so
// that the default device, device propagation, cross-device rules, deferred kernel checks and
// "no value read back" are tested in CI. Kernel results are the CPU's here; the GPU's own are
// compared with the CPU's by scripts/gpu-check.sh.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/forwarding_backend.h"
#include "bench/models.h"
#include "device_stand_in.h"
#include "test_util.h"

namespace {

using ox::Device;
using ox::ErrorKind;
using oxtest::caught;
using oxtest::contains;

const Device kGpu = Device::cuda(0);

class DeviceStandIn : public ::testing::Test {
 protected:
  void SetUp() override { oxtest::use_device_stand_in(); }
  void TearDown() override { ox::set_default_device(Device::cpu()); }
};

TEST_F(DeviceStandIn, FactoriesMakeTensorsOnTheDefaultDevice) {
  ox::Generator gen(7);
  const auto made = [&] {
    return std::vector<ox::Tensor>{ox::empty({2}),
                                   ox::zeros({2}),
                                   ox::ones({2}),
                                   ox::full({2}, 3.0),
                                   ox::arange(4),
                                   ox::linspace(0, 1, 3),
                                   ox::eye(2),
                                   ox::tensor({1.0, 2.0}, {.dtype = ox::kF64}),
                                   ox::scalar_tensor(1.5),
                                   ox::rand({2}, {}, &gen),
                                   ox::randn({2}, {}, &gen),
                                   ox::randint(0, 5, {2}, {}, &gen),
                                   ox::randperm(4, {}, &gen),
                                   ox::bernoulli({2}, 0.5, {}, &gen)};
  };
  for (const ox::Tensor& t : made()) EXPECT_EQ(t.device(), Device::cpu());
  ox::set_default_device(kGpu);
  for (const ox::Tensor& t : made()) EXPECT_EQ(t.device(), kGpu);
  {
    const ox::DeviceGuard guard(Device::cuda(1));
    for (const ox::Tensor& t : made()) EXPECT_EQ(t.device(), Device::cuda(1));
    {
      const ox::DeviceGuard inner(Device::cpu());
      EXPECT_EQ(ox::zeros({1}).device(), Device::cpu());
    }
    EXPECT_EQ(ox::default_device(), Device::cuda(1));
    // A guard is this thread's: another thread sees the process default.
    Device seen;
    std::thread([&] { seen = ox::zeros({1}).device(); }).join();
    EXPECT_EQ(seen, kGpu);
  }
  EXPECT_EQ(ox::default_device(), kGpu);
  // Named devices win over the default; module parameters follow it, as in PyTorch.
  EXPECT_EQ(ox::zeros({1}, {.device = Device::cpu()}).device(), Device::cpu());
  EXPECT_EQ(ox::nn::Linear(3, 2)->weight.device(), kGpu);
  ox::set_default_device(Device::cpu());
  EXPECT_EQ(ox::zeros({1}).device(), Device::cpu());
}

TEST_F(DeviceStandIn, AMissingDeviceIsRefusedByTheFactory) {
  ox::set_default_device(Device::cuda(5));
  const ox::Error e = caught([] { ox::zeros({2}); });
  EXPECT_EQ(e.kind(), ErrorKind::Device);
  EXPECT_TRUE(contains(e, "cuda:5")) << e.what();
}

TEST_F(DeviceStandIn, OpsKeepTheirInputsDevice) {
  ox::Generator gen(3);
  const ox::Tensor x = ox::randn({4, 4}, {.device = kGpu}, &gen);
  const std::vector<ox::Tensor> results = {
      x + 1,
      x.sum(),
      x.narrow(0, 1, 2),
      ox::softmax(x, -1),
      ox::matmul(x, x),
      ox::linalg::matrix_power(x, 0),
      ox::linalg::matrix_rank(ox::zeros({0, 3}, {.device = kGpu})),
      ox::linalg::diag_embed(x, 1),
      ox::index_select(x, 0, ox::tensor({0, 3}, {.device = kGpu})),
      ox::nn::functional::cross_entropy(x, ox::tensor({0, 1, 2, 3}, {.device = kGpu})),
  };
  for (const ox::Tensor& r : results) EXPECT_EQ(r.device(), kGpu) << r.shape();
}

TEST_F(DeviceStandIn, AZeroDimCpuTensorMixesAsAScalar) {
  const ox::Tensor x = ox::tensor({1.0, 2.0, 3.0}, {.device = kGpu});
  const ox::Tensor two = ox::scalar_tensor(2.0, {.device = Device::cpu()});
  const ox::Tensor y = x * two;
  EXPECT_EQ(y.device(), kGpu);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ((two - x).to_vector<double>(), (std::vector<double>{1, 0, -1}));
  ox::Tensor z = x.clone();
  z.mul_(two);
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{2, 4, 6}));
  const ox::Tensor picked = ox::where(ox::scalar_tensor(true, {.device = Device::cpu()}), x, two);
  EXPECT_EQ(picked.device(), kGpu);
  EXPECT_EQ(picked.to_vector<double>(), (std::vector<double>{1, 2, 3}));
  // Anything else across devices is refused, naming both.
  const ox::Tensor cpu_vector = ox::tensor({1.0, 1.0, 1.0}, {.device = Device::cpu()});
  for (const ox::Error& e :
       {caught([&] { (void)(x + cpu_vector); }), caught([&] { ox::Tensor(x).add_(cpu_vector); }),
        caught([&] { (void)ox::matmul(x, cpu_vector); }),
        caught([&] { (void)(x + ox::tensor({1.0}, {.device = Device::cuda(1)})); })}) {
    EXPECT_EQ(e.kind(), ErrorKind::Device) << e.what();
    EXPECT_TRUE(contains(e, "cuda:")) << e.what();
  }
  // A 0-d tensor on another GPU is not a CPU scalar.
  EXPECT_EQ(caught([&] { (void)(x * ox::scalar_tensor(2.0, {.device = Device::cuda(1)})); }).kind(),
            ErrorKind::Device);
}

TEST_F(DeviceStandIn, AFailedKernelCheckIsRaisedAtTheNextSynchronization) {
  const ox::Tensor x = ox::tensor({1.0, 2.0, 3.0}, {.device = kGpu});
  const ox::Tensor bad = ox::tensor({0, 5}, {.device = kGpu});
  ox::Tensor y;
  ASSERT_NO_THROW(y = ox::index_select(x, 0, bad));  // queued, not checked on the host
  const ox::Error e = caught([&] { ox::synchronize(kGpu); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(e, "[index_select] index 5 is out of bounds for dimension 0 with size 3"))
      << e.what();
  // Reported once; the device stays usable.
  EXPECT_NO_THROW(ox::synchronize(kGpu));
  EXPECT_EQ(ox::index_select(x, 0, ox::tensor({2}, {.device = kGpu})).item<double>(), 3.0);

  // A copy to the host synchronizes too: item(), to_vector(), cpu(), printing.
  const ox::Tensor logits = ox::zeros({2, 3}, {.device = kGpu});
  const ox::Tensor loss =
      ox::nn::functional::cross_entropy(logits, ox::tensor({1, 7}, {.device = kGpu}));
  const ox::Error ce = caught([&] { (void)loss.item<double>(); });
  EXPECT_EQ(ce.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(ce, "[cross_entropy] target 7 at position 1 is out of bounds for 3 classes"))
      << ce.what();

  (void)ox::bernoulli(ox::tensor({0.5, 1.5}, {.device = kGpu}));
  const ox::Error be = caught([&] { (void)ox::ones({1}, {.device = kGpu}).cpu(); });
  EXPECT_EQ(be.kind(), ErrorKind::Value);
  EXPECT_TRUE(contains(be, "[bernoulli] probability at position 1 is outside [0, 1]")) << be.what();
}

TEST_F(DeviceStandIn, TheSameChecksRaiseAtOnceOnTheCpu) {
  const ox::Tensor x = ox::tensor({1.0, 2.0, 3.0}, {.dtype = ox::kF64});
  const ox::Error e = caught([&] { (void)ox::index_select(x, 0, ox::tensor({0, -4})); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(e, "index -4 is out of bounds for dimension 0 with size 3")) << e.what();
  const ox::Error p = caught([] {
    (void)ox::max_pool2d_backward(ox::ones({1, 1, 1, 1}), ox::full({1, 1, 1, 1}, 9, ox::kI64),
                                  {1, 1, 2, 2});
  });
  EXPECT_EQ(p.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(p,
                       "index 9 at flat position 0 of the indices is outside the input plane "
                       "of 4 elements"))
      << p.what();
}

TEST_F(DeviceStandIn, PrintingCopiesToTheHost) {
  const ox::Tensor x = ox::tensor({1.5, -2.0}, {.device = kGpu});
  const int64_t before = oxtest::device_to_host_copies();
  EXPECT_EQ(x.to(ox::kF32).str(), "tensor([ 1.5000, -2.0000], device=cuda:0)");
  EXPECT_EQ(ox::tensor({3, 4}, {.dtype = ox::kI32, .device = kGpu}).str(),
            "tensor([3, 4], device=cuda:0, dtype=i32)");
  EXPECT_EQ(oxtest::device_to_host_copies(), before + 2);
}

// The char GPT's training step (forward, loss, backward through views and embeddings, AdamW)
// on a device reads nothing back to the host, and computes what the CPU computes.
TEST_F(DeviceStandIn, ACharGptStepReadsNothingBack) {
  const auto losses = [](Device device) {
    ox::manual_seed(11);
    oxbench::CharGpt model(oxbench::kGptVocab);
    model->to(device);
    ox::optim::AdamW opt(model->parameters(), {.lr = 1e-3});
    ox::Generator gen(5);
    const ox::Tensor ids = ox::randint(0, oxbench::kGptVocab, {2, 16}, {.device = device}, &gen);
    const ox::Tensor targets =
        ox::randint(0, oxbench::kGptVocab, {2 * 16}, {.device = device}, &gen);
    std::vector<ox::Tensor> out;
    const int64_t before = oxtest::device_to_host_copies();
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      const ox::Tensor logits = model(ids).reshape({-1, oxbench::kGptVocab});
      const ox::Tensor loss = ox::nn::functional::cross_entropy(logits, targets);
      loss.backward();
      opt.step();
      out.push_back(loss.detach());
    }
    EXPECT_EQ(oxtest::device_to_host_copies(), before) << "on " << device;
    std::vector<double> values;
    for (const ox::Tensor& l : out) values.push_back(l.item<double>());
    if (!device.is_cpu()) {
      EXPECT_EQ(oxtest::device_to_host_copies(), before + 2);  // the counter counts
    }
    return values;
  };
  EXPECT_EQ(losses(kGpu), losses(Device::cpu()));
}

// Everything the host would have to wait for: copies to the host and synchronizations.
int64_t host_waits() { return oxtest::device_to_host_copies() + oxtest::synchronizations(); }

// The losses whose inputs have values to check (class targets, probabilities, variances) check
// them on the device: nothing is read back, and a bad value raises at the next synchronizing call.
TEST_F(DeviceStandIn, LossesCheckTheirInputsWithoutReadingThemBack) {
  namespace F = ox::nn::functional;
  const ox::Tensor logp =
      ox::log_softmax(ox::tensor({{1.0, 2.0, 3.0}, {0.5, 0.0, -1.0}}, {.device = kGpu}), 1);
  const ox::Tensor p = ox::tensor({0.25, 0.75}, {.device = kGpu});
  const ox::Tensor y = ox::tensor({0.0, 1.0}, {.device = kGpu});
  int64_t before = host_waits();
  const ox::Tensor nll = F::nll_loss(logp, ox::tensor({2, 0}, {.dtype = ox::kI64, .device = kGpu}));
  const ox::Tensor nll_ignored = F::nll_loss(
      logp, ox::tensor({-100, 1}, {.dtype = ox::kI64, .device = kGpu}), {.ignore_index = -100});
  const ox::Tensor bce = F::binary_cross_entropy(p, y);
  const ox::Tensor gauss = F::gaussian_nll_loss(p, y, ox::tensor({0.5, 2.0}, {.device = kGpu}));
  EXPECT_EQ(host_waits(), before);
  // Against the closed forms: nll = -(logp[0][2] + logp[1][0]) / 2.
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double l1 = std::log(std::exp(0.5) + std::exp(0.0) + std::exp(-1.0));
  EXPECT_NEAR(nll.item<double>(), ((l0 - 3.0) + (l1 - 0.5)) / 2, 1e-6);
  EXPECT_NEAR(nll_ignored.item<double>(), l1 - 0.0, 1e-6);
  EXPECT_NEAR(bce.item<double>(), -(std::log(0.75) + std::log(0.75)) / 2, 1e-6);
  // 0.5 * (log(max(var, eps)) + (x - y)^2 / var), averaged.
  EXPECT_NEAR(gauss.item<double>(),
              0.5 * ((std::log(0.5) + 0.0625 / 0.5) + (std::log(2.0) + 0.0625 / 2.0)) / 2, 1e-6);

  before = host_waits();
  (void)F::nll_loss(logp, ox::tensor({1, 7}, {.dtype = ox::kI64, .device = kGpu}));
  EXPECT_EQ(host_waits(), before);
  const ox::Error e = caught([] { ox::synchronize(kGpu); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(e, "[nll_loss] target 7 is out of range for 3 classes")) << e.what();

  (void)F::binary_cross_entropy(ox::tensor({0.5, 1.5}, {.device = kGpu}), y);
  const ox::Error be = caught([] { ox::synchronize(kGpu); });
  EXPECT_EQ(be.kind(), ErrorKind::Value);
  EXPECT_TRUE(contains(
      be, "[binary_cross_entropy] every input element must be in [0, 1]; element 1 is not"))
      << be.what();

  (void)F::gaussian_nll_loss(p, y, ox::tensor({0.5, -2.0}, {.device = kGpu}));
  const ox::Error ge = caught([] { (void)ox::ones({1}, {.device = kGpu}).cpu(); });
  EXPECT_EQ(ge.kind(), ErrorKind::Value);
  EXPECT_TRUE(contains(ge, "[gaussian_nll_loss] var has negative entries (element 1)"))
      << ge.what();
}

// BatchNorm with momentum None keeps the running statistics the average of every batch seen,
// without reading its count back.
TEST_F(DeviceStandIn, CumulativeBatchNormReadsNothingBack) {
  ox::nn::BatchNorm1d bn(2, {.momentum = std::nullopt});
  bn->to(kGpu);
  const ox::Tensor a = ox::tensor({{1.0, 10.0}, {3.0, 30.0}}, {.device = kGpu});
  const ox::Tensor b = ox::tensor({{5.0, 0.0}, {7.0, 2.0}}, {.device = kGpu});
  const int64_t before = host_waits();
  (void)bn(a);
  (void)bn(b);
  EXPECT_EQ(host_waits(), before);
  // Batch means (2, 20) and (6, 1), averaged; unbiased variances (2, 200) and (2, 2), averaged.
  EXPECT_EQ(bn->running_mean.to_vector<float>(), (std::vector<float>{4.0f, 10.5f}));
  EXPECT_EQ(bn->running_var.to_vector<float>(), (std::vector<float>{2.0f, 101.0f}));
}

// A training step of each recipe's model (forward, loss, backward, clip_grad_norm_, AdamW, a
// one-cycle schedule), in f32 and under bf16 autocast, neither reads a value back nor
// synchronizes, over 10 steps.
TEST_F(DeviceStandIn, TrainingStepsNeitherReadBackNorSynchronize) {
  ox::manual_seed(3);
  ox::Generator gen(9);
  const ox::Tensor images = ox::rand({4, 1, 28, 28}, {.device = kGpu}, &gen);
  const ox::Tensor labels = ox::randint(0, 10, {4}, {.device = kGpu}, &gen);
  const ox::Tensor ids = ox::randint(0, oxbench::kGptVocab, {2, 16}, {.device = kGpu}, &gen);
  const ox::Tensor next = ox::randint(0, oxbench::kGptVocab, {2 * 16}, {.device = kGpu}, &gen);

  ox::nn::Sequential mlp = oxbench::mlp_model();
  ox::nn::Sequential cnn = oxbench::cnn_model();
  // The cnn with BatchNorm (the cumulative form too), as an image model usually has.
  ox::nn::Sequential cnn_bn(ox::nn::Conv2d(1, 8, 3), ox::nn::BatchNorm2d(8), ox::nn::ReLU(),
                            ox::nn::MaxPool2d(2), ox::nn::Conv2d(8, 8, 3),
                            ox::nn::BatchNorm2d(8, {.momentum = std::nullopt}), ox::nn::ReLU(),
                            ox::nn::Flatten(), ox::nn::Linear(8 * 11 * 11, 10));
  oxbench::CharGpt gpt(oxbench::kGptVocab);
  ox::nn::Embedding embed(oxbench::kGptVocab, 16);
  ox::nn::LSTM lstm(16, 32, {.batch_first = true});
  ox::nn::Linear lstm_head(32, oxbench::kGptVocab);
  ox::nn::ModuleList char_lstm;
  char_lstm->push_back(embed);
  char_lstm->push_back(lstm);
  char_lstm->push_back(lstm_head);

  struct Case {
    const char* name;
    std::shared_ptr<ox::nn::Module> model;
    std::function<ox::Tensor()> loss;
  };
  const std::vector<Case> cases = {
      {"mlp", mlp.ptr(), [&] { return ox::nn::functional::cross_entropy(mlp(images), labels); }},
      {"cnn", cnn.ptr(), [&] { return ox::nn::functional::cross_entropy(cnn(images), labels); }},
      {"cnn_bn", cnn_bn.ptr(),
       [&] { return ox::nn::functional::cross_entropy(cnn_bn(images), labels); }},
      {"chargpt", gpt.ptr(),
       [&] {
         return ox::nn::functional::cross_entropy(gpt(ids).reshape({-1, oxbench::kGptVocab}), next);
       }},
      {"char_lstm", char_lstm.ptr(),
       [&] {
         const ox::Tensor h = std::get<0>(lstm(embed(ids)));
         return ox::nn::functional::cross_entropy(lstm_head(h).reshape({-1, oxbench::kGptVocab}),
                                                  next);
       }},
  };
  for (const Case& c : cases) {
    c.model->to(kGpu);
    for (const bool bf16 : {false, true}) {
      ox::optim::AdamW opt(c.model->parameters(), {.lr = 1e-3});
      ox::optim::OneCycleLR schedule(opt, {.max_lr = 1e-3, .total_steps = 10});
      const int64_t before = host_waits();
      ox::Tensor last;
      for (int step = 0; step < 10; ++step) {
        opt.zero_grad();
        ox::Tensor loss;
        {
          const ox::amp::Autocast autocast(ox::DeviceType::CUDA, ox::kBF16, bf16);
          loss = c.loss();
        }
        loss.backward();
        (void)ox::nn::utils::clip_grad_norm_(c.model->parameters(), 1.0);
        opt.step();
        schedule.step();
        last = loss.detach();
      }
      EXPECT_EQ(host_waits(), before) << c.name << (bf16 ? " under bf16 autocast" : " in f32");
      EXPECT_TRUE(std::isfinite(last.item<double>())) << c.name;
    }
  }
}

}  // namespace

namespace {

// The parity runs (ctest's device_stand_in_* entries: the op, autograd, nn, linalg and optim
// suites with every tensor on the stand-in) together call every Backend primitive on a device,
// so the same suites on a GPU (scripts/gpu-check.sh) leave none untested there.
TEST(ParityCoverage, EveryPrimitiveRanOnADevice) {
  const char* dir = std::getenv("OXMERA_PRIMITIVES_SEEN_DIR");
  if (dir == nullptr) GTEST_SKIP() << "OXMERA_PRIMITIVES_SEEN_DIR is not set (ctest sets it)";
  std::set<std::string> seen;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    ++files;
    for (std::string line; std::getline(in, line);) seen.insert(line);
  }
  ASSERT_GT(files, 0) << "no parity run recorded its primitives in " << dir;
  for (std::string_view name : ox::kPrimitiveNames)
    EXPECT_TRUE(seen.count(std::string(name))) << "no parity case calls " << name << " on a device";
  for (const std::string& name : seen)
    EXPECT_NE(std::find(ox::kPrimitiveNames.begin(), ox::kPrimitiveNames.end(), name),
              ox::kPrimitiveNames.end())
        << name << " is not a primitive kPrimitiveNames lists";
}

}  // namespace
