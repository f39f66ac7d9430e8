// The data readers on careless and hostile input: paths that are not regular files (refused by
// stat before anything is opened, so a FIFO cannot block), sizes a header declares that the
// file cannot hold (refused before allocating), gzip bombs (an OutOfMemory error, not an
// abort), multi-member gzip files (accepted, as gzip reads them), labels outside the classes,
// and batch sizes near INT64_MAX.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "core/file_check.h"
#include "data/data_test_util.h"
#include "sanitized.h"

namespace {

using namespace ox::data;
using oxtest::caught;
using oxtest::contains;
using oxtest::gzip;
using oxtest::idx_header;
using oxtest::write_bytes;

// RLIMIT_AS and ASan's shadow memory do not mix.
const bool kSanitized = oxtest::sanitized();

class DataHostile : public oxtest::DataScratch {
 protected:
  std::string fifo(const std::string& name) {
    const std::string p = path(name);
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
    return p;
  }
};

// Runs `read` (which must refuse `fifo`) on a thread; if it has not returned within 20 s it is
// blocked on the FIFO: the test fails, and opening and closing the FIFO's write end (without
// blocking: a reader is waiting) lets it return, so the test ends instead of hanging.
ox::Error refused_without_blocking(const std::string& fifo, const std::function<void()>& read) {
  auto result = std::async(std::launch::async, [&] { return caught(read); });
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "reading the FIFO " << fifo << " blocked";
    for (int i = 0;
         i < 100 && result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready;
         ++i) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
  }
  return result.get();
}

void expect_io(const ox::Error& e, const std::string& path, const std::string& what) {
  EXPECT_EQ(e.kind(), ox::ErrorKind::Io) << e.what();
  EXPECT_TRUE(contains(e, path)) << e.what();
  EXPECT_TRUE(contains(e, what)) << "expected '" << what << "' in: " << e.what();
}

// --- not a regular file: refused by stat, named for what it is ------------------------------

TEST_F(DataHostile, FileCheckNamesWhatAPathIs) {
  write_bytes(path("file"), "x");
  EXPECT_EQ(ox::detail::require_regular_file(path("file"), "op"), 1u);
  expect_io(caught([&] { ox::detail::require_regular_file(dir_.string(), "op"); }), dir_.string(),
            "is a folder, not a regular file");
  expect_io(caught([&] { ox::detail::require_regular_file(fifo("f"), "op"); }), path("f"),
            "is a FIFO (named pipe)");
  expect_io(caught([&] { ox::detail::require_regular_file("/dev/null", "op"); }), "/dev/null",
            "is a character device");
  expect_io(caught([&] { ox::detail::require_regular_file(path("absent"), "op"); }), path("absent"),
            "does not exist");
  std::filesystem::create_symlink("loop", path("loop"));
  expect_io(caught([&] { ox::detail::require_regular_file(path("loop"), "op"); }), path("loop"),
            "loop of symbolic links");
  const std::string long_name = path(std::string(5000, 'n'));
  expect_io(caught([&] { ox::detail::require_regular_file(long_name, "op"); }), "nnnn",
            "name too long");
  expect_io(caught([&] { ox::detail::require_regular_file(path("file") + "/x", "op"); }), "file/x",
            "not a folder");
  expect_io(caught([&] { ox::detail::require_folder(path("file"), "op"); }), path("file"),
            "is a regular file, not a folder");
  EXPECT_NO_THROW(ox::detail::require_folder(dir_.string(), "op"));
}

TEST_F(DataHostile, ReadIdxRefusesWhatIsNotARegularFile) {
  const std::string f = fifo("fifo.idx");
  expect_io(refused_without_blocking(f, [&] { read_idx(f); }), f, "FIFO");
  expect_io(caught([&] { read_idx(dir_); }), dir_.string(), "is a folder");
  expect_io(caught([&] { read_idx("/dev/zero"); }), "/dev/zero", "character device");
  std::filesystem::create_symlink("/dev/zero", path("zero.idx"));
  expect_io(caught([&] { read_idx(path("zero.idx")); }), path("zero.idx"), "character device");
  std::filesystem::create_symlink("loop.idx", path("loop.idx"));
  expect_io(caught([&] { read_idx(path("loop.idx")); }), path("loop.idx"), "symbolic links");
  expect_io(caught([&] { read_idx(path(std::string(300, 'x'))); }), "xxx", "name too long");
}

