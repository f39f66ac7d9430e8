// TensorBoard event files (oxmera/io/log.h): CRC32C against published vectors, and files decoded
// back by a minimal TFRecord + protobuf decoder written here independently of the writer (a
// bitwise CRC32C, hand-rolled varint and fixed-width reads).

#include <oxmera/io/log.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/crc32c.h"
#include "io/io_test_util.h"
#include "test_util.h"

namespace {

using ox::ErrorKind;
using ox::io::TensorBoardWriter;
using oxtest::read_file;
using oxtest::write_file;

// ---- The independent decoder --------------------------------------------------------------

// One bit at a time, straight from the definition (reflected polynomial 0x82F63B78).
uint32_t bitwise_crc32c(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t little_endian(std::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    value |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return value;
}

// The data of every TFRecord frame, both CRCs checked; throws std::runtime_error otherwise.
std::vector<std::string> read_frames(const std::string& file) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    if (file.size() - at < 12) throw std::runtime_error("truncated frame header");
    const std::string_view length_bytes(file.data() + at, 8);
    if (little_endian(std::string_view(file.data() + at + 8, 4)) !=
        masked(bitwise_crc32c(length_bytes)))
      throw std::runtime_error("length crc mismatch");
    const uint64_t length = little_endian(length_bytes);
    at += 12;
    if (file.size() - at < length + 4) throw std::runtime_error("truncated frame data");
    const std::string data = file.substr(at, length);
    if (little_endian(std::string_view(file.data() + at + length, 4)) !=
        masked(bitwise_crc32c(data)))
      throw std::runtime_error("data crc mismatch");
    records.push_back(data);
    at += length + 4;
  }
  return records;
}

struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t integer = 0;  // a varint, or the bits of a fixed64/fixed32
  std::string bytes;     // length-delimited
};

std::vector<Field> parse_message(std::string_view data) {
  size_t at = 0;
  auto varint = [&] {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= data.size()) throw std::runtime_error("truncated varint");
      const auto byte = static_cast<unsigned char>(data[at++]);
      value |= uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80u) == 0) return value;
    }
    throw std::runtime_error("varint longer than 10 bytes");
  };
  auto take = [&](uint64_t n) {
    if (data.size() - at < n) throw std::runtime_error("truncated field");
    const std::string_view out = data.substr(at, n);
    at += n;
    return out;
  };
  std::vector<Field> fields;
  while (at < data.size()) {
    const uint64_t key = varint();
    Field field{static_cast<uint32_t>(key >> 3), static_cast<uint32_t>(key & 7), 0, {}};
    switch (field.wire_type) {
      case 0:
        field.integer = varint();
        break;
      case 1:
        field.integer = little_endian(take(8));
        break;
      case 2:
        field.bytes = std::string(take(varint()));
        break;
      case 5:
        field.integer = little_endian(take(4));
        break;
      default:
        throw std::runtime_error("unexpected wire type");
    }
    fields.push_back(field);
  }
  return fields;
}

struct Scalar {
  std::string tag;
  float value = 0;
};

struct Event {
  std::optional<double> wall_time;
  int64_t step = 0;
  std::optional<std::string> file_version;
  std::vector<Scalar> scalars;  // Summary.value
};

void expect_wire_type(const Field& field, uint32_t wire_type) {
  if (field.wire_type != wire_type)
    throw std::runtime_error("field " + std::to_string(field.number) + " has wire type " +
                             std::to_string(field.wire_type));
}

// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
// summary = 5 (Summary: repeated Value value = 1; Value: tag = 1, simple_value = 2 (float)).
Event decode_event(const std::string& data) {
  Event event;
  for (const Field& field : parse_message(data)) {
    if (field.number == 1) {
      expect_wire_type(field, 1);
      event.wall_time = std::bit_cast<double>(field.integer);
    } else if (field.number == 2) {
      expect_wire_type(field, 0);
      event.step = static_cast<int64_t>(field.integer);
    } else if (field.number == 3) {
      expect_wire_type(field, 2);
      event.file_version = field.bytes;
    } else if (field.number == 5) {
      expect_wire_type(field, 2);
      for (const Field& value : parse_message(field.bytes)) {
        if (value.number != 1) throw std::runtime_error("unknown Summary field");
        expect_wire_type(value, 2);
        Scalar scalar;
        bool has_value = false;
        for (const Field& part : parse_message(value.bytes)) {
          if (part.number == 1) {
            expect_wire_type(part, 2);
            scalar.tag = part.bytes;
          } else if (part.number == 2) {
            expect_wire_type(part, 5);
            scalar.value = std::bit_cast<float>(static_cast<uint32_t>(part.integer));
            has_value = true;
          } else {
            throw std::runtime_error("unknown Summary.Value field");
          }
        }
        if (!has_value) throw std::runtime_error("a Summary.Value without simple_value");
        event.scalars.push_back(scalar);
      }
    } else {
      throw std::runtime_error("unknown Event field");
    }
  }
  return event;
}

