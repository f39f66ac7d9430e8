#include "oxmera/data/mnist.h"

#include <zlib.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "data/idx_format.h"
#include "oxmera/ops.h"

namespace ox::data {
namespace {

constexpr const char* kOp = "read_idx";

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  OX_CHECK(file != nullptr, Io, kOp, "cannot open ", path.string());
  // Grown as bytes arrive, so a file that changes size while read cannot mislead the buffer.
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, file.get())) > 0)
    bytes.insert(bytes.end(), chunk, chunk + got);
  OX_CHECK(!std::ferror(file.get()), Io, kOp, "error reading ", path.string());
  return bytes;
}

// The decompressed bytes of a gzip file. The output grows chunk by chunk as data really
// inflates; once the IDX header is out, output beyond the size it claims stops the stream (a
// trailing-bytes error follows), so a header's claim never sizes an allocation by itself.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& source) {
  z_stream stream{};
  OX_CHECK(inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK, Internal, kOp, "inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, &inflateEnd);
  stream.next_in = const_cast<Bytef*>(in.data());
  stream.avail_in = uInt(std::min<size_t>(in.size(), UINT32_MAX));
  size_t in_left = in.size() - stream.avail_in;  // only for files over 4 GiB

  std::vector<uint8_t> out;
  size_t cap = SIZE_MAX;  // once known: header + payload + 1 byte to see any excess
  size_t payload = 0;
  constexpr size_t kChunk = 1 << 16;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (cap == SIZE_MAX && out.size() >= 4) {
      const int dims = out[3];
      if (out.size() >= 4 + 4 * size_t(dims)) {
        try {
          const IdxHeader h = parse_idx_header(out.data(), out.size(), source);
          cap = h.data_start + h.payload_bytes + 1;
          payload = h.payload_bytes;
        } catch (const Error&) {
          break;  // the caller's parse_idx names the fault
        }
      }
    }
    OX_CHECK(out.size() < cap, Format, kOp, source, ": trailing bytes after the ", payload,
             "-byte payload");
    const size_t before = out.size();
    const size_t room = std::min(kChunk, cap - before);
    out.resize(before + room);
    stream.next_out = out.data() + before;
    stream.avail_out = uInt(room);
    if (stream.avail_in == 0 && in_left) {
      stream.avail_in = uInt(std::min<size_t>(in_left, UINT32_MAX));
      in_left -= stream.avail_in;
    }
    rc = inflate(&stream, Z_NO_FLUSH);
    out.resize(before + room - stream.avail_out);
    const bool input_done = stream.avail_in == 0 && in_left == 0;
    OX_CHECK(!(input_done && (rc == Z_BUF_ERROR || (rc == Z_OK && stream.avail_out != 0))), Format,
             kOp, source, ": truncated gzip stream after ", out.size(), " decompressed bytes");
    OX_CHECK(rc == Z_OK || rc == Z_STREAM_END, Format, kOp, source, ": corrupt gzip stream (",
             stream.msg ? stream.msg : zError(rc), ")");
  }
  if (rc == Z_STREAM_END)
    OX_CHECK(stream.avail_in == 0 && in_left == 0, Format, kOp, source, ": ",
             stream.avail_in + in_left, " bytes after the end of the gzip stream");
  return out;
}

}  // namespace

Tensor read_idx(const std::filesystem::path& path) {
  const std::string source = path.string();
  std::vector<uint8_t> bytes = read_file(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) bytes = gunzip(bytes, source);
  const IdxHeader header = parse_idx(bytes.data(), bytes.size(), source);
  Tensor out = empty(Shape(header.shape), {.dtype = header.dtype});
  if (header.numel) decode_idx_payload(header, bytes.data(), out.raw_data_ptr(header.dtype));
  return out;
}

namespace {

std::filesystem::path find_idx(const std::filesystem::path& root, const std::string& name) {
  for (const auto& candidate : {root / name, root / (name + ".gz")})
    if (std::filesystem::exists(candidate)) return candidate;
  OX_FAIL(Io, "MnistDataset", "neither ", (root / name).string(), " nor its .gz exists");
}

}  // namespace

MnistDataset::MnistDataset(const std::filesystem::path& root, bool train) {
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
}

int64_t MnistDataset::size() const { return images_.size(0); }

Example MnistDataset::get(int64_t index) const {
  OX_CHECK(index >= 0 && index < size(), Index, "MnistDataset", "index ", index,
           " is out of range for a dataset of ", size(), " examples");
  Tensor image = div(images_.select(0, index).to(kF32), 255.0).unsqueeze(0);
  return {image, labels_.select(0, index)};
}

}  // namespace ox::data
