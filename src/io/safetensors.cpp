#include "oxmera/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <unordered_map>

#include "core/file_check.h"
#include "io/atomic_file.h"
#include "io/crc32c.h"
#include "io/safetensors_format.h"
#include "io/safetensors_internal.h"
#include "oxmera/core/error.h"

namespace ox {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

constexpr std::string_view kSaveOp = "save_safetensors";
constexpr std::string_view kReadOp = "safetensors";

// The bytes of a file: a private (copy-on-write) mapping, or an aligned heap copy.
class FileBytes {
 public:
  FileBytes(uint8_t* data, size_t size, bool mapped) : data_(data), size_(size), mapped_(mapped) {}
  ~FileBytes() {
    if (mapped_) {
      ::munmap(data_, size_);
    } else {
      ::operator delete (data_, std::align_val_t{64});
    }
  }
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_;
  size_t size_;
  bool mapped_;
};

std::shared_ptr<FileBytes> copy_bytes(std::string_view bytes) {
  auto* data = static_cast<uint8_t*>(
      ::operator new (std::max<size_t>(bytes.size(), 1), std::align_val_t{64}));
  if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  return std::make_shared<FileBytes>(data, bytes.size(), /*mapped=*/false);
}

std::shared_ptr<FileBytes> map_file(const std::string& path) {
  // Checked before open: opening a FIFO for reading blocks until a writer comes. O_NONBLOCK
  // as well, in case the path is swapped for one in between (it does nothing to a regular
  // file); fstat below then refuses it.
  detail::require_regular_file(path, kReadOp);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) OX_FAIL(Io, kReadOp, "cannot open '", path, "': ", std::strerror(errno));
  const detail::FdCloser closer(fd);
  struct stat status {};
  if (::fstat(fd, &status) != 0)
    OX_FAIL(Io, kReadOp, "cannot stat '", path, "': ", std::strerror(errno));
  if (!S_ISREG(status.st_mode))
    OX_FAIL(Io, kReadOp, "'", path, "' ", detail::file_status(path).what, ", not a regular file");
  const auto size = static_cast<size_t>(status.st_size);
  // /proc and /sys report 0 bytes for what reading them gives.
  if (size == 0) return copy_bytes(detail::read_to_end(fd, path, kReadOp));
  if (size < 8) {  // too short to map usefully; the parser reports it
    char small[8];
    const ssize_t got = ::pread(fd, small, size, 0);
    return copy_bytes(std::string_view(small, got > 0 ? static_cast<size_t>(got) : 0));
  }
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int error = errno;
  if (data == MAP_FAILED) OX_FAIL(Io, kReadOp, "cannot map '", path, "': ", std::strerror(error));
  return std::make_shared<FileBytes>(static_cast<uint8_t*>(data), size, /*mapped=*/true);
}

// ---- Aliasing: entries of one save must not share bytes --------------------------------------

// Calls fn(byte offset in the storage) for the first byte of each element of `t`.
template <class F>
void for_each_element_byte(const Tensor& t, F&& fn) {
  const Layout& layout = t.layout();
  const auto element = static_cast<int64_t>(t.element_size());
  const size_t dims = layout.shape.size();
  std::vector<int64_t> index(dims, 0);
  int64_t position = layout.offset;
  for (int64_t n = 0; n < t.numel(); ++n) {
    fn(position * element);
    for (size_t d = dims; d-- > 0;) {
      position += layout.strides[d];
      if (++index[d] < layout.shape[d]) break;
      position -= layout.strides[d] * layout.shape[d];
      index[d] = 0;
    }
  }
}

