#include "io/zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <unordered_set>

#include "oxmera/core/error.h"

namespace ox::io {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30;

uint64_t le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

template <class... Args>
[[noreturn]] void fail_zip(std::string_view source, const Args&... args) {
  OX_FAIL(Format, kLoadPytorch, source, ": zip ", args...);
}

struct Directory {
  uint64_t offset = 0, size = 0, count = 0;
};

// The end-of-central-directory record (the last one, searched back through a comment of up
// to 64 KiB), with its zip64 counterpart when the locator precedes it.
Directory find_directory(const uint8_t* bytes, size_t size, std::string_view source) {
  if (size < kEndSize) fail_zip(source, "file of ", size, " bytes is too short (truncated?)");
  const size_t lowest = size - kEndSize > 0xFFFF ? size - kEndSize - 0xFFFF : 0;
  size_t end = size - kEndSize + 1;
  bool found = false;
  while (end-- > lowest)
    if (le(bytes + end, 4) == kEndSig && end + kEndSize + le(bytes + end + 20, 2) <= size) {
      found = true;
      break;
    }
  if (!found) fail_zip(source, "has no end-of-central-directory record (truncated, or not a zip)");
  const uint8_t* e = bytes + end;
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0) fail_zip(source, "spans several disks");
  Directory dir{le(e + 16, 4), le(e + 12, 4), le(e + 10, 2)};
  if (end >= 20 && le(bytes + end - 20, 4) == kZip64LocatorSig) {
    const uint64_t at = le(bytes + end - 20 + 8, 8);
    if (at > size || size - at < 56 || le(bytes + at, 4) != kZip64EndSig)
      fail_zip(source, "zip64 end record at offset ", at, " is outside the file or malformed");
    dir = {le(bytes + at + 48, 8), le(bytes + at + 40, 8), le(bytes + at + 32, 8)};
    end = static_cast<size_t>(at);
  }
  if (dir.offset > end || dir.size > end - dir.offset)
    fail_zip(source, "central directory [", dir.offset, ", +", dir.size,
             ") lies outside the file before its end record at ", end);
  if (dir.count > dir.size / kCentralSize)
    fail_zip(source, "central directory claims ", dir.count, " entries in ", dir.size, " bytes");
  return dir;
}

