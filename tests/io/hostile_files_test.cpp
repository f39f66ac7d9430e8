// Hostile and careless files: headers of very many entries, targets that are not regular
// files, temporary files of killed saves, FIFOs given to readers, flipped bits in checkpoints
// (checksums), and what `oxmera inspect` prints from a file (escaped) and returns.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "io/atomic_file.h"
#include "io/io_test_util.h"
#include "io/safetensors_format.h"
#include "sanitized.h"
#include "test_paths.h"
#include "test_util.h"

namespace {

using oxtest::caught;
using oxtest::contains;
using oxtest::entry;
using oxtest::kind_of;
using oxtest::read_file;
using oxtest::safetensors_bytes;
using oxtest::write_file;

class HostileFiles : public oxtest::ScratchDir {};

// prefix + i, built by appending (GCC 12 warns falsely about "t" + std::to_string(i)).
std::string numbered(const char* prefix, size_t i) {
  std::string name = prefix;
  name += std::to_string(i);
  return name;
}

// A header of `n` one-byte U8 tensors "t0", "t1", ... in data order, and their data (byte i
// holds i % 251).
std::string many_entries(size_t n) {
  std::string header = "{";
  std::string data;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) header += ',';
    header += entry(numbered("t", i), "U8", "[1]", i, i + 1);
    data += static_cast<char>(i % 251);
  }
  return safetensors_bytes(header + "}", data);
}

// ---- 2: many entries ------------------------------------------------------------------------

TEST(SafetensorsEntries, FiftyThousandEntriesParseWhole) {
  const size_t n = 50'000;
  const ox::SafetensorsFile file = ox::SafetensorsFile::from_bytes(many_entries(n), "many");
  ASSERT_EQ(file.size(), n);
  const std::vector<std::string> keys = file.keys();
  for (size_t i : {size_t{0}, size_t{1}, size_t{12'345}, n - 1}) {
    EXPECT_EQ(keys[i], numbered("t", i));
    const ox::SafetensorsTensorInfo& info = file.info(keys[i]);
    EXPECT_EQ(info.begin, i);
    EXPECT_EQ(info.end, i + 1);
    EXPECT_EQ(file.get(keys[i]).item<uint8_t>(), i % 251);
  }
}

// A header of `n` empty tensors at [0, 0): the header alone holds the entries.
std::string empty_entries(size_t n) {
  std::string header = "{";
  header.reserve(n * 56);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) header += ',';
    header += entry(numbered("e", i), "U8", "[0]", 0, 0);
  }
  return safetensors_bytes(header + "}");
}

void expect_too_many(const ox::Error& e, size_t limit) {
  EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << e.what();
  EXPECT_TRUE(contains(e, "crowded")) << e.what();
  EXPECT_TRUE(contains(e, std::string("more than ") + std::to_string(limit))) << e.what();
}

TEST(SafetensorsEntries, MoreThanTheLimitIsAFormatError) {
  // The refusal itself, at a small limit: one entry more fails, exactly the limit parses.
  const std::string bytes = empty_entries(1001);
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  expect_too_many(caught([&] { ox::io::parse_safetensors(data, bytes.size(), "crowded", 1000); }),
                  1000);
  EXPECT_EQ(ox::io::parse_safetensors(data, bytes.size(), "crowded", 1001).entries.size(), 1001u);
  if (oxtest::sanitized())
    GTEST_SKIP() << "the real limit takes a million entries: checked without the sanitizers";
  // The real limit, through the public reader.
  const std::string many = empty_entries(ox::io::kMaxSafetensorsEntries + 1);
  expect_too_many(caught([&] { ox::SafetensorsFile::from_bytes(many, "crowded"); }),
                  ox::io::kMaxSafetensorsEntries);
}

