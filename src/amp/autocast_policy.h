#pragma once
// How the ops on autocast's lists take part (internal). Each listed op starts with
//
//   if (auto cast = amp::OpCast(amp::CastPolicy::LowerPrecision, a)) return op(cast(a), cast(b));
//
// OpCast is false (and costs one thread-local read) unless autocast is on for `a`'s device type
// and not already inside an autocast op; when true it suspends autocast until the statement
// ends, so the op's own implementation (and the composites it calls) run as written, on the cast
// inputs, and ops nested inside a listed op never cast again (PyTorch's dispatch-key exclusion).

#include <cstdint>
#include <optional>

#include "oxmera/tensor.h"

namespace ox::amp {

enum class CastPolicy : uint8_t {
  LowerPrecision,  // floating inputs but f64 cast to the autocast dtype
  Float32,         // 16-bit floating inputs cast to f32
};

namespace detail {
struct ThreadState {
  uint8_t enabled_mask = 0;  // bit (1 << DeviceType) for each device type with autocast on
  bool suspended = false;    // inside a listed op
  bool cache_enabled = true;
  int depth = 0;  // open Autocast scopes (enabled or not)
  DType dtype[2] = {kBF16, kF16};
};
inline thread_local ThreadState t_state;
}  // namespace detail

class OpCast {
 public:
  OpCast(CastPolicy policy, const Tensor& first_input) {
    const detail::ThreadState& s = detail::t_state;
    if (s.enabled_mask == 0 || s.suspended) [[likely]]
      return;
    init(policy, first_input);
  }
  ~OpCast() {
    if (to_) detail::t_state.suspended = false;
  }
  OpCast(const OpCast&) = delete;
  OpCast& operator=(const OpCast&) = delete;

  explicit operator bool() const { return to_.has_value(); }
  // The tensor as the op takes it: cast when its dtype is one the policy casts, else itself.
  Tensor operator()(const Tensor& t) const;

 private:
  void init(CastPolicy policy, const Tensor& first_input);
  CastPolicy policy_ = CastPolicy::Float32;
  std::optional<DType> to_;
};

// Entries in this thread's cast cache (tests check that a weight is cast once per scope).
size_t cast_cache_size();

}  // namespace ox::amp