bool tensors_overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto span = [](const Tensor& t) {
    const auto element = static_cast<int64_t>(t.element_size());
    return std::pair<int64_t, int64_t>{t.layout().min_index() * element,
                                       (t.layout().max_index() + 1) * element};
  };
  const auto [a_lo, a_hi] = span(a);
  const auto [b_lo, b_hi] = span(b);
  if (a_hi <= b_lo || b_hi <= a_lo) return false;
  if (a.is_contiguous() && b.is_contiguous()) return true;
  // Strided views can interleave without sharing a byte (x[:, 0] and x[:, 1]): mark a's bytes
  // over the common span, then look for one of b's.
  const int64_t lo = std::max(a_lo, b_lo), hi = std::min(a_hi, b_hi);
  std::vector<bool> marked(static_cast<size_t>(hi - lo), false);
  const auto a_size = static_cast<int64_t>(a.element_size());
  const auto b_size = static_cast<int64_t>(b.element_size());
  for_each_element_byte(a, [&](int64_t byte) {
    for (int64_t k = std::max(byte, lo); k < std::min(byte + a_size, hi); ++k)
      marked[static_cast<size_t>(k - lo)] = true;
  });
  bool shared = false;
  for_each_element_byte(b, [&](int64_t byte) {
    for (int64_t k = std::max(byte, lo); k < std::min(byte + b_size, hi) && !shared; ++k)
      shared = marked[static_cast<size_t>(k - lo)];
  });
  return shared;
}

void refuse_aliases(const TensorDict& tensors) {
  std::unordered_map<const Storage*, std::vector<size_t>> by_storage;
  const auto& items = tensors.items();
  for (size_t i = 0; i < items.size(); ++i)
    by_storage[items[i].second.storage().get()].push_back(i);
  for (const auto& [storage, group] : by_storage)
    for (size_t x = 0; x < group.size(); ++x)
      for (size_t y = x + 1; y < group.size(); ++y) {
        const auto& [name_a, a] = items[group[x]];
        const auto& [name_b, b] = items[group[y]];
        OX_CHECK(!tensors_overlap(a, b), Value, kSaveOp, "tensors '", name_a, "' and '", name_b,
                 "' share memory; save a clone of one of them");
      }
}

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", value);
  return text;
}

void write_u64_le(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

}  // namespace

// ---- Writing ---------------------------------------------------------------------------------

namespace {

void save(const std::string& path, const TensorDict& tensors,
          const std::map<std::string, std::string>& given_metadata, bool checksums) {
  for (const auto& [name, tensor] : tensors)
    OX_CHECK(tensor.defined(), Value, kSaveOp, "tensor '", name, "' is undefined");
  refuse_aliases(tensors);

  struct Pending {
    const std::string* name;
    Tensor data;  // CPU, contiguous
  };
  std::vector<Pending> pending;
  pending.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors)
    pending.push_back({&name, tensor.detach().cpu().contiguous()});
  // Larger elements first: with an 8-byte-aligned header every tensor lands aligned.
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    return a.data.element_size() > b.data.element_size();
  });

  std::vector<io::SafetensorsEntry> entries;
  entries.reserve(pending.size());
  uint64_t offset = 0;
  for (const Pending& item : pending) {
    const Shape& shape = item.data.shape();
    entries.push_back({*item.name, item.data.dtype(),
                       std::vector<int64_t>(shape.begin(), shape.end()), offset,
                       offset + item.data.nbytes()});
    offset += item.data.nbytes();
  }
  std::map<std::string, std::string> with_sums;
  if (checksums) {
    std::vector<std::pair<std::string, uint32_t>> sums;
    sums.reserve(pending.size());
    for (const Pending& item : pending)
      sums.emplace_back(
          *item.name,
          io::crc32c(item.data.nbytes() > 0 ? item.data.raw_data_ptr(item.data.dtype()) : nullptr,
                     item.data.nbytes()));
    with_sums = given_metadata;
    with_sums[std::string(kSafetensorsChecksumKey)] = io::build_checksums(sums);
  }
  const auto& metadata = checksums ? with_sums : given_metadata;
  std::string header = io::build_safetensors_header(entries, metadata);
  std::string prefix;
  write_u64_le(prefix, header.size());

  io::write_file_atomically(
      path,
      [&](int fd) {
        io::write_all(fd, prefix.data(), prefix.size(), path, kSaveOp);
        io::write_all(fd, header.data(), header.size(), path, kSaveOp);
        for (const Pending& item : pending)
          if (item.data.nbytes() > 0)
            io::write_all(fd, item.data.raw_data_ptr(item.data.dtype()), item.data.nbytes(), path,
                          kSaveOp);
      },
      kSaveOp);
}

}  // namespace

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  save(path, tensors, metadata, /*checksums=*/false);
}