TEST(SafetensorsEntries, StrictnessSurvivesTheOnePassParser) {
  const auto error_of = [](const std::string& header) {
    return caught([&] { ox::SafetensorsFile::from_bytes(safetensors_bytes(header), "h"); });
  };
  const ox::Error twice = error_of(std::string("{") + entry("a", "U8", "[0]", 0, 0) + "," +
                                   entry("a", "U8", "[0]", 0, 0) + "}");
  EXPECT_TRUE(contains(twice, "duplicate entry 'a'")) << twice.what();
  const ox::Error inner = error_of(R"({"a":{"dtype":"U8","dtype":"U8","shape":[0],)"
                                   R"("data_offsets":[0,0]}})");
  EXPECT_TRUE(contains(inner, "duplicate key 'dtype' inside entry 'a'")) << inner.what();
  const ox::Error deep = error_of(R"({"a":{"shape":[[0]]}})");
  EXPECT_TRUE(contains(deep, "nests deeper")) << deep.what();
  EXPECT_TRUE(contains(error_of("[1, 2]"), "not a JSON object but array"));
  EXPECT_TRUE(contains(error_of("\"text\""), "not a JSON object but string"));
  EXPECT_TRUE(contains(error_of("{\"a\": "), "not valid JSON"));
  EXPECT_TRUE(contains(error_of("{\"a\":5}"), "entry of tensor 'a' is not an object"));
  const ox::Error meta = error_of(R"({"__metadata__":{"k":1}})");
  EXPECT_TRUE(contains(meta, "__metadata__ value of key 'k' is not a string")) << meta.what();
  // Metadata anywhere among the entries.
  std::string header = "{";
  header += entry("x", "U8", "[1]", 0, 1);
  header += R"(,"__metadata__":{"k":"v"}})";
  const ox::SafetensorsFile file =
      ox::SafetensorsFile::from_bytes(safetensors_bytes(header, "\x07"), "h");
  EXPECT_EQ(file.metadata().at("k"), "v");
  EXPECT_EQ(file.get("x").item<uint8_t>(), 7);
}

// ---- 4: atomic saves refuse odd targets and clean up after killed saves -----------------------

