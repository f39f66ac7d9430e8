// Autocast's thread-local state, its scope guard and the cast cache.

#include "oxmera/amp/autocast.h"

#include <unordered_map>

#include "amp/autocast_policy.h"
#include "oxmera/autograd.h"
#include "oxmera/core/error.h"

namespace ox::amp {

namespace {

uint8_t bit(DeviceType type) { return uint8_t(1u << static_cast<unsigned>(type)); }

// Casts of weights (leaf tensors that require grad) made while a scope is open. The entry holds
// the weight itself, so its address cannot be reused by another tensor while cached, and the
// weight's version at the cast, so a weight changed in place is cast afresh.
struct CacheEntry {
  Tensor source;
  uint64_t version;
  Tensor cast;
};
struct CacheKey {
  const TensorImpl* impl;
  DType dtype;
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return std::hash<const void*>()(k.impl) * 31 + static_cast<size_t>(k.dtype);
  }
};
thread_local std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> t_cache;

// A cached cast must carry the graph edge back to the weight, so casts made without grad mode
// (whose results have none) are not cached.
Tensor cached_cast(const Tensor& t, DType to) {
  const bool cacheable =
      detail::t_state.cache_enabled && t.requires_grad() && t.is_leaf() && is_grad_enabled();
  if (!cacheable) return t.to(to);
  CacheEntry& e = t_cache[CacheKey{t.impl(), to}];
  if (!e.cast.defined() || e.version != t.version()) e = CacheEntry{t, t.version(), t.to(to)};
  return e.cast;
}

}  // namespace

Autocast::Autocast(DeviceType device_type, std::optional<DType> dtype, bool enabled,
                   bool cache_enabled)
    : device_type_(device_type) {
  detail::ThreadState& s = detail::t_state;
  const DType to = dtype.value_or(device_type == DeviceType::CPU ? kBF16 : kF16);
  OX_CHECK(to == kF16 || to == kBF16, DType, "Autocast", "casts to f16 or bf16, not ", to,
           " (device ", Device(device_type), ")");
  const size_t i = static_cast<size_t>(device_type);
  prev_enabled_ = (s.enabled_mask & bit(device_type)) != 0;
  prev_dtype_ = s.dtype[i];
  prev_cache_enabled_ = s.cache_enabled;
  s.enabled_mask =
      enabled ? (s.enabled_mask | bit(device_type)) : (s.enabled_mask & ~bit(device_type));
  s.dtype[i] = to;
  s.cache_enabled = cache_enabled;
  ++s.depth;
}

Autocast::~Autocast() {
  detail::ThreadState& s = detail::t_state;
  const size_t i = static_cast<size_t>(device_type_);
  s.enabled_mask =
      prev_enabled_ ? (s.enabled_mask | bit(device_type_)) : (s.enabled_mask & ~bit(device_type_));
  s.dtype[i] = prev_dtype_;
  s.cache_enabled = prev_cache_enabled_;
  if (--s.depth == 0) t_cache.clear();
}

bool is_autocast_enabled(DeviceType device_type) {
  return (detail::t_state.enabled_mask & bit(device_type)) != 0;
}
DType get_autocast_dtype(DeviceType device_type) {
  return detail::t_state.dtype[static_cast<size_t>(device_type)];
}
bool is_autocast_cache_enabled() { return detail::t_state.cache_enabled; }
void clear_autocast_cache() { t_cache.clear(); }
size_t cast_cache_size() { return t_cache.size(); }

void OpCast::init(CastPolicy policy, const Tensor& first_input) {
  if (!first_input.defined()) return;
  const DeviceType type = first_input.device().type();
  if (!is_autocast_enabled(type)) return;
  policy_ = policy;
  to_ = policy == CastPolicy::LowerPrecision ? get_autocast_dtype(type) : kF32;
  detail::t_state.suspended = true;
}

Tensor OpCast::operator()(const Tensor& t) const {
  if (!to_ || !t.defined() || t.dtype() == *to_) return t;
  // PyTorch's eligibility: f64 is left alone by both policies.
  const bool eligible = policy_ == CastPolicy::LowerPrecision
                            ? is_floating(t.dtype()) && t.dtype() != kF64
                            : (t.dtype() == kF16 || t.dtype() == kBF16);
  if (!eligible) return t;
  return policy_ == CastPolicy::LowerPrecision ? cached_cast(t, *to_) : t.to(*to_);
}

}  // namespace ox::amp
