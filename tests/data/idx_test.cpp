// read_idx and MnistDataset on IDX files written here byte by byte (plain and gzip), every
// broken header or payload, and Fashion-MNIST when it is installed.

#include <cstring>
#include <string>
#include <vector>

#include "data/data_test_util.h"

namespace {

using namespace ox::data;
using oxtest::be32;
using oxtest::caught;
using oxtest::contains;
using oxtest::gzip;
using oxtest::idx_header;
using oxtest::write_bytes;

class DataIdx : public oxtest::DataScratch {
 protected:
  // Writes `bytes` to `name` and returns the error read_idx gives for it.
  ox::Error broken(const std::string& name, const std::string& bytes) {
    write_bytes(path(name), bytes);
    return caught([&] { read_idx(path(name)); });
  }
  void expect_format(const std::string& name, const std::string& bytes, const std::string& what) {
    const ox::Error e = broken(name, bytes);
    EXPECT_EQ(e.kind(), ox::ErrorKind::Format) << name << ": " << e.what();
    EXPECT_TRUE(contains(e, path(name))) << e.what();
    EXPECT_TRUE(contains(e, what)) << "expected '" << what << "' in: " << e.what();
  }
};

const std::string kU8Payload{0, 1, 2, 3, 4, char(255)};

TEST_F(DataIdx, U8PlainAndGzip) {
  const std::string file = idx_header(0x08, {2, 3}) + kU8Payload;
  write_bytes(path("a.idx"), file);
  write_bytes(path("a.idx.gz"), gzip(file));
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    const ox::Tensor t = read_idx(path(name));
    EXPECT_EQ(t.dtype(), ox::kU8) << name;
    EXPECT_EQ(t.shape(), ox::Shape({2, 3})) << name;
    EXPECT_EQ(t.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 2, 3, 4, 255})) << name;
  }
}

TEST_F(DataIdx, WiderTypesAreBigEndian) {
  // i32 {1, -2, 0x01020304}
  write_bytes(path("i32"), idx_header(0x0C, {3}) + be32(1) + be32(0xFFFFFFFEu) + be32(0x01020304));
  ox::Tensor t = read_idx(path("i32"));
  EXPECT_EQ(t.dtype(), ox::kI32);
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 0x01020304}));
  // f32 {1.5, -2}: 0x3FC00000, 0xC0000000
  const std::string f32 = idx_header(0x0D, {1, 2}) + be32(0x3FC00000) + be32(0xC0000000);
  write_bytes(path("f32.gz"), gzip(f32));
  t = read_idx(path("f32.gz"));
  EXPECT_EQ(t.dtype(), ox::kF32);
  EXPECT_EQ(t.shape(), ox::Shape({1, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  // i16 {-1, 258}, i8 {-128, 127}, f64 {1.0}
  write_bytes(path("i16"), idx_header(0x0B, {2}) + std::string{char(0xFF), char(0xFF), 1, 2});
  EXPECT_EQ(read_idx(path("i16")).to_vector<int16_t>(), (std::vector<int16_t>{-1, 258}));
  write_bytes(path("i8"), idx_header(0x09, {2}) + std::string{char(0x80), 0x7F});
  EXPECT_EQ(read_idx(path("i8")).to_vector<int8_t>(), (std::vector<int8_t>{-128, 127}));
  write_bytes(path("f64"), idx_header(0x0E, {1}) + be32(0x3FF00000) + be32(0));
  EXPECT_EQ(read_idx(path("f64")).to_vector<double>(), (std::vector<double>{1.0}));
  // A zero dim: an empty tensor, no payload.
  write_bytes(path("empty"), idx_header(0x08, {0, 28}));
  EXPECT_EQ(read_idx(path("empty")).shape(), ox::Shape({0, 28}));
}

TEST_F(DataIdx, GzipLargerThanOneChunk) {
  // 300 x 300 bytes inflate in several 64 KiB chunks; pixel (r, c) = (r * 31 + c * 7) % 256.
  std::string file = idx_header(0x08, {300, 300});
  for (int r = 0; r < 300; ++r)
    for (int c = 0; c < 300; ++c) file += char((r * 31 + c * 7) % 256);
  write_bytes(path("big.gz"), gzip(file));
  const auto values = read_idx(path("big.gz")).to_vector<uint8_t>();
  ASSERT_EQ(values.size(), 90000u);
  for (int r = 0; r < 300; ++r)
    for (int c = 0; c < 300; ++c)
      ASSERT_EQ(values[size_t(r * 300 + c)], (r * 31 + c * 7) % 256) << r << ", " << c;
  expect_format("big_trailing.gz", gzip(file + std::string(70000, 'x')),
                "trailing bytes after the 90000-byte payload");
}

TEST_F(DataIdx, BrokenHeaders) {
  expect_format("empty", "", "shorter than the 4-byte IDX magic");
  expect_format("magic", std::string{1, 0, 8, 1} + be32(1) + "x", "bad IDX magic");
  expect_format("magic2", std::string{0, 2, 8, 1} + be32(1) + "x", "bad IDX magic");
  expect_format("type", idx_header(0x0A, {1}) + "x", "unsupported IDX type byte 0xa");
  expect_format("type2", idx_header(0x07, {1}) + "x", "unsupported IDX type byte");
  expect_format("dims0", std::string{0, 0, 8, 0}, "dims count 0");
  expect_format("dims9", idx_header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}) + "x", "dims count 9");
  // Three dims announced, only two written.
  expect_format("short_header", std::string{0, 0, 8, 3} + be32(1) + be32(1), "needs 16 bytes");
  // 2^32-1 cubed overflows 64 bits: a wrapped product must not make the file look right.
  expect_format("overflow", idx_header(0x0C, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}) + "abcd",
                "overflow");
}