void expect_refused_target(const std::string& target, const std::string& what) {
  const ox::Error e = caught([&] { ox::save_safetensors(target, {{"w", ox::ones({2})}}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Io) << e.what();
  EXPECT_TRUE(contains(e, std::string("'") + target + "'")) << e.what();
  EXPECT_TRUE(contains(e, what)) << e.what();
  EXPECT_TRUE(contains(e, "not a regular file")) << e.what();
}

TEST_F(HostileFiles, SaveRefusesTargetsThatAreNotRegularFiles) {
  std::filesystem::create_directory(path("folder"));
  expect_refused_target(path("folder"), "a folder");
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  expect_refused_target(path("fifo"), "FIFO");
  std::filesystem::create_symlink("/dev/null", path("to_null"));
  expect_refused_target(path("to_null"), "character device");
  std::filesystem::create_symlink(path("folder"), path("to_folder"));
  expect_refused_target(path("to_folder"), "a folder");
  std::filesystem::create_symlink(path("fifo"), path("to_fifo"));
  expect_refused_target(path("to_fifo"), "FIFO");
  // Nothing was written or replaced: the same entries, of the same kinds, and no temporaries.
  EXPECT_EQ(listing(),
            (std::vector<std::string>{"fifo", "folder", "to_fifo", "to_folder", "to_null"}));
  EXPECT_TRUE(std::filesystem::is_symlink(path("to_null")));
  EXPECT_TRUE(std::filesystem::is_fifo(path("fifo")));
  EXPECT_TRUE(std::filesystem::is_empty(path("folder")));
  // A link to a regular file is saved through, as torch.save does: the file it names is
  // replaced, the link stays a link.
  write_file(path("real"), "old");
  std::filesystem::create_symlink(path("real"), path("to_real"));
  ox::save_safetensors(path("to_real"), {{"w", ox::ones({2})}});
  EXPECT_TRUE(std::filesystem::is_symlink(path("to_real")));
  EXPECT_EQ(ox::load_safetensors(path("real")).at("w").sum().item<float>(), 2.0f);
}

// The pid of a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST_F(HostileFiles, SaveRemovesTemporariesOfDeadWritersOnly) {
  const std::string target = path("m.safetensors");
  const std::string dead =
      std::string(".m.safetensors.tmp.") + std::to_string(dead_pid()) + ".0.42";
  const std::string live =
      std::string(".m.safetensors.tmp.") + std::to_string(::getpid()) + ".7.42";
  const std::string other_target =
      std::string(".n.safetensors.tmp.") + std::to_string(dead_pid()) + ".0.1";
  const std::string not_ours =
      std::string(".m.safetensors.tmp.x") + std::to_string(dead_pid()) + ".0.1";
  for (const std::string& name : {dead, live, other_target, not_ours}) write_file(path(name), "x");
  ox::save_safetensors(target, {{"w", ox::ones({2})}});
  EXPECT_EQ(listing(), (std::vector<std::string>{live, not_ours, other_target, "m.safetensors"}));
}

TEST_F(HostileFiles, ASaveKilledMidWriteIsCleanedUpByTheNextSave) {
  const std::string target = path("ck.safetensors");
  ox::save_safetensors(target, {{"w", ox::zeros({4})}});
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {  // writes half a file, says so, then waits to be killed
    ::close(ready[0]);
    try {
      ox::io::write_file_atomically(target, [&](int fd) {
        ox::io::write_all(fd, "half", 4, target, "test");
        (void)!::write(ready[1], "r", 1);
        ::pause();
      });
    } catch (...) {  // never back into gtest in the child: the parent sees EOF and fails
    }
    ::_exit(1);
  }
  ::close(ready[1]);  // so that a child that died early is an EOF here, not a hang
  char byte = 0;
  const ssize_t got = ::read(ready[0], &byte, 1);
  ::close(ready[0]);
  if (got != 1) ::kill(child, SIGKILL);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(got, 1) << "the child did not reach the middle of its save";
  ASSERT_EQ(listing().size(), 2u) << "the killed save's temporary file";
  EXPECT_EQ(ox::load_safetensors(target).at("w").sum().item<float>(), 0.0f);  // old file intact
  ox::save_safetensors(target, {{"w", ox::ones({4})}});
  EXPECT_EQ(listing(), (std::vector<std::string>{"ck.safetensors"}));
  EXPECT_EQ(ox::load_safetensors(target).at("w").sum().item<float>(), 4.0f);
}

// ---- 6: readers refuse what is not a regular file, without blocking -------------------------

// Opens `fifo` for writing after a while, so that a reader that (wrongly) blocked in open comes
// back and the test fails instead of hanging.
class FifoUnblocker {
 public:
  explicit FifoUnblocker(std::string fifo)
      : thread_([this, fifo = std::move(fifo)] {
          for (int i = 0; i < 200 && !done_; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          if (done_) return;
          const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
          if (fd >= 0) ::close(fd);
        }) {}
  ~FifoUnblocker() {
    done_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

void expect_not_regular(const std::function<void()>& read, const std::string& target,
                        const std::string& what) {
  const ox::Error e = caught(read);
  EXPECT_EQ(e.kind(), ox::ErrorKind::Io) << e.what();
  EXPECT_TRUE(contains(e, target)) << e.what();
  EXPECT_TRUE(contains(e, what)) << e.what();
}

TEST_F(HostileFiles, ReadersRefuseFifosFoldersAndDevicesBeforeOpening) {
  const std::string fifo = path("weights.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directory(path("folder.safetensors"));
  const FifoUnblocker unblock(fifo);
  for (const auto& item :
       std::vector<std::pair<std::string, std::string>>{{fifo, "FIFO"},
                                                        {path("folder.safetensors"), "a folder"},
                                                        {"/dev/null", "character device"}}) {
    const std::string& target = item.first;  // named, not bound: lambdas capture them
    const std::string& what = item.second;
    expect_not_regular([&] { ox::SafetensorsFile::open(target); }, target, what);
    expect_not_regular([&] { ox::load_safetensors(target); }, target, what);
    expect_not_regular([&] { ox::verify_safetensors(target); }, target, what);
    expect_not_regular(
        [&] {
          ox::Checkpoint ck{.rng = nullptr};
          ox::load_checkpoint(target, ck);
        },
        target, what);
  }
}

// ---- 5: checksums ---------------------------------------------------------------------------

// A checkpoint of two extra tensors with known bytes: "extra.a" (f32, 16 bytes) is written
// first (larger elements first), then "extra.b" (u8, 3 bytes).
void write_checkpoint(const std::string& file) {
  ox::Checkpoint ck{.rng = nullptr};
  ck.extra.insert("a", ox::tensor({1.f, 2.f, 3.f, 4.f}));
  ck.extra.insert("b", ox::tensor(std::vector<uint8_t>{5, 6, 7}));
  ox::save_checkpoint(file, ck);
}

// Flips one bit of byte `at` (a file offset).
void flip_bit(const std::string& file, size_t at, int bit = 0) {
  std::string bytes = read_file(file);
  ASSERT_LT(at, bytes.size());
  bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
  write_file(file, bytes);
}

uint64_t data_start(const std::string& file) {
  return ox::SafetensorsFile::open(file).data_start();
}

// The CRC32C of "123456789" is 0xe3069283 (the check value of the Castagnoli polynomial).
TEST(Checksums, Crc32cCheckValue) {
  std::string header = R"({"__metadata__":{"oxmera.crc32c":"{\"d\":\"e3069283\"}"},)";
  header += entry("d", "U8", "[9]", 0, 9);
  header += "}";
  const std::string bytes = safetensors_bytes(header, "123456789");
  const auto sums = ox::verify_checksums(ox::SafetensorsFile::from_bytes(bytes, "digits"));
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].status, ox::TensorChecksum::Status::Ok);
  EXPECT_EQ(sums[0].computed, 0xe3069283u);
  EXPECT_EQ(sums[0].stored, 0xe3069283u);
}

TEST_F(HostileFiles, CheckpointsCarryChecksumsThatVerify) {
  write_checkpoint(path("ck.safetensors"));
  const ox::SafetensorsFile file = ox::SafetensorsFile::open(path("ck.safetensors"));
  EXPECT_TRUE(file.metadata().contains(std::string(ox::kSafetensorsChecksumKey)));
  const auto sums = ox::verify_safetensors(path("ck.safetensors"));
  ASSERT_EQ(sums.size(), 2u);
  for (const ox::TensorChecksum& c : sums) {
    EXPECT_EQ(c.status, ox::TensorChecksum::Status::Ok) << c.name;
    EXPECT_EQ(c.stored, c.computed) << c.name;
  }
  ox::Checkpoint back{.rng = nullptr};
  ox::load_checkpoint(path("ck.safetensors"), back);
  EXPECT_EQ(back.extra.at("b").to_vector<uint8_t>(), (std::vector<uint8_t>{5, 6, 7}));
  // save_safetensors keeps the Python library's bytes: no checksum entry.
  ox::save_safetensors(path("plain.safetensors"), {{"x", ox::ones({2})}});
  EXPECT_TRUE(ox::SafetensorsFile::open(path("plain.safetensors")).metadata().empty());
}

TEST_F(HostileFiles, AFlippedDataBitFailsTheLoadNamingTheTensor) {
  for (const auto& [offset, tensor] : std::vector<std::pair<size_t, std::string>>{
           {0, "extra.a"}, {15, "extra.a"}, {16, "extra.b"}, {18, "extra.b"}}) {
    const std::string file = path(std::string("ck") + std::to_string(offset) + ".safetensors");
    write_checkpoint(file);
    flip_bit(file, data_start(file) + offset, static_cast<int>(offset % 8));
    ox::Checkpoint ck{.rng = nullptr};
    const ox::Error e = caught([&] { ox::load_checkpoint(file, ck); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << e.what();
    EXPECT_TRUE(contains(e, std::string("'") + tensor + "'")) << e.what();
    EXPECT_TRUE(contains(e, file)) << e.what();
    EXPECT_TRUE(contains(e, "checksum")) << e.what();
    EXPECT_TRUE(ck.extra.empty());
    EXPECT_EQ(kind_of([&] { ox::load_safetensors(file); }), ox::ErrorKind::Format);
    for (const ox::TensorChecksum& c : ox::verify_safetensors(file))
      EXPECT_EQ(c.status, c.name == tensor ? ox::TensorChecksum::Status::Mismatch
                                           : ox::TensorChecksum::Status::Ok)
          << c.name;
  }
}

TEST_F(HostileFiles, FlippedHeaderBitsAreFormatErrorsOrMismatches) {
  const std::string file = path("ck.safetensors");
  write_checkpoint(file);
  const std::string bytes = read_file(file);
  const uint64_t start = data_start(file);
  // The padding before the data (a space turns into '!'): the header no longer parses.
  ASSERT_EQ(bytes[start - 1], ' ') << "the header is padded to 8 bytes with spaces";
  flip_bit(file, start - 1, 0);
  {
    ox::Checkpoint ck{.rng = nullptr};
    EXPECT_EQ(kind_of([&] { ox::load_checkpoint(file, ck); }), ox::ErrorKind::Format);
  }
  // A digit of a stored checksum (within the hex range: '0'..'7' flip to '1'..'6' or back):
  // that tensor's checksum no longer matches.
  write_checkpoint(file);
  const std::string text = read_file(file);
  const size_t key = text.find("extra.b\\\":\\\"");
  ASSERT_NE(key, std::string::npos);
  size_t digit = key + std::string("extra.b\\\":\\\"").size();
  const size_t digits_end = digit + 8;  // the 8 hex digits of the checksum
  while (digit < digits_end && !(text[digit] >= '0' && text[digit] <= '7')) ++digit;
  ASSERT_LT(digit, digits_end) << "no digit 0-7 among the checksum's 8 hex digits";
  flip_bit(file, digit, 0);
  ox::Checkpoint ck{.rng = nullptr};
  const ox::Error e = caught([&] { ox::load_checkpoint(file, ck); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(contains(e, "'extra.b'")) << e.what();
  // A renamed tensor: its checksum names a tensor that is not there.
  write_checkpoint(file);
  std::string renamed = read_file(file);
  const size_t name = renamed.find("\"extra.a\":{");
  ASSERT_NE(name, std::string::npos);
  renamed[name + 7] = 'z';  // "extra.z"
  write_file(file, renamed);
  const ox::Error orphan = caught([&] { ox::verify_safetensors(file); });
  EXPECT_EQ(orphan.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(contains(orphan, "'extra.a'")) << orphan.what();
}

TEST_F(HostileFiles, CheckpointsWithoutChecksumsStillLoad) {
  // An older checkpoint: the same layout and metadata, no checksum entry.
  const std::map<std::string, std::string> meta = {{"format", "oxmera-checkpoint"},
                                                   {"version", "1"},
                                                   {"step", "3"},
                                                   {"epoch", "1"},
                                                   {"parts", ""}};
  ox::save_safetensors(path("old.safetensors"), {{"extra.x", ox::full({2}, 7.0)}}, meta);
  ox::Checkpoint ck{.rng = nullptr};
  ox::load_checkpoint(path("old.safetensors"), ck);
  EXPECT_EQ(ck.step, 3);
  EXPECT_EQ(ck.extra.at("x").sum().item<float>(), 14.0f);
  const auto sums = ox::verify_safetensors(path("old.safetensors"));
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].status, ox::TensorChecksum::Status::Missing);
}

TEST_F(HostileFiles, MalformedChecksumMetadataIsAFormatError) {
  for (const std::string value :
       {"not json", "[1]", R"({"x":"12345"})", R"({"x":"ABCDEF01"})", R"({"x":7})"}) {
    std::string header = R"({"__metadata__":{"oxmera.crc32c":)";
    header += '"';
    for (char c : value) header += c == '"' ? std::string("\\\"") : std::string(1, c);
    header += "\"}," + entry("x", "U8", "[1]", 0, 1) + "}";
    const ox::Error e = caught([&] {
      ox::verify_checksums(ox::SafetensorsFile::from_bytes(safetensors_bytes(header, "a"), "m"));
    });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << value;
    EXPECT_TRUE(contains(e, "oxmera.crc32c")) << e.what();
  }
}

// ---- 5, 7: `oxmera inspect` ------------------------------------------------------------------

// The oxmera command of this build, empty when the tools are not built.
std::string cli_path() { return oxtest::kCliPath; }

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun run_cli(const std::vector<std::string>& args, const std::string& scratch) {
  std::string command = "'";
  command += cli_path();
  command += "'";
  for (const std::string& a : args) {
    command += " '";
    command += a;
    command += "'";
  }
  const std::string out = scratch + "/cli.out", err = scratch + "/cli.err";
  command += std::string(" >'") + out + "' 2>'" + err + "'";
  const int status = std::system(command.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

bool has_raw_controls(const std::string& text) {
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && b != '\n') || b == 0x7F || b == 0xFF) return true;
  }
  return false;
}

TEST_F(HostileFiles, InspectVerifyReportsEachTensorAndExitsTwoOnAMismatch) {
  if (cli_path().empty()) GTEST_SKIP() << "the oxmera command is not part of this build";
  const std::string scratch = dir_.string();
  write_checkpoint(path("ck.safetensors"));
  CliRun r = run_cli({"inspect", path("ck.safetensors"), "--verify"}, scratch);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verify: 2 ok, 0 MISMATCH, 0 without a checksum"), std::string::npos)
      << r.out;
  flip_bit(path("ck.safetensors"), data_start(path("ck.safetensors")) + 17);
  r = run_cli({"inspect", path("ck.safetensors"), "--verify"}, scratch);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH (stored "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify: 1 ok, 1 MISMATCH, 0 without a checksum"), std::string::npos)
      << r.out;
  // Without --verify the listing does not read the data: exit 0.
  EXPECT_EQ(run_cli({"inspect", path("ck.safetensors")}, scratch).code, 0);
  ox::save_safetensors(path("plain.safetensors"), {{"x", ox::ones({2})}});
  r = run_cli({"inspect", path("plain.safetensors"), "--verify"}, scratch);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no checksum"), std::string::npos) << r.out;
}

TEST_F(HostileFiles, InspectEscapesControlCharactersFromTheFile) {
  if (cli_path().empty()) GTEST_SKIP() << "the oxmera command is not part of this build";
  const std::string scratch = dir_.string();
  // ESC, CR, LF, BEL and a C1 CSI (U+009B) in a tensor name, a metadata key and its value.
  const std::string nasty = R"(a\u001b[2J\r\n\u0007\u009bz)";
  const std::string header = std::string(R"({"__metadata__":{")") + nasty + R"(":")" + nasty +
                             R"("},)" + entry(nasty, "U8", "[1]", 0, 1) + "}";
  // The file name itself holds a byte that is not UTF-8.
  const std::string file = path("bad\xff.safetensors");
  write_file(file, safetensors_bytes(header, "\x01"));
  CliRun r = run_cli({"inspect", file, "--verify"}, scratch);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_FALSE(has_raw_controls(r.out)) << r.out;
  EXPECT_NE(r.out.find(R"(a\x1b[2J\r\n\x07\xc2\x9bz)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"(bad\xff.safetensors)"), std::string::npos) << r.out;
  // An error message quoting a name from the file is escaped too.
  const std::string twice = std::string("{") + entry(nasty, "U8", "[0]", 0, 0) + "," +
                            entry(nasty, "U8", "[0]", 0, 0) + "}";
  write_file(path("twice.safetensors"), safetensors_bytes(twice));
  r = run_cli({"inspect", path("twice.safetensors")}, scratch);
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(has_raw_controls(r.err)) << r.err;
  EXPECT_NE(r.err.find(R"(duplicate entry 'a\x1b[2J\r\n\x07\xc2\x9bz')"), std::string::npos)
      << r.err;
}

}  // namespace
