// Safetensors writing and reading: round trips, files compared byte for byte with layouts
// written out by hand as the Python library lays them out, and lazy (mapped) access.

#include <cstring>

#include "io/io_test_util.h"
#include "test_util.h"

namespace {

using oxtest::entry;
using oxtest::read_file;
using oxtest::safetensors_bytes;
using oxtest::tensor_bytes;
using oxtest::write_file;

class Safetensors : public oxtest::ScratchDir {};

// A tensor whose bytes follow a fixed pattern (booleans 0/1): bit patterns of every kind,
// NaN payloads included, must come back unchanged.
ox::Tensor patterned(ox::DType dtype, const ox::Shape& shape, int salt = 0) {
  ox::Tensor t = ox::empty(shape, {.dtype = dtype});
  if (t.nbytes() == 0) return t;
  auto* bytes = static_cast<uint8_t*>(t.raw_data_ptr(dtype));
  for (size_t i = 0; i < t.nbytes(); ++i)
    bytes[i] = dtype == ox::kBool ? static_cast<uint8_t>((i + salt) % 2)
                                  : static_cast<uint8_t>(i * 37 + 11 + salt);
  return t;
}

TEST_F(Safetensors, RoundTripsEveryDTypeBitwise) {
  ox::TensorDict tensors;
  int salt = 0;
  for (ox::DType dtype : ox::kAllDTypes)
    tensors.insert(std::string(ox::dtype_name(dtype)), patterned(dtype, {3, 5}, salt++));
  ox::save_safetensors(path("all.safetensors"), tensors);
  const ox::TensorDict loaded = ox::load_safetensors(path("all.safetensors"));
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, original] : tensors) {
    const ox::Tensor& back = loaded.at(name);
    EXPECT_EQ(back.dtype(), original.dtype()) << name;
    EXPECT_EQ(back.shape(), original.shape()) << name;
    EXPECT_TRUE(back.device().is_cpu());
    EXPECT_EQ(tensor_bytes(back), tensor_bytes(original)) << name;
  }
}

TEST_F(Safetensors, RoundTripsScalarsAndEmptyTensors) {
  ox::TensorDict tensors{{"scalar", ox::scalar_tensor(2.5, {.dtype = ox::kF64})},
                         {"empty", ox::zeros({0, 3})},
                         {"empty_i8", ox::zeros({4, 0}, {.dtype = ox::kI8})}};
  ox::save_safetensors(path("small.safetensors"), tensors);
  const ox::TensorDict loaded = ox::load_safetensors(path("small.safetensors"));
  EXPECT_EQ(loaded.at("scalar").dim(), 0);
  EXPECT_EQ(loaded.at("scalar").item<double>(), 2.5);
  EXPECT_EQ(loaded.at("empty").shape(), ox::Shape({0, 3}));
  EXPECT_EQ(loaded.at("empty_i8").shape(), ox::Shape({4, 0}));
  EXPECT_EQ(loaded.at("empty_i8").dtype(), ox::kI8);
  // An empty dict is a valid file too: "{}" padded to 8 bytes.
  ox::save_safetensors(path("none.safetensors"), {});
  EXPECT_EQ(read_file(path("none.safetensors")), oxtest::u64_le(8) + "{}      ");
  EXPECT_TRUE(ox::load_safetensors(path("none.safetensors")).empty());
}

TEST_F(Safetensors, WritesNonContiguousTensorsContiguous) {
  // m[i][j] = 4 i + j; its transpose t[j][i] = 4 i + j, and a strided slice of every other column.
  const ox::Tensor m = ox::arange(12, {.dtype = ox::kI64}).reshape({3, 4});
  const ox::Tensor m2 = ox::arange(12, {.dtype = ox::kI64}).reshape({3, 4});
  ox::TensorDict tensors{{"t", m.t()}, {"cols", m2.slice(1, 0, 4, 2)}};
  ox::save_safetensors(path("views.safetensors"), tensors);
  const ox::TensorDict loaded = ox::load_safetensors(path("views.safetensors"));
  std::vector<int64_t> expected_t, expected_cols;
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t i = 0; i < 3; ++i) expected_t.push_back(4 * i + j);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; j += 2) expected_cols.push_back(4 * i + j);
  EXPECT_EQ(loaded.at("t").shape(), ox::Shape({4, 3}));
  EXPECT_EQ(loaded.at("t").to_vector<int64_t>(), expected_t);
  EXPECT_EQ(loaded.at("cols").shape(), ox::Shape({3, 2}));
  EXPECT_EQ(loaded.at("cols").to_vector<int64_t>(), expected_cols);
}