TEST_F(DataIdx, BrokenPayloads) {
  const std::string header = idx_header(0x08, {2, 3});
  expect_format("truncated", header + kU8Payload.substr(0, 5), "truncated");
  expect_format("trailing", header + kU8Payload + "zz", "2 trailing bytes");
  // A header that lies: a count far beyond the six bytes that follow.
  expect_format("lying", idx_header(0x08, {60000, 28, 28}) + kU8Payload, "47040000 bytes");
  expect_format("lying_i32", idx_header(0x0C, {2}) + be32(7), "only 4 bytes follow");
  // The same faults inside a gzip stream.
  expect_format("truncated.gz", gzip(header + kU8Payload.substr(0, 5)), "truncated");
  expect_format("trailing.gz", gzip(header + kU8Payload + "zz"), "trailing bytes");
  expect_format("lying.gz", gzip(idx_header(0x08, {60000, 28, 28}) + kU8Payload), "truncated");
  expect_format("magic.gz", gzip(std::string{1, 0, 8, 1} + be32(1) + "x"), "bad IDX magic");
}

TEST_F(DataIdx, BrokenGzipStreams) {
  std::string big = idx_header(0x08, {4096});
  for (int i = 0; i < 4096; ++i) big += char((i * 7919) % 251);
  const std::string gz = gzip(big);
  ASSERT_GT(gz.size(), 40u);
  expect_format("cut.gz", gz.substr(0, gz.size() / 2), "truncated gzip stream");
  expect_format("no_trailer.gz", gz.substr(0, gz.size() - 4), "truncated gzip stream");
  std::string corrupt = gz;
  for (size_t i = 12; i < 30; ++i) corrupt[i] = char(corrupt[i] ^ 0x5A);
  expect_format("corrupt.gz", corrupt, "corrupt gzip stream");
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] = char(bad_crc[gz.size() - 6] ^ 1);  // inside the CRC-32
  expect_format("crc.gz", bad_crc, "corrupt gzip stream");
  expect_format("garbage.gz", gz + "junk", "4 bytes after the end of the gzip stream");
  expect_format("header_only.gz", gz.substr(0, 10), "truncated gzip stream");
}