// Replaces the 0xFFFFFFFF fields of a central header by the zip64 extra field's values.
void apply_zip64(const uint8_t* extra, size_t n, uint64_t* usize, uint64_t* csize, uint64_t* offset,
                 std::string_view source, const std::string& name) {
  while (n >= 4) {
    const uint64_t id = le(extra, 2), len = le(extra + 2, 2);
    if (len > n - 4) fail_zip(source, "entry '", name, "': extra field runs past its header");
    if (id == 1) {
      const uint8_t* p = extra + 4;
      uint64_t left = len;
      for (uint64_t* field : {usize, csize, offset}) {
        if (*field != 0xFFFFFFFF) continue;
        if (left < 8) fail_zip(source, "entry '", name, "': zip64 extra field too short");
        *field = le(p, 8);
        p += 8;
        left -= 8;
      }
      return;
    }
    extra += 4 + len;
    n -= 4 + static_cast<size_t>(len);
  }
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(const uint8_t* bytes, size_t size,
                                         std::string_view source) {
  const Directory dir = find_directory(bytes, size, source);
  std::vector<ZipEntry> entries;
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // [local header, data end)
  std::unordered_set<std::string> names;
  entries.reserve(static_cast<size_t>(dir.count));
  uint64_t at = dir.offset;
  const uint64_t dir_end = dir.offset + dir.size;
  for (uint64_t i = 0; i < dir.count; ++i) {
    if (dir_end - at < kCentralSize || le(bytes + at, 4) != kCentralSig)
      fail_zip(source, "central directory entry ", i, " at offset ", at, " is malformed");
    const uint8_t* h = bytes + at;
    const uint64_t name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    if (dir_end - at - kCentralSize < name_len + extra_len + comment_len)
      fail_zip(source, "central directory entry ", i, " runs past the directory");
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
    const uint64_t flags = le(h + 8, 2);
    e.method = static_cast<uint16_t>(le(h + 10, 2));
    e.crc32 = static_cast<uint32_t>(le(h + 16, 4));
    e.compressed_size = le(h + 20, 4);
    e.uncompressed_size = le(h + 24, 4);
    uint64_t local = le(h + 42, 4);
    apply_zip64(h + kCentralSize + name_len, extra_len, &e.uncompressed_size, &e.compressed_size,
                &local, source, e.name);
    at += kCentralSize + name_len + extra_len + comment_len;
    if (flags & 1) fail_zip(source, "entry '", e.name, "' is encrypted");
    if (e.method != 0 && e.method != 8)
      fail_zip(source, "entry '", e.name, "' uses compression method ", e.method,
               " (only stored and deflate)");
    if (!names.insert(e.name).second) fail_zip(source, "holds two entries named '", e.name, "'");
    if (local > dir.offset || dir.offset - local < kLocalSize || le(bytes + local, 4) != kLocalSig)
      fail_zip(source, "entry '", e.name, "': local header at offset ", local,
               " is outside the file or malformed");
    const uint8_t* l = bytes + local;
    const uint64_t local_name = le(l + 26, 2), local_extra = le(l + 28, 2);
    e.data_offset = local + kLocalSize + local_name + local_extra;
    if (e.data_offset > dir.offset || dir.offset - e.data_offset < e.compressed_size)
      fail_zip(source, "entry '", e.name, "': data at offset ", e.data_offset, " of ",
               e.compressed_size, " bytes runs past the central directory (truncated?)");
    if (std::string_view(reinterpret_cast<const char*>(l + kLocalSize), local_name) != e.name)
      fail_zip(source, "entry '", e.name, "': local header names another file");
    if (e.method == 0 && e.compressed_size != e.uncompressed_size)
      fail_zip(source, "stored entry '", e.name, "' has ", e.compressed_size,
               " bytes but declares ", e.uncompressed_size);
    if (e.method == 8 && e.uncompressed_size / kMaxInflateRatio > e.compressed_size)
      fail_zip(source, "entry '", e.name, "' declares ", e.uncompressed_size, " bytes from ",
               e.compressed_size, " compressed (over ", kMaxInflateRatio,
               ":1, more than deflate can give: a zip bomb)");
    spans.emplace_back(local, e.data_offset + e.compressed_size);
    entries.push_back(std::move(e));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      fail_zip(source, "entries overlap at offset ", spans[i].first);
  return entries;
}

std::string_view read_zip_entry(const uint8_t* bytes, size_t size, const ZipEntry& entry,
                                std::string_view source, std::shared_ptr<std::string>* owned) {
  (void)size;  // read_zip_directory checked every range against it
  std::string_view out(reinterpret_cast<const char*>(bytes + entry.data_offset),
                       static_cast<size_t>(entry.compressed_size));
  if (entry.method == 8) {
    auto buffer = std::make_shared<std::string>();
    buffer->resize(static_cast<size_t>(entry.uncompressed_size));
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail_zip(source, "inflate cannot start");
    uint64_t in_left = entry.compressed_size, out_left = entry.uncompressed_size;
    z.next_in = const_cast<Bytef*>(bytes + entry.data_offset);
    z.next_out = reinterpret_cast<Bytef*>(buffer->data());
    // Inflates into the declared size, then into a one-byte probe: output past the declared
    // size is a lie (or a bomb) and stops at once.
    int status = Z_OK;
    unsigned char probe = 0;
    while (status == Z_OK) {
      const auto in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, UINT_MAX));
      const auto out_chunk = static_cast<uInt>(std::min<uint64_t>(out_left, UINT_MAX));
      const bool probing = out_chunk == 0;
      if (probing) z.next_out = &probe;
      z.avail_in = in_chunk;
      z.avail_out = probing ? 1 : out_chunk;
      status = inflate(&z, Z_NO_FLUSH);
      in_left -= in_chunk - z.avail_in;
      if (probing) {
        if (z.avail_out == 0) status = Z_BUF_ERROR;  // one byte more than declared
      } else {
        out_left -= out_chunk - z.avail_out;
      }
      if (status == Z_OK && z.avail_in == in_chunk && z.avail_out == (probing ? 1 : out_chunk))
        status = Z_BUF_ERROR;  // no progress: the input ended early
    }
    inflateEnd(&z);
    if (status != Z_STREAM_END || out_left != 0)
      fail_zip(source, "entry '", entry.name, "' does not inflate to its declared ",
               entry.uncompressed_size, " bytes (corrupt, truncated or a zip bomb)");
    *owned = std::move(buffer);
    out = **owned;
  }
  uLong crc = crc32(0, nullptr, 0);
  for (size_t done = 0; done < out.size();) {
    const auto chunk = static_cast<uInt>(std::min<size_t>(out.size() - done, UINT_MAX));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out.data() + done), chunk);
    done += chunk;
  }
  if (static_cast<uint32_t>(crc) != entry.crc32)
    fail_zip(source, "entry '", entry.name, "' fails its CRC-32 check (corrupt)");
  return out;
}

}  // namespace ox::io