void io::save_safetensors_with_checksums(const std::string& path, const TensorDict& tensors,
                                         const std::map<std::string, std::string>& metadata) {
  save(path, tensors, metadata, /*checksums=*/true);
}

TensorDict load_safetensors(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  io::require_checksums_match(file, "load_safetensors");
  const auto mapped_begin = reinterpret_cast<uintptr_t>(file.mapped_data());
  const uintptr_t mapped_end = mapped_begin + file.mapped_size();
  TensorDict out;
  for (const auto& [name, tensor] : file.get_all()) {
    // A tensor over the mapping would keep the file mapped, and fault if it were truncated.
    const auto data =
        tensor.numel() > 0 ? reinterpret_cast<uintptr_t>(tensor.raw_data_ptr(tensor.dtype())) : 0;
    const bool mapped = mapped_begin <= data && data < mapped_end;
    out.insert(name, mapped ? tensor.clone() : tensor);
  }
  return out;
}

// ---- Reading ---------------------------------------------------------------------------------

struct SafetensorsFile::Impl {
  std::string path;
  std::shared_ptr<FileBytes> bytes;
  std::vector<SafetensorsTensorInfo> infos;            // in order of data offsets
  std::unordered_map<std::string_view, size_t> index;  // views into infos' names
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;
};

namespace {

std::shared_ptr<const SafetensorsFile::Impl> build_impl(std::string path,
                                                        std::shared_ptr<FileBytes> bytes) {
  io::SafetensorsHeader header = io::parse_safetensors(bytes->data(), bytes->size(), path);
  auto impl = std::make_shared<SafetensorsFile::Impl>();
  impl->path = std::move(path);
  impl->bytes = std::move(bytes);
  impl->metadata = std::move(header.metadata);
  impl->data_start = header.data_start;
  impl->infos.reserve(header.entries.size());
  for (io::SafetensorsEntry& entry : header.entries)
    impl->infos.push_back({std::move(entry.name), entry.dtype,
                           Shape(entry.shape.begin(), entry.shape.end()), entry.begin, entry.end});
  for (size_t i = 0; i < impl->infos.size(); ++i) impl->index.emplace(impl->infos[i].name, i);
  return impl;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  return SafetensorsFile(build_impl(path, map_file(path)));
}

SafetensorsFile SafetensorsFile::from_bytes(std::string_view bytes, const std::string& name) {
  return SafetensorsFile(build_impl(name, copy_bytes(bytes)));
}

const std::string& SafetensorsFile::path() const { return impl_->path; }

std::vector<std::string> SafetensorsFile::keys() const {
  std::vector<std::string> out;
  out.reserve(impl_->infos.size());
  for (const SafetensorsTensorInfo& info : impl_->infos) out.push_back(info.name);
  return out;
}

bool SafetensorsFile::contains(std::string_view name) const {
  return impl_->index.find(name) != impl_->index.end();
}

size_t SafetensorsFile::size() const { return impl_->infos.size(); }

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return impl_->metadata;
}

const SafetensorsTensorInfo& SafetensorsFile::info(std::string_view name) const {
  const auto found = impl_->index.find(name);
  OX_CHECK(found != impl_->index.end(), Index, kReadOp, impl_->path, ": no tensor '", name, "'");
  return impl_->infos[found->second];
}

