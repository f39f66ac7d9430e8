#include "oxmera/data/mnist.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/file_check.h"
#include "data/idx_format.h"
#include "oxmera/ops.h"

namespace ox::data {
namespace {

// Reads `count` bytes (the size stat gave) and no more: a file that grows while read cannot
// make the buffer larger than what was checked.
std::vector<uint8_t> read_bytes(FILE* file, size_t count, const std::string& source) {
  std::vector<uint8_t> bytes(count);
  size_t got = 0;
  while (got < count) {
    const size_t n = std::fread(bytes.data() + got, 1, count - got, file);
    if (n == 0) break;
    got += n;
  }
  OX_CHECK(!std::ferror(file), Io, kReadIdx, "error reading ", source);
  OX_CHECK(got == count, Io, kReadIdx, source, " changed while it was read (", got, " of ", count,
           " bytes)");
  return bytes;
}

// Deflate expands at most 1032:1 (RFC 1951: a 258-byte match in at most 2 bits), so a header
// declaring more than that of its compressed file lies, whatever the stream holds.
constexpr size_t kMaxDeflateRatio = 1032;
constexpr size_t kGzipSlack = 1 << 10;  // member headers and trailers

// The decompressed bytes of a gzip file, all its members (`cat a.gz b.gz` is one file to gzip
// and to zlib's gzread). The output grows chunk by chunk as data really inflates; once the IDX
// header is out, its claim is checked against the most the input can inflate to, and output
// beyond that claim stops the stream (a trailing-bytes error), so a header never sizes an
// allocation by itself, and a bomb ends in bad_alloc (read_idx's OutOfMemory) at worst.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& source) {
  z_stream stream{};
  OX_CHECK(inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK, Internal, kReadIdx,
           "inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, &inflateEnd);
  stream.next_in = const_cast<Bytef*>(in.data());
  stream.avail_in = uInt(std::min<size_t>(in.size(), UINT32_MAX));
  size_t in_left = in.size() - stream.avail_in;  // only for files over 4 GiB

  std::vector<uint8_t> out;
  size_t cap = SIZE_MAX;  // once known: header + payload + 1 byte to see any excess
  size_t payload = 0;
  constexpr size_t kChunk = 1 << 16;
  int rc = Z_OK;
  for (;;) {
    if (stream.avail_in == 0 && in_left) {
      stream.avail_in = uInt(std::min<size_t>(in_left, UINT32_MAX));
      in_left -= stream.avail_in;
    }
    if (cap == SIZE_MAX && out.size() >= 4 && out.size() >= 4 + 4 * size_t(out[3])) {
      IdxHeader h;
      try {
        h = parse_idx_header(out.data(), out.size(), source);
      } catch (const Error&) {
        return out;  // the caller's parse_idx names the fault
      }
      OX_CHECK(h.payload_bytes / kMaxDeflateRatio <= in.size() + kGzipSlack, Format, kReadIdx,
               source, ": truncated or lying header: it declares ", h.numel, " elements (",
               h.payload_bytes, " bytes), more than a gzip file of ", in.size(),
               " bytes can inflate to");
      cap = h.data_start + h.payload_bytes + 1;
      payload = h.payload_bytes;
    }
    if (rc == Z_STREAM_END) {
      if (stream.avail_in == 0 && in_left == 0) break;
      // Another member follows only if it starts with the gzip magic; anything else is junk.
      OX_CHECK(stream.avail_in >= 2 && stream.next_in[0] == 0x1f && stream.next_in[1] == 0x8b,
               Format, kReadIdx, source, ": ", stream.avail_in + in_left,
               " bytes after the end of the gzip stream");
      OX_CHECK(inflateReset(&stream) == Z_OK, Internal, kReadIdx, "inflateReset failed");
    }
    OX_CHECK(out.size() < cap, Format, kReadIdx, source, ": trailing bytes after the ", payload,
             "-byte payload");
    const size_t before = out.size();
    const size_t room = std::min(kChunk, cap - before);
    out.resize(before + room);
    stream.next_out = out.data() + before;
    stream.avail_out = uInt(room);
    rc = inflate(&stream, Z_NO_FLUSH);
    out.resize(before + room - stream.avail_out);
    const bool input_done = stream.avail_in == 0 && in_left == 0;
    OX_CHECK(!(input_done && (rc == Z_BUF_ERROR || (rc == Z_OK && stream.avail_out != 0))), Format,
             kReadIdx, source, ": truncated gzip stream after ", out.size(), " decompressed bytes");
    OX_CHECK(rc == Z_OK || rc == Z_STREAM_END, Format, kReadIdx, source, ": corrupt gzip stream (",
             stream.msg ? stream.msg : zError(rc), ")");
  }
  return out;
}

// A plain file's header is checked against the file's size (stat's) before the payload is
// read: a header declaring more (or less) than the file holds costs no allocation.
void check_plain_size(FILE* file, uint64_t size, const std::string& source) {
  uint8_t prefix[4 + 4 * kMaxIdxDims];
  const size_t got = std::fread(prefix, 1, std::min<uint64_t>(size, sizeof prefix), file);
  OX_CHECK(!std::ferror(file), Io, kReadIdx, "error reading ", source);
  const IdxHeader h = parse_idx_header(prefix, got, source);
  const uint64_t have = size - h.data_start;
  OX_CHECK(have >= h.payload_bytes, Format, kReadIdx, source, ": truncated: the header claims ",
           h.numel, " elements of ", dtype_name(h.dtype), " (", h.payload_bytes, " bytes), only ",
           have, " bytes follow it");
  OX_CHECK(have == h.payload_bytes, Format, kReadIdx, source, ": ", have - h.payload_bytes,
           " trailing bytes after the ", h.payload_bytes, "-byte payload");
  std::rewind(file);
}

Tensor read_idx_file(const std::string& source) {
  const uint64_t size = detail::require_regular_file(source, kReadIdx);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(source.c_str(), "rb"), &std::fclose);
  OX_CHECK(file != nullptr, Io, kReadIdx, "cannot open ", source, ": ", std::strerror(errno));
  std::vector<uint8_t> bytes;
  bool gzip = false;
  if (size == 0) {  // /proc and /sys report 0 bytes for what reading them gives
    const std::string all = detail::read_to_end(fileno(file.get()), source, kReadIdx);
    bytes.assign(all.begin(), all.end());
    gzip = bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
  } else {
    uint8_t magic[2] = {0, 0};
    const size_t magic_size = std::fread(magic, 1, 2, file.get());
    std::rewind(file.get());
    gzip = magic_size == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (!gzip) check_plain_size(file.get(), size, source);
    bytes = read_bytes(file.get(), size_t(size), source);
  }
  file.reset();
  if (gzip) bytes = gunzip(bytes, source);
  const IdxHeader header = parse_idx(bytes.data(), bytes.size(), source);
  // On the CPU whatever the default device: a data set lives on the host and batches move.
  Tensor out = empty(Shape(header.shape), {.dtype = header.dtype, .device = Device::cpu()});
  if (header.numel) decode_idx_payload(header, bytes.data(), out.raw_data_ptr(header.dtype));
  return out;
}

}  // namespace