TEST_F(Safetensors, RoundTripsMetadata) {
  const std::map<std::string, std::string> metadata{
      {"format", "pt"}, {"note", "quote \" backslash \\ newline \n tab \t nul-free ünïcode"}};
  ox::save_safetensors(path("meta.safetensors"), {{"x", ox::ones({2})}}, metadata);
  EXPECT_EQ(ox::SafetensorsFile::open(path("meta.safetensors")).metadata(), metadata);
}

// The layout the Python library writes for {"a": f32 [2, 2], "c": u8 [3], "b": i64 [2]} with
// metadata {"format": "pt"}: larger dtypes first, compact JSON with "__metadata__" first,
// padded with spaces to 8 bytes, then the little-endian payload.
TEST_F(Safetensors, WritesTheExactBytesOfThePythonLibrary) {
  const std::string header = R"({"__metadata__":{"format":"pt"},)"
                             R"("b":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
                             R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[16,32]},)"
                             R"("c":{"dtype":"U8","shape":[3],"data_offsets":[32,35]}})";
  ASSERT_EQ(header.size(), 197u);  // padded with 3 spaces to 200 = 0xC8
  const std::string payload = std::string("\x01\0\0\0\0\0\0\0", 8) +  // i64 1
                              "\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF" +    // i64 -2
                              std::string("\0\0\x80\x3F", 4) +        // f32 1
                              std::string("\0\0\0\x40", 4) +          // f32 2
                              std::string("\0\0\x40\x40", 4) +        // f32 3
                              std::string("\0\0\x80\x40", 4) +        // f32 4
                              "\x07\x08\x09";
  const std::string expected =
      std::string("\xC8\0\0\0\0\0\0\0", 8) + header + std::string(3, ' ') + payload;

  ox::TensorDict tensors{{"a", ox::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})},
                         {"c", ox::tensor(std::vector<uint8_t>{7, 8, 9})},
                         {"b", ox::tensor(std::vector<int64_t>{1, -2})}};
  ox::save_safetensors(path("exact.safetensors"), tensors, {{"format", "pt"}});
  EXPECT_EQ(read_file(path("exact.safetensors")), expected);

  // And the same bytes written by hand read back: keys in data order.
  write_file(path("hand.safetensors"), expected);
  const ox::TensorDict loaded = ox::load_safetensors(path("hand.safetensors"));
  EXPECT_EQ(loaded.keys(), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(loaded.at("b").to_vector<int64_t>(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(loaded.at("a").shape(), ox::Shape({2, 2}));
  EXPECT_EQ(loaded.at("a").to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(loaded.at("c").to_vector<uint8_t>(), (std::vector<uint8_t>{7, 8, 9}));
}

TEST_F(Safetensors, ReadsHandMadeHalfBFloatAndBoolFiles) {
  // bf16 1.5 = 0x3FC0, f16 -2 = 0xC000, bool [true, false]; the header is not padded, as
  // older writers left it.
  const std::string header = std::string("{") + entry("h", "F16", "[1]", 0, 2) + std::string(",") +
                             entry("g", "BF16", "[]", 2, 4) + std::string(",") +
                             entry("flags", "BOOL", "[2]", 4, 6) + "}";
  write_file(path("hand.safetensors"),
             safetensors_bytes(header, std::string("\x00\xC0\xC0\x3F\x01\x00", 6), false));
  const ox::TensorDict loaded = ox::load_safetensors(path("hand.safetensors"));
  EXPECT_EQ(loaded.at("h").dtype(), ox::kF16);
  EXPECT_EQ(loaded.at("h").item<double>(), -2.0);
  EXPECT_EQ(loaded.at("g").dtype(), ox::kBF16);
  EXPECT_EQ(loaded.at("g").dim(), 0);
  EXPECT_EQ(loaded.at("g").item<double>(), 1.5);
  EXPECT_EQ(loaded.at("flags").to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST_F(Safetensors, SavesTensorsSharingStorageWithoutOverlap) {
  const ox::Tensor x = ox::arange(10, {.dtype = ox::kI32});
  const ox::Tensor m = ox::arange(8, {.dtype = ox::kI32}).reshape({4, 2});
  // Halves of one buffer, and two interleaved columns: same storage, no byte in common.
  ox::save_safetensors(path("parts.safetensors"), {{"low", x.narrow(0, 0, 5)},
                                                   {"high", x.narrow(0, 5, 5)},
                                                   {"even", m.select(1, 0)},
                                                   {"odd", m.select(1, 1)}});
  const ox::TensorDict loaded = ox::load_safetensors(path("parts.safetensors"));
  EXPECT_EQ(loaded.at("high").to_vector<int32_t>(), (std::vector<int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(loaded.at("odd").to_vector<int32_t>(), (std::vector<int32_t>{1, 3, 5, 7}));
}

TEST_F(Safetensors, RefusesAliasedTensors) {
  const ox::Tensor x = ox::arange(10, {.dtype = ox::kI32});
  const ox::Error overlap = oxtest::caught([&] {
    ox::save_safetensors(path("a.safetensors"),
                         {{"first", x.narrow(0, 0, 6)}, {"second", x.narrow(0, 4, 6)}});
  });
  EXPECT_EQ(overlap.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(overlap, "'first' and 'second' share memory")) << overlap.what();
  const ox::Error twice = oxtest::caught([&] {
    ox::save_safetensors(path("a.safetensors"), {{"w", x}, {"tied", x}});
  });
  EXPECT_EQ(twice.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(twice, "'w' and 'tied'")) << twice.what();
  // A strided view reaching into another tensor's bytes (the column of m crosses row 1).
  const ox::Tensor m = ox::arange(8, {.dtype = ox::kI32}).reshape({4, 2});
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::save_safetensors(path("a.safetensors"),
                                   {{"column", m.select(1, 1)}, {"row", m.select(0, 1)}});
            }),
            ox::ErrorKind::Value);
  EXPECT_TRUE(oxtest::ScratchDir::listing().empty());
}

TEST_F(Safetensors, RefusesBadNamesAndUndefinedTensors) {
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::save_safetensors(path("a.safetensors"), {{"__metadata__", ox::ones({1})}});
            }),
            ox::ErrorKind::Value);
  EXPECT_EQ(oxtest::kind_of([&] {
              ox::save_safetensors(path("a.safetensors"), {{"bad\xFF", ox::ones({1})}});
            }),
            ox::ErrorKind::Value);
  const ox::Error undefined = oxtest::caught([&] {
    ox::save_safetensors(path("a.safetensors"), {{"nothing", ox::Tensor()}});
  });
  EXPECT_EQ(undefined.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(undefined, "'nothing'"));
  EXPECT_TRUE(oxtest::ScratchDir::listing().empty());
}

// ---- Lazy access ---------------------------------------------------------------------------

TEST_F(Safetensors, LazyFileListsKeysInfoAndMetadata) {
  write_file(path("x.safetensors"),
             safetensors_bytes(std::string("{\"__metadata__\":{\"k\":\"v\"},") +
                                   entry("w", "F32", "[2,3]", 0, 24) + std::string(",") +
                                   entry("n", "I16", "[1]", 24, 26) + "}",
                               std::string(26, '\0')));
  const ox::SafetensorsFile file = ox::SafetensorsFile::open(path("x.safetensors"));
  EXPECT_EQ(file.keys(), (std::vector<std::string>{"w", "n"}));
  EXPECT_EQ(file.size(), 2u);
  EXPECT_TRUE(file.contains("n"));
  EXPECT_FALSE(file.contains("m"));
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"k", "v"}}));
  const ox::SafetensorsTensorInfo& info = file.info("n");
  EXPECT_EQ(info.dtype, ox::kI16);
  EXPECT_EQ(info.shape, ox::Shape({1}));
  EXPECT_EQ(info.begin, 24u);
  EXPECT_EQ(info.end, 26u);
  // Header: 8 + the JSON text padded to a multiple of 8.
  EXPECT_EQ(file.data_start() % 8, 0u);
  const ox::Error missing = oxtest::caught([&] { file.get("m"); });
  EXPECT_EQ(missing.kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(oxtest::contains(missing, "'m'"));
  EXPECT_TRUE(oxtest::contains(missing, path("x.safetensors")));
}