uint64_t SafetensorsFile::data_start() const { return impl_->data_start; }
const uint8_t* SafetensorsFile::mapped_data() const { return impl_->bytes->data(); }
size_t SafetensorsFile::mapped_size() const { return impl_->bytes->size(); }

Tensor SafetensorsFile::get(std::string_view name) const {
  const SafetensorsTensorInfo& info = this->info(name);
  uint8_t* data = impl_->bytes->data() + impl_->data_start + info.begin;
  const size_t nbytes = info.end - info.begin;
  if (info.dtype == kBool) {  // any other byte would be undefined behaviour as a C++ bool
    const void* bad = std::find_if(data, data + nbytes, [](uint8_t b) { return b > 1; });
    OX_CHECK(bad == data + nbytes, Format, kReadOp, impl_->path, ": BOOL tensor '", name,
             "' holds byte ", int(*static_cast<const uint8_t*>(bad)), " at element ",
             static_cast<const uint8_t*>(bad) - data, " (only 0 and 1 are booleans)");
  }
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(info.dtype) == 0) {
    std::shared_ptr<FileBytes> keep = impl_->bytes;
    return from_blob(data, info.shape, info.dtype, [keep](void*) {});
  }
  Tensor copy = empty(info.shape, {.dtype = info.dtype, .device = Device::cpu()});
  if (nbytes > 0) std::memcpy(copy.raw_data_ptr(info.dtype), data, nbytes);
  return copy;
}

TensorDict SafetensorsFile::get_all() const {
  TensorDict out;
  for (const SafetensorsTensorInfo& info : impl_->infos) out.insert(info.name, get(info.name));
  return out;
}

// ---- Checksums -------------------------------------------------------------------------------

static_assert(kSafetensorsChecksumKey == io::kChecksumKey);

std::vector<TensorChecksum> verify_checksums(const SafetensorsFile& file) {
  const auto& metadata = file.metadata();
  const auto listed = metadata.find(std::string(kSafetensorsChecksumKey));
  std::unordered_map<std::string, uint32_t> sums;
  if (listed != metadata.end()) sums = io::parse_checksums(listed->second, file.path());
  for (const auto& [name, crc] : sums)
    OX_CHECK(file.contains(name), Format, kReadOp, file.path(), ": metadata '",
             kSafetensorsChecksumKey, "' has a checksum for tensor '", name,
             "', which the file does not hold");
  std::vector<TensorChecksum> out;
  out.reserve(file.size());
  const uint8_t* data = file.mapped_data() + file.data_start();
  for (const std::string& name : file.keys()) {
    const SafetensorsTensorInfo& info = file.info(name);
    TensorChecksum result{.name = name};
    result.computed = io::crc32c(data + info.begin, info.end - info.begin);
    if (const auto found = sums.find(name); found != sums.end()) {
      result.stored = found->second;
      result.status = result.stored == result.computed ? TensorChecksum::Status::Ok
                                                       : TensorChecksum::Status::Mismatch;
    }
    out.push_back(std::move(result));
  }
  return out;
}

std::vector<TensorChecksum> verify_safetensors(const std::string& path) {
  return verify_checksums(SafetensorsFile::open(path));
}

void io::require_checksums_match(const SafetensorsFile& file, std::string_view op) {
  if (!file.metadata().contains(std::string(kSafetensorsChecksumKey))) return;  // older files
  for (const TensorChecksum& c : verify_checksums(file)) {
    OX_CHECK(c.status != TensorChecksum::Status::Mismatch, Format, op, file.path(), ": tensor '",
             c.name, "' does not match its checksum (crc32c stored ", hex32(c.stored),
             ", computed ", hex32(c.computed), "): the file is corrupt");
    OX_CHECK(c.status != TensorChecksum::Status::Missing, Format, op, file.path(), ": tensor '",
             c.name,
             "' has no checksum though the file lists checksums: the "
             "file was changed after it was written");
  }
}

}  // namespace ox
