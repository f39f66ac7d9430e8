#pragma once
// Shared by the matrix-op tests (matmul_test.cpp, einsum_test.cpp): inputs, operand layouts,
// the reviewed tolerance table, and closeness checks. Every expected value is computed by the
// tests in f64 loops from the operands' logical values (read back with to_vector, a copy that
// tests/tensor/copy_test.cpp checks on its own); nothing here calls a matrix op.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace mmtest {

using ox::DType;
using ox::Tensor;
using oxtest::ShapeV;
inline std::string str(const ShapeV& s) { return oxtest::shape_str(s); }

// ---- The one tolerance table for matrix ops (docs/TESTING.md: "matmul and reductions grow with
// K"). Each result element is a sum of K products, so its rounding error grows with K: the
// per-dtype (atol, rtol) of docs/TESTING.md are multiplied by max(K, 1). A 16-bit float result is
// also rounded once from its f32 accumulator, so its rtol gains one unit in the last place
// (2^-10 for f16, 2^-7 for bf16). Integers are exact (they wrap, and tests say so).
struct Tol {
  double atol, rtol;
};
inline Tol matmul_tol(DType dt, int64_t k) {
  const double s = double(std::max<int64_t>(k, 1));
  switch (dt) {
    case DType::F64:
      return {1e-7 * s, 1e-7 * s};
    case DType::F32:
      return {1.3e-6 * s, 1e-5 * s};
    case DType::F16:
      return {1e-3 * s, 1e-5 * s + 0x1p-10};
    case DType::BF16:
      return {1.6e-2 * s, 1e-5 * s + 0x1p-7};
    default:
      return {0, 0};
  }
}

// ---- Inputs -------------------------------------------------------------------------------

inline const DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
inline const DType kAllTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64,
                                  DType::I32, DType::I16, DType::I8,  DType::U8};

// Random values of `dt`: normal for floats, small integers (so no sum overflows) otherwise.
inline Tensor input(const ShapeV& shape, DType dt) {
  if (ox::is_floating(dt)) return ox::randn(ox::Shape(shape)).to(dt);
  const int64_t low = dt == DType::U8 ? 0 : -4;
  return ox::randint(low, 5, ox::Shape(shape), {.dtype = dt});
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// The same logical shape in other memory layouts. Expanded and flipped layouts change which
// values sit where, so references always read the operand actually passed.
enum class Lay { Contig, Transposed, Narrowed, Expanded, Flipped, BatchExpanded };
inline constexpr Lay kLayouts[] = {Lay::Contig,   Lay::Transposed, Lay::Narrowed,
                                   Lay::Expanded, Lay::Flipped,    Lay::BatchExpanded};
inline const char* lay_name(Lay l) {
  switch (l) {
    case Lay::Contig:
      return "contiguous";
    case Lay::Transposed:
      return "transposed";
    case Lay::Narrowed:
      return "narrowed";
    case Lay::Expanded:
      return "expanded";
    case Lay::Flipped:
      return "flipped";
    case Lay::BatchExpanded:
      return "batch-expanded";
  }
  return "?";
}

inline Tensor laid_out(const ShapeV& shape, DType dt, Lay lay) {
  const size_t nd = shape.size();
  switch (lay) {
    case Lay::Contig:
      return input(shape, dt);
    case Lay::Transposed: {  // column-major matrices (a stride-2 column for a vector)
      if (nd == 1) return input({shape[0], 2}, dt).select(1, 0);
      ShapeV t = shape;
      std::swap(t[nd - 1], t[nd - 2]);
      return input(t, dt).transpose(-1, -2);
    }
    case Lay::Narrowed: {  // an offset and row gaps inside a larger buffer
      ShapeV padded = shape;
      for (auto& s : padded) s += 3;
      Tensor v = input(padded, dt);
      for (size_t d = 0; d < nd; ++d) v = v.narrow(int64_t(d), 2, shape[d]);
      return v;
    }
    case Lay::Expanded: {  // stride 0 inside the matrix: the last dim repeats one value
      ShapeV base = shape;
      base[nd - 1] = 1;
      return input(base, dt).expand(ox::Shape(shape));
    }
    case Lay::Flipped: {  // negative strides in every dim
      ox::Dims all;
      for (size_t d = 0; d < nd; ++d) all.push_back(int64_t(d));
      return input(shape, dt).flip(all);
    }
    case Lay::BatchExpanded: {  // stride 0 over the first dim (a broadcast batch)
      if (nd < 3) return input(shape, dt);
      ShapeV base = shape;
      base[0] = 1;
      return input(base, dt).expand(ox::Shape(shape));
    }
  }
  return {};
}

// ---- Checks -------------------------------------------------------------------------------

// got (any dtype) against f64 expected values, within matmul_tol(got's dtype, k).
inline void expect_close(const Tensor& got, const ShapeV& shape, const std::vector<double>& want,
                         int64_t k, const std::string& what) {
  ASSERT_EQ(oxtest::shape_of(got), shape) << what;
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  const Tol tol = matmul_tol(got.dtype(), k);
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = std::fabs(g[i] - want[i]) <= tol.atol + tol.rtol * std::fabs(want[i]);
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", expected " << want[i]
                    << " (dtype " << got.dtype() << ", K " << k << ")";
  }
  EXPECT_EQ(bad, 0) << what;
}

// Whether two tensors hold bitwise the same bytes (same dtype and shape).
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return std::memcmp(x.raw_data_ptr(x.dtype()), y.raw_data_ptr(y.dtype()), x.nbytes()) == 0;
}

// Runs f at 1 and at 2 threads and restores the thread count.
template <class F>
std::pair<Tensor, Tensor> at_1_and_2_threads(F&& f) {
  const int saved = ox::get_num_threads();
  ox::set_num_threads(1);
  Tensor one = f();
  ox::set_num_threads(2);
  Tensor two = f();
  ox::set_num_threads(saved);
  return {one, two};
}

}  // namespace mmtest
