#pragma once
// Helpers of the io tests: a scratch folder per test and hand-made safetensors files.

#include <gtest/gtest.h>
#include <oxmera/io.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace oxtest {

// A fresh folder under the system temp folder, removed with everything in it afterwards.
class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "oxmera-io-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& item : std::filesystem::directory_iterator(dir_))
      names.push_back(item.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::filesystem::path dir_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string u64_le(uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

// A safetensors file from a header written out by hand: length, header (padded with spaces to
// a multiple of 8 when `pad`), then `data`.
inline std::string safetensors_bytes(std::string header, const std::string& data = "",
                                     bool pad = true) {
  if (pad)
    while (header.size() % 8 != 0) header += ' ';
  return u64_le(header.size()) + header + data;
}

// One header entry, as the Python library writes it.
inline std::string entry(const std::string& name, const std::string& dtype,
                         const std::string& shape, uint64_t begin, uint64_t end) {
  std::string out = "\"";
  out += name;
  out += "\":{\"dtype\":\"";
  out += dtype;
  out += "\",\"shape\":";
  out += shape;
  out += ",\"data_offsets\":[";
  out += std::to_string(begin);
  out += ',';
  out += std::to_string(end);
  out += "]}";
  return out;
}

// The bytes of a tensor, row-major.
inline std::string tensor_bytes(const ox::Tensor& t) {
  const ox::Tensor c = t.contiguous();
  if (c.nbytes() == 0) return {};
  return {static_cast<const char*>(c.raw_data_ptr(c.dtype())), c.nbytes()};
}

}  // namespace oxtest
