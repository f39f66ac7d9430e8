// Every malformed safetensors file is refused with its own message naming the file and the
// tensor: ErrorKind::Format (DType for a format dtype oxmera lacks, Io for OS failures).

#include <cstring>

#include "io/io_test_util.h"
#include "test_util.h"

namespace {

using oxtest::entry;
using oxtest::safetensors_bytes;
using oxtest::u64_le;

class SafetensorsErrors : public oxtest::ScratchDir {
 protected:
  // The error opening a file of these bytes; checks the kind, that the message begins with
  // the op name and names the file, and that it contains each of `parts`.
  void expect_refused(const std::string& bytes, ox::ErrorKind kind,
                      const std::vector<std::string>& parts) {
    const std::string file = path("bad.safetensors");
    oxtest::write_file(file, bytes);
    const ox::Error error = oxtest::caught([&] { ox::SafetensorsFile::open(file); });
    EXPECT_EQ(error.kind(), kind) << error.what();
    EXPECT_EQ(std::string(error.what()).rfind("[safetensors] " + file + ": ", 0), 0u)
        << error.what();
    for (const std::string& part : parts)
      EXPECT_TRUE(oxtest::contains(error, part)) << error.what();
    // load_safetensors reports the same.
    EXPECT_EQ(oxtest::kind_of([&] { ox::load_safetensors(file); }), kind);
  }
};

TEST_F(SafetensorsErrors, FileShorterThanTheLength) {
  expect_refused("", ox::ErrorKind::Format, {"0 bytes is shorter than the 8-byte header length"});
  expect_refused(std::string("\x02\0\0", 3), ox::ErrorKind::Format, {"3 bytes is shorter"});
}

TEST_F(SafetensorsErrors, HeaderLengthOverTheLimit) {
  expect_refused(u64_le(100'000'001) + std::string(16, ' '), ox::ErrorKind::Format,
                 {"header length 100000001 exceeds the limit of 100000000"});
  expect_refused(u64_le(UINT64_MAX) + "{}", ox::ErrorKind::Format, {"exceeds the limit"});
}

TEST_F(SafetensorsErrors, HeaderLengthPastTheEndOfFile) {
  expect_refused(u64_le(100) + "{}      ", ox::ErrorKind::Format,
                 {"header length 100 runs past the end of the file (16 bytes)"});
}

TEST_F(SafetensorsErrors, HeaderNotUtf8) {
  expect_refused(safetensors_bytes("{\"\xC3\x28\":{}}"), ox::ErrorKind::Format,
                 {"header is not valid UTF-8"});
  // An encoded surrogate (U+D800) is not UTF-8 either.
  expect_refused(safetensors_bytes("{\"\xED\xA0\x80\":{}}"), ox::ErrorKind::Format,
                 {"not valid UTF-8"});
}

TEST_F(SafetensorsErrors, HeaderNotJson) {
  expect_refused(safetensors_bytes("{\"x\":"), ox::ErrorKind::Format, {"header is not valid JSON"});
  expect_refused(u64_le(0), ox::ErrorKind::Format, {"header is not valid JSON"});
}

TEST_F(SafetensorsErrors, HeaderNotAnObject) {
  expect_refused(safetensors_bytes("[1,2]"), ox::ErrorKind::Format,
                 {"header is not a JSON object but array"});
  expect_refused(safetensors_bytes("\"text\""), ox::ErrorKind::Format, {"not a JSON object"});
}

TEST_F(SafetensorsErrors, EntryNotAnObjectOrIncomplete) {
  expect_refused(safetensors_bytes("{\"w\":[1]}"), ox::ErrorKind::Format,
                 {"entry of tensor 'w' is not an object"});
  expect_refused(safetensors_bytes(R"({"w":{"shape":[],"data_offsets":[0,1]}})", "\0"),
                 ox::ErrorKind::Format, {"tensor 'w' has no \"dtype\""});
  expect_refused(safetensors_bytes(R"({"w":{"dtype":"U8","data_offsets":[0,1]}})", "\0"),
                 ox::ErrorKind::Format, {"tensor 'w' has no \"shape\""});
}

TEST_F(SafetensorsErrors, UnknownDType) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "F7", "[1]", 0, 1) + "}",
                                   std::string(1, '\0')),
                 ox::ErrorKind::Format, {"tensor 'w' has unknown dtype \"F7\""});
  expect_refused(safetensors_bytes(R"({"w":{"dtype":3,"shape":[1],"data_offsets":[0,1]}})", "x"),
                 ox::ErrorKind::Format, {"dtype of tensor 'w' is not a string"});
}