TEST_F(Safetensors, LazyGetIsZeroCopyWhenAligned) {
  const ox::Tensor original = ox::arange(6, {.dtype = ox::kF64}).reshape({2, 3});
  ox::save_safetensors(path("z.safetensors"), {{"w", original}});
  ox::Tensor mapped;
  {
    const ox::SafetensorsFile file = ox::SafetensorsFile::open(path("z.safetensors"));
    mapped = file.get("w");
    const auto* data = static_cast<const uint8_t*>(mapped.raw_data_ptr(ox::kF64));
    EXPECT_EQ(data, file.mapped_data() + file.data_start());  // inside the mapping, no copy
    EXPECT_EQ(file.mapped_size(), read_file(path("z.safetensors")).size());
  }
  // The tensor keeps the mapping alive after the file object is gone.
  EXPECT_EQ(mapped.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  // Writes go to private pages, never to the file.
  mapped.fill_(7.0);
  EXPECT_EQ(ox::load_safetensors(path("z.safetensors")).at("w").to_vector<double>(),
            (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST_F(Safetensors, LazyGetCopiesMisalignedData) {
  // u8 at [0, 1) puts the f32 at data offset 1: misaligned (the data buffer starts 8-aligned).
  std::string data = "\x05";
  data += std::string("\0\0\x20\x41", 4);  // f32 10
  write_file(path("m.safetensors"),
             safetensors_bytes(std::string("{") + entry("u", "U8", "[1]", 0, 1) + std::string(",") +
                                   entry("f", "F32", "[1]", 1, 5) + "}",
                               data));
  const ox::SafetensorsFile file = ox::SafetensorsFile::open(path("m.safetensors"));
  const ox::Tensor f = file.get("f");
  const auto address = reinterpret_cast<uintptr_t>(f.raw_data_ptr(ox::kF32));
  const auto begin = reinterpret_cast<uintptr_t>(file.mapped_data());
  EXPECT_TRUE(address < begin || address >= begin + file.mapped_size());  // a copy
  EXPECT_EQ(address % alignof(float), 0u);
  EXPECT_EQ(f.item<float>(), 10.0f);
  EXPECT_EQ(file.get("u").item<int64_t>(), 5);
}

TEST_F(Safetensors, LoadReturnsTensorsOwningTheirMemory) {
  ox::save_safetensors(path("o.safetensors"), {{"w", ox::ones({4})}});
  const ox::TensorDict loaded = ox::load_safetensors(path("o.safetensors"));
  // Overwriting the file (not through a rename) must not change what was loaded.
  write_file(path("o.safetensors"), "garbage");
  EXPECT_EQ(loaded.at("w").to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
}

TEST_F(Safetensors, FromBytesParsesMemory) {
  const std::string bytes =
      safetensors_bytes(std::string("{") + entry("x", "I32", "[2]", 0, 8) + "}",
                        std::string("\x03\0\0\0\xFD\xFF\xFF\xFF", 8));
  const ox::SafetensorsFile file = ox::SafetensorsFile::from_bytes(bytes, "buffer");
  EXPECT_EQ(file.path(), "buffer");
  EXPECT_EQ(file.get("x").to_vector<int32_t>(), (std::vector<int32_t>{3, -3}));
}

}  // namespace
