// Checkpoints: a run resumed from one continues bitwise as the uninterrupted run, with dropout
// and shuffling drawing from the saved generator.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <filesystem>

#include "test_util.h"

namespace {

using namespace ox;
using oxtest::caught;
namespace fs = std::filesystem;

struct TrainingRun {
  nn::Sequential model;
  optim::AdamW opt;
  optim::StepLR sched;
  int64_t step = 0;

  explicit TrainingRun(uint64_t init_seed)
      : model(make_model(init_seed)),
        opt(model->parameters(), {.lr = 1e-2, .weight_decay = 0.1}),
        sched(opt, /*step_size=*/3, /*gamma=*/0.5) {}
  static nn::Sequential make_model(uint64_t seed) {
    manual_seed(seed);
    return nn::Sequential(nn::Linear(4, 16), nn::ReLU(), nn::Dropout(0.3), nn::Linear(16, 2));
  }
  // One epoch over the 32 examples in a shuffled order, batches of 8.
  void epoch(const Tensor& x, const Tensor& y) {
    const Tensor order = randperm(32);
    for (int64_t b = 0; b < 4; ++b) {
      const Tensor idx = order.narrow(0, b * 8, 8);
      opt.zero_grad();
      nn::functional::cross_entropy(model(index_select(x, 0, idx)), index_select(y, 0, idx))
          .backward();
      opt.step();
      ++step;
    }
    sched.step();
  }
};

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("oxmera_ckpt_" + std::to_string(::getpid()) + "_" + name);
}

TEST(Checkpoint, ResumeIsBitwiseTheUninterruptedRun) {
  Generator data(11);
  const Tensor x = randn({32, 4}, {}, &data), y = randint(0, 2, {32}, {}, &data);

  TrainingRun straight(1);
  manual_seed(100);
  for (int e = 0; e < 6; ++e) straight.epoch(x, y);
  const uint64_t straight_offset = default_generator().offset();

  TrainingRun first(1);
  manual_seed(100);
  for (int e = 0; e < 4; ++e) first.epoch(x, y);
  const fs::path path = temp_path("resume.safetensors");
  save_checkpoint(path, {.model = first.model.ptr(),
                         .optimizer = &first.opt,
                         .scheduler = &first.sched,
                         .step = first.step,
                         .epoch = 4,
                         .extra = {{"note", tensor({42.f})}}});
  manual_seed(999);  // whatever happens to the generator meanwhile is undone by the load

  TrainingRun resumed(2);  // other initial weights: all of them come from the checkpoint
  Checkpoint ck{
      .model = resumed.model.ptr(), .optimizer = &resumed.opt, .scheduler = &resumed.sched};
  load_checkpoint(path, ck);
  EXPECT_EQ(ck.step, 16);
  EXPECT_EQ(ck.epoch, 4);
  EXPECT_EQ(ck.extra.at("note").item<float>(), 42.f);
  EXPECT_EQ(resumed.sched.last_epoch(), 4);
  EXPECT_EQ(resumed.opt.param_groups()[0].lr, first.opt.param_groups()[0].lr);
  resumed.step = ck.step;
  for (int64_t e = ck.epoch; e < 6; ++e) resumed.epoch(x, y);

  const TensorDict a = straight.model->state_dict(), b = resumed.model->state_dict();
  for (const auto& [name, t] : a)
    EXPECT_EQ(oxtest::bytes_of(t), oxtest::bytes_of(b.at(name))) << name;
  const TensorDict sa = straight.opt.state_dict(), sb = resumed.opt.state_dict();
  for (const auto& [name, t] : sa)
    EXPECT_EQ(oxtest::bytes_of(t), oxtest::bytes_of(sb.at(name))) << name;
  EXPECT_EQ(default_generator().offset(), straight_offset);
  fs::remove(path);
}

TEST(Checkpoint, TiedWeightsAreStoredOnce) {
  const fs::path path = temp_path("tied.safetensors");
  nn::Linear shared(2, 2);
  nn::Sequential model(shared, nn::Tanh(), shared);
  save_checkpoint(path, {.model = model.ptr()});
  EXPECT_EQ(SafetensorsFile::open(path).keys().size(), 2u + 2u);  // 2 model tensors + rng
  nn::Linear other(2, 2);
  nn::Sequential fresh(other, nn::Tanh(), other);
  Checkpoint ck{.model = fresh.ptr()};
  load_checkpoint(path, ck);
  EXPECT_EQ(other->weight.to_vector<float>(), shared->weight.to_vector<float>());
  fs::remove(path);
}

TEST(Checkpoint, RefusesWhatDoesNotFit) {
  const fs::path path = temp_path("refuse.safetensors");
  nn::Linear small(2, 3);
  save_checkpoint(path, {.model = small.ptr(), .step = 5});

  // A part asked for that the file lacks.
  optim::SGD sgd(small->parameters(), {.lr = 0.1});
  Checkpoint want_opt{.model = small.ptr(), .optimizer = &sgd};
  Error e = caught([&] { load_checkpoint(path, want_opt); });
  EXPECT_EQ(e.kind(), ErrorKind::Format);
  EXPECT_TRUE(oxtest::contains(e, "no optimizer state")) << e.what();

  // Another model's shapes: the model's own error, nothing loaded.
  nn::Linear other(2, 4);
  const std::vector<float> before = other->weight.to_vector<float>();
  Checkpoint wrong{.model = other.ptr()};
  EXPECT_EQ(caught([&] { load_checkpoint(path, wrong); }).kind(), ErrorKind::Value);
  EXPECT_EQ(other->weight.to_vector<float>(), before);

  // All or nothing: the model part fits, the optimizer part does not (another optimizer kind),
  // so the model gets its own values back.
  const fs::path mixed = temp_path("mixed.safetensors");
  nn::Linear saved(2, 3);
  optim::Adam adam(saved->parameters(), {.lr = 0.1});
  save_checkpoint(mixed, {.model = saved.ptr(), .optimizer = &adam});
  nn::Linear target(2, 3);
  optim::SGD sgd_target(target->parameters(), {.lr = 0.1});
  const std::vector<float> target_before = target->weight.to_vector<float>();
  Checkpoint both{.model = target.ptr(), .optimizer = &sgd_target};
  EXPECT_EQ(caught([&] { load_checkpoint(mixed, both); }).kind(), ErrorKind::Value);
  EXPECT_EQ(target->weight.to_vector<float>(), target_before);
  fs::remove(mixed);

  // A plain safetensors file is not a checkpoint.
  const fs::path plain = temp_path("plain.safetensors");
  save_safetensors(plain, {{"w", ones({2})}});
  Checkpoint any{};
  e = caught([&] { load_checkpoint(plain, any); });
  EXPECT_EQ(e.kind(), ErrorKind::Format);
  EXPECT_TRUE(oxtest::contains(e, "not an oxmera checkpoint")) << e.what();
  fs::remove(path);
  fs::remove(plain);
}

}  // namespace