TEST_F(DataHostile, MnistDatasetRefusesFifosFoldersAndFiles) {
  // A FIFO in the place of the training images: refused, never opened.
  const std::string f = fifo("train-images-idx3-ubyte");
  write_bytes(path("train-labels-idx1-ubyte"), idx_header(0x08, {1}) + std::string{1});
  expect_io(refused_without_blocking(f, [&] { MnistDataset(dir_, true); }), f, "FIFO");
  // A folder in its place.
  std::filesystem::create_directory(path("t10k-images-idx3-ubyte"));
  write_bytes(path("t10k-labels-idx1-ubyte"), idx_header(0x08, {1}) + std::string{1});
  expect_io(caught([&] { MnistDataset(dir_, false); }), path("t10k-images-idx3-ubyte"),
            "is a folder");
  // The root itself is a file, or a loop.
  expect_io(caught([&] { MnistDataset(path("train-labels-idx1-ubyte"), true); }),
            path("train-labels-idx1-ubyte"), "not a folder");
  std::filesystem::create_symlink("rootloop", path("rootloop"));
  expect_io(caught([&] { MnistDataset(path("rootloop"), true); }), path("rootloop"),
            "symbolic links");
}

TEST_F(DataHostile, TextDatasetRefusesFifosFoldersAndDevices) {
  const std::string f = fifo("text.txt");
  expect_io(refused_without_blocking(f, [&] { TextDataset(f, 4); }), f, "FIFO");
  expect_io(caught([&] { TextDataset(dir_, 4); }), dir_.string(), "is a folder");
  expect_io(caught([&] { TextDataset("/dev/zero", 4); }), "/dev/zero", "character device");
  expect_io(caught([&] { TextDataset(path("absent.txt"), 4); }), path("absent.txt"),
            "does not exist");
  expect_io(caught([&] { TextDataset(path(std::string(5000, 't')), 4); }), "ttt", "name too long");
}

// --- declared sizes bounded by what the file holds ------------------------------------------

// A sparse file of 8 GiB with a header declaring 6 bytes: refused from its size alone, without
// reading (or allocating) 8 GiB.
TEST_F(DataHostile, PlainFileSizeIsCheckedBeforeReading) {
  write_bytes(path("sparse"), idx_header(0x08, {2, 3}));
  ASSERT_EQ(::truncate(path("sparse").c_str(), off_t(8) << 30), 0) << std::strerror(errno);
  const ox::Error e = caught([&] { read_idx(path("sparse")); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << e.what();
  EXPECT_TRUE(contains(e, "trailing bytes after the 6-byte payload")) << e.what();
  // And the other way: 2^32-1 x 2^32-1 bytes declared, 6 there.
  write_bytes(path("lying"), idx_header(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu}) + "abcdef");
  const ox::Error lying = caught([&] { read_idx(path("lying")); });
  EXPECT_EQ(lying.kind(), ox::ErrorKind::Format) << lying.what();
  EXPECT_TRUE(contains(lying, "truncated")) << lying.what();
}

TEST_F(DataHostile, GzipHeaderClaimingMoreThanItCanInflateToIsFormat) {
  // 2^40 bytes declared in a gzip file of a few dozen bytes: deflate cannot expand that far.
  const std::string bytes = gzip(idx_header(0x08, {1u << 20, 1u << 20}) + "abc");
  const ox::Error e = [&] {
    write_bytes(path("lie.gz"), bytes);
    return caught([&] { read_idx(path("lie.gz")); });
  }();
  EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << e.what();
  EXPECT_TRUE(contains(e, "more than a gzip file of")) << e.what();
}

// Writes a gzip member holding `zeros` zero bytes, deflated chunk by chunk.
std::string gzip_zeros(size_t zeros) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  const std::vector<uint8_t> chunk(1 << 20, 0);
  std::string out;
  std::vector<uint8_t> buffer(1 << 16);
  size_t left = zeros;
  int flush = Z_NO_FLUSH;
  do {
    const size_t n = std::min(left, chunk.size());
    left -= n;
    flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    s.next_in = const_cast<Bytef*>(chunk.data());
    s.avail_in = uInt(n);
    do {
      s.next_out = buffer.data();
      s.avail_out = uInt(buffer.size());
      deflate(&s, flush);
      out.append(reinterpret_cast<const char*>(buffer.data()), buffer.size() - s.avail_out);
    } while (s.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&s);
  return out;
}

// A honest header over 1 GiB of zeros in 16 gzip members (about a megabyte): under a memory
// limit the reader runs out of memory, and says so as an ox::Error instead of aborting. Run in
// a child process, since the limit is process-wide.
TEST_F(DataHostile, GzipBombUnderAMemoryLimitIsOutOfMemory) {
  if (kSanitized) GTEST_SKIP() << "RLIMIT_AS does not work under AddressSanitizer";
  const std::string member = gzip_zeros(size_t(64) << 20);
  std::string bomb = gzip(idx_header(0x08, {1u << 30}));
  for (int i = 0; i < 16; ++i) bomb += member;
  write_bytes(path("bomb.gz"), bomb);
  const std::string file = path("bomb.gz");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // 512 MiB more than the child uses now: far less than the 1 GiB the payload inflates to.
    long pages = 0, resident = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) pages = 0;
      std::fclose(statm);
    }
    const rlim_t limit = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(512) << 20);
    const struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(10);
    try {
      read_idx(file);
      _exit(11);
    } catch (const ox::Error& e) {
      _exit(e.kind() == ox::ErrorKind::OutOfMemory ? 0 : 12);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 setrlimit, 11 read, 12 another error, 13 not ox::Error";
}

