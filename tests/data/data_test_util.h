#pragma once
// Helpers of the data tests: a scratch folder per test, files written byte by byte, IDX files
// built by hand and gzip through zlib.

#include <gtest/gtest.h>
#include <oxmera/data.h>
#include <oxmera/oxmera.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace oxtest {

class DataScratch : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "oxmera-data-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

// n examples: data [2] = {2i, 2i + 1} (f32), target i (i64, 0-d).
inline std::shared_ptr<ox::data::TensorDataset> pairs(int64_t n) {
  std::vector<float> data;
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < n; ++i) {
    data.push_back(float(2 * i));
    data.push_back(float(2 * i + 1));
    targets.push_back(i);
  }
  return std::make_shared<ox::data::TensorDataset>(ox::tensor(data, {n, 2}),
                                                   ox::tensor(targets, {n}));
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string be32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xFF), char((v >> 8) & 0xFF), char(v & 0xFF)};
}

// An IDX header: 0, 0, type, dims count, then each dim big-endian.
inline std::string idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string out{char(0), char(0), char(type), char(dims.size())};
  for (uint32_t d : dims) out += be32(d);
  return out;
}

// `bytes` as a gzip file (zlib's deflate with a gzip wrapper).
inline std::string gzip(const std::string& bytes) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&s, uLong(bytes.size())) + 64, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  s.avail_in = uInt(bytes.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

}  // namespace oxtest
