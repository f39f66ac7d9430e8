// TensorBoard event files: TFRecord frames (length, masked CRC32C of the length, data, masked
// CRC32C of the data) holding tensorflow.Event protobufs encoded by hand. Field numbers from
// tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/protobuf_wire.h"
#include "oxmera/core/error.h"
#include "oxmera/io/log.h"

namespace ox::io {
namespace {

constexpr const char* kTensorBoardWriter = "TensorBoardWriter";
constexpr size_t kBufferLimit = 64 * 1024;

// tensorflow.Event
constexpr uint32_t kEventWallTime = 1;     // double
constexpr uint32_t kEventStep = 2;         // int64
constexpr uint32_t kEventFileVersion = 3;  // string
constexpr uint32_t kEventSummary = 5;      // Summary
// tensorflow.Summary
constexpr uint32_t kSummaryValue = 1;  // repeated Value
// tensorflow.Summary.Value
constexpr uint32_t kValueTag = 1;          // string
constexpr uint32_t kValueSimpleValue = 2;  // float

double seconds_since_epoch() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string encode_value(std::string_view tag, double value) {
  std::string out;
  protobuf::append_bytes(out, kValueTag, tag);
  protobuf::append_float(out, kValueSimpleValue, static_cast<float>(value));
  return out;
}

std::string encode_scalar_event(const std::string& summary, int64_t step, double wall_time) {
  std::string event;
  protobuf::append_double(event, kEventWallTime, wall_time);
  protobuf::append_int64(event, kEventStep, step);
  protobuf::append_bytes(event, kEventSummary, summary);
  return event;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& logdir) {
  std::error_code error;
  std::filesystem::create_directories(logdir, error);
  OX_CHECK(!error, Io, kTensorBoardWriter, "cannot create the log folder '", logdir,
           "': ", error.message());
  OX_CHECK(std::filesystem::is_directory(logdir, error), Io, kTensorBoardWriter, "'", logdir,
           "' is not a folder");

  const double now = seconds_since_epoch();
  const std::string base = (std::filesystem::path(logdir) / "events.out.tfevents.").string() +
                           std::to_string(static_cast<int64_t>(now)) + "." + host_name();
  // Two writers started in the same second in one folder get distinct files.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    path_ = attempt == 0 ? base : base + "." + std::to_string(attempt);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt >= 1000))
      OX_FAIL(Io, kTensorBoardWriter, "cannot create '", path_, "': ", std::strerror(errno));
  }

  std::string event;
  protobuf::append_double(event, kEventWallTime, now);
  protobuf::append_bytes(event, kEventFileVersion, "brain.Event:2");
  append_record(event);
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  try {
    flush();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; flush() reports
  }
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::add_scalar(std::string_view tag, double value, int64_t step,
                                   std::optional<double> wall_time) {
  std::string summary;
  protobuf::append_bytes(summary, kSummaryValue, encode_value(tag, value));
  append_record(encode_scalar_event(summary, step, wall_time.value_or(seconds_since_epoch())));
}

void TensorBoardWriter::add_scalars(const std::map<std::string, double>& values, int64_t step,
                                    std::optional<double> wall_time) {
  if (values.empty()) return;
  std::string summary;
  for (const auto& [tag, value] : values)
    protobuf::append_bytes(summary, kSummaryValue, encode_value(tag, value));
  append_record(encode_scalar_event(summary, step, wall_time.value_or(seconds_since_epoch())));
}

void TensorBoardWriter::append_record(const std::string& event) {
  std::string length;
  protobuf::append_little_endian(length, event.size(), 8);
  std::string crc;
  protobuf::append_little_endian(crc, mask_crc32c(crc32c(length.data(), length.size())), 4);
  pending_ += length;
  pending_ += crc;
  pending_ += event;
  crc.clear();
  protobuf::append_little_endian(crc, mask_crc32c(crc32c(event.data(), event.size())), 4);
  pending_ += crc;
  if (pending_.size() >= kBufferLimit) flush();
}

void TensorBoardWriter::flush() {
  if (pending_.empty() || fd_ < 0) return;
  // Cleared first: a failing write reports once instead of on every later call.
  const std::string bytes = std::move(pending_);
  pending_.clear();
  write_all(fd_, bytes.data(), bytes.size(), path_, kTensorBoardWriter);
}

}  // namespace ox::io
