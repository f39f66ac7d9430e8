#include "oxmera/io/pytorch.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/file_check.h"
#include "io/pytorch_format.h"
#include "oxmera/core/error.h"

namespace ox {

static_assert(std::endian::native == std::endian::little,
              "checkpoint data is little-endian; a big-endian host would need byte swaps");

namespace {

constexpr std::string_view kOp = "load_pytorch";

// The file mapped read-only (private), unmapped when this goes.
class Mapped {
 public:
  explicit Mapped(const std::string& path) {
    detail::require_regular_file(path, kOp);  // before open: a FIFO would block it
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) OX_FAIL(Io, kOp, "cannot open '", path, "': ", std::strerror(errno));
    const detail::FdCloser closer(fd);
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode))
      OX_FAIL(Io, kOp, "cannot read '", path, "' as a regular file: ", std::strerror(errno));
    size_ = static_cast<size_t>(status.st_size);
    if (size_ > 0) {
      void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) OX_FAIL(Io, kOp, "cannot map '", path, "': ", std::strerror(errno));
      data_ = static_cast<const uint8_t*>(data);
    } else {  // /proc and /sys report 0 bytes for what reading them gives
      owned_ = detail::read_to_end(fd, path, kOp);
      size_ = owned_.size();
    }
  }
  ~Mapped() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const uint8_t* data() const {
    if (data_ != nullptr) return data_;
    return owned_.empty() ? &empty_ : reinterpret_cast<const uint8_t*>(owned_.data());
  }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;  // the mapping, when the file has a size
  std::string owned_;              // else what reading it gave
  size_t size_ = 0;
  uint8_t empty_ = 0;
};

// The storage as a 1-D CPU tensor of its dtype (a copy: the mapping may be unaligned).
Tensor storage_tensor(const io::PytorchStorage& s, const std::string& path) {
  Tensor t = empty({s.numel()}, {.dtype = s.dtype, .device = Device::cpu()});
  if (s.bytes.empty()) return t;
  if (s.dtype == kBool) {  // any byte but 0 and 1 would be undefined behaviour as a C++ bool
    const auto* begin = reinterpret_cast<const uint8_t*>(s.bytes.data());
    const auto* bad = std::find_if(begin, begin + s.bytes.size(), [](uint8_t b) { return b > 1; });
    OX_CHECK(bad == begin + s.bytes.size(), Format, kOp, path, ": bool storage '", s.key,
             "' holds byte ", int(*bad), " at element ", bad - begin);
  }
  std::memcpy(t.raw_data_ptr(s.dtype), s.bytes.data(), s.bytes.size());
  return t;
}

}  // namespace

TensorDict load_pytorch(const std::string& path) {
  const Mapped file(path);
  const io::PytorchContents contents = io::parse_pytorch(file.data(), file.size(), path);
  std::vector<Tensor> storages;
  storages.reserve(contents.storages.size());
  for (const io::PytorchStorage& s : contents.storages) storages.push_back(storage_tensor(s, path));
  TensorDict out;
  std::unordered_map<uint32_t, Tensor> made;  // one ox::Tensor per tensor object of the pickle
  for (const io::PytorchTensorView& view : contents.tensors) {
    auto found = made.find(view.identity);
    if (found == made.end()) {
      const Tensor& base = storages[view.storage];
      Tensor t =
          view.numel == 0
              ? empty(Shape(view.shape.begin(), view.shape.end()),
                      {.dtype = view.dtype, .device = Device::cpu()})
              : base.as_strided(Shape(view.shape.begin(), view.shape.end()),
                                Strides(view.strides.begin(), view.strides.end()), view.offset)
                    .clone();
      found = made.emplace(view.identity, std::move(t)).first;
    }
    out.insert(view.name, found->second);
  }
  return out;
}

PytorchFileInfo inspect_pytorch(const std::string& path) {
  const Mapped file(path);
  const io::PytorchContents contents = io::parse_pytorch(file.data(), file.size(), path);
  PytorchFileInfo info{contents.format, {}, contents.skipped, contents.storage_bytes};
  for (const io::PytorchTensorView& view : contents.tensors)
    info.tensors.push_back({view.name, view.dtype, Shape(view.shape.begin(), view.shape.end()),
                            Strides(view.strides.begin(), view.strides.end()), view.offset,
                            contents.storages[view.storage].key});
  return info;
}

bool is_pytorch_file(const std::string& path) {
  const Mapped file(path);
  return io::looks_like_pytorch(file.data(), file.size());
}

}  // namespace ox
