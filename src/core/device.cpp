#include "oxmera/core/device.h"

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

}  // namespace ox
