// The embedded kernel images: lookup, fatbin parsing, which form a device runs.

#include "backend/cuda/image.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kKindPtx = 1, kKindElf = 2;
// Entry flags seen in nvcc's fatbins: bit 13 (0x2000) and bit 15 (0x8000) mark compressed
// payloads (LZ4 and Zstandard); a compressed entry also has a nonzero uncompressed size.
constexpr uint64_t kCompressedFlags = 0x2000u | 0x8000u;

template <class T>
T read(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

const KernelImage& kernel_image(std::string_view family) {
  for (const KernelImage* image : kernel_images())
    if (family == image->family) return *image;
  OX_FAIL(Internal, "cuda", "no CUDA kernel family '", family, "' is embedded in this library");
}

std::span<const unsigned char> ptx_fatbin(const KernelImage& image) {
  static std::mutex mutex;
  static std::map<const KernelImage*, std::vector<unsigned char>> inflated;
  std::lock_guard lock(mutex);
  std::vector<unsigned char>& out = inflated[&image];
  if (!out.empty()) return out;
  // The gzip trailer's last four bytes: the inflated size (the fatbin is far below 4 GiB).
  OX_CHECK(image.ptx_gz_size >= 18, Internal, "cuda", "the PTX of kernel family ", image.family,
           " is not gzip (", image.ptx_gz_size, " bytes)");
  out.resize(read<uint32_t>(image.ptx_gz + image.ptx_gz_size - 4));
  z_stream z{};
  OX_CHECK(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK, Internal, "cuda", "inflateInit2 failed");
  z.next_in = const_cast<unsigned char*>(image.ptx_gz);
  z.avail_in = static_cast<uInt>(image.ptx_gz_size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const size_t produced = out.size() - z.avail_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != out.size()) {
    out.clear();
    OX_FAIL(Internal, "cuda", "the PTX of kernel family ", image.family, " does not inflate (zlib ",
            rc, ")");
  }
  return out;
}

std::vector<FatbinEntry> parse_fatbin(const unsigned char* data, size_t size) {
  // Header: u32 magic, u16 version, u16 header size, u64 size of the entries that follow.
  OX_CHECK(data != nullptr && size >= 16 && read<uint32_t>(data) == kFatbinMagic, Internal, "cuda",
           "not a fatbin (", size, " bytes, no 0xBA55ED50 magic)");
  const uint16_t header_size = read<uint16_t>(data + 6);
  const uint64_t entries_size = read<uint64_t>(data + 8);
  OX_CHECK(header_size >= 16 && header_size <= size && entries_size <= size - header_size, Internal,
           "cuda", "fatbin header sizes (", header_size, ", ", entries_size, ") exceed its ", size,
           " bytes");
  // Entry: u16 kind, u16 version, u32 header size, u64 payload size (padded), u32 compressed
  // size, u32, u16 minor, u16 major, u32 arch, u32 name offset, u32 name size, u64 flags,
  // u64, u64 uncompressed size.
  std::vector<FatbinEntry> entries;
  const size_t end = header_size + entries_size;
  for (size_t off = header_size; off < end;) {
    OX_CHECK(end - off >= 64, Internal, "cuda", "fatbin entry at ", off, " is truncated");
    const unsigned char* e = data + off;
    const uint16_t kind = read<uint16_t>(e);
    const uint32_t entry_header = read<uint32_t>(e + 4);
    const uint64_t payload = read<uint64_t>(e + 8);
    OX_CHECK(entry_header >= 64 && entry_header <= end - off && payload <= end - off - entry_header,
             Internal, "cuda", "fatbin entry at ", off, " overruns the fatbin");
    OX_CHECK(kind == kKindPtx || kind == kKindElf, Internal, "cuda", "fatbin entry at ", off,
             " has unknown kind ", kind);
    FatbinEntry entry;
    entry.is_ptx = kind == kKindPtx;
    entry.arch = static_cast<int>(read<uint32_t>(e + 28));
    const uint64_t flags = read<uint64_t>(e + 40);
    const uint32_t compressed_size = read<uint32_t>(e + 16);
    entry.compressed = (flags & kCompressedFlags) != 0 && read<uint64_t>(e + 56) != 0;
    entry.payload = e + entry_header;
    entry.payload_size = entry.compressed ? compressed_size : payload;
    entries.push_back(entry);
    off += entry_header + payload;
  }
  return entries;
}

std::string_view ptx_text(const FatbinEntry& entry) {
  OX_ASSERT(entry.is_ptx && !entry.compressed);
  std::string_view text(reinterpret_cast<const char*>(entry.payload), entry.payload_size);
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  return text;
}

KernelForm kernel_form_for(const std::vector<int>& targets, int ptx_target, int major, int minor) {
  const int cc = major * 10 + minor;
  for (int t : targets)
    if (t / 10 == major && t <= cc) return KernelForm::MachineCode;
  return cc >= ptx_target ? KernelForm::PtxJit : KernelForm::None;
}

std::vector<int> built_targets() {
  std::vector<int> targets;
  const char* s = kernel_build().targets;
  while (*s != '\0') {
    char* next = nullptr;
    targets.push_back(static_cast<int>(std::strtol(s, &next, 10)));
    s = *next == ',' ? next + 1 : next;
  }
  return targets;
}

std::string combined_fingerprint() {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::string_view s) {
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  };
  for (const KernelImage* image : kernel_images()) {
    mix(image->family);
    mix(":");
    mix(image->stamp);
    mix(";");
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace ox::cuda::detail
