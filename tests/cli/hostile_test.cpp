// `oxmera` on careless and hostile input, run as a user runs it: every case ends with a
// message and the documented exit code (2 bad input, 1 runtime failure), never a signal, a
// hang, a silently changed value or a lost file. Data sets are tiny IDX files written here, so
// no test depends on Fashion-MNIST or takes more than a few seconds. Every run has a deadline:
// a command that blocks (on a FIFO) is killed and the test fails instead of hanging.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_run.h"
#include "data/data_test_util.h"
#include "sanitized.h"

namespace {

using oxtest::gzip;

namespace fs = std::filesystem;

using oxtest::CliOptions;
using oxtest::CliResult;
using oxtest::describe;
using oxtest::run_oxmera;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string idx_u8(const std::vector<uint32_t>& dims, const std::string& payload) {
  return oxtest::idx_header(8, dims) + payload;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Tiny MNIST-layout data: `train` and `test` images of side x side pixels (a pattern that
// depends on `salt`), labels i % classes.
struct ImageData {
  int train = 32, test = 10, side = 28, classes = 10, salt = 0;
};

std::string image_bytes(int count, int side, int salt) {
  std::string pixels;
  for (int i = 0; i < count * side * side; ++i) pixels += char((i * 37 + salt * 11) % 251);
  return pixels;
}

std::string label_bytes(int count, int classes) {
  std::string labels;
  for (int i = 0; i < count; ++i) labels += char(i % classes);
  return labels;
}

void write_image_data(const fs::path& dir, const ImageData& d) {
  fs::create_directories(dir);
  const auto side = uint32_t(d.side);
  write_file(dir / "train-images-idx3-ubyte",
             idx_u8({uint32_t(d.train), side, side}, image_bytes(d.train, d.side, d.salt)));
  write_file(dir / "train-labels-idx1-ubyte",
             idx_u8({uint32_t(d.train)}, label_bytes(d.train, d.classes)));
  write_file(dir / "t10k-images-idx3-ubyte",
             idx_u8({uint32_t(d.test), side, side}, image_bytes(d.test, d.side, d.salt + 1)));
  write_file(dir / "t10k-labels-idx1-ubyte",
             idx_u8({uint32_t(d.test)}, label_bytes(d.test, d.classes)));
}

// A text of `repeats` copies of `line` for chargpt.
void write_text(const fs::path& path, const std::string& line, int repeats) {
  std::string text;
  for (int i = 0; i < repeats; ++i) text += line;
  write_file(path, text);
}

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("oxmera_hostile_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // The tiny data set in "data/" and a tiny mlp run's flags on it.
  std::string data() {
    if (!fs::exists(dir_ / "data")) write_image_data(dir_ / "data", {});
    return path("data");
  }
  CliResult oxmera(std::vector<std::string> args, int deadline_s = 300) {
    return run_oxmera(args, dir_, {.deadline_s = deadline_s});
  }
  // `oxmera train --threads 1 [--recipe mlp --data <tiny>] ARGS...`.
  CliResult train(std::vector<std::string> args, int deadline_s = 300) {
    std::vector<std::string> all = {"train"};
    const auto given = [&](const char* flag) {
      return std::find(args.begin(), args.end(), flag) != args.end();
    };
    // One thread unless a test asks for more: OpenMP threads spin while they wait.
    if (!given("--threads")) all.insert(all.end(), {"--threads", "1"});
    // A resumed run takes its recipe and data from the checkpoint unless a test says otherwise.
    if (!given("--recipe") && !given("--resume")) all.insert(all.end(), {"--recipe", "mlp"});
    if (!given("--recipe") && !given("--resume") && !given("--data"))
      all.insert(all.end(), {"--data", data()});
    all.insert(all.end(), args.begin(), args.end());
    return run_oxmera(all, dir_, {.deadline_s = deadline_s});
  }
  std::string fifo(const std::string& name) {
    const std::string p = path(name);
    EXPECT_EQ(mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
    return p;
  }
  fs::path dir_;
};

// Bad input: exit 2 with the error on stderr, no training started, no signal.
#define EXPECT_REFUSED(r, ...)                                                                 \
  do {                                                                                         \
    const CliResult& result_ = (r);                                                            \
    EXPECT_EQ(result_.code, 2) << describe(result_);                                           \
    EXPECT_FALSE(has(result_.out, "batches (")) << describe(result_);                          \
    for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__})                     \
      EXPECT_TRUE(has(result_.err, part_)) << "want '" << part_ << "'\n" << describe(result_); \
  } while (0)

// --- exceptions that are not ox::Error: a message and an exit code, never an abort ----------

TEST_F(Hostile, NamesTooLongAreIoErrors) {
  const std::string long_name = path(std::string(5000, 'n'));
  EXPECT_REFUSED(train({"--data", long_name}), "Io error", "name too long");
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", long_name}), "Io error", "name too long");
  EXPECT_REFUSED(train({"--resume", long_name}), "name too long");
  EXPECT_REFUSED(train({"--save", long_name}), "--save", "name too long");
  EXPECT_REFUSED(oxmera({"dashboard", long_name}), "name too long");
}

TEST_F(Hostile, SymbolicLinkLoopsAreIoErrors) {
  fs::create_symlink("loop", path("loop"));
  EXPECT_REFUSED(train({"--data", path("loop")}), "Io error", "loop of symbolic links");
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", path("loop")}), "loop of symbolic links");
  EXPECT_REFUSED(train({"--resume", path("loop")}), "loop of symbolic links");
  EXPECT_REFUSED(train({"--log", path("loop")}), "--log", "loop of symbolic links");
  EXPECT_REFUSED(oxmera({"dashboard", path("loop")}), "loop of symbolic links");
}

TEST_F(Hostile, DashboardOfAFolderIsRefused) {
  EXPECT_REFUSED(oxmera({"dashboard", dir_.string()}), "is a folder, not a regular file");
  EXPECT_REFUSED(oxmera({"dashboard", "--text", dir_.string()}), "is a folder");
}

TEST_F(Hostile, DevicesAsDataAreRefusedNotRead) {
  // /dev/zero as the images would be read until memory runs out.
  write_image_data(dir_ / "zero", {});
  fs::remove(dir_ / "zero" / "train-images-idx3-ubyte");
  fs::create_symlink("/dev/zero", dir_ / "zero" / "train-images-idx3-ubyte");
  EXPECT_REFUSED(train({"--data", path("zero")}), "train-images-idx3-ubyte",
                 "is a character device, not a regular file");
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", "/dev/zero"}), "character device");
  EXPECT_REFUSED(train({"--resume", "/dev/zero"}), "character device");
  EXPECT_REFUSED(oxmera({"dashboard", "/dev/zero"}), "character device");
  EXPECT_REFUSED(train({"--data", "/dev/null"}), "not a folder");
}

// 2 GiB of zeros in a gzip file of about 2 MiB (32 members), under a 1 GiB address-space limit:
// an OutOfMemory error and exit 1 (the data is honest; this machine cannot hold it), not SIGABRT.
TEST_F(Hostile, GzipBombUnderAMemoryLimitEndsWithAnError) {
  if (oxtest::sanitized()) GTEST_SKIP() << "RLIMIT_AS does not work under AddressSanitizer";
  write_image_data(dir_ / "bomb", {});
  constexpr size_t kMember = size_t(64) << 20;
  const std::string member = gzip(std::string(kMember, '\0'));
  const uint32_t images = uint32_t((size_t(2) << 30) / (28 * 28));
  // The payload is images * 784 bytes of zeros: whole 64 MiB members, then the rest.
  const size_t payload = size_t(images) * 784;
  std::string bomb = gzip(idx_u8({images, 28, 28}, ""));
  for (size_t i = 0; i < payload / kMember; ++i) bomb += member;
  bomb += gzip(std::string(payload % kMember, '\0'));
  fs::remove(dir_ / "bomb" / "train-images-idx3-ubyte");
  write_file(dir_ / "bomb" / "train-images-idx3-ubyte.gz", bomb);
  const CliResult r =
      run_oxmera({"train", "--threads", "1", "--recipe", "mlp", "--data", path("bomb")}, dir_,
                 {.memory_limit = rlim_t(1) << 30});
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_TRUE(has(r.err, "OutOfMemory error")) << describe(r);
}

// --- FIFOs: refused by what they are, never opened ------------------------------------------

TEST_F(Hostile, FifosAreRefusedWithoutBlocking) {
  const std::string f = fifo("pipe");
  EXPECT_REFUSED(train({"--resume", f}, 60), "--resume", "is a FIFO (named pipe)");
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", f}, 60), "--text", "FIFO");
  EXPECT_REFUSED(oxmera({"dashboard", f}, 60), "FIFO");
  EXPECT_REFUSED(oxmera({"dashboard", "--text", f}, 60), "FIFO");
  EXPECT_REFUSED(train({"--log", f}, 60), "--log", "FIFO");
  EXPECT_REFUSED(train({"--save", f}, 60), "--save", "FIFO");
  // A FIFO in the place of an IDX file of --data.
  write_image_data(dir_ / "fifo-data", {});
  fs::remove(dir_ / "fifo-data" / "train-labels-idx1-ubyte");
  ASSERT_EQ(mkfifo((dir_ / "fifo-data" / "train-labels-idx1-ubyte").c_str(), 0600), 0);
  EXPECT_REFUSED(train({"--data", path("fifo-data")}, 60), "train-labels-idx1-ubyte", "FIFO");
}

TEST_F(Hostile, InspectOfAFifoIsRefusedWithoutBlocking) {
  const CliResult r = oxmera({"inspect", fifo("pipe.safetensors")}, 30);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_TRUE(has(r.err, "FIFO")) << describe(r);
}

// --- numbers: exact or refused, naming the flag ---------------------------------------------

TEST_F(Hostile, NumericFlagsAreExactOrRefused) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--lr", "nan"},
      {"--lr", "NaN"},
      {"--lr", "inf"},
      {"--lr", "-inf"},
      {"--lr", "0"},
      {"--lr", "-0.001"},
      {"--lr", "1e999"},
      {"--lr", "1e-320"},
      {"--lr", "0.1x"},
      {"--lr", "1,5"},
      {"--lr", "0x1p-3"},
      {"--lr", "5000"},
      {"--seed", "-1"},
      {"--seed", "18446744073709551616"},
      {"--seed", "1e3"},
      {"--seed", "0x10"},
      {"--seed", " 5"},
      {"--seed", "5 "},
      {"--seed", "99999999999999999999999"},
      {"--epochs", "0"},
      {"--epochs", "-1"},
      {"--epochs", "9223372036854775808"},
      {"--epochs", "1.5"},
      {"--batch-size", "0"},
      {"--batch-size", "-64"},
      {"--batch-size", "1e2"},
      {"--batch-size", "18446744073709551615"},
      {"--threads", "-1"},
      {"--threads", "4294967297"},
      {"--threads", "two"},
      {"--limit", "-1"},
      {"--limit", "9223372036854775808"},
  };
  for (const auto& [flag, value] : bad) {
    const CliResult r = train({flag, value});
    EXPECT_EQ(r.code, 2) << flag << " '" << value << "'\n" << describe(r);
    EXPECT_TRUE(has(r.err, flag + ": '" + value + "'")) << describe(r);
    EXPECT_FALSE(has(r.out, "batches (")) << describe(r);
  }
  // The bounds print compactly (not DBL_MAX's 309 digits).
  const CliResult r = train({"--lr", "1e999"});
  EXPECT_TRUE(has(r.err, "is not a finite number in (0, 1000]")) << r.err;
  EXPECT_LT(r.err.size(), 400u) << r.err;
}