TEST_F(DataIdx, MissingFileIsIo) {
  const ox::Error e = caught([&] { read_idx(path("absent")); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Io);
  EXPECT_TRUE(contains(e, path("absent"))) << e.what();
}

TEST_F(DataIdx, MnistDatasetFromHandMadeFiles) {
  // Three 2x2 images; pixel values 0, 51, 102, 255 ... and labels 7, 0, 9.
  const std::string pixels{0, 51, 102, char(255), 1, 2, 3, 4, char(200), 0, 0, 0};
  write_bytes(path("train-images-idx3-ubyte.gz"), gzip(idx_header(0x08, {3, 2, 2}) + pixels));
  write_bytes(path("train-labels-idx1-ubyte"), idx_header(0x08, {3}) + std::string{7, 0, 9});
  MnistDataset ds(dir_, /*train=*/true);
  EXPECT_EQ(ds.size(), 3);
  const Example e = ds.get(0);
  EXPECT_EQ(e.data.dtype(), ox::kF32);
  EXPECT_EQ(e.data.shape(), ox::Shape({1, 2, 2}));
  const auto v = e.data.to_vector<float>();
  const std::vector<double> expected{0.0, 51.0 / 255, 102.0 / 255, 1.0};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(v[i], expected[i], 1e-7) << i;
  EXPECT_EQ(e.target.dtype(), ox::kI64);
  EXPECT_EQ(e.target.dim(), 0);
  EXPECT_EQ(ds.get(2).target.item<int64_t>(), 9);
  EXPECT_NEAR(ds.get(2).data.to_vector<float>()[0], 200.0 / 255, 1e-7);
  EXPECT_EQ(caught([&] { ds.get(3); }).kind(), ox::ErrorKind::Index);

  // The test split is missing: Io naming the file.
  const ox::Error missing = caught([&] { MnistDataset(dir_, false); });
  EXPECT_EQ(missing.kind(), ox::ErrorKind::Io);
  EXPECT_TRUE(contains(missing, "t10k-images-idx3-ubyte")) << missing.what();

  // Counts that disagree, and wrong types or ranks.
  write_bytes(path("t10k-images-idx3-ubyte"), idx_header(0x08, {2, 1, 1}) + std::string{1, 2});
  write_bytes(path("t10k-labels-idx1-ubyte"), idx_header(0x08, {3}) + std::string{1, 2, 3});
  ox::Error e2 = caught([&] { MnistDataset(dir_, false); });
  EXPECT_EQ(e2.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(contains(e2, "2 images but")) << e2.what();
  write_bytes(path("t10k-labels-idx1-ubyte"), idx_header(0x0C, {2}) + be32(1) + be32(2));
  e2 = caught([&] { MnistDataset(dir_, false); });
  EXPECT_EQ(e2.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(contains(e2, "labels must be u8 [N]")) << e2.what();
  write_bytes(path("t10k-images-idx3-ubyte"), idx_header(0x08, {2}) + std::string{1, 2});
  e2 = caught([&] { MnistDataset(dir_, false); });
  EXPECT_EQ(e2.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(contains(e2, "images must be u8 [N, H, W]")) << e2.what();
}

TEST(DataFashionMnist, InstalledCopyReads) {
  const std::filesystem::path root = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(root / "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "not installed";
  MnistDataset test(root, /*train=*/false);
  EXPECT_EQ(test.size(), 10000);
  const Example e = test.get(0);
  EXPECT_EQ(e.data.shape(), ox::Shape({1, 28, 28}));
  EXPECT_GE(e.data.min().item<float>(), 0.0f);
  EXPECT_LE(e.data.max().item<float>(), 1.0f);
  EXPECT_GT(e.data.max().item<float>(), 0.0f);
  // Ten classes, 1000 test images each (the published split).
  const auto labels = test.labels().to_vector<int64_t>();
  std::vector<int64_t> counts(10, 0);
  for (int64_t l : labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    ++counts[size_t(l)];
  }
  EXPECT_EQ(counts, std::vector<int64_t>(10, 1000));

  // One shuffled epoch through two workers sees every image once: 1000 of each label 0..9.
  DataLoader loader(std::make_shared<MnistDataset>(root, false),
                    {.batch_size = 1000, .shuffle = true, .num_workers = 2});
  int64_t seen = 0, label_sum = 0;
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.shape(), ox::Shape({1000, 1, 28, 28}));
    seen += batch.target.size(0);
    label_sum += batch.target.sum().item<int64_t>();
  }
  EXPECT_EQ(seen, 10000);
  EXPECT_EQ(label_sum, 1000 * 45);
}

}  // namespace