std::vector<Event> decode_file(const std::string& path) {
  std::vector<Event> events;
  for (const std::string& record : read_frames(read_file(path)))
    events.push_back(decode_event(record));
  return events;
}

std::string decode_failure(const std::string& file) {
  try {
    for (const std::string& record : read_frames(file)) decode_event(record);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// ---- CRC32C ---------------------------------------------------------------------------------

TEST(Crc32c, MatchesPublishedVectors) {
  // The check value of CRC-32C, and RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(ox::io::crc32c("123456789", 9), 0xE3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(ox::io::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  const std::string ones(32, '\xFF');
  EXPECT_EQ(ox::io::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(ox::io::crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
  EXPECT_EQ(ox::io::crc32c("", 0), 0u);
  // The test's bitwise version agrees, so the decoder below checks against the same function.
  EXPECT_EQ(bitwise_crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(bitwise_crc32c(zeros), 0x8A9136AAu);
}

TEST(Crc32c, ContinuesAcrossPieces) {
  const std::string text = "The quick brown fox jumps over the lazy dog, 0123456789";
  for (size_t split : {size_t{0}, size_t{1}, size_t{17}, text.size()}) {
    const uint32_t first = ox::io::crc32c(text.data(), split);
    EXPECT_EQ(ox::io::crc32c(text.data() + split, text.size() - split, first), bitwise_crc32c(text))
        << split;
  }
}

TEST(Crc32c, MaskRotatesAndOffsets) {
  EXPECT_EQ(ox::io::mask_crc32c(0u), 0xa282ead8u);
  // 1 rotated right by 15 is 1 << 17 = 0x00020000; plus 0xa282ead8 is 0xa284ead8.
  EXPECT_EQ(ox::io::mask_crc32c(1u), 0xa284ead8u);
  // The rotation of all ones is all ones; the addition wraps modulo 2^32.
  EXPECT_EQ(ox::io::mask_crc32c(0xFFFFFFFFu), 0xa282ead7u);
  // 0xE3069283 >> 15 = 0x0001C60D; its low 15 bits 0x1283 << 17 = 0x25060000; together
  // 0x2507C60D; plus 0xa282ead8 = 0xC78AB0E5.
  EXPECT_EQ(ox::io::mask_crc32c(0xE3069283u), 0xC78AB0E5u);
}

// ---- The writer -----------------------------------------------------------------------------

class TensorBoard : public oxtest::ScratchDir {};

TEST_F(TensorBoard, ScalarsDecodeBack) {
  const std::string long_tag(200, 't');  // its length takes a two-byte varint
  const double before = now_seconds();
  std::string file;
  {
    TensorBoardWriter writer(path("logs/run1"));  // created with its parent
    file = writer.path();
    writer.add_scalar("train/loss", 0.1, 1, 1000.25);
    writer.add_scalar("lr", 3e-4, int64_t{1} << 40, 1e9 + 0.5);
    writer.add_scalar(long_tag, -2.5, -7, 5.0);
    writer.add_scalar("now", 1.0, 0);
    writer.add_scalars({{"b", 2.0}, {"a", 1.0}}, 9, 6.0);
  }
  const double after = now_seconds();

  const auto events = decode_file(file);
  ASSERT_EQ(events.size(), 6u);
  ASSERT_TRUE(events[0].file_version.has_value());
  EXPECT_EQ(*events[0].file_version, "brain.Event:2");
  ASSERT_TRUE(events[0].wall_time.has_value());
  EXPECT_GE(*events[0].wall_time, std::floor(before));
  EXPECT_LE(*events[0].wall_time, after);
  EXPECT_TRUE(events[0].scalars.empty());

  struct Expected {
    int64_t step;
    double wall_time;
    std::vector<std::pair<std::string, float>> scalars;
  };
  const std::vector<Expected> expected = {
      {1, 1000.25, {{"train/loss", 0.1f}}},
      {int64_t{1} << 40, 1e9 + 0.5, {{"lr", 3e-4f}}},
      {-7, 5.0, {{long_tag, -2.5f}}},
      {9, 6.0, {{"a", 1.0f}, {"b", 2.0f}}},
  };
  const std::vector<size_t> at = {1, 2, 3, 5};
  for (size_t i = 0; i < expected.size(); ++i) {
    const Event& event = events[at[i]];
    EXPECT_FALSE(event.file_version.has_value());
    EXPECT_EQ(event.step, expected[i].step);
    ASSERT_TRUE(event.wall_time.has_value());
    EXPECT_EQ(*event.wall_time, expected[i].wall_time);
    ASSERT_EQ(event.scalars.size(), expected[i].scalars.size());
    for (size_t j = 0; j < event.scalars.size(); ++j) {
      EXPECT_EQ(event.scalars[j].tag, expected[i].scalars[j].first);
      EXPECT_EQ(event.scalars[j].value, expected[i].scalars[j].second);
    }
  }
  // The scalar without a wall time was stamped now.
  ASSERT_EQ(events[4].scalars.size(), 1u);
  EXPECT_EQ(events[4].scalars[0].tag, "now");
  ASSERT_TRUE(events[4].wall_time.has_value());
  EXPECT_GE(*events[4].wall_time, before);
  EXPECT_LE(*events[4].wall_time, after);
}

TEST_F(TensorBoard, FileIsNamedWithTimeAndHost) {
  const auto before = static_cast<int64_t>(now_seconds());
  TensorBoardWriter writer(dir_.string());
  const auto after = static_cast<int64_t>(now_seconds());
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  const std::filesystem::path file(writer.path());
  EXPECT_EQ(file.parent_path(), dir_);
  const std::string name = file.filename().string();
  const std::string prefix = "events.out.tfevents.";
  ASSERT_EQ(name.substr(0, prefix.size()), prefix) << name;
  const size_t dot = name.find('.', prefix.size());
  ASSERT_NE(dot, std::string::npos) << name;
  const int64_t seconds = std::stoll(name.substr(prefix.size(), dot - prefix.size()));
  EXPECT_GE(seconds, before);
  EXPECT_LE(seconds, after);
  EXPECT_EQ(name.substr(dot + 1), host);
}

TEST_F(TensorBoard, WritersInOneFolderGetDistinctFiles) {
  TensorBoardWriter first(dir_.string());
  TensorBoardWriter second(dir_.string());
  EXPECT_NE(first.path(), second.path());
  EXPECT_EQ(listing().size(), 2u);
}

TEST_F(TensorBoard, FlushWritesBufferedRecords) {
  TensorBoardWriter writer(dir_.string());
  EXPECT_EQ(decode_file(writer.path()).size(), 1u);  // the version record is written at once
  writer.add_scalar("x", 4.0, 3, 1.0);
  writer.flush();
  const auto events = decode_file(writer.path());
  ASSERT_EQ(events.size(), 2u);
  ASSERT_EQ(events[1].scalars.size(), 1u);
  EXPECT_EQ(events[1].scalars[0].value, 4.0f);
  EXPECT_EQ(events[1].step, 3);
}

TEST_F(TensorBoard, LargeBufferIsWrittenWithoutFlush) {
  TensorBoardWriter writer(dir_.string());
  const std::string tag(100, 'x');
  constexpr int kScalars = 1000;  // about 130 KiB of records, past the 64 KiB buffer
  for (int i = 0; i < kScalars; ++i) writer.add_scalar(tag, i, i, 1.0);
  const auto written = decode_file(writer.path());
  EXPECT_GT(written.size(), 1u);
  EXPECT_LT(written.size(), kScalars + 1u);
  writer.flush();
  const auto events = decode_file(writer.path());
  ASSERT_EQ(events.size(), kScalars + 1u);
  for (int i = 0; i < kScalars; ++i) {
    EXPECT_EQ(events[i + 1].step, i);
    ASSERT_EQ(events[i + 1].scalars.size(), 1u);
    EXPECT_EQ(events[i + 1].scalars[0].value, static_cast<float>(i));
  }
}

TEST_F(TensorBoard, NonFiniteValuesAreKept) {
  std::string file;
  {
    TensorBoardWriter writer(dir_.string());
    file = writer.path();
    writer.add_scalar("nan", std::nan(""), 1, 1.0);
    writer.add_scalar("inf", HUGE_VAL, 2, 1.0);
  }
  const auto events = decode_file(file);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(std::isnan(events[1].scalars.at(0).value));
  EXPECT_EQ(events[2].scalars.at(0).value, HUGE_VALF);
}

TEST_F(TensorBoard, DecoderDetectsCorruption) {
  std::string file;
  {
    TensorBoardWriter writer(dir_.string());
    file = writer.path();
    writer.add_scalar("loss", 0.5, 10, 2.0);
  }
  const std::string good = read_file(file);
  ASSERT_EQ(decode_failure(good), "");
  const size_t second = 12 + little_endian(std::string_view(good.data(), 8)) + 4;

  std::string bad_data = good;
  bad_data[second + 12 + 3] ^= 0x01;  // inside the scalar event
  EXPECT_EQ(decode_failure(bad_data), "data crc mismatch");

  std::string bad_length = good;
  bad_length[second] ^= 0x01;
  EXPECT_EQ(decode_failure(bad_length), "length crc mismatch");

  std::string bad_crc = good;
  bad_crc[good.size() - 1] ^= 0x80;
  EXPECT_EQ(decode_failure(bad_crc), "data crc mismatch");

  EXPECT_EQ(decode_failure(good.substr(0, good.size() - 2)), "truncated frame data");
}

TEST_F(TensorBoard, LogdirThatIsAFileIsAnIoError) {
  write_file(path("taken"), "x");
  const ox::Error error = oxtest::caught([&] { TensorBoardWriter writer(path("taken")); });
  EXPECT_EQ(error.kind(), ErrorKind::Io);
  EXPECT_TRUE(oxtest::contains(error, "[TensorBoardWriter]")) << error.what();
  EXPECT_TRUE(oxtest::contains(error, path("taken"))) << error.what();
}

}  // namespace
