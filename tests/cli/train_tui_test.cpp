// `oxmera train --tui` in a 100x30 pseudo-terminal rendered by libvterm: its panels show, keys
// work, a resize redraws, and q or SIGTERM leave the terminal as it was (modes, main screen,
// cursor) with a checkpoint that loads. Needs Fashion-MNIST (the cnn recipe); skipped without.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/pty.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using oxtest::PtyProcess;

constexpr const char* kData = "/usr/share/datasets/fashion-mnist";
// Generous: the sanitizer build trains many times slower, and the machine may be busy.
constexpr auto kPatience = 120s;

class TrainTui : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fs::path(kData) / "train-labels-idx1-ubyte.gz") &&
        !fs::exists(fs::path(kData) / "train-labels-idx1-ubyte"))
      GTEST_SKIP() << "Fashion-MNIST is not installed at " << kData;
    dir_ = fs::temp_directory_path() /
           ("oxmera_tui_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // A cnn run long enough (two epochs of 938 steps, on one thread: a minute or more) that it is
  // still going whenever the test acts; one thread also leaves the test's reads a core.
  PtyProcess start() {
    oxtest::PtyOptions options;
    options.dir = dir_;
    return PtyProcess({oxtest::kCliPath, "train", "--recipe", "cnn", "--epochs", "2", "--threads",
                       "1", "--tui", "--save", checkpoint()},
                      options);
  }
  std::string checkpoint() const { return (dir_ / "tui.safetensors").string(); }
  // The header's step counter ("step 12/1876") once it is past `step`. (No std::regex: GCC 12
  // warns inside it under the sanitizers.)
  static bool past_step(const PtyProcess& p, int step) {
    const std::vector<std::string> lines = p.lines();
    if (lines.empty()) return false;
    const size_t at = lines[0].find("| step ");
    if (at == std::string::npos) return false;
    return std::atoi(lines[0].c_str() + at + 7) > step;
  }
  // What the terminal must look like after the program is gone.
  static void expect_terminal_given_back(const PtyProcess& p) {
    EXPECT_FALSE(p.alternate_screen());
    EXPECT_TRUE(p.cursor_visible());
    EXPECT_TRUE(oxtest::same_modes(p.termios_at_start(), p.termios_now()))
        << oxtest::describe_mode_difference(p.termios_at_start(), p.termios_now());
  }
  void expect_loadable_checkpoint() const {
    const ox::TensorDict tensors = ox::load_safetensors(checkpoint());
    bool has_weights = false;
    for (const auto& [name, tensor] : tensors)
      has_weights |= name.find("weight") != std::string::npos && tensor.numel() > 0;
    EXPECT_TRUE(has_weights) << "no weights in " << checkpoint();
  }
  fs::path dir_;
};

TEST_F(TrainTui, ShowsItsPanelsAndKeysWorkAndQSavesACheckpoint) {
  PtyProcess p = start();
  ASSERT_TRUE(p.wait_for([](const PtyProcess& q) { return past_step(q, 2); }, kPatience))
      << p.text();
  EXPECT_TRUE(p.alternate_screen());
  EXPECT_FALSE(p.cursor_visible());
  const std::string screen = p.text();
  for (const char* part :
       {"oxmera train  cnn", "epoch 1/2", "Loss", "Metrics", "learning rate", "samples/s", "ETA",
        "Gradient norm (global)", "Largest parameter gradients", "q quit", "p pause"})
    EXPECT_NE(screen.find(part), std::string::npos) << part << "\n" << screen;
  EXPECT_EQ(p.lines().size(), 30u);
  // The panels' frames are whole: the top right corner sits in the last column.
  EXPECT_EQ(p.lines()[2].substr(p.lines()[2].size() - 3), "\u2510") << screen;
  EXPECT_NE(p.lines()[29].find("q quit"), std::string::npos) << screen;  // the footer is last

  p.send("\t");
  EXPECT_TRUE(p.wait_for_text("Learning rate", kPatience)) << p.text();
  EXPECT_TRUE(p.wait_for_text("Accuracy %", kPatience)) << p.text();
  p.send("\t");
  // The model summary: the cnn's layers.
  EXPECT_TRUE(p.wait_for_text("Linear", kPatience)) << p.text();

  p.send("p");
  ASSERT_TRUE(p.wait_for_text("paused", kPatience)) << p.text();
  p.send("p");
  EXPECT_TRUE(p.wait_for_text(" training ", kPatience)) << p.text();

  p.send("q");
  EXPECT_EQ(p.wait_exit(kPatience), 0)
      << p.raw_output().substr(p.raw_output().size() > 2000 ? p.raw_output().size() - 2000 : 0);
  expect_terminal_given_back(p);
  EXPECT_NE(p.text().find("quit at epoch 1"), std::string::npos) << p.text();
  EXPECT_NE(p.text().find("resume with: oxmera train --recipe cnn"), std::string::npos) << p.text();
  expect_loadable_checkpoint();
}

TEST_F(TrainTui, SigtermGivesTheTerminalBackAndSaves) {
  PtyProcess p = start();
  ASSERT_TRUE(p.wait_for([](const PtyProcess& q) { return past_step(q, 2); }, kPatience))
      << p.text();
  ASSERT_EQ(kill(p.pid(), SIGTERM), 0);
  EXPECT_EQ(p.wait_exit(kPatience), 128 + SIGTERM);
  expect_terminal_given_back(p);
  EXPECT_NE(p.text().find("stopped by SIGTERM"), std::string::npos) << p.text();
  expect_loadable_checkpoint();
}

TEST_F(TrainTui, SighupWhilePausedGivesTheTerminalBack) {
  PtyProcess p = start();
  ASSERT_TRUE(p.wait_for([](const PtyProcess& q) { return past_step(q, 1); }, kPatience))
      << p.text();
  p.send("p");
  ASSERT_TRUE(p.wait_for_text("paused", kPatience)) << p.text();
  ASSERT_EQ(kill(p.pid(), SIGHUP), 0);
  EXPECT_EQ(p.wait_exit(kPatience), 128 + SIGHUP);
  expect_terminal_given_back(p);
  expect_loadable_checkpoint();
}

TEST_F(TrainTui, ResizeRedrawsAtTheNewSize) {
  PtyProcess p = start();
  ASSERT_TRUE(p.wait_for([](const PtyProcess& q) { return past_step(q, 1); }, kPatience))
      << p.text();
  p.resize(40, 120);
  // The footer moves to the new last row; the panels stretch to the new width.
  EXPECT_TRUE(p.wait_for(
      [](const PtyProcess& q) { return q.lines()[39].find("q quit") != std::string::npos; },
      kPatience))
      << p.text();
  p.resize(12, 50);
  EXPECT_TRUE(p.wait_for_text("needs 60x16", kPatience)) << p.text();
  EXPECT_TRUE(p.wait_for_text("(this terminal is 50x12)", kPatience)) << p.text();
  p.resize(30, 100);
  // Redrawn whole: also the cells the smaller screen had lost, up to the right edge's corner.
  EXPECT_TRUE(p.wait_for(
      [](const PtyProcess& q) {
        const std::string top = q.lines()[2];
        return q.lines()[29].find("q quit") != std::string::npos && top.size() >= 3 &&
               top.compare(top.size() - 3, 3, "\u2510") == 0;
      },
      kPatience))
      << p.text();
  p.send("q");
  EXPECT_EQ(p.wait_exit(kPatience), 0);
  expect_terminal_given_back(p);
}

}  // namespace
