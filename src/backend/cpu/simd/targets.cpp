// Which Highway target the kernels run at. This file sees the same HWY_TARGETS as the kernel
// files (the definitions come from the oxmera target), so its lists match their dispatch tables.

#include "hwy/targets.h"
#include "backend/cpu/simd/simd.h"
#include "hwy/highway.h"
#include "oxmera/core/error.h"
#include "oxmera/runtime.h"

namespace ox::cpu::simd {

std::vector<std::string> targets() {
  // Taken before any set_target narrows what Highway reports.
  static const std::vector<std::string> all = [] {
    std::vector<std::string> names;
    for (int64_t t : hwy::SupportedAndGeneratedTargets()) names.emplace_back(hwy::TargetName(t));
    return names;
  }();
  return all;
}

std::string target() { return hwy::TargetName(hwy::SupportedAndGeneratedTargets().front()); }

void set_target(const std::string& name) {
  hwy::SetSupportedTargetsForTest(0);  // back to everything this CPU runs
  if (name.empty()) return;
  for (int64_t t : hwy::SupportedAndGeneratedTargets())
    if (hwy::TargetName(t) == name) return hwy::SetSupportedTargetsForTest(t);
  std::string list;
  for (const std::string& t : targets()) list += (list.empty() ? "" : ", ") + t;
  OX_FAIL(Value, "set_simd_target", "unknown SIMD target '", name, "'; this CPU runs: ", list);
}

}  // namespace ox::cpu::simd

namespace ox {

std::vector<std::string> simd_targets() { return cpu::simd::targets(); }
std::string simd_target() { return cpu::simd::target(); }
void set_simd_target(const std::string& name) { cpu::simd::set_target(name); }

}  // namespace ox
