#pragma once
// Element types, their sizes and names, and PyTorch's type-promotion rules.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

#include "oxmera/core/half.h"

namespace ox {

enum class DType : uint8_t { F32, F64, F16, BF16, I64, I32, I16, I8, U8, Bool };

inline constexpr DType kF32 = DType::F32;
inline constexpr DType kF64 = DType::F64;
inline constexpr DType kF16 = DType::F16;
inline constexpr DType kBF16 = DType::BF16;
inline constexpr DType kI64 = DType::I64;
inline constexpr DType kI32 = DType::I32;
inline constexpr DType kI16 = DType::I16;
inline constexpr DType kI8 = DType::I8;
inline constexpr DType kU8 = DType::U8;
inline constexpr DType kBool = DType::Bool;
inline constexpr int kNumDTypes = 10;
inline constexpr DType kAllDTypes[kNumDTypes] = {kF32, kF64, kF16, kBF16, kI64,
                                                 kI32, kI16, kI8,  kU8,   kBool};

constexpr size_t dtype_size(DType dt) {
  constexpr size_t sizes[kNumDTypes] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  return sizes[static_cast<int>(dt)];
}
constexpr bool is_floating(DType dt) { return static_cast<int>(dt) <= static_cast<int>(kBF16); }
constexpr bool is_integral(DType dt) {  // bool excluded, as torch.is_integral(include_bool=False)
  return !is_floating(dt) && dt != kBool;
}
constexpr bool is_signed(DType dt) { return dt != kU8 && dt != kBool; }

// Short names as they appear in errors and printing: "f32", "bf16", "i64", "bool".
std::string_view dtype_name(DType dt);
std::ostream& operator<<(std::ostream& os, DType dt);
// Parses "f32"/"float32"/"float", "i64"/"int64"/"long", ... ; throws ErrorKind::Value.
DType parse_dtype(std::string_view name);

// The C++ element type of each dtype, and back.
template <class T>
struct DTypeOf;
#define OX_DTYPE_OF(T, D)             \
  template <>                         \
  struct DTypeOf<T> {                 \
    static constexpr DType value = D; \
  };
OX_DTYPE_OF(float, kF32)
OX_DTYPE_OF(double, kF64)
OX_DTYPE_OF(Half, kF16)
OX_DTYPE_OF(BFloat16, kBF16)
OX_DTYPE_OF(int64_t, kI64)
OX_DTYPE_OF(int32_t, kI32)
OX_DTYPE_OF(int16_t, kI16)
OX_DTYPE_OF(int8_t, kI8)
OX_DTYPE_OF(uint8_t, kU8)
OX_DTYPE_OF(bool, kBool)
#undef OX_DTYPE_OF
template <class T>
inline constexpr DType dtype_of = DTypeOf<std::remove_cv_t<T>>::value;

// torch.promote_types: the smallest dtype both convert to without losing category
// (bool < integer < floating). u8 with i8 gives i16; f16 with bf16 gives f32.
DType promote_types(DType a, DType b);

// A number that is not a tensor: a double, an int64 or a bool, keeping which it is so that
// promotion can treat `int_tensor * 2` and `int_tensor * 2.0` differently, as PyTorch does.
class Scalar {
 public:
  enum class Kind : uint8_t { Float, Int, Bool };
  constexpr Scalar() : kind_(Kind::Int), i_(0) {}
  template <class T>
  requires std::is_arithmetic_v<T>
  constexpr Scalar(T v) {  // NOLINT(google-explicit-constructor): scalars read like numbers
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v;
    } else if constexpr (std::is_floating_point_v<T>) {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
    } else {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
    }
  }
  constexpr Scalar(Half v) : kind_(Kind::Float), d_(float(v)) {}      // NOLINT
  constexpr Scalar(BFloat16 v) : kind_(Kind::Float), d_(float(v)) {}  // NOLINT

  constexpr Kind kind() const { return kind_; }
  constexpr bool is_floating() const { return kind_ == Kind::Float; }
  constexpr double to_double() const { return kind_ == Kind::Float ? d_ : double(i_); }
  // Floats truncate toward zero and saturate to the int64 range; NaN gives 0.
  constexpr int64_t to_int() const {
    if (kind_ != Kind::Float) return i_;
    if (!(d_ == d_)) return 0;
    if (d_ <= -0x1p63) return INT64_MIN;
    if (d_ >= 0x1p63) return INT64_MAX;
    return static_cast<int64_t>(d_);
  }
  // The dtype a bare number of this kind takes: f32 (the default float), i64, bool.
  constexpr DType default_dtype() const {
    return kind_ == Kind::Float ? kF32 : kind_ == Kind::Int ? kI64 : kBool;
  }
  constexpr bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  // The value as T, converted as a C++ cast would (to_int's rules for floats to integers).
  template <class T>
  constexpr T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return to_bool();
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(to_double());
    else
      return static_cast<T>(to_int());
  }
  // LibTorch's names, for `x.item().toFloat()`.
  constexpr double toDouble() const { return to_double(); }
  constexpr float toFloat() const { return static_cast<float>(to_double()); }
  constexpr int64_t toLong() const { return to_int(); }
  constexpr int32_t toInt() const { return static_cast<int32_t>(to_int()); }
  constexpr bool toBool() const { return to_bool(); }
  constexpr bool isFloatingPoint() const { return kind_ == Kind::Float; }
  constexpr bool isIntegral(bool include_bool = false) const {
    return kind_ == Kind::Int || (include_bool && kind_ == Kind::Bool);
  }
  constexpr bool isBoolean() const { return kind_ == Kind::Bool; }

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};
std::ostream& operator<<(std::ostream& os, const Scalar& s);

// The dtype of floating tensors made without one (torch.set_default_dtype): what `ox::zeros`,
// `ox::rand` and `ox::tensor({5.5})` make. f32 until set; process-wide; floating dtypes only.
DType default_dtype();
void set_default_dtype(DType dtype);

// Whether `s` converts to `dt` without overflow (as PyTorch's check when filling): integers
// must be in range, floats finite and in range for integer dtypes, finite floats within the
// largest finite value for float dtypes (inf and NaN themselves are fine there). Bool takes all.
bool scalar_fits(const Scalar& s, DType dt);

// torch.result_type over mixed operands. Dimensioned tensors decide the dtype; zero-dim
// tensors and bare numbers only move it to a higher category (int tensor + 2.5 -> f32,
// f16 tensor + 2.5 -> f16, i32 tensor + i64 zero-dim tensor -> i32).
class ResultType {
 public:
  ResultType& tensor(DType dt, bool zero_dim = false);
  ResultType& scalar(const Scalar& s);
  DType get() const;  // throws ErrorKind::Internal when no operand was added

 private:
  int dimensioned_ = -1, zero_dim_ = -1, wrapped_ = -1;  // -1: none yet
};
DType result_type(DType tensor, const Scalar& scalar);

}  // namespace ox