// --- multi-member gzip ----------------------------------------------------------------------

TEST_F(DataHostile, MultiMemberGzipIsOneFile) {
  // `cat a.gz b.gz`: the header and first pixels in one member, the rest in two more.
  std::string file = oxtest::idx_header(0x08, {3, 100});
  for (int i = 0; i < 300; ++i) file += char(i * 7 % 256);
  const std::string gz =
      gzip(file.substr(0, 50)) + gzip(file.substr(50, 200)) + gzip(file.substr(250));
  write_bytes(path("multi.gz"), gz);
  const std::vector<uint8_t> values = read_idx(path("multi.gz")).to_vector<uint8_t>();
  ASSERT_EQ(values.size(), 300u);
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ(values[i], uint8_t(i * 7 % 256)) << i;
  // A member that is cut short, junk after a member, and a member too many stay errors.
  const auto error_of = [&](const std::string& name, const std::string& bytes) {
    write_bytes(path(name), bytes);
    return caught([&] { read_idx(path(name)); });
  };
  const std::string second = gzip(file.substr(50));
  ox::Error e = error_of("cut.gz", gzip(file.substr(0, 50)) + second.substr(0, second.size() - 5));
  EXPECT_TRUE(contains(e, "truncated gzip stream")) << e.what();
  e = error_of("junk.gz", gz + "xy");
  EXPECT_TRUE(contains(e, "2 bytes after the end of the gzip stream")) << e.what();
  e = error_of("extra.gz", gz + gzip("more"));
  EXPECT_TRUE(contains(e, "trailing bytes")) << e.what();
}

// --- labels against the class count ---------------------------------------------------------

TEST_F(DataHostile, LabelsOutsideTheClassesAreFormat) {
  write_bytes(path("train-images-idx3-ubyte"), idx_header(0x08, {3, 1, 1}) + std::string{1, 2, 3});
  write_bytes(path("train-labels-idx1-ubyte"), idx_header(0x08, {3}) + std::string{1, 12, 3});
  EXPECT_NO_THROW(MnistDataset(dir_, true));  // no class count: no check
  const ox::Error e = caught([&] { MnistDataset(dir_, true, 10); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << e.what();
  EXPECT_TRUE(contains(e, "label 12 of example 1 is outside [0, 10)")) << e.what();
  EXPECT_TRUE(contains(e, path("train-labels-idx1-ubyte"))) << e.what();
  EXPECT_NO_THROW(MnistDataset(dir_, true, 13));
}

// --- batch sizes near INT64_MAX -------------------------------------------------------------

TEST(DataLoaderHostile, HugeBatchSizeIsOneBatch) {
  const auto data = oxtest::pairs(5);
  for (int64_t batch :
       {int64_t(6), std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::max()}) {
    DataLoader loader(data, {.batch_size = batch});
    EXPECT_EQ(loader.size(), 1) << batch;
    const auto batches = loader.batch_indices(0);
    ASSERT_EQ(batches.size(), 1u) << batch;
    EXPECT_EQ(batches[0].size(), 5u) << batch;
    DataLoader dropping(data, {.batch_size = batch, .drop_last = true});
    EXPECT_EQ(dropping.size(), 0) << batch;
  }
}

}  // namespace
