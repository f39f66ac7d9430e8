// `oxmera train` as a user runs it: the built binary is started with fork/exec and its exit
// code, output, checkpoint and logs are checked. The image recipes need Fashion-MNIST; those
// tests are skipped when it is not installed.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "sanitized.h"

namespace {

namespace fs = std::filesystem;

using oxtest::CliResult;
using oxtest::describe;
using oxtest::model_bytes;

// Runs `oxmera ARGS...` in `dir`; `on_output`, when given, sees stdout as it grows and the
// process id (to signal it) until it returns true.
CliResult run_cli(const std::vector<std::string>& args, const fs::path& dir,
                  const std::function<bool(const std::string&, pid_t)>& on_output = {}) {
  return oxtest::run_oxmera(args, dir, {.on_output = on_output});
}

bool has_fashion_mnist() {
  return fs::exists(fs::path(OXMERA_TEST_FASHION_MNIST) / "train-images-idx3-ubyte.gz") ||
         fs::exists(fs::path(OXMERA_TEST_FASHION_MNIST) / "train-images-idx3-ubyte");
}

#define SKIP_WITHOUT_FASHION_MNIST()                                                  \
  do {                                                                                \
    if (!has_fashion_mnist())                                                         \
      GTEST_SKIP() << "Fashion-MNIST is not installed at " OXMERA_TEST_FASHION_MNIST; \
  } while (0)

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("oxmera_cli_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  CliResult train(std::vector<std::string> args,
                  const std::function<bool(const std::string&, pid_t)>& on_output = {}) {
    args.insert(args.begin(), "train");
    // One thread unless a test asks for more: OpenMP threads spin while they wait, which on a
    // busy machine (ctest -j, CI) makes runs several times slower.
    if (std::find(args.begin(), args.end(), "--threads") == args.end())
      args.insert(args.end(), {"--threads", "1"});
    // 500 test examples unless a test asks for more: evaluating all 10,000 of Fashion-MNIST's
    // took most of each small run's time (20 s of 28 under the sanitizers).
    if (std::find(args.begin(), args.end(), "--eval-limit") == args.end())
      args.insert(args.end(), {"--eval-limit", "500"});
    return run_cli(args, dir_, on_output);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // fox.txt, a text of its own for the text recipes, so the tests do not depend on the host's
  // license files.
  void write_fox_text() const {
    std::string text;
    for (int i = 0; i < 40; ++i) text += "the quick brown fox jumps over the lazy dog. ";
    std::ofstream(path("fox.txt")) << text;
  }
  fs::path dir_;
};

// --- bad input: exit 2 and the typed error ------------------------------------------------

TEST_F(TrainCli, MissingDataDirIsAnIoError) {
  const CliResult r = train({"--data", path("no-such-dir"), "--limit", "64"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("Io error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no-such-dir"), std::string::npos) << r.err;
}

TEST_F(TrainCli, MissingTextFileIsAnIoError) {
  const CliResult r = train({"--recipe", "chargpt", "--text", path("no-such.txt")});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("Io error"), std::string::npos) << r.err;
}

TEST_F(TrainCli, CudaDeviceWithoutAGpuIsADeviceErrorWithTheReason) {
  if (ox::cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  const CliResult r = train({"--device", "cuda", "--limit", "64"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("Device error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(ox::cuda::unavailable_reason()), std::string::npos) << r.err;
}

TEST_F(TrainCli, MalformedDeviceIsRejected) {
  for (const char* device : {"gpu", "cuda:", "cuda:-1", "cpu:3x"}) {
    const CliResult r = train({"--device", device, "--limit", "64"});
    EXPECT_EQ(r.code, 2) << device << ": " << describe(r);
  }
}

TEST_F(TrainCli, UnknownRecipeAndBadFlagsAreRejected) {
  CliResult r = train({"--recipe", "resnet"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("resnet"), std::string::npos) << r.err;
  r = train({"--optimizer", "lbfgs"});
  EXPECT_EQ(r.code, 2) << describe(r);
  r = train({"--batch-size", "0"});
  EXPECT_EQ(r.code, 2) << describe(r);
  r = train({"--no-such-flag"});
  EXPECT_EQ(r.code, 2) << describe(r);
}

TEST_F(TrainCli, TuiWithoutATerminalIsRefused) {
  // Standard output is a pipe here; the dashboard itself is tested in a PTY (train_tui_test.cpp).
  const CliResult r = train({"--tui"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("--tui needs a terminal"), std::string::npos) << r.err;
}

TEST_F(TrainCli, ResumeWithAnotherBatchSizeIsAValueError) {
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult first =
      train({"--recipe", "mlp", "--limit", "128", "--save", path("a.safetensors")});
  ASSERT_EQ(first.code, 0) << describe(first);
  const CliResult r = train({"--recipe", "mlp", "--limit", "128", "--epochs", "2", "--batch-size",
                             "32", "--resume", path("a.safetensors")});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("Value error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--batch-size 64"), std::string::npos) << r.err;
}

// --- training ----------------------------------------------------------------------------

// Measured: 70.21% after 2 epochs of the first 2000 examples (seed 0); chance is 10%.
TEST_F(TrainCli, CnnReachesSeventyPercentOnFashionMnist) {
  if (oxtest::sanitized()) GTEST_SKIP() << "minutes under the sanitizers";
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult r = train({"--recipe", "cnn", "--limit", "2000", "--epochs", "2", "--eval-limit",
                             "0", "--save", path("cnn.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, std::regex(R"(test accuracy ([0-9.]+)%)"))) << r.out;
  EXPECT_GE(std::stod(match[1]), 65.0) << r.out;
  EXPECT_NE(r.out.find("checkpoint saved to " + path("cnn.safetensors")), std::string::npos);
  EXPECT_FALSE(model_bytes(path("cnn.safetensors")).empty());
}

TEST_F(TrainCli, ResumeContinuesBitwiseExactly) {
  SKIP_WITHOUT_FASHION_MNIST();
  const std::vector<std::string> common = {"--recipe", "mlp", "--limit", "512", "--seed", "7"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = common;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  // Two threads straight through, one when resumed: results depend on neither.
  CliResult r =
      train(with({"--epochs", "2", "--threads", "2", "--save", path("straight.safetensors")}));
  ASSERT_EQ(r.code, 0) << describe(r);
  r = train(with({"--epochs", "1", "--save", path("first.safetensors")}));
  ASSERT_EQ(r.code, 0) << describe(r);
  const auto after_one = model_bytes(path("first.safetensors"));
  r = train(with({"--epochs", "2", "--resume", path("first.safetensors"), "--save",
                  path("resumed.safetensors")}));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("resuming from"), std::string::npos) << r.out;

  const auto straight = model_bytes(path("straight.safetensors"));
  const auto resumed = model_bytes(path("resumed.safetensors"));
  ASSERT_EQ(straight.size(), 6u);  // three Linear layers' weights and biases
  ASSERT_EQ(resumed.size(), straight.size());
  for (const auto& [name, bytes] : straight) {
    ASSERT_TRUE(resumed.count(name)) << name;
    EXPECT_TRUE(resumed.at(name) == bytes) << name << " differs after resuming";
    // The second epoch did train: otherwise equality would say nothing.
    EXPECT_FALSE(after_one.at(name) == bytes) << name << " did not change in epoch 2";
  }
}

// A run stopped by SIGINT in the middle of an epoch (wherever the signal lands) and resumed
// ends bitwise where the uninterrupted run does, learning-rate schedule included.
TEST_F(TrainCli, ResumeAfterSigintContinuesBitwiseExactly) {
  SKIP_WITHOUT_FASHION_MNIST();
  const std::vector<std::string> flags = {"--recipe", "mlp", "--limit",     "1280",
                                          "--epochs", "2",   "--scheduler", "onecycle",
                                          "--seed",   "3",   "--lr",        "0.002"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = flags;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  CliResult r = train(with({"--save", path("straight.safetensors")}));
  ASSERT_EQ(r.code, 0) << describe(r);
  r = train(with({"--save", path("stopped.safetensors")}), [](const std::string& out, pid_t pid) {
    if (out.find("batches (") == std::string::npos) return false;
    kill(pid, SIGINT);
    return true;
  });
  ASSERT_EQ(r.code, 130) << describe(r);
  r = train(with({"--save", path("stopped.safetensors"), "--resume", path("stopped.safetensors")}));
  ASSERT_EQ(r.code, 0) << describe(r);
  const auto straight = model_bytes(path("straight.safetensors"));
  const auto resumed = model_bytes(path("stopped.safetensors"));
  ASSERT_EQ(straight.size(), 6u);
  for (const auto& [name, bytes] : straight) {
    ASSERT_TRUE(resumed.count(name)) << name;
    EXPECT_TRUE(resumed.at(name) == bytes) << name << " differs after resuming";
  }
}

// The logged rates follow CosineAnnealingLR's closed form over all steps of the run:
// lr(t) = lr0 (1 + cos(pi t / T)) / 2 for the step that used it, t = step - 1.
TEST_F(TrainCli, CosineScheduleSpansTheWholeRun) {
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult r =
      train({"--recipe", "mlp", "--limit", "256", "--epochs", "2", "--scheduler", "cosine", "--lr",
             "0.01", "--log", path("run.jsonl"), "--save", path("m.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::vector<ox::io::LogRecord> records = ox::io::read_jsonl(path("run.jsonl"));
  std::vector<double> rates;
  for (const ox::io::LogRecord& record : records)
    if (record.type == "step") rates.push_back(record.scalars.at("lr"));
  ASSERT_EQ(rates.size(), 8u);
  const double pi = std::acos(-1.0);
  for (size_t i = 0; i < 8; ++i) {
    const double want = 0.01 * (1 + std::cos(pi * double(i) / 8.0)) / 2;
    EXPECT_NEAR(rates[i], want, 1e-12) << "step " << i + 1;
  }
}

// Starts a long run, signals it after its first progress line, and checks the exit code and
// the checkpoint it leaves.
void expect_stops_cleanly(TrainCli& test, const CliResult& r, int code,
                          const std::string& checkpoint) {
  EXPECT_EQ(r.code, code) << describe(r);
  EXPECT_NE(r.out.find("resume with: oxmera train"), std::string::npos) << r.out;
  // The checkpoint loads into the recipe's model and optimizer.
  ox::nn::Sequential model(ox::nn::Flatten(), ox::nn::Linear(784, 512), ox::nn::ReLU(),
                           ox::nn::Linear(512, 256), ox::nn::ReLU(), ox::nn::Linear(256, 10));
  ox::optim::Adam adam(model->parameters());
  ox::Generator rng;
  ox::Checkpoint loaded{.model = model.ptr(), .optimizer = &adam, .rng = &rng};
  ASSERT_NO_THROW(ox::load_checkpoint(checkpoint, loaded));
  EXPECT_GT(loaded.step, 0);
  EXPECT_LT(loaded.step, 1000 * 100);
  (void)test;
}

TEST_F(TrainCli, SigintSavesACheckpointAndExits130) {
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult r = train(
      {"--recipe", "mlp", "--limit", "6400", "--epochs", "1000", "--save", path("s.safetensors")},
      [](const std::string& out, pid_t pid) {
        if (out.find("batches (") == std::string::npos) return false;
        kill(pid, SIGINT);
        return true;
      });
  expect_stops_cleanly(*this, r, 130, path("s.safetensors"));
  EXPECT_NE(r.out.find("stopped by SIGINT"), std::string::npos) << r.out;
}

TEST_F(TrainCli, SigtermSavesACheckpointAndExits143) {
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult r = train(
      {"--recipe", "mlp", "--limit", "6400", "--epochs", "1000", "--save", path("t.safetensors")},
      [](const std::string& out, pid_t pid) {
        if (out.find("batches (") == std::string::npos) return false;
        kill(pid, SIGTERM);
        return true;
      });
  expect_stops_cleanly(*this, r, 143, path("t.safetensors"));
}

TEST_F(TrainCli, JsonlLogHasStepRecordsAndAnEvalRecordEachEpoch) {
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult r =
      train({"--recipe", "mlp", "--limit", "256", "--epochs", "2", "--log", path("run.jsonl"),
             "--tensorboard", path("tb"), "--save", path("m.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::vector<ox::io::LogRecord> records = ox::io::read_jsonl(path("run.jsonl"));
  // 256 examples in batches of 64: 4 steps per epoch, each epoch followed by an evaluation.
  ASSERT_EQ(records.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    const int64_t epoch = int64_t(i) / 5, in_epoch = int64_t(i) % 5;
    EXPECT_EQ(records[i].epoch, epoch);
    if (in_epoch == 4) {
      EXPECT_EQ(records[i].type, "eval");
      EXPECT_EQ(records[i].step, 4 * (epoch + 1));
      const double accuracy = records[i].scalars.at("accuracy");
      EXPECT_GE(accuracy, 0.0);
      EXPECT_LE(accuracy, 1.0);
      continue;
    }
    EXPECT_EQ(records[i].type, "step");
    EXPECT_EQ(records[i].step, 4 * epoch + in_epoch + 1);
    EXPECT_TRUE(records[i].scalars.count("grad_norm"));
    EXPECT_GT(records[i].scalars.at("grad_norm"), 0.0);
    EXPECT_TRUE(std::isfinite(records[i].scalars.at("loss")));
    EXPECT_EQ(records[i].scalars.at("lr"), 1e-3);
  }
  // The first epoch's evaluation is printed; the last one is the run's result line.
  EXPECT_NE(r.out.find("epoch 1/2 evaluation on t10k: loss"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test accuracy"), std::string::npos) << r.out;
  // The fixture's --eval-limit 500: the first 500 test examples, and the line says so.
  EXPECT_NE(r.out.find("on t10k, 500 examples"), std::string::npos) << r.out;
  bool has_events = false;
  for (const auto& entry : fs::directory_iterator(path("tb")))
    has_events |= entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0 &&
                  entry.file_size() > 0;
  EXPECT_TRUE(has_events);
}

TEST_F(TrainCli, ChargptPrintsAReproducibleSample) {
  if (oxtest::sanitized()) GTEST_SKIP() << "slow under the sanitizers";
  write_fox_text();
  const std::vector<std::string> args = {"--recipe", "chargpt", "--text",       path("fox.txt"),
                                         "--limit",  "128",     "--batch-size", "32"};
  std::vector<std::string> first = args, second = args;
  first.insert(first.end(), {"--save", path("a.safetensors")});
  second.insert(second.end(), {"--save", path("b.safetensors")});
  const CliResult a = train(first), b = train(second);
  ASSERT_EQ(a.code, 0) << describe(a);
  ASSERT_EQ(b.code, 0) << describe(b);
  const auto sample_of = [](const std::string& out) {
    const size_t at = out.find("sample:\n");
    const size_t end = out.find("\ncheckpoint saved");
    if (at == std::string::npos || end == std::string::npos || end < at + 8) return std::string();
    return out.substr(at + 8, end - at - 8);
  };
  const std::string sample = sample_of(a.out);
  EXPECT_EQ(sample.size(), 201u) << a.out;  // the first character and 200 drawn, all ASCII here
  EXPECT_EQ(sample.find_first_not_of("abcdefghijklmnopqrstuvwxyz. "), std::string::npos);
  EXPECT_EQ(sample, sample_of(b.out));
}

TEST_F(TrainCli, CharLstmLossDecreasesAndResumes) {
  if (oxtest::sanitized()) GTEST_SKIP() << "slow under the sanitizers";
  write_fox_text();
  const CliResult a =
      train({"--recipe", "char_lstm", "--text", path("fox.txt"), "--limit", "128", "--batch-size",
             "32", "--epochs", "2", "--save", path("lstm.safetensors")});
  ASSERT_EQ(a.code, 0) << describe(a);
  // The epoch-end lines carry the mean training loss of the epoch.
  const auto epoch_loss = [](const std::string& out, const std::string& epoch) {
    const size_t at = out.find("epoch " + epoch + " done:");
    if (at == std::string::npos) return -1.0;
    const size_t loss = out.find("loss ", at);
    return loss == std::string::npos ? -1.0 : std::stod(out.substr(loss + 5));
  };
  const double first = epoch_loss(a.out, "1/2"), second = epoch_loss(a.out, "2/2");
  ASSERT_GT(first, 0) << a.out;
  ASSERT_GT(second, 0) << a.out;
  EXPECT_LT(second, first) << a.out;
  EXPECT_NE(a.out.find("held-out loss"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("sample:"), std::string::npos) << a.out;
  // The checkpoint carries the vocabulary and resumes into a third epoch.
  const CliResult b = train({"--resume", path("lstm.safetensors"), "--epochs", "3"});
  ASSERT_EQ(b.code, 0) << describe(b);
  EXPECT_NE(b.out.find("resuming from"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("epoch 3/3 done"), std::string::npos) << b.out;
}

}  // namespace

// --- precision ------------------------------------------------------------------------------

// The mean loss of the last `count` steps a JSON-lines log holds.
double mean_of_last_losses(const std::string& log, size_t count) {
  std::vector<double> losses;
  for (const ox::io::LogRecord& r : ox::io::read_jsonl(log))
    if (r.type == "step") losses.push_back(r.scalars.at("loss"));
  EXPECT_GE(losses.size(), count);
  double sum = 0;
  for (size_t i = losses.size() - std::min(count, losses.size()); i < losses.size(); ++i)
    sum += losses[i];
  return sum / double(std::min(count, losses.size()));
}

// A text of 12,000 characters with some structure to learn (words drawn by a fixed LCG), so a
// few hundred steps leave the loss well above zero, where a 2 % comparison means something.
void write_word_text(const std::string& file) {
  const char* words[] = {"the", "quick", "brown", "fox",   "jumps", "over", "lazy",
                         "dog", "and",   "runs",  "far",   "away",  "from", "its",
                         "den", "at",    "dawn",  "while", "birds", "sing"};
  std::string text;
  uint32_t state = 12345;
  while (text.size() < 12000) {
    state = state * 1664525u + 1013904223u;
    text += words[(state >> 16) % 20];
    text += (state >> 8) % 9 == 0 ? ". " : " ";
  }
  std::ofstream(file) << text;
}

// 300 steps of the char GPT (9,600 windows, batch 32, the same seed): amp-bf16 ends within 2 %
// of the f32 run's loss (the mean of the last 50 steps' losses, which evens out batch noise).
TEST_F(TrainCli, ChargptInAmpBf16TracksF32) {
  if (oxtest::sanitized()) GTEST_SKIP() << "minutes under the sanitizers";
  write_word_text(path("words.txt"));
  double loss[2] = {};
  const char* precisions[] = {"f32", "amp-bf16"};
  for (int i = 0; i < 2; ++i) {
    const std::string log = path(std::string(precisions[i]) + ".jsonl");
    const CliResult r =
        train({"--recipe", "chargpt", "--text", path("words.txt"), "--limit", "9600",
               "--batch-size", "32", "--lr", "1e-3", "--seed", "4", "--precision", precisions[i],
               "--log", log, "--save", path(std::string(precisions[i]) + ".safetensors")});
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_NE(r.out.find(std::string("precision ") + precisions[i]), std::string::npos) << r.out;
    loss[i] = mean_of_last_losses(log, 50);
  }
  EXPECT_LT(loss[0], 2.5) << "the f32 run did not learn";
  EXPECT_NEAR(loss[1], loss[0], 0.02 * loss[0]) << "f32 " << loss[0] << ", amp-bf16 " << loss[1];
}

// The issue's bar for mixed precision on images: the CNN in amp-bf16 reaches 88 % test accuracy
// after one epoch of Fashion-MNIST (the schedule `make run` uses). Bound by its result, not by
// time: under a minute on an idle machine, it ran at 218 samples/s (~5 min) beside other work,
// so the deadline only catches a hang.
TEST_F(TrainCli, CnnInAmpBf16ReachesEightyEightPercentInOneEpoch) {
  if (oxtest::sanitized()) GTEST_SKIP() << "minutes under the sanitizers";
  SKIP_WITHOUT_FASHION_MNIST();
  const CliResult r = oxtest::run_oxmera(
      {"train", "--recipe", "cnn", "--precision", "amp-bf16", "--scheduler", "onecycle", "--lr",
       "4e-3", "--threads", "2", "--save", path("cnn.safetensors")},
      dir_, {.deadline_s = 1500});
  ASSERT_EQ(r.code, 0) << describe(r);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, std::regex(R"(test accuracy ([0-9.]+)%)"))) << r.out;
  EXPECT_GE(std::stod(match[1]), 88.0) << r.out;
  // amp keeps the weights in f32.
  for (const auto& [name, tensor] : ox::load_safetensors(path("cnn.safetensors")))
    if (name.rfind("model.", 0) == 0) {
      EXPECT_EQ(tensor.dtype(), ox::kF32) << name;
    }
}

// Every precision trains and resumes bitwise: the 16-bit weights, the f32 master weights and
// the gradient scaler's state are all in the checkpoint.
TEST_F(TrainCli, EveryPrecisionResumesBitwiseExactly) {
  SKIP_WITHOUT_FASHION_MNIST();
  // Sixteen runs took three and a half minutes under the sanitizers: there, the two that take
  // every 16-bit path (16-bit weights with master weights and a GradScaler; autocast).
  const std::vector<std::string> precisions =
      oxtest::sanitized() ? std::vector<std::string>{"f16", "amp-bf16"}
                          : std::vector<std::string>{"bf16", "f16", "amp-bf16", "amp-f16"};
  for (const std::string& precision : precisions) {
    const std::vector<std::string> common = {"--recipe", "mlp", "--limit",     "256",
                                             "--seed",   "7",   "--precision", precision};
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> args = common;
      args.insert(args.end(), more.begin(), more.end());
      return args;
    };
    CliResult r = train(with({"--epochs", "2", "--save", path("straight.safetensors")}));
    ASSERT_EQ(r.code, 0) << precision << ": " << describe(r);
    r = train(with({"--epochs", "1", "--save", path("first.safetensors")}));
    ASSERT_EQ(r.code, 0) << precision << ": " << describe(r);
    // Resuming takes the precision from the checkpoint when the flag is left out.
    std::vector<std::string> resume = {"train",
                                       "--recipe",
                                       "mlp",
                                       "--limit",
                                       "256",
                                       "--seed",
                                       "7",
                                       "--epochs",
                                       "2",
                                       "--threads",
                                       "1",
                                       "--eval-limit",
                                       "500",
                                       "--resume",
                                       path("first.safetensors"),
                                       "--save",
                                       path("resumed.safetensors")};
    r = run_cli(resume, dir_);
    ASSERT_EQ(r.code, 0) << precision << ": " << describe(r);
    EXPECT_NE(r.out.find("--precision " + precision), std::string::npos) << r.out;
    const auto straight = model_bytes(path("straight.safetensors"));
    const auto resumed = model_bytes(path("resumed.safetensors"));
    ASSERT_EQ(straight.size(), 6u) << precision;
    for (const auto& [name, bytes] : straight) {
      ASSERT_TRUE(resumed.count(name)) << name;
      EXPECT_TRUE(resumed.at(name) == bytes) << precision << ": " << name << " differs";
    }
    const ox::TensorDict all = ox::load_safetensors(path("resumed.safetensors"));
    const ox::DType weights = precision == "bf16"  ? ox::kBF16
                              : precision == "f16" ? ox::kF16
                                                   : ox::kF32;
    for (const auto& [name, tensor] : all)
      if (name.rfind("model.", 0) == 0) {
        EXPECT_EQ(tensor.dtype(), weights) << precision << name;
      }
    // A conflicting --precision on resume is refused by name.
    r = train({"--recipe", "mlp", "--limit", "256", "--seed", "7", "--epochs", "2", "--precision",
               precision == "f16" ? "bf16" : "f16", "--resume", path("first.safetensors"), "--save",
               path("other.safetensors")});
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("--precision"), std::string::npos) << r.err;
  }
}

TEST_F(TrainCli, UnknownPrecisionIsRefused) {
  const CliResult r = train({"--recipe", "mlp", "--precision", "f8"});
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_NE(r.err.find("--precision"), std::string::npos) << r.err;
}