Tensor read_idx(const std::filesystem::path& path) {
  const std::string source = path.string();
  try {
    return read_idx_file(source);
  } catch (const std::bad_alloc&) {
    OX_FAIL(OutOfMemory, kReadIdx, source, ": not enough memory to read it");
  }
}

namespace {

// The plain file if there is anything of that name (read_idx refuses it if it is not a regular
// file, rather than the .gz being read silently beside it), else the .gz.
std::filesystem::path find_idx(const std::filesystem::path& root, const std::string& name) {
  for (const auto& candidate : {root / name, root / (name + ".gz")}) {
    const detail::FileStatus status = detail::file_status(candidate.string());
    if (status.kind != detail::FileKind::kMissing) return candidate;
  }
  OX_FAIL(Io, "MnistDataset", "neither ", (root / name).string(), " nor its .gz exists");
}

}  // namespace

namespace {

// A label outside [0, classes) would fail deep inside a loss, steps into training; here it is
// the file's fault, named with the first offending example.
void check_labels(const Tensor& labels, int64_t classes, const std::string& source) {
  const std::vector<int64_t> values = labels.to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); ++i)
    OX_CHECK(values[i] >= 0 && values[i] < classes, Format, "MnistDataset", source, ": label ",
             values[i], " of example ", i, " is outside [0, ", classes, ")");
}

}  // namespace

MnistDataset::MnistDataset(const std::filesystem::path& root, bool train, int64_t num_classes) {
  detail::require_folder(root.string(), "MnistDataset");
  const std::string prefix = train ? "train" : "t10k";
  const auto images_path = find_idx(root, prefix + "-images-idx3-ubyte");
  const auto labels_path = find_idx(root, prefix + "-labels-idx1-ubyte");
  images_ = read_idx(images_path);
  const Tensor labels = read_idx(labels_path);
  OX_CHECK(images_.dtype() == kU8 && images_.dim() == 3, Format, "MnistDataset",
           images_path.string(), ": images must be u8 [N, H, W], got ", images_.dtype(), " ",
           images_.shape());
  OX_CHECK(labels.dtype() == kU8 && labels.dim() == 1, Format, "MnistDataset", labels_path.string(),
           ": labels must be u8 [N], got ", labels.dtype(), " ", labels.shape());
  OX_CHECK(images_.size(0) == labels.size(0), Format, "MnistDataset", images_path.string(), " has ",
           images_.size(0), " images but ", labels_path.string(), " has ", labels.size(0),
           " labels");
  labels_ = labels.to(kI64);
  if (num_classes > 0) check_labels(labels_, num_classes, labels_path.string());
}

int64_t MnistDataset::size() const { return images_.size(0); }

Example MnistDataset::get(int64_t index) const {
  OX_CHECK(index >= 0 && index < size(), Index, "MnistDataset", "index ", index,
           " is out of range for a dataset of ", size(), " examples");
  Tensor image = div(images_.select(0, index).to(kF32), 255.0).unsqueeze(0);
  return {image, labels_.select(0, index)};
}

}  // namespace ox::data
