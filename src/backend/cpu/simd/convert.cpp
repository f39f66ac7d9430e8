// 16-bit float conversions, compiled once per Highway target. bf16 goes by integer arithmetic on
// every target (rounding to nearest even); f16 by the F16C instructions where the target has
// them (AVX2 and up) and by the scalar code elsewhere: Highway's portable f16 conversions
// truncate and read infinities and NaNs as numbers.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/simd/convert.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off: foreach_target.h must come first
#include "hwy/highway.h"
// clang-format on

#include "backend/cpu/simd/simd.h"

HWY_BEFORE_NAMESPACE();
namespace ox::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f(d, offset, count) over [0, n) in vectors of f32 lanes; the last call may have count < lanes.
template <class F>
void f32_blocks(int64_t n, F&& f) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) f(d, i, lanes);
  if (i < n) f(d, i, n - i);
}

void WidenHalf(const Half* x, float* y, int64_t n) {
#if !(HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  // Highway's portable promotion reads f16 infinities and NaNs as numbers.
  for (int64_t i = 0; i < n; ++i) y[i] = float(x[i]);
#else
  const auto* in = reinterpret_cast<const hwy::float16_t*>(x);
  f32_blocks(n, [&](auto d, int64_t i, int64_t count) {
    const hn::Rebind<hwy::float16_t, decltype(d)> d16;
    if (count == int64_t(hn::Lanes(d)))
      return hn::StoreU(hn::PromoteTo(d, hn::LoadU(d16, in + i)), d, y + i);
    HWY_ALIGN hwy::float16_t a[hn::MaxLanes(d)] = {};
    HWY_ALIGN float b[hn::MaxLanes(d)];
    for (int64_t j = 0; j < count; ++j) a[j] = in[i + j];
    hn::Store(hn::PromoteTo(d, hn::Load(d16, a)), d, b);
    for (int64_t j = 0; j < count; ++j) y[i + j] = b[j];
  });
#endif
}

void WidenBFloat16(const BFloat16* x, float* y, int64_t n) {
  const auto* in = reinterpret_cast<const uint16_t*>(x);
  f32_blocks(n, [&](auto d, int64_t i, int64_t count) {
    const hn::RebindToUnsigned<decltype(d)> du;
    const hn::Rebind<uint16_t, decltype(d)> d16;
    HWY_ALIGN uint16_t a[hn::MaxLanes(d)] = {};
    const uint16_t* src = in + i;
    if (count < int64_t(hn::Lanes(d))) {
      for (int64_t j = 0; j < count; ++j) a[j] = src[j];
      src = a;
    }
    const auto v = hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, src))));
    if (count == int64_t(hn::Lanes(d))) return hn::StoreU(v, d, y + i);
    HWY_ALIGN float b[hn::MaxLanes(d)];
    hn::Store(v, d, b);
    for (int64_t j = 0; j < count; ++j) y[i + j] = b[j];
  });
}

void NarrowBFloat16(const float* x, BFloat16* y, int64_t n) {
  auto* out = reinterpret_cast<uint16_t*>(y);
  f32_blocks(n, [&](auto d, int64_t i, int64_t count) {
    const hn::RebindToUnsigned<decltype(d)> du;
    const hn::RebindToSigned<decltype(d)> di;
    const hn::Rebind<uint16_t, decltype(d)> d16;
    HWY_ALIGN float a[hn::MaxLanes(d)] = {};
    const float* src = x + i;
    if (count < int64_t(hn::Lanes(d))) {
      for (int64_t j = 0; j < count; ++j) a[j] = src[j];
      src = a;
    }
    const auto bits = hn::BitCast(du, hn::LoadU(d, src));
    // Round to nearest even: add 0x7fff plus the lowest kept bit; NaN keeps its top bits, quiet.
    const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1));
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fff), lsb)));
    const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40));
    const auto r = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(hn::LoadU(d, src))), quiet, rounded);
    const auto narrow = hn::DemoteTo(d16, hn::BitCast(di, r));  // every value fits in 16 bits
    if (count == int64_t(hn::Lanes(d))) return hn::StoreU(narrow, d16, out + i);
    HWY_ALIGN uint16_t b[hn::MaxLanes(d)];
    hn::Store(narrow, d16, b);
    for (int64_t j = 0; j < count; ++j) out[i + j] = b[j];
  });
}

void NarrowHalf(const float* x, Half* y, int64_t n) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  auto* out = reinterpret_cast<hwy::float16_t*>(y);
  f32_blocks(n, [&](auto d, int64_t i, int64_t count) {
    const hn::Rebind<hwy::float16_t, decltype(d)> d16;
    if (count == int64_t(hn::Lanes(d)))
      return hn::StoreU(hn::DemoteTo(d16, hn::LoadU(d, x + i)), d16, out + i);
    HWY_ALIGN float a[hn::MaxLanes(d)] = {};
    HWY_ALIGN hwy::float16_t b[hn::MaxLanes(d)];
    for (int64_t j = 0; j < count; ++j) a[j] = x[i + j];
    hn::Store(hn::DemoteTo(d16, hn::Load(d, a)), d16, b);
    for (int64_t j = 0; j < count; ++j) out[i + j] = b[j];
  });
#else
  for (int64_t i = 0; i < n; ++i) y[i] = Half(x[i]);
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace ox::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ox::cpu::simd {

HWY_EXPORT(WidenHalf);
HWY_EXPORT(WidenBFloat16);
HWY_EXPORT(NarrowHalf);
HWY_EXPORT(NarrowBFloat16);

void widen(const Half* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(WidenHalf)(x, y, n); }
void widen(const BFloat16* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(WidenBFloat16)(x, y, n); }
void narrow(const float* x, Half* y, int64_t n) { HWY_DYNAMIC_DISPATCH(NarrowHalf)(x, y, n); }
void narrow(const float* x, BFloat16* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(NarrowBFloat16)(x, y, n);
}

}  // namespace ox::cpu::simd
#endif