TEST_F(SafetensorsErrors, FormatDTypesOxmeraLacksAreRefusedByName) {
  for (const char* dtype : {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "C64"})
    expect_refused(
        safetensors_bytes(std::string("{") + entry("w", dtype, "[0]", 0, 0) + "}"),
        ox::ErrorKind::DType,
        {std::string("tensor 'w' has dtype ") + dtype + ", which oxmera does not support"});
}

TEST_F(SafetensorsErrors, NegativeDim) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[2,-1]", 0, 0) + "}"),
                 ox::ErrorKind::Format, {"shape of tensor 'w' has negative dim -1"});
}

TEST_F(SafetensorsErrors, NonIntegerDim) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[1.5]", 0, 1) + "}", "x"),
                 ox::ErrorKind::Format, {"shape of tensor 'w' has non-integer dim 1.5"});
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[\"1\"]", 0, 1) + "}", "x"),
                 ox::ErrorKind::Format, {"non-integer dim \"1\""});
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "3", 0, 3) + "}", "xyz"),
                 ox::ErrorKind::Format, {"shape of tensor 'w' is not an array"});
}

TEST_F(SafetensorsErrors, DataOffsetsNotTwoIntegers) {
  for (const char* offsets : {"[0]", "[0,1,2]", "[0,1.0]", "[\"0\",1]", "[-1,0]", "{}"})
    expect_refused(
        safetensors_bytes(
            std::string(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":)") + offsets + "}}", "x"),
        ox::ErrorKind::Format, {"data_offsets of tensor 'w' are not two non-negative integers"});
}

TEST_F(SafetensorsErrors, DataOffsetsBackwards) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[0]", 2, 1) + "}", "xx"),
                 ox::ErrorKind::Format,
                 {"data_offsets [2, 1] of tensor 'w' end before they begin"});
}

TEST_F(SafetensorsErrors, OffsetsNotStartingAtZero) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[1]", 1, 2) + "}", "xx"),
                 ox::ErrorKind::Format,
                 {"data does not start at offset 0: the first tensor 'w' begins at 1"});
}

TEST_F(SafetensorsErrors, HoleBetweenTensors) {
  expect_refused(safetensors_bytes(std::string("{") + entry("a", "U8", "[1]", 0, 1) +
                                       std::string(",") + entry("b", "U8", "[1]", 3, 4) + "}",
                                   "abcd"),
                 ox::ErrorKind::Format, {"hole of 2 bytes before tensor 'b' at offset 3"});
}

TEST_F(SafetensorsErrors, OverlappingTensors) {
  expect_refused(safetensors_bytes(std::string("{") + entry("a", "U8", "[2]", 0, 2) +
                                       std::string(",") + entry("b", "U8", "[2]", 1, 3) + "}",
                                   "abc"),
                 ox::ErrorKind::Format, {"tensor 'b' at [1, 3) overlaps tensor 'a' ending at 2"});
}

TEST_F(SafetensorsErrors, OffsetsPastTheBuffer) {
  // A claim of a terabyte in a file of a few bytes: refused before anything is allocated.
  expect_refused(
      safetensors_bytes(
          std::string("{") + entry("w", "U8", "[1099511627776]", 0, 1099511627776) + "}", "abc"),
      ox::ErrorKind::Format,
      {"tensor 'w' at [0, 1099511627776) runs past the end of the data buffer (3 bytes)"});
}

TEST_F(SafetensorsErrors, SizeNotNumelTimesElementSize) {
  expect_refused(
      safetensors_bytes(std::string("{") + entry("w", "F32", "[2,2]", 0, 12) + "}",
                        std::string(12, '\0')),
      ox::ErrorKind::Format,
      {"tensor 'w' (F32, shape [2, 2]) needs 16 bytes but data_offsets [0, 12] hold 12"});
}

