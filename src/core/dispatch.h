#pragma once
// The general dtype switch: dispatch_dtype(dt, [&]<class T>() { ... }) calls the lambda with the
// C++ element type of `dt`.

#include <cstdint>

#include "oxmera/core/dtype.h"
#include "oxmera/core/error.h"

namespace ox {

template <class F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::F32:
      return f.template operator()<float>();
    case DType::F64:
      return f.template operator()<double>();
    case DType::F16:
      return f.template operator()<Half>();
    case DType::BF16:
      return f.template operator()<BFloat16>();
    case DType::I64:
      return f.template operator()<int64_t>();
    case DType::I32:
      return f.template operator()<int32_t>();
    case DType::I16:
      return f.template operator()<int16_t>();
    case DType::I8:
      return f.template operator()<int8_t>();
    case DType::U8:
      return f.template operator()<uint8_t>();
    case DType::Bool:
      return f.template operator()<bool>();
  }
  OX_ASSERT(false, "invalid dtype ", static_cast<int>(dt));
  return f.template operator()<float>();
}

// The type arithmetic on T is carried out in: f32 for the 16-bit floats, T otherwise.
template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

}  // namespace ox
