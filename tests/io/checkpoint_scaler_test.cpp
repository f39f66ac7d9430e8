// Checkpoints with a GradScaler and with master weights: a resumed run continues with the same
// scale, growth tracker and f32 masters; checkpoints without a scaler still load.

#include <gtest/gtest.h>
#include <oxmera/amp.h>
#include <oxmera/oxmera.h>

#include <unistd.h>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "test_util.h"

namespace {

using namespace ox;
using oxtest::caught;
namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() /
         ("oxmera_ckpt_scaler_" + std::to_string(::getpid()) + "_" + name);
}

// A bf16 parameter trained with AdamW through master weights and a scaler (growth every 2 clean
// steps); iteration k poisons its gradient when k is in `poisoned`.
struct ScaledRun {
  Tensor p;
  optim::AdamW opt;
  amp::GradScaler scaler;

  ScaledRun()
      : p(make_param()),
        opt({p}, {.lr = 0.02, .master_weights = true}),
        scaler({.init_scale = 256.0, .growth_interval = 2}) {}
  static Tensor make_param() {
    Tensor t = tensor(std::vector<double>{0.5, -1.25, 2.0, 0.0}, {.dtype = kBF16});
    t.requires_grad_();
    return t;
  }
  void iteration(int k) {
    (void)scaler.scale(scalar_tensor(1.0, {.dtype = kF32}));
    std::vector<double> g(4);
    for (size_t i = 0; i < g.size(); ++i)
      g[i] = scaler.get_scale() * (0.25 * std::sin(double(k) + double(i)));
    if (k % 3 == 0) g[1] = std::numeric_limits<double>::infinity();
    p.mutable_grad() = tensor(g, {.dtype = kBF16});
    scaler.step(opt);
    scaler.update();
  }
};

std::vector<uint16_t> bits(const Tensor& t) {
  const std::vector<float> f = t.to(kF32).to_vector<float>();
  std::vector<uint16_t> out;
  for (float x : f) out.push_back(uint16_t(std::bit_cast<uint32_t>(x) >> 16));
  return out;
}

TEST(CheckpointScaler, ResumeRestoresTheScaleTrackerAndMasters) {
  ScaledRun straight;
  for (int k = 1; k <= 8; ++k) straight.iteration(k);

  ScaledRun first;
  for (int k = 1; k <= 4; ++k) first.iteration(k);
  const double scale_at_save = first.scaler.get_scale();
  const int64_t tracker_at_save = first.scaler.get_growth_tracker();
  ASSERT_EQ(tracker_at_save, 1);  // mid-interval: the tracker matters
  const fs::path path = temp_path("resume.safetensors");
  save_checkpoint(path.string(), {.optimizer = &first.opt, .scaler = &first.scaler, .step = 4});

  ScaledRun second;
  second.p.detach().copy_(first.p);  // the model part, as a model checkpoint would restore it
  Checkpoint ckpt{.optimizer = &second.opt, .scaler = &second.scaler};
  load_checkpoint(path.string(), ckpt);
  EXPECT_EQ(ckpt.step, 4);
  EXPECT_EQ(second.scaler.get_scale(), scale_at_save);
  EXPECT_EQ(second.scaler.get_growth_tracker(), tracker_at_save);
  const Tensor* master = second.opt.state(0).buffers.find("master");
  ASSERT_NE(master, nullptr);
  EXPECT_EQ(master->dtype(), kF32);
  EXPECT_EQ(second.opt.state(0).buffers.at("exp_avg").dtype(), kF32);

  for (int k = 5; k <= 8; ++k) second.iteration(k);
  EXPECT_EQ(second.scaler.get_scale(), straight.scaler.get_scale());
  EXPECT_EQ(second.scaler.get_growth_tracker(), straight.scaler.get_growth_tracker());
  EXPECT_EQ(bits(second.p), bits(straight.p));
  const std::vector<float> m1 = straight.opt.state(0).buffers.at("master").to_vector<float>();
  const std::vector<float> m2 = second.opt.state(0).buffers.at("master").to_vector<float>();
  EXPECT_EQ(std::memcmp(m1.data(), m2.data(), m1.size() * sizeof(float)), 0);
  fs::remove(path);
}

TEST(CheckpointScaler, MissingOrOptionalScalerPart) {
  ScaledRun run;
  run.iteration(1);
  const fs::path without = temp_path("without.safetensors");
  save_checkpoint(without.string(), {.optimizer = &run.opt});

  // Without a scaler pointer an older checkpoint loads as before.
  ScaledRun other;
  Checkpoint plain{.optimizer = &other.opt};
  load_checkpoint(without.string(), plain);

  // Asked for and missing: a Format error, and nothing changed.
  const double scale_before = other.scaler.get_scale();
  Checkpoint asking{.optimizer = &other.opt, .scaler = &other.scaler};
  EXPECT_EQ(oxtest::kind_of([&] { load_checkpoint(without.string(), asking); }), ErrorKind::Format);
  EXPECT_EQ(other.scaler.get_scale(), scale_before);

  // A disabled scaler saves and loads nothing.
  amp::GradScaler disabled({.enabled = false});
  const fs::path with_disabled = temp_path("disabled.safetensors");
  save_checkpoint(with_disabled.string(), {.optimizer = &run.opt, .scaler = &disabled});
  Checkpoint again{.optimizer = &other.opt, .scaler = &disabled};
  load_checkpoint(with_disabled.string(), again);
  EXPECT_EQ(disabled.get_scale(), 1.0);
  fs::remove(without);
  fs::remove(with_disabled);
}

}  // namespace