TEST_F(SafetensorsErrors, SizeOverflowsSixtyFourBits) {
  // 2^32 * 2^32 elements wraps to 0 in 64 bits: a checked product must refuse it.
  expect_refused(safetensors_bytes(std::string("{") +
                                   entry("w", "F64", "[4294967296,4294967296]", 0, 0) + "}"),
                 ox::ErrorKind::Format, {"tensor 'w' of shape", "more bytes than 64 bits count"});
  // No bytes at all (a zero dim), but strides of the other dims would not fit in 64 bits.
  expect_refused(safetensors_bytes(std::string("{") +
                                   entry("z", "F32", "[0,4611686018427387904,4]", 0, 0) + "}"),
                 ox::ErrorKind::Format, {"tensor 'z' of shape", "more bytes than 64 bits count"});
}

TEST_F(SafetensorsErrors, BytesAfterTheLastTensor) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[1]", 0, 1) + "}", "xyz"),
                 ox::ErrorKind::Format, {"2 bytes after the last tensor 'w'"});
  expect_refused(safetensors_bytes("{}", "x"), ox::ErrorKind::Format,
                 {"1 bytes of data after a header of no tensors"});
}

TEST_F(SafetensorsErrors, DuplicateNames) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[1]", 0, 1) +
                                       std::string(",") + entry("w", "U8", "[1]", 0, 1) + "}",
                                   "x"),
                 ox::ErrorKind::Format, {"duplicate entry 'w' in the header"});
  expect_refused(safetensors_bytes(
                     R"({"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", "x"),
                 ox::ErrorKind::Format, {"duplicate key 'dtype' inside entry 'w'"});
  expect_refused(safetensors_bytes(R"({"__metadata__":{"k":"a","k":"b"}})"), ox::ErrorKind::Format,
                 {"duplicate key 'k' inside entry '__metadata__'"});
}

TEST_F(SafetensorsErrors, NonStringMetadata) {
  expect_refused(safetensors_bytes(R"({"__metadata__":{"epoch":3}})"), ox::ErrorKind::Format,
                 {"__metadata__ value of key 'epoch' is not a string: 3"});
  expect_refused(safetensors_bytes(R"({"__metadata__":["a"]})"), ox::ErrorKind::Format,
                 {"__metadata__ is not an object"});
}

TEST_F(SafetensorsErrors, NestingDeeperThanAHeader) {
  expect_refused(safetensors_bytes(std::string("{") + entry("w", "U8", "[[[1]]]", 0, 1) + "}", "x"),
                 ox::ErrorKind::Format, {"nests deeper than a safetensors header"});
  expect_refused(safetensors_bytes(std::string(100000, '[') + std::string(100000, ']')),
                 ox::ErrorKind::Format, {"nests deeper"});
}

TEST_F(SafetensorsErrors, BoolBytesOtherThanZeroOrOne) {
  const std::string file = path("b.safetensors");
  oxtest::write_file(file,
                     safetensors_bytes(std::string("{") + entry("flags", "BOOL", "[3]", 0, 3) + "}",
                                       std::string("\x01\x00\x02", 3)));
  const ox::SafetensorsFile opened = ox::SafetensorsFile::open(file);  // the header is fine
  const ox::Error error = oxtest::caught([&] { opened.get("flags"); });
  EXPECT_EQ(error.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(oxtest::contains(error, "BOOL tensor 'flags' holds byte 2 at element 2"))
      << error.what();
}

TEST_F(SafetensorsErrors, MissingFileIsAnIoError) {
  const std::string file = path("absent.safetensors");
  const ox::Error error = oxtest::caught([&] { ox::load_safetensors(file); });
  EXPECT_EQ(error.kind(), ox::ErrorKind::Io);
  EXPECT_TRUE(oxtest::contains(error, file)) << error.what();
  EXPECT_TRUE(oxtest::contains(error, "does not exist")) << error.what();
  EXPECT_EQ(oxtest::kind_of([&] { ox::load_safetensors(dir_.string()); }), ox::ErrorKind::Io);
}

}  // namespace
