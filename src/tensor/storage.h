#pragma once
// Storage: device-tagged bytes, owned through an Allocator or borrowed (from_blob), plus the
// version counter that views of it share, for autograd's in-place checks.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "backend/allocator.h"
#include "oxmera/core/device.h"

namespace ox {

class Storage {
 public:
  Storage(size_t nbytes, Device device, Allocator& allocator)
      : data_(allocator.allocate(nbytes)),
        nbytes_(nbytes),
        device_(device),
        allocator_(&allocator) {}
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (allocator_) {
      allocator_->deallocate(data_, nbytes_);
    } else if (deleter_) {
      deleter_(data_);
    }
  }

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace ox