TEST_F(Hostile, NumericFlagsOfOtherCommandsAreExactOrRefused) {
  for (const char* value : {"-1", "x", "1.5", "99999999999"}) {
    const CliResult r = oxmera({"bench", "--threads", value, "no-such-row"});
    EXPECT_EQ(r.code, 2) << value << "\n" << describe(r);
    EXPECT_TRUE(has(r.err, std::string("--threads: '") + value + "'")) << describe(r);
  }
}

TEST_F(Hostile, ExtremeValidValuesAreUsedExactly) {
  // The largest seed is a seed like any other, printed back exactly; +5 is 5.
  const CliResult r = train({"--seed", "18446744073709551615", "--batch-size", "+16", "--lr",
                             "+2.5e-3", "--save", path("m.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "seed 18446744073709551615")) << r.out;
  EXPECT_TRUE(has(r.out, "batches of 16 per epoch")) << r.out;
  EXPECT_TRUE(has(r.out, "lr 0.0025")) << r.out;
}

TEST_F(Hostile, TooManyThreadsAreCappedAndSaid) {
  const CliResult r =
      train({"--threads", "4096", "--batch-size", "16", "--save", path("m.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "--threads 4096 is more than the")) << describe(r);
  EXPECT_TRUE(has(r.err, "; using ")) << describe(r);
  // The first line says how many threads the run used.
  EXPECT_FALSE(has(r.out, "4096 threads")) << r.out;
  EXPECT_TRUE(has(r.out, " threads\n")) << r.out;
}

TEST_F(Hostile, ImpossibleRunsAreRefusedBeforeTraining) {
  // Steps beyond a 64-bit counter (2 batches an epoch times 2^63 - 1 epochs), or beyond the
  // 2^53 a schedule computing in doubles counts exactly.
  EXPECT_REFUSED(train({"--epochs", "9223372036854775807", "--batch-size", "16"}), "--epochs",
                 "more steps than 2^53");
  EXPECT_REFUSED(train({"--epochs", "4611686018427387904", "--batch-size", "1"}),
                 "more steps than 2^53");
  EXPECT_REFUSED(train({"--epochs", "9007199254740993", "--batch-size", "16", "--limit", "16",
                        "--scheduler", "cosine"}),
                 "more steps than 2^53");
  // A batch larger than the training set, given or the recipe's default (64 > 32).
  EXPECT_REFUSED(train({"--batch-size", "33"}),
                 "batch size 33 (--batch-size) is larger than the "
                 "32 training examples");
  EXPECT_REFUSED(train({"--batch-size", "9223372036854775807"}), "is larger than the 32");
  EXPECT_REFUSED(train({}), "batch size 64 (the recipe's default) is larger than the 32");
  EXPECT_REFUSED(train({"--limit", "8", "--batch-size", "16"}),
                 "larger than the 8 training "
                 "examples (--limit)");
  // A test set without examples: refused, never "0.00 %".
  write_image_data(dir_ / "no-test", {.test = 0});
  const CliResult r = train({"--data", path("no-test"), "--batch-size", "16"});
  EXPECT_REFUSED(r, "no test examples");
  EXPECT_FALSE(has(r.out, "0.00%")) << r.out;
  // No training examples.
  write_image_data(dir_ / "no-train", {.train = 0});
  EXPECT_REFUSED(train({"--data", path("no-train"), "--batch-size", "16"}), "no training examples");
}

// --- resume: the checkpoint's run, or a refusal naming the flag -----------------------------

class HostileResume : public Hostile {
 protected:
  // A finished one-epoch run of the tiny mlp: a.safetensors.
  void SetUp() override {
    Hostile::SetUp();
    const CliResult r = train(
        {"--batch-size", "16", "--lr", "0.002", "--seed", "5", "--save", path("a.safetensors")});
    ASSERT_EQ(r.code, 0) << describe(r);
  }
};

TEST_F(HostileResume, ConflictingFlagsAreRefusedByName) {
  const std::string a = path("a.safetensors");
  EXPECT_REFUSED(train({"--resume", a, "--lr", "0.01"}), "Value error",
                 "--lr 0.01 conflicts with checkpoint", "trained with --lr 0.002");
  EXPECT_REFUSED(train({"--resume", a, "--optimizer", "adamw"}), "--optimizer adamw conflicts",
                 "--optimizer adam");
  EXPECT_REFUSED(train({"--resume", a, "--scheduler", "cosine"}), "--scheduler cosine conflicts");
  EXPECT_REFUSED(train({"--resume", a, "--seed", "6"}), "--seed 6 conflicts");
  EXPECT_REFUSED(train({"--resume", a, "--batch-size", "8"}), "--batch-size 8 conflicts");
  EXPECT_REFUSED(train({"--resume", a, "--limit", "16"}), "--limit 16 conflicts");
  EXPECT_REFUSED(train({"--resume", a, "--recipe", "cnn", "--data", data()}),
                 "--recipe cnn conflicts");
  // The same values given again are no conflict; --epochs 2 extends a run without schedule.
  const CliResult r = train({"--resume", a, "--lr", "0.002", "--seed", "5", "--epochs", "2",
                             "--save", path("b.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "resuming from")) << r.out;
  EXPECT_TRUE(has(r.out, "batches (") || has(r.out, "epoch 2")) << r.out;
}

TEST_F(HostileResume, FlagsLeftOutComeFromTheCheckpointAndAreSaid) {
  // No --batch-size, --lr, --seed: the checkpoint's (16, 0.002, 5), not the recipe's defaults.
  const CliResult r =
      train({"--resume", path("a.safetensors"), "--epochs", "2", "--save", path("b.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "from the checkpoint:")) << r.out;
  EXPECT_TRUE(has(r.out, "--lr 0.002")) << r.out;
  EXPECT_TRUE(has(r.out, "--batch-size 16")) << r.out;
  EXPECT_TRUE(has(r.out, "--seed 5")) << r.out;
  EXPECT_TRUE(has(r.out, "batches of 16 per epoch")) << r.out;
  EXPECT_TRUE(has(r.out, "adam lr 0.002")) << r.out;
  // Without --data the checkpoint's folder is read, from any working directory.
  EXPECT_TRUE(has(r.out, "--data " + fs::absolute(data()).lexically_normal().string())) << r.out;
  // Nothing left to train is said, not silently evaluated.
  const CliResult done =
      train({"--resume", path("b.safetensors"), "--save", path("b.safetensors")});
  ASSERT_EQ(done.code, 0) << describe(done);
  EXPECT_TRUE(has(done.out, "nothing left to train")) << done.out;
  EXPECT_REFUSED(train({"--resume", path("b.safetensors"), "--epochs", "1"}),
                 "--epochs 1 is fewer than the 2 epochs");
}

TEST_F(HostileResume, ScheduleLengthAndSchedulerAreTheCheckpoints) {
  const CliResult cosine = train({"--batch-size", "16", "--scheduler", "cosine", "--epochs", "2",
                                  "--save", path("c.safetensors")});
  ASSERT_EQ(cosine.code, 0) << describe(cosine);
  // Dropping --scheduler continues the cosine schedule (and says so); another one is refused.
  const CliResult r = train({"--resume", path("c.safetensors"), "--save", path("d.safetensors")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "--scheduler cosine")) << r.out;
  EXPECT_TRUE(has(r.out, "scheduler cosine")) << r.out;
  EXPECT_REFUSED(train({"--resume", path("c.safetensors"), "--scheduler", "none"}),
                 "--scheduler none conflicts");
  // A cosine schedule spans the epochs it was made for.
  EXPECT_REFUSED(train({"--resume", path("c.safetensors"), "--epochs", "3"}),
                 "--epochs 3 conflicts", "cosine schedule spans --epochs 2");
}

TEST_F(HostileResume, OtherDataIsRefusedTheSameDataElsewhereIsNot) {
  const std::string a = path("a.safetensors");
  write_image_data(dir_ / "other", {.salt = 7});
  EXPECT_REFUSED(train({"--resume", a, "--data", path("other")}), "--data",
                 "holds other training data than checkpoint");
  // A copy of the same files in another folder is the same data.
  fs::copy(data(), dir_ / "copy");
  const CliResult r = train(
      {"--resume", a, "--data", path("copy"), "--epochs", "2", "--save", path("b.safetensors")});
  EXPECT_EQ(r.code, 0) << describe(r);
  // The checkpoint's own folder, changed since: refused, not trained on silently.
  write_image_data(dir_ / "data", {.salt = 3});
  EXPECT_REFUSED(train({"--resume", a, "--epochs", "2", "--save", path("c.safetensors")}),
                 "the data has changed since the checkpoint was written");
}

TEST_F(Hostile, ResumeWithAnotherTextOfTheSameVocabularySizeIsRefused) {
  // Same number of distinct characters (5 + space + newline), other characters: every token id
  // would silently mean another character.
  write_text(dir_ / "a.txt", "abcde abcde edcba\n", 80);
  write_text(dir_ / "b.txt", "vwxyz vwxyz zyxwv\n", 80);
  const CliResult first = train({"--recipe", "chargpt", "--text", path("a.txt"), "--limit", "16",
                                 "--batch-size", "16", "--save", path("g.safetensors")},
                                300);
  ASSERT_EQ(first.code, 0) << describe(first);
  EXPECT_REFUSED(
      train({"--recipe", "chargpt", "--resume", path("g.safetensors"), "--text", path("b.txt")}),
      "--text", "has another vocabulary", "every token would mean another character");
  // The same characters in another order is other data too.
  write_text(dir_ / "c.txt", "edcba edcba abcde\n", 80);
  EXPECT_REFUSED(train({"--resume", path("g.safetensors"), "--text", path("c.txt")}),
                 "holds other training data");
}

TEST_F(Hostile, ResumeFromAFileNotWrittenByTrainIsRefused) {
  ox::TensorDict weights;
  weights.insert("w", ox::zeros({2}));
  ox::save_safetensors(path("w.safetensors"), weights);
  EXPECT_REFUSED(train({"--resume", path("w.safetensors")}), "Format error",
                 "was not written by this version of `oxmera train`");
}

// --- outputs: checked at the start, nothing but a regular file replaced ---------------------

TEST_F(Hostile, OutputsThatAreNotRegularFilesAreRefused) {
  struct stat before {};
  ASSERT_EQ(stat("/dev/null", &before), 0);
  EXPECT_REFUSED(train({"--save", "/dev/null", "--batch-size", "16"}), "--save",
                 "'/dev/null' is a character device");
  struct stat after {};
  ASSERT_EQ(stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode)) << "/dev/null was replaced";
  EXPECT_REFUSED(train({"--log", "/dev/null", "--batch-size", "16"}), "--log", "character device");
  EXPECT_REFUSED(train({"--save", dir_.string(), "--batch-size", "16"}), "--save", "is a folder");
  write_file(dir_ / "file", "x");
  EXPECT_REFUSED(train({"--tensorboard", path("file"), "--batch-size", "16"}), "--tensorboard",
                 "is a regular file, not a folder");
}

TEST_F(Hostile, SaveReplacesOnlyACheckpointUnlessToldToOverwrite) {
  write_file(dir_ / "notes.txt", "my notes\n");
  fs::create_symlink("notes.txt", dir_ / "link.safetensors");
  EXPECT_REFUSED(train({"--save", "notes.txt", "--batch-size", "16"}), "--save",
                 "'notes.txt' exists and is not a safetensors checkpoint", "--overwrite");
  EXPECT_REFUSED(train({"--save", path("link.safetensors"), "--batch-size", "16"}), "--save",
                 "is not a safetensors checkpoint");
  EXPECT_EQ(read_file(dir_ / "notes.txt"), "my notes\n");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.safetensors"));
  EXPECT_REFUSED(train({"--save", "", "--batch-size", "16"}), "--save", "the file name is empty");
  EXPECT_FALSE(fs::exists(dir_ / "oxmera-mlp.safetensors")) << "'' is not the default name";
  // An earlier checkpoint of the run is replaced as before; anything else with --overwrite.
  CliResult r = train({"--save", "m.safetensors", "--batch-size", "16"});
  ASSERT_EQ(r.code, 0) << describe(r);
  r = train({"--save", "m.safetensors", "--batch-size", "16", "--seed", "3"});
  EXPECT_EQ(r.code, 0) << describe(r);
  r = train({"--save", "notes.txt", "--batch-size", "16", "--overwrite"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NO_THROW(ox::load_safetensors(path("notes.txt")));
}

TEST_F(Hostile, SaveWhereNoFileCanBeMadeFailsBeforeTraining) {
  // /proc/version is a regular file to stat; neither /proc nor /sys takes new files.
  EXPECT_REFUSED(train({"--save", "/proc/version", "--batch-size", "16"}), "--save",
                 "is not a safetensors checkpoint");
  EXPECT_REFUSED(train({"--save", "/proc/version", "--batch-size", "16", "--overwrite"}), "--save",
                 "cannot create a file in the folder '/proc'");
  EXPECT_REFUSED(train({"--save", "/sys/x.safetensors", "--batch-size", "16"}), "--save", "/sys");
}

TEST_F(Hostile, FilesThatReportNoSizeAreReadToTheirEnd) {
  // /proc files stat as 0 bytes and read as text: read whole, never "0 characters".
  const CliResult text = train(
      {"--recipe", "chargpt", "--text", "/proc/self/status", "--limit", "8", "--batch-size", "4"});
  EXPECT_FALSE(has(text.err, "0 characters")) << describe(text);
  EXPECT_FALSE(has(text.err, "too short")) << describe(text);
  EXPECT_EQ(text.code, 0) << describe(text);
  const CliResult maps = oxmera({"inspect", "/proc/self/maps"});
  EXPECT_EQ(maps.code, 2) << describe(maps);
  EXPECT_FALSE(has(maps.err, "file of 0 bytes")) << describe(maps);
  EXPECT_TRUE(has(maps.err, "header length")) << describe(maps);
}

TEST_F(Hostile, ANonFiniteLossStopsTheRunAndKeepsTheLastGoodCheckpoint) {
  CliResult r = train({"--save", "m.safetensors", "--batch-size", "16"});
  ASSERT_EQ(r.code, 0) << describe(r);
  // A checkpoint whose bias is NaN: the first step's loss is NaN.
  ox::TensorDict state = ox::load_safetensors(path("m.safetensors"));
  std::string bias;
  for (const auto& [name, tensor] : state)
    if (name.starts_with("model.") && name.ends_with(".bias")) bias = name;
  ASSERT_FALSE(bias.empty());
  state.insert_or_assign(bias, ox::full(state.at(bias).shape(), std::nan("")));
  std::map<std::string, std::string> metadata =
      ox::SafetensorsFile::open(path("m.safetensors")).metadata();
  metadata.erase(std::string(ox::kSafetensorsChecksumKey));  // the bias no longer matches
  ox::save_safetensors(path("nan.safetensors"), state, metadata);
  const std::string before = read_file(dir_ / "nan.safetensors");
  r = train({"--resume", path("nan.safetensors"), "--epochs", "2"});
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_TRUE(has(r.err, "the loss is nan at epoch 2, step")) << describe(r);
  EXPECT_TRUE(has(r.err, "--allow-nonfinite")) << describe(r);
  EXPECT_EQ(read_file(dir_ / "nan.safetensors"), before) << "the checkpoint was replaced";
  // Asked to, the run trains on to its end.
  r = train({"--resume", path("nan.safetensors"), "--epochs", "2", "--allow-nonfinite"});
  EXPECT_EQ(r.code, 0) << describe(r);
  // A learning rate that overflows 16-bit activations stops the same way, from scratch.
  r = train({"--save", "lr.safetensors", "--batch-size", "16", "--precision", "amp-f16", "--lr",
             "1000", "--epochs", "20"});
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_TRUE(has(r.err, "the loss is ")) << describe(r);
}

TEST_F(Hostile, MissingOutputFoldersAreFoundBeforeTraining) {
  EXPECT_REFUSED(train({"--save", path("no/such/dir/m.safetensors"), "--batch-size", "16"}),
                 "--save", "does not exist");
  EXPECT_REFUSED(train({"--log", path("no/run.jsonl"), "--batch-size", "16"}), "--log",
                 "does not exist");
  write_file(dir_ / "file", "x");
  EXPECT_REFUSED(train({"--save", path("file/m.safetensors"), "--batch-size", "16"}), "--save");
  EXPECT_REFUSED(train({"--tensorboard", path("file/tb"), "--batch-size", "16"}), "--tensorboard");
  // A missing --tensorboard folder is created (its parent exists).
  const CliResult r = train(
      {"--tensorboard", path("tb/run1"), "--batch-size", "16", "--save", path("m.safetensors")});
  EXPECT_EQ(r.code, 0) << describe(r);
}

TEST_F(Hostile, TwoOutputsNamingOneFileAreRefused) {
  write_file(dir_ / "log.jsonl", "");
  fs::create_symlink("log.jsonl", dir_ / "link.jsonl");
  fs::create_hard_link(dir_ / "log.jsonl", dir_ / "hard.jsonl");
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"x.out", "x.out"},        {"./x.out", "x.out"},        {path("x.out"), "x.out"},
      {"sub/../x.out", "x.out"}, {"log.jsonl", "link.jsonl"}, {"hard.jsonl", "log.jsonl"},
  };
  fs::create_directory(dir_ / "sub");
  for (const auto& [save, log] : pairs) {
    EXPECT_REFUSED(train({"--save", save, "--log", log, "--batch-size", "16"}), "--save and --log",
                   "name the same file");
  }
  EXPECT_EQ(read_file(dir_ / "log.jsonl"), "");  // nothing renamed over it
  EXPECT_REFUSED(train({"--save", "t", "--tensorboard", "t", "--batch-size", "16"}),
                 "name the same file");
  EXPECT_REFUSED(train({"--log", "t", "--tensorboard", "./t", "--batch-size", "16"}),
                 "name the same file");
}

TEST_F(Hostile, OutputsOverInputsAreRefused) {
  const std::string images = (fs::path(data()) / "train-images-idx3-ubyte").string();
  const std::string before = read_file(images);
  EXPECT_REFUSED(train({"--save", images, "--batch-size", "16"}), "--save and --data");
  EXPECT_REFUSED(train({"--log", images + ".gz", "--batch-size", "16"}), "--log and --data");
  EXPECT_EQ(read_file(images), before);
  write_text(dir_ / "t.txt", "hello world\n", 100);
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", "t.txt", "--save", path("t.txt")}),
                 "--save and --text");
  // A log appended to the checkpoint being resumed would break it.
  const CliResult first = train({"--batch-size", "16", "--save", path("a.safetensors")});
  ASSERT_EQ(first.code, 0) << describe(first);
  EXPECT_REFUSED(train({"--resume", path("a.safetensors"), "--log", "./a.safetensors"}),
                 "--log and --resume");
}

// --- data errors are input errors (exit 2), named precisely ---------------------------------

TEST_F(Hostile, WrongImagesAndLabelsAreInputErrors) {
  write_image_data(dir_ / "small", {.side = 8});
  EXPECT_REFUSED(train({"--data", path("small"), "--batch-size", "16"}), "are 8x8", "take 28x28");
  write_image_data(dir_ / "labels", {.classes = 13});
  EXPECT_REFUSED(train({"--data", path("labels"), "--batch-size", "16"}), "Format error",
                 "label 10 of example 10 is outside [0, 10)");
  EXPECT_REFUSED(train({"--recipe", "cnn", "--data", path("labels"), "--batch-size", "16"}),
                 "label 10");
}

TEST_F(Hostile, TextThatIsNotAFileSaysWhatItIs) {
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", dir_.string()}),
                 "is a folder, not a regular file");
  EXPECT_REFUSED(train({"--recipe", "chargpt", "--text", path("absent.txt")}), "does not exist");
  EXPECT_REFUSED(train({"--data", data() + "/train-images-idx3-ubyte"}), "not a folder");
}

TEST_F(Hostile, MultiMemberGzipDataTrains) {
  write_image_data(dir_ / "multi", {});
  const fs::path images = dir_ / "multi" / "train-images-idx3-ubyte";
  const std::string plain = read_file(images);
  fs::remove(images);
  const size_t half = plain.size() / 2;
  write_file(images.string() + ".gz", gzip(plain.substr(0, half)) + gzip(plain.substr(half)));
  const CliResult r =
      train({"--data", path("multi"), "--batch-size", "16", "--save", path("m.safetensors")});
  EXPECT_EQ(r.code, 0) << describe(r);
}

// --- dashboard: every value read is checked, with file and line -----------------------------

TEST_F(Hostile, DashboardRefusesOutOfRangeValuesWithFileAndLine) {
  const std::string good =
      R"({"type":"step","step":1,"epoch":0,"loss":2.0,"lr":0.001,"elapsed_s":0.5})";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"type":"step","step":-5,"epoch":0,"loss":2.0,"lr":0.001,"elapsed_s":0.5})", "step -5"},
      {R"({"type":"step","step":0,"epoch":0,"loss":2.0,"lr":0.001,"elapsed_s":0.5})", "step 0"},
      {R"({"type":"step","step":2,"epoch":-1,"loss":2.0,"lr":0.001,"elapsed_s":0.5})", "epoch -1"},
      {R"({"type":"eval","step":2,"epoch":0,"loss":2.0,"accuracy":5.0,"elapsed_s":0.5})",
       "accuracy 5"},
      {R"({"type":"eval","step":-1,"epoch":0,"loss":2.0,"accuracy":0.5,"elapsed_s":0.5})",
       "step -1"},
      {R"({"type":"step","step":2,"epoch":0,"loss":2.0,"lr":-0.001,"elapsed_s":0.5})", "lr"},
      {R"({"type":"step","step":2,"epoch":0,"loss":2.0,"lr":0.001,"elapsed_s":"NaN"})",
       "elapsed_s"},
      {R"({"type":"step","step":2,"epoch":0,"loss":2.0,"lr":0.001,"grad_norm":-1.0,"elapsed_s":0.5})",
       "grad_norm"},
      {R"({"type":"step","step":9007199254740993,"epoch":0,"loss":2.0,"lr":0.001,"elapsed_s":0.5})",
       "2^53"},
  };
  for (const auto& [line, what] : bad) {
    write_file(dir_ / "run.jsonl", good + "\n" + line + "\n");
    const CliResult r = oxmera({"dashboard", "--text", path("run.jsonl")});
    EXPECT_EQ(r.code, 2) << line << "\n" << describe(r);
    EXPECT_TRUE(has(r.err, "run.jsonl:2")) << describe(r);
    EXPECT_TRUE(has(r.err, what)) << what << "\n" << describe(r);
  }
  // A diverged run's NaN loss is data, not an error.
  write_file(dir_ / "run.jsonl",
             good + "\n" +
                 R"({"type":"step","step":2,"epoch":0,"loss":"NaN","lr":0.001,"elapsed_s":0.6})" +
                 "\n");
  const CliResult ok = oxmera({"dashboard", "--text", path("run.jsonl")});
  EXPECT_EQ(ok.code, 0) << describe(ok);
}

}  // namespace
