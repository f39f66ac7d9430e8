// set_float32_matmul_precision (oxmera/runtime.h): one process-wide setting, read by the CUDA
// matmul launcher on every f32 product.

#include <atomic>
#include <string>

#include "oxmera/core/error.h"
#include "oxmera/runtime.h"

namespace ox {

namespace {

constexpr const char* kPrecisions[] = {"highest", "high", "medium"};
std::atomic<int> g_precision{0};  // an index into kPrecisions

}  // namespace

void set_float32_matmul_precision(const std::string& precision) {
  for (int i = 0; i < int(std::size(kPrecisions)); ++i)
    if (precision == kPrecisions[i]) return g_precision.store(i, std::memory_order_relaxed);
  OX_FAIL(Value, "set_float32_matmul_precision", "unknown precision \"", precision,
          "\"; expected \"highest\", \"high\" or \"medium\"");
}

std::string get_float32_matmul_precision() {
  return kPrecisions[g_precision.load(std::memory_order_relaxed)];
}

}  // namespace ox
