// `oxmera launch` and `oxmera train --ddp`: the ranks' environment, a failing rank ending the
// others, signals forwarded, a 2-rank Fashion-MNIST run that resumes bitwise exactly, and the
// same run started by mpirun (the MPI backend).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_run.h"
#include "sanitized.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using oxtest::CliResult;
using oxtest::describe;
using oxtest::model_bytes;

class LaunchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("oxmera_launch_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  CliResult launch(const std::vector<std::string>& args, oxtest::CliOptions options = {}) {
    std::vector<std::string> all = {"launch"};
    all.insert(all.end(), args.begin(), args.end());
    options.deadline_s = 120;
    return oxtest::run_oxmera(all, dir_, options);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(LaunchCli, EveryRankGetsItsEnvironment) {
  const CliResult r = launch({"-n", "3", "--", "sh", "-c",
                              "echo \"rank=$RANK/$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE "
                              "at=$MASTER_ADDR:$MASTER_PORT\""});
  ASSERT_EQ(r.code, 0) << describe(r);
  for (const char* rank : {"rank=0/3 local=0/3", "rank=1/3 local=1/3", "rank=2/3 local=2/3"})
    EXPECT_EQ(count(r.out, rank), 1u) << r.out;
  EXPECT_EQ(count(r.out, "at=127.0.0.1:"), 3u) << r.out;
}

TEST_F(LaunchCli, AFailingRankEndsTheOthers) {
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = launch({"-n", "3", "--grace", "1", "--", "sh", "-c",
                              "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 60"});
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_NE(r.err.find("rank 1 exited with code 3"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // A rank that dies by a signal: 128 + the signal.
  const CliResult killed = launch(
      {"-n", "2", "--", "sh", "-c", "if [ \"$RANK\" = 0 ]; then kill -9 $$; fi; exec sleep 60"});
  EXPECT_EQ(killed.code, 128 + SIGKILL) << describe(killed);
  EXPECT_NE(killed.err.find("rank 0 was ended by signal 9"), std::string::npos) << killed.err;
}

TEST_F(LaunchCli, SignalsReachTheRanks) {
  oxtest::CliOptions options;
  bool sent = false;
  options.on_output = [&](const std::string& out, pid_t pid) {
    if (count(out, "started") < 2) return false;
    ::kill(pid, SIGTERM);
    sent = true;
    return true;
  };
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = launch({"-n", "2", "--", "sh", "-c", "echo started; exec sleep 60"}, options);
  EXPECT_TRUE(sent);
  EXPECT_EQ(r.code, 128 + SIGTERM) << describe(r);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(LaunchCli, RefusesBadUse) {
  EXPECT_EQ(launch({"-n", "0", "--", "true"}).code, 2);
  EXPECT_EQ(launch({"-n", "2"}).code, 2);
  EXPECT_EQ(
      launch({"--nnodes", "2", "--node-rank", "2", "--master-port", "29400", "--", "true"}).code,
      2);
  EXPECT_EQ(launch({"--nnodes", "2", "--", "true"}).code, 2);  // no --master-port
  const CliResult missing = launch({"-n", "1", "--", "no-such-program-here"});
  EXPECT_EQ(missing.code, 127) << describe(missing);
}

TEST_F(LaunchCli, DataParallelTrainingResumesBitwiseExactly) {
  // Six ranks each read all of Fashion-MNIST: a minute under the sanitizers, for no code that
  // tests/distributed does not already run there.
  if (oxtest::sanitized())
    GTEST_SKIP() << "a minute under the sanitizers; run in the release suite";
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") &&
      !fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST is not installed";
  const std::string oxmera = oxtest::kCliPath;
  auto train = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"-n",     "2",        "--",        oxmera,    "train",
                                     "--ddp",  "--recipe", "mlp",       "--limit", "512",
                                     "--seed", "7",        "--threads", "1"};
    args.insert(args.end(), more.begin(), more.end());
    return launch(args);
  };
  CliResult r = train({"--epochs", "2", "--save", path("straight.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  // Rank 0 alone prints: one result line, 256 examples a rank an epoch in 4 batches of 64.
  EXPECT_EQ(count(r.out, "test accuracy"), 1u) << r.out;
  EXPECT_NE(r.out.find("4 batches of 64 per epoch"), std::string::npos) << r.out;
  r = train({"--epochs", "1", "--save", path("first.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  r = train({"--epochs", "2", "--resume", path("first.safetensors"), "--save",
             path("resumed.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("resuming from"), std::string::npos) << r.out;
  const auto straight = model_bytes(path("straight.safetensors"));
  const auto first = model_bytes(path("first.safetensors"));
  const auto resumed = model_bytes(path("resumed.safetensors"));
  ASSERT_EQ(straight.size(), 6u);
  for (const auto& [name, bytes] : straight) {
    EXPECT_TRUE(resumed.at(name) == bytes) << name << " differs after resuming";
    EXPECT_FALSE(first.at(name) == bytes) << name << " did not change in epoch 2";
  }
  // Another number of processes would shard the epochs differently: refused, saying how.
  const CliResult alone = oxtest::run_oxmera(
      {"train", "--recipe", "mlp", "--limit", "512", "--seed", "7", "--threads", "1", "--epochs",
       "2", "--resume", path("first.safetensors"), "--save", path("alone.safetensors")},
      dir_, {.deadline_s = 120});
  EXPECT_EQ(alone.code, 2) << describe(alone);
  EXPECT_NE(alone.err.find("was trained by 2 processes (--ddp) and this run has 1"),
            std::string::npos)
      << describe(alone);
  EXPECT_NE(alone.err.find("oxmera launch -n 2"), std::string::npos) << describe(alone);
}

TEST_F(LaunchCli, MpirunTrainsOverTheMpiBackendAsLaunchOverGloo) {
  if (oxtest::sanitized())
    GTEST_SKIP() << "Fashion-MNIST read by every rank: run in the release suite";
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz") &&
      !fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST is not installed";
  if (!ox::distributed::is_backend_available("mpi")) GTEST_SKIP() << "this build has no MPI";
  if (std::system("command -v mpirun > /dev/null") != 0) GTEST_SKIP() << "no mpirun";
  const std::string settings = std::string(oxtest::kCliPath) +
                               " train --ddp --recipe mlp --limit 512 --seed 7 --threads 1 "
                               "--epochs 1 --save ";
  // As root in CI: --allow-run-as-root; two ranks on however many cores: --oversubscribe.
  const std::string log = path("mpirun.log");
  const int status = std::system(("timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 " +
                                  settings + path("mpi.safetensors") + " > " + log + " 2>&1")
                                     .c_str());
  std::stringstream out;
  out << std::ifstream(log).rdbuf();
  ASSERT_EQ(status, 0) << out.str();
  EXPECT_EQ(count(out.str(), "test accuracy"), 1u) << out.str();  // rank 0 alone prints
  const CliResult gloo = launch({"-n", "2", "--", "sh", "-c", settings + path("gloo.safetensors")});
  ASSERT_EQ(gloo.code, 0) << describe(gloo);
  // The same shards and steps; only the two libraries' summation orders may differ.
  const ox::TensorDict mpi_run = ox::load_safetensors(path("mpi.safetensors"));
  const ox::TensorDict gloo_run = ox::load_safetensors(path("gloo.safetensors"));
  int compared = 0;
  for (const auto& [name, t] : gloo_run) {
    if (name.rfind("model.", 0) != 0) continue;
    EXPECT_TRUE(ox::allclose(mpi_run.at(name), t, 1e-4, 1e-5)) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 6);
  EXPECT_EQ(mpi_run.at("extra.train.world_size").item<int64_t>(), 2);
}

}  // namespace
