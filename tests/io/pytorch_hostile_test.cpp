// load_pytorch on hostile and broken checkpoints, written by hand: each is an ox::Error of the
// right kind whose message names the global, opcode, record or tensor, never a crash, an
// out-of-bounds read, a large allocation or anything executed.

#include <gtest/gtest.h>
#include <oxmera/io/pytorch.h>
#include <oxmera/oxmera.h>

#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "io/pytorch_test_util.h"

namespace {

using namespace oxtest::pt;

class PytorchHostile : public oxtest::ScratchDir {
 protected:
  // Writes `bytes`, loads them, and checks the error's kind and that its message holds `part`.
  void expect_error(const std::string& bytes, ox::ErrorKind kind, const std::string& part) {
    const std::string file = path("bad.pt");
    oxtest::write_file(file, bytes);
    try {
      ox::load_pytorch(file);
      ADD_FAILURE() << "no error; expected one naming '" << part << "'";
    } catch (const ox::Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[load_pytorch] " + file), std::string::npos)
          << e.what();
    }
  }
  void expect_pickle_error(const std::string& pickle, const std::string& part,
                           ox::ErrorKind kind = ox::ErrorKind::Format) {
    expect_error(checkpoint(pickle, {{"0", f32_arange(8)}}), kind, part);
  }
  std::string good_pickle() const { return dict_pickle({{"w", tensor("0", 8, 0, {8}, {1})}}); }
};

TEST_F(PytorchHostile, TheHandMadeCheckpointLoads) {
  // The baseline the other cases break one thing of.
  oxtest::write_file(path("good.pt"), checkpoint(good_pickle(), {{"0", f32_arange(8)}}));
  EXPECT_EQ(ox::load_pytorch(path("good.pt")).at("w").to_vector<float>()[7], 7.f);
}

TEST_F(PytorchHostile, GlobalsOutsideTheAllowList) {
  expect_pickle_error("\x80\x02" + global("os", "system") + str("touch pwned") + "\x85R.",
                      "global 'os.system' is not allowed");
  expect_pickle_error("\x80\x02" + str("builtins") + str("eval") + "\x93" + str("1") + "\x85R.",
                      "global 'builtins.eval' is not allowed");
  expect_pickle_error("\x80\x02" + global("torch._utils", "_rebuild_qtensor") + ")R.",
                      "torch._utils._rebuild_qtensor");
  expect_pickle_error(dict_pickle({{"w", tensor("0", 8, 0, {8}, {1}, "ComplexFloatStorage")}}),
                      "complex64", ox::ErrorKind::DType);
  expect_pickle_error(dict_pickle({{"w", tensor("0", 8, 0, {8}, {1}, "QInt8Storage")}}), "qint8",
                      ox::ErrorKind::DType);
  // The message gives the offset of the opcode.
  expect_pickle_error("\x80\x02" + global("os", "system"), "offset 2");
  EXPECT_FALSE(std::filesystem::exists(path("pwned")));
}

TEST_F(PytorchHostile, ReduceOnWhatIsNotAnAllowedCallable) {
  expect_pickle_error("\x80\x02" + str("eval") + ")R.", "REDUCE on a str");
  expect_pickle_error("\x80\x02" + global("torch", "FloatStorage") + ")R.",
                      "REDUCE on storage class torch.FloatStorage");
  expect_pickle_error("\x80\x02" + global("collections", "OrderedDict") + str("x") + "\x85R.",
                      "collections.OrderedDict with arguments");
  expect_pickle_error("\x80\x02" + global("torch._utils", "_rebuild_tensor_v2") + ")R.",
                      "_rebuild_tensor_v2: 0 arguments");
}

TEST_F(PytorchHostile, MalformedPickles) {
  expect_pickle_error("\x80\x02\xff.", "opcode 0xff is not supported");
  expect_pickle_error(
      "\x80\x02"
      "0.",
      "stack underflow");
  expect_pickle_error("\x80\x02h\x05.", "memo GET of 5, which was never PUT");
  expect_pickle_error("\x80\x02" + std::string(200, '(') + ".", "nesting deeper than 100");
  expect_pickle_error("\x80\x09}.", "pickle protocol 9");
  expect_pickle_error("\x80\x02}}.", "STOP with 2 values");
  expect_pickle_error("\x80\x02}", "truncated");
  expect_pickle_error("\x80\x02X\xff\xff\xff\x7f", "only 0 left (truncated)");
  const std::string good = good_pickle();
  for (size_t cut : {size_t{3}, good.size() / 2, good.size() - 1})
    expect_pickle_error(good.substr(0, cut), "data.pkl offset");
  expect_pickle_error(good + "x", "1 bytes after STOP");
  // A list that contains itself (memo) cannot recurse forever.
  expect_pickle_error("\x80\x02}(" + str("a") + std::string("]q\0h\0au.", 8),
                      "too large to flatten");
  // Sharing through the memo cannot blow up exponentially either.
  std::string bomb(
      "\x80\x02]q\0"
      "0",
      6);
  for (int i = 1; i < 60; ++i)
    bomb += "(h" + std::string(1, char(i - 1)) + "h" + std::string(1, char(i - 1)) + "lq" +
            std::string(1, char(i)) + "0";  // each list holds the previous one twice
  expect_pickle_error(bomb + "h" + std::string(1, char(59)) + ".", "too large to flatten");
}

TEST_F(PytorchHostile, TensorsOutsideTheirStorage) {
  const auto one = [&](int64_t numel_in_file, int64_t offset, std::vector<int64_t> sizes,
                       std::vector<int64_t> strides, const std::string& part) {
    expect_error(
        checkpoint(dict_pickle({{"w", tensor("0", numel_in_file, offset, sizes, strides)}}),
                   {{"0", f32_arange(int(numel_in_file))}}),
        ox::ErrorKind::Format, part);
  };
  one(8, 5, {4}, {1}, "tensor 'w' (offset 5, 1 dims) reads element 8 of storage '0'");
  one(8, 0, {3, 3}, {3, 1}, "reads element 8");
  one(8, 0, {-1}, {1}, "negative size or stride");
  one(8, 0, {2}, {-1}, "negative size or stride");
  one(8, -1, {2}, {1}, "negative storage offset");
  one(8, 0, {int64_t{1} << 40, int64_t{1} << 40}, {1, 1}, "element count overflows");
  one(8, 0, {2, 2}, {int64_t{1} << 62, int64_t{1} << 62}, "extent overflows");
  // Stride 0 reads inside the storage, but claims far more memory than the file holds.
  one(8, 0, {int64_t{1} << 20, int64_t{1} << 20}, {0, 0}, "would take");
  one(7, 0, {8}, {1}, "reads element 7");
  expect_error(checkpoint(good_pickle(), {{"0", f32_arange(8).substr(1)}}), ox::ErrorKind::Format,
               "not a whole number of f32");
  expect_error(checkpoint(good_pickle(), {}), ox::ErrorKind::Format,
               "storage record 'archive/data/0' is missing");
  expect_error(checkpoint(dict_pickle({{"b", tensor("0", 4, 0, {4}, {1}, "BoolStorage")}}),
                          {{"0", std::string("\x01\x00\x02\x01", 4)}}),
               ox::ErrorKind::Format, "holds byte 2");
}

// The element count a storage's persistent id declares must be what its record holds, as
// torch.load requires: 2 declared over 16 bytes of f32 (4 elements), or a count near 2^62.
TEST_F(PytorchHostile, StoragesWhoseDeclaredSizeDisagreesWithTheirData) {
  const auto declared = [&](int64_t numel, const std::string& part) {
    expect_error(
        checkpoint(dict_pickle({{"w", tensor("0", numel, 0, {2}, {1})}}), {{"0", f32_arange(4)}}),
        ox::ErrorKind::Format, part);
  };
  declared(2, "storage '0' is declared with 2 f32 elements but holds 4 (16 bytes)");
  declared((int64_t{1} << 62) + 1,
           "storage '0' is declared with 4611686018427387905 f32 elements but holds 4");
  declared(0, "is declared with 0 f32 elements but holds 4");
  declared(5, "is declared with 5 f32 elements but holds 4");
}

TEST_F(PytorchHostile, BrokenZips) {
  const std::string good = checkpoint(good_pickle(), {{"0", f32_arange(8)}});
  expect_error(good.substr(0, good.size() / 2), ox::ErrorKind::Format,
               "no end-of-central-directory record");
  expect_error(good.substr(0, 10), ox::ErrorKind::Format, "too short");
  // The central directory's offset (the last 6..2 bytes of the end record) past the file.
  std::string far = good;
  far.replace(far.size() - 6, 4, le(0x7FFFFFF0, 4));
  expect_error(far, ox::ErrorKind::Format, "lies outside the file");
  expect_error(zip({{"archive/data.pkl", good_pickle()}, {"archive/data.pkl", good_pickle()}}),
               ox::ErrorKind::Format, "two entries named 'archive/data.pkl'");
  std::string flipped = good;
  flipped[50] ^= 1;  // inside data.pkl (after its 46-byte local header): the CRC catches it
  expect_error(flipped, ox::ErrorKind::Format, "CRC-32");
  expect_error(zip({{"archive/version", "3"}}), ox::ErrorKind::Format, "without a <name>/data.pkl");
  expect_error(zip({{"archive/constants.pkl", "x"}}), ox::ErrorKind::Format, "TorchScript");
  expect_error(zip({{"archive/data.pkl", good_pickle()}, {"archive/byteorder", "big"}}),
               ox::ErrorKind::Format, "big-endian");
}

TEST_F(PytorchHostile, ZipBombs) {
  const std::string zeros(100000, '\0');
  // Declared far beyond what deflate can produce from so few bytes: refused before inflating.
  expect_error(zip({{"archive/data.pkl", good_pickle()},
                    {"archive/data/0", zeros, true, uint64_t{1} << 40}}),
               ox::ErrorKind::Format, "zip bomb");
  // Declared small, inflating to more: stops at the declared size.
  expect_error(zip({{"archive/data.pkl", good_pickle()}, {"archive/data/0", zeros, true, 32}}),
               ox::ErrorKind::Format, "does not inflate to its declared 32 bytes");
  // A deflated entry that inflates to exactly what it says loads.
  oxtest::write_file(path("ok.pt"), zip({{"archive/data.pkl", good_pickle(), true},
                                         {"archive/data/0", f32_arange(8), true}}));
  EXPECT_EQ(ox::load_pytorch(path("ok.pt")).at("w").to_vector<float>()[3], 3.f);
}

TEST_F(PytorchHostile, BrokenLegacyFiles) {
  const std::string good = oxtest::read_file(fixture("dtypes_legacy.pt"));
  for (size_t cut : {size_t{5}, size_t{30}, good.size() / 2, good.size() - 1})
    expect_error(good.substr(0, cut), ox::ErrorKind::Format, "");
  expect_error(good + "extra", ox::ErrorKind::Format, "5 bytes after the last storage");
  expect_error("\x80\x02K\x01.", ox::ErrorKind::Format, "not PyTorch's magic number");
}

TEST_F(PytorchHostile, NotCheckpoints) {
  expect_error("", ox::ErrorKind::Format, "neither a zip nor a pickle");
  expect_error("hello world", ox::ErrorKind::Format, "neither a zip nor a pickle");
  std::string tar(512, '\0');
  tar.replace(257, 5, "ustar");
  expect_error(tar, ox::ErrorKind::Format, "tar checkpoint (torch < 0.4)");
  expect_error(oxtest::read_file(fixture("bigendian_zip.pt")), ox::ErrorKind::Format, "big-endian");
  try {
    ox::load_pytorch(path("missing.pt"));
    ADD_FAILURE();
  } catch (const ox::Error& e) {
    EXPECT_EQ(e.kind(), ox::ErrorKind::Io) << e.what();
  }
}

}  // namespace
