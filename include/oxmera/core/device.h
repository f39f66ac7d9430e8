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
  constexpr Device(DeviceType type, int index) : type_(type), index_(index) {}
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
std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace ox
