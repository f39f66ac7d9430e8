#include "oxmera/core/device.h"

#include <atomic>
#include <charconv>
#include <ostream>

#include "oxmera/core/error.h"

namespace ox {

std::string_view device_type_name(DeviceType type) {
  return type == DeviceType::CPU ? "cpu" : "cuda";
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:") && text.size() > 5) {
    const std::string_view digits = text.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda(index);
  }
  OX_FAIL(Value, "Device", "cannot parse device '", std::string(text),
          "' (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_); }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

namespace {

// A Device packed in an int, so the process-wide default is one lock-free atomic.
constexpr int pack(Device d) { return int(d.type()) << 24 | d.index(); }
constexpr Device unpack(int v) { return {DeviceType(v >> 24), v & 0xFFFFFF}; }

std::atomic<int> g_default{pack(Device::cpu())};
thread_local bool t_guarded = false;
thread_local Device t_device;

}  // namespace

Device default_device() { return t_guarded ? t_device : unpack(g_default.load()); }

void set_default_device(Device device) {
  OX_CHECK(device.index() >= 0 && device.index() <= 0xFFFFFF, Device, "set_default_device",
           "device index ", device.index(), " is out of range");
  g_default.store(pack(device));
}

DeviceGuard::DeviceGuard(Device device) : had_previous_(t_guarded), previous_(t_device) {
  OX_CHECK(device.index() >= 0, Device, "DeviceGuard", "device index ", device.index(),
           " is negative");
  t_guarded = true;
  t_device = device;
}

DeviceGuard::~DeviceGuard() {
  t_guarded = had_previous_;
  t_device = previous_;
}

}  // namespace ox
