#pragma once
// Helpers of the PyTorch checkpoint tests: pickles and zips written by hand, and the fixture
// folder (tests/io/fixtures/pytorch, written by scripts/make-pytorch-fixtures.py).

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_paths.h"

namespace oxtest::pt {

inline std::string fixture(const std::string& name) {
  return std::string(oxtest::kSourceDir) + "/tests/io/fixtures/pytorch/" + name;
}

inline std::string le(uint64_t value, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

// ---- pickle pieces (protocol 2) ----
inline std::string str(const std::string& s) {
  std::string out = "X";  // appended piece by piece: GCC 12 warns (-Wrestrict) on a + chain here
  out += le(s.size(), 4);
  out += s;
  return out;
}
inline std::string i64(int64_t v) { return "\x8a\x08" + le(static_cast<uint64_t>(v), 8); }
inline std::string global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
inline std::string tuple(const std::vector<int64_t>& values) {
  std::string out = "(";
  for (int64_t v : values) out += i64(v);
  return out + "t";
}
// _rebuild_tensor_v2(storage `key` of `cls` with `numel` elements, offset, sizes, strides).
inline std::string tensor(const std::string& key, int64_t numel, int64_t offset,
                          const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                          const std::string& cls = "FloatStorage") {
  return global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
         global("torch", cls) + str(key) + str("cpu") + i64(numel) + "tQ" + i64(offset) +
         tuple(sizes) + tuple(strides) + "\x89" + global("collections", "OrderedDict") + ")Rt" +
         "R";
}
// A whole pickle: {name: value, ...} from already pickled values.
inline std::string dict_pickle(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out = "\x80\x02}(";
  for (const auto& [name, value] : items) out += str(name) + value;
  return out + "u.";
}

// ---- zip ----
struct ZipItem {
  std::string name, data;
  bool deflate = false;
  uint64_t declared_size = UINT64_MAX;  // the uncompressed size to declare (default: the real one)
};

inline std::string deflated(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A zip of `items`; with `zip64`, every size and offset goes through zip64 extra fields and a
// zip64 end record.
inline std::string zip(const std::vector<ZipItem>& items, bool zip64 = false) {
  std::string out, central;
  for (const ZipItem& item : items) {
    const std::string body = item.deflate ? deflated(item.data) : item.data;
    const uint64_t usize = item.declared_size != UINT64_MAX ? item.declared_size : item.data.size();
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(item.data.data()), uInt(item.data.size())));
    const uint64_t offset = out.size();
    const std::string method = le(item.deflate ? 8 : 0, 2);
    const std::string extra =
        zip64 ? le(1, 2) + le(24, 2) + le(usize, 8) + le(body.size(), 8) + le(offset, 8) : "";
    const std::string sizes =
        zip64 ? le(0xFFFFFFFF, 4) + le(0xFFFFFFFF, 4) : le(body.size(), 4) + le(usize, 4);
    out += le(0x04034b50, 4) + le(45, 2) + le(0, 2) + method + le(0, 4) + le(crc, 4) + sizes +
           le(item.name.size(), 2) + le(0, 2) + item.name + body;
    central += le(0x02014b50, 4) + le(45, 2) + le(45, 2) + le(0, 2) + method + le(0, 4) +
               le(crc, 4) + sizes + le(item.name.size(), 2) + le(extra.size(), 2) + le(0, 2) +
               le(0, 2) + le(0, 2) + le(0, 4) + le(zip64 ? 0xFFFFFFFF : offset, 4) + item.name +
               extra;
  }
  const uint64_t dir_offset = out.size();
  out += central;
  if (zip64) {
    const uint64_t end64 = out.size();
    out += le(0x06064b50, 4) + le(44, 8) + le(45, 2) + le(45, 2) + le(0, 4) + le(0, 4) +
           le(items.size(), 8) + le(items.size(), 8) + le(central.size(), 8) + le(dir_offset, 8);
    out += le(0x07064b50, 4) + le(0, 4) + le(end64, 8) + le(1, 4);
    return out + le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(0xFFFF, 2) + le(0xFFFF, 2) +
           le(0xFFFFFFFF, 4) + le(0xFFFFFFFF, 4) + le(0, 2);
  }
  return out + le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(items.size(), 2) + le(items.size(), 2) +
         le(central.size(), 4) + le(dir_offset, 4) + le(0, 2);
}

// A zip checkpoint of `pickle` as archive/data.pkl and each (key, bytes) as archive/data/key.
inline std::string checkpoint(const std::string& pickle,
                              const std::vector<std::pair<std::string, std::string>>& storages,
                              bool zip64 = false) {
  std::vector<ZipItem> items{{"archive/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) items.push_back({"archive/data/" + key, bytes});
  return zip(items, zip64);
}

// `n` f32 values 0, 1, ..., n-1 as bytes.
inline std::string f32_arange(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    const float v = float(i);
    out.append(reinterpret_cast<const char*>(&v), 4);
  }
  return out;
}

}  // namespace oxtest::pt
