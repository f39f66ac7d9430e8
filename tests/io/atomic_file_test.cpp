// Atomic file writes (src/io/atomic_file.h) and save_safetensors through them: the target
// holds the old file or the new one, and no temporary file is left behind.

#include <cstring>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace {

using oxtest::read_file;
using oxtest::write_file;

class AtomicFile : public oxtest::ScratchDir {};

TEST_F(AtomicFile, ReplacesTheTargetWhole) {
  write_file(path("target"), "old contents");
  ox::io::write_file_atomically(
      path("target"), [&](int fd) { ox::io::write_all(fd, "new", 3, path("target"), "test"); });
  EXPECT_EQ(read_file(path("target")), "new");
  EXPECT_EQ(listing(), std::vector<std::string>{"target"});
}

TEST_F(AtomicFile, FailureMidWriteKeepsTheOldFileAndNoTemporary) {
  write_file(path("target"), "old contents");
  EXPECT_THROW(ox::io::write_file_atomically(path("target"),
                                             [&](int fd) {
                                               ox::io::write_all(fd, "half", 4, path("target"),
                                                                 "test");
                                               throw std::runtime_error("killed");
                                             }),
               std::runtime_error);
  EXPECT_EQ(read_file(path("target")), "old contents");
  EXPECT_EQ(listing(), std::vector<std::string>{"target"});
}

TEST_F(AtomicFile, UnwritableFolderIsAnIoErrorNamingThePath) {
  const std::string target = path("no/such/folder/file.safetensors");
  const ox::Error error = oxtest::caught([&] {
    ox::save_safetensors(target, {{"w", ox::ones({2})}});
  });
  EXPECT_EQ(error.kind(), ox::ErrorKind::Io);
  EXPECT_TRUE(oxtest::contains(error, "[save_safetensors]")) << error.what();
  EXPECT_TRUE(oxtest::contains(error, target)) << error.what();
  EXPECT_TRUE(oxtest::contains(error, std::strerror(ENOENT))) << error.what();
  EXPECT_TRUE(listing().empty());
}

TEST_F(AtomicFile, TargetTurnedFolderMidWriteLeavesNoTemporary) {
  // The target becomes a non-empty folder while the contents are written: the check before the
  // rename refuses it (a rename would fail or, for a FIFO or device, replace it) and the
  // temporary file goes.
  const std::string target = path("taken");
  const ox::Error error = oxtest::caught([&] {
    ox::io::write_file_atomically(target, [&](int fd) {
      ox::io::write_all(fd, "new", 3, target, "test");
      std::filesystem::create_directory(target);
      write_file(path("taken/inside"), "x");
    });
  });
  EXPECT_EQ(error.kind(), ox::ErrorKind::Io);
  EXPECT_TRUE(oxtest::contains(error, "'" + target + "' is a folder")) << error.what();
  EXPECT_EQ(listing(), std::vector<std::string>{"taken"});
}

TEST_F(AtomicFile, SaveOverwritesAnExistingFile) {
  ox::save_safetensors(path("m.safetensors"), {{"w", ox::ones({2})}});
  ox::save_safetensors(path("m.safetensors"), {{"v", ox::zeros({3})}});
  const ox::TensorDict loaded = ox::load_safetensors(path("m.safetensors"));
  EXPECT_EQ(loaded.keys(), std::vector<std::string>{"v"});
  EXPECT_EQ(listing(), std::vector<std::string>{"m.safetensors"});
}

}  // namespace
