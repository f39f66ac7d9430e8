#include "oxmera/core/dtype.h"

#include <atomic>
#include <cmath>
#include <ostream>
#include <string>

#include "oxmera/core/error.h"

namespace ox {

std::string_view dtype_name(DType dt) {
  constexpr std::string_view names[kNumDTypes] = {"f32", "f64", "f16", "bf16", "i64",
                                                  "i32", "i16", "i8",  "u8",   "bool"};
  const int i = static_cast<int>(dt);
  return i >= 0 && i < kNumDTypes ? names[i] : "invalid";
}

std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }

DType parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"f32", kF32},       {"float32", kF32}, {"float", kF32},   {"f64", kF64},   {"float64", kF64},
      {"double", kF64},    {"f16", kF16},     {"float16", kF16}, {"half", kF16},  {"bf16", kBF16},
      {"bfloat16", kBF16}, {"i64", kI64},     {"int64", kI64},   {"long", kI64},  {"i32", kI32},
      {"int32", kI32},     {"int", kI32},     {"i16", kI16},     {"int16", kI16}, {"short", kI16},
      {"i8", kI8},         {"int8", kI8},     {"u8", kU8},       {"uint8", kU8},  {"bool", kBool},
  };
  for (const Alias& a : aliases)
    if (a.name == name) return a.dtype;
  OX_FAIL(Value, "parse_dtype", "unknown dtype '", std::string(name), "'");
}

namespace {

// The promotion lattice as PyTorch's table, rows and columns in DType order.
constexpr DType kPromotion[kNumDTypes][kNumDTypes] = {
    //         f32   f64   f16   bf16  i64   i32   i16   i8    u8    bool
    /* f32 */ {kF32, kF64, kF32, kF32, kF32, kF32, kF32, kF32, kF32, kF32},
    /* f64 */ {kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64, kF64},
    /* f16 */ {kF32, kF64, kF16, kF32, kF16, kF16, kF16, kF16, kF16, kF16},
    /* bf16*/ {kF32, kF64, kF32, kBF16, kBF16, kBF16, kBF16, kBF16, kBF16, kBF16},
    /* i64 */ {kF32, kF64, kF16, kBF16, kI64, kI64, kI64, kI64, kI64, kI64},
    /* i32 */ {kF32, kF64, kF16, kBF16, kI64, kI32, kI32, kI32, kI32, kI32},
    /* i16 */ {kF32, kF64, kF16, kBF16, kI64, kI32, kI16, kI16, kI16, kI16},
    /* i8  */ {kF32, kF64, kF16, kBF16, kI64, kI32, kI16, kI8, kI16, kI8},
    /* u8  */ {kF32, kF64, kF16, kBF16, kI64, kI32, kI16, kI16, kU8, kU8},
    /* bool*/ {kF32, kF64, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool},
};

int category(DType dt) { return dt == kBool ? 0 : is_integral(dt) ? 1 : 2; }

int promote_into(int current, DType dt) {
  return current < 0 ? static_cast<int>(dt)
                     : static_cast<int>(promote_types(static_cast<DType>(current), dt));
}

// PyTorch's combine_categories: the lower-priority result only matters when its category
// is higher than that of the higher-priority one.
int combine(int higher, int lower) {
  if (higher < 0) return lower;
  if (lower < 0) return higher;
  const DType h = static_cast<DType>(higher), l = static_cast<DType>(lower);
  if (category(l) <= category(h)) return higher;
  return static_cast<int>(promote_types(h, l));
}

}  // namespace

DType promote_types(DType a, DType b) {
  return kPromotion[static_cast<int>(a)][static_cast<int>(b)];
}

ResultType& ResultType::tensor(DType dt, bool zero_dim) {
  int& slot = zero_dim ? zero_dim_ : dimensioned_;
  slot = promote_into(slot, dt);
  return *this;
}

ResultType& ResultType::scalar(const Scalar& s) {
  wrapped_ = promote_into(wrapped_, s.default_dtype());
  return *this;
}

DType ResultType::get() const {
  const int r = combine(dimensioned_, combine(zero_dim_, wrapped_));
  OX_ASSERT(r >= 0, "result_type of no operands");
  return static_cast<DType>(r);
}

DType result_type(DType tensor, const Scalar& scalar) {
  return ResultType().tensor(tensor).scalar(scalar).get();
}

bool scalar_fits(const Scalar& s, DType dt) {
  if (dt == kBool || s.kind() == Scalar::Kind::Bool) return true;
  if (is_floating(dt)) {
    const double v = s.to_double();
    const double max = dt == kF16    ? 65504.0
                       : dt == kBF16 ? 0x1.fep127
                       : dt == kF32  ? 0x1.fffffep127
                                     : INFINITY;
    return !std::isfinite(v) || std::fabs(v) <= max;
  }
  struct Range {
    double lo, hi;  // i64's upper bound 2^63 is exclusive; the others are exact and inclusive
  };
  constexpr Range ranges[] = {
      {-0x1p63, 0x1p63}, {-0x1p31, 0x1p31 - 1}, {-32768, 32767}, {-128, 127}, {0, 255}};
  const Range r = ranges[static_cast<int>(dt) - static_cast<int>(kI64)];
  if (s.kind() == Scalar::Kind::Float) {
    const double v = std::trunc(s.to_double());
    return std::isfinite(v) && v >= r.lo && (dt == kI64 ? v < r.hi : v <= r.hi);
  }
  const int64_t v = s.to_int();
  return dt == kI64 || (double(v) >= r.lo && double(v) <= r.hi);
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Float:
      return os << s.to_double();
    case Scalar::Kind::Int:
      return os << s.to_int();
    case Scalar::Kind::Bool:
      return os << (s.to_int() ? "true" : "false");
  }
  return os;
}

namespace {
std::atomic<DType> default_float_dtype{kF32};
}  // namespace

DType default_dtype() { return default_float_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(DType dtype) {
  OX_CHECK(is_floating(dtype), DType, "set_default_dtype",
           "the default dtype must be floating, got ", dtype);
  default_float_dtype.store(dtype, std::memory_order_relaxed);
}

}  // namespace ox
