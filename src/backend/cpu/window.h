#pragma once
// Index arithmetic shared by the sliding-window kernels (conv.cpp, pool.cpp).

#include <algorithm>
#include <cstdint>
#include <utility>

namespace ox::cpu {

// The steps t in [0, count) whose coordinate start + t * step (step > 0) lies in [0, n), as a
// range [lo, hi): the output columns a kernel column reaches, or the window rows inside the
// input, without a bounds test per element.
inline std::pair<int64_t, int64_t> covered_outputs(int64_t start, int64_t step, int64_t n,
                                                   int64_t count) {
  // Ceiling division without a + step - 1 that could overflow for a huge step.
  auto ceil_div = [](int64_t a, int64_t b) { return a / b + (a % b != 0); };
  const int64_t lo = start >= 0 ? 0 : ceil_div(-start, step);
  const int64_t hi = n - start <= 0 ? 0 : ceil_div(n - start, step);
  const int64_t l = std::min(lo, count);
  return {l, std::clamp(hi, l, count)};
}

}  // namespace ox::cpu
