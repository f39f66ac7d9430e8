#pragma once
// Where a tensor's bytes live.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ox {

enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr int kNumDeviceTypes = 2;

class Device {
 public:
  constexpr Device() = default;
  // Implicit from a type, as LibTorch's `Device(kCUDA)` / `x.to(kCUDA)`: device 0 of it.
  constexpr Device(DeviceType type, int index = 0) : type_(type), index_(index) {}  // NOLINT
  static constexpr Device cpu() { return {DeviceType::CPU, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  // "cpu", "cuda", "cuda:1"; throws ErrorKind::Value on anything else.
  static Device parse(std::string_view text);

  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  constexpr bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"

 private:
  DeviceType type_ = DeviceType::CPU;
  int index_ = 0;
};

std::string_view device_type_name(DeviceType type);

// The device of tensors made without one named (a factory's `device` option left empty, a
// module's parameters): the CPU, unless set_default_device chose another for the process, or
// a DeviceGuard for the current thread (PyTorch's torch.set_default_device).
Device default_device();
void set_default_device(Device device);

// Makes `device` this thread's default device until the guard goes out of scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  bool had_previous_;
  Device previous_;
};
std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace ox
