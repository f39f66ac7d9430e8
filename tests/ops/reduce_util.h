#pragma once
// Shared by the reduction and scan tests: inputs in every layout docs/TESTING.md names, reference
// reductions written here in long double, the reviewed tolerance table, bitwise comparisons.
// oxmera is used only to build inputs and read results back (copies and conversions, which
// tests/tensor/copy_test.cpp checks on their own); every expected value is computed here.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace rtest {

using ox::DType;
using ox::Tensor;
using oxtest::bytes_of;
using oxtest::kShapes;
using oxtest::mix;
using oxtest::ShapeV;
using oxtest::Source;
using oxtest::uniform_at;
using oxtest::values_of;
inline std::string str(const ShapeV& s) { return oxtest::shape_str(s); }
inline Tensor from_source(const ShapeV& shape, DType dt, const Source& src) {
  return oxtest::contiguous_from(shape, dt, src);
}
using LD = long double;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// docs/TESTING.md's shapes. (1029, 917) crosses the parallel grain and the 1024-element chunks.

// ---- Layouts ------------------------------------------------------------------------------

enum class Lay { Contig, Transposed, Narrowed, Expanded, Flipped };
inline constexpr Lay kLayouts[] = {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Expanded,
                                   Lay::Flipped};
inline const char* name(Lay l) {
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
  }
  return "?";
}

// A tensor of `shape` laid out as `lay`; read its logical values back with values_of().
inline Tensor make_input(const ShapeV& shape, DType dt, Lay lay, const Source& src) {
  const size_t nd = shape.size();
  switch (lay) {
    case Lay::Contig:
      break;
    case Lay::Transposed: {
      if (nd >= 2) {  // storage of the reversed shape, viewed with the dims reversed
        ox::Dims perm;
        for (size_t d = nd; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
        return from_source(ShapeV(shape.rbegin(), shape.rend()), dt, src).permute(perm);
      }
      if (nd == 1) return from_source({shape[0], 3}, dt, src).select(1, 1);  // stride 3
      break;
    }
    case Lay::Narrowed: {  // inside a buffer padded with a sentinel: an offset and gaps
      ShapeV padded = shape;
      for (auto& s : padded) s += 2;
      if (nd == 0) padded = {3};
      Tensor v = ox::full(ox::Shape(padded), 77, dt);
      if (nd == 0) {
        v = v.select(0, 1);
      } else {
        for (size_t d = 0; d < nd; ++d) v = v.narrow(static_cast<int64_t>(d), 1, shape[d]);
      }
      v.copy_(from_source(shape, dt, src));
      return v;
    }
    case Lay::Expanded: {  // stride 0 along the first dim of size > 1
      for (size_t d = 0; d < nd; ++d)
        if (shape[d] > 1) {
          ShapeV base = shape;
          base[d] = 1;
          return from_source(base, dt, src).expand(ox::Shape(shape));
        }
      break;
    }
    case Lay::Flipped: {
      ox::Dims all;
      for (size_t d = 0; d < nd; ++d) all.push_back(static_cast<int64_t>(d));
      return from_source(shape, dt, src).flip(all);
    }
  }
  return from_source(shape, dt, src);
}

// ---- Stateless value sources --------------------------------------------------------------

inline Source uniform(double lo, double hi, uint64_t salt = 1) {
  return [=](int64_t i) { return uniform_at(i, salt, lo, hi); };
}
inline Source integers(int64_t lo, int64_t hi, uint64_t salt = 2) {
  return [=](int64_t i) {
    const auto span = static_cast<uint64_t>(hi - lo) + 1;
    return static_cast<double>(
        lo + static_cast<int64_t>(mix(static_cast<uint64_t>(i) * 2654435761u ^ salt) % span));
  };
}

// ---- Reference reductions -----------------------------------------------------------------

// The dims a reduction names, made non-negative (all when `dims` is empty).
inline std::vector<bool> mask_of(size_t nd, const ShapeV& dims) {
  std::vector<bool> m(nd, dims.empty());
  for (int64_t d : dims) m[static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(nd) : d)] = true;
  return m;
}

// The elements each output reduces, in row-major order of the reduced dims, and the output
// shape without keepdim.
struct Rows {
  ShapeV out_shape;
  std::vector<std::vector<double>> rows;
};
inline Rows rows_of(const ShapeV& shape, const std::vector<double>& vals, const ShapeV& dims) {
  const std::vector<bool> mask = mask_of(shape.size(), dims);
  Rows r;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!mask[d]) r.out_shape.push_back(shape[d]);
  r.rows.resize(static_cast<size_t>(oxtest::product(r.out_shape)));
  if (vals.empty()) return r;
  const size_t nd = shape.size();
  std::vector<int64_t> idx(nd, 0);
  for (double v : vals) {  // row-major walk: the output index of each element
    int64_t o = 0;
    for (size_t d = 0; d < nd; ++d)
      if (!mask[d]) o = o * shape[d] + idx[d];
    r.rows[static_cast<size_t>(o)].push_back(v);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

inline double ref_sum(const std::vector<double>& v) {
  LD s = 0;
  for (double x : v) s += x;
  return static_cast<double>(s);
}
inline double ref_abs_sum(const std::vector<double>& v) {
  LD s = 0;
  for (double x : v) s += std::fabs(x);
  return static_cast<double>(s);
}
inline double ref_prod(const std::vector<double>& v) {
  LD p = 1;
  for (double x : v) p *= x;
  return static_cast<double>(p);
}
// NaN-propagating extremes; the first index of the extreme (of the first NaN).
inline int64_t ref_arg(const std::vector<double>& v, bool is_max) {
  int64_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
    if (is_max ? v[i] > v[static_cast<size_t>(best)] : v[i] < v[static_cast<size_t>(best)])
      best = static_cast<int64_t>(i);
  }
  return best;
}
inline double ref_extreme(const std::vector<double>& v, bool is_max) {
  return v[static_cast<size_t>(ref_arg(v, is_max))];
}
// Two passes in long double.
inline double ref_var(const std::vector<double>& v, double correction) {
  LD mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<LD>(v.size());
  LD ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return static_cast<double>(ss / std::max<LD>(static_cast<LD>(v.size()) - correction, 0));
}
inline double ref_logsumexp(const std::vector<double>& v) {
  LD m = -INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return kNaN;
    m = std::max<LD>(m, x);
  }
  if (!std::isfinite(m)) return static_cast<double>(m);
  LD s = 0;
  for (double x : v) s += std::exp(static_cast<LD>(x) - m);
  return static_cast<double>(m + std::log(s));
}
inline double ref_norm(const std::vector<double>& v, double p) {
  LD s = 0;
  bool nan = false;
  for (double x : v) nan = nan || std::isnan(x);
  if (nan && p != 0) return kNaN;  // p = 0 counts the nonzero elements, NaN among them
  if (std::isinf(p)) {
    LD m = p > 0 ? 0 : INFINITY;
    for (double x : v) m = p > 0 ? std::max<LD>(m, std::fabs(x)) : std::min<LD>(m, std::fabs(x));
    return static_cast<double>(m);
  }
  for (double x : v) s += p == 0 ? (x != 0) : p == 1 ? std::fabs(x) : std::pow(std::fabs(x), p);
  return p == 0 || p == 1 ? static_cast<double>(s)
                          : static_cast<double>(std::pow(s, LD(1) / LD(p)));
}

// ---- Reviewed tolerance table (docs/TESTING.md: reductions grow with K) ------------------------
// |actual - expected| <= atol + rtol |expected| + sum_rel * sum |x|.
// sum_rel: a sum of K terms rounds up to ~(K/16 + log2 K) times per term in the accumulator
// (16 lanes per 1024-element chunk, then trees); for f32 that stays below 1e-5 of sum |x| for
// any K here. rtol of f16/bf16: the result is rounded once from an f32 accumulator, so one unit
// in the last place of the result dtype (docs/TESTING.md's 1e-5 assumes a correctly rounded value).
struct Tol {
  double atol, rtol, sum_rel;
};
inline Tol sum_tol(DType dt) {
  switch (dt) {
    case ox::kF64:
      return {1e-7, 1e-7, 1e-14};
    case ox::kF32:
      return {1.3e-6, 1e-5, 1e-5};
    case ox::kF16:
      return {1e-3, 0x1p-10, 1e-5};
    case ox::kBF16:
      return {1.6e-2, 0x1p-7, 1e-5};
    default:
      return {0, 0, 0};  // integers and bool: exact
  }
}
// A value computed in f64 (var, std, norm) or elementwise in the dtype and rounded once.
inline Tol value_tol(DType dt) { return {sum_tol(dt).atol, sum_tol(dt).rtol, 0}; }

// NaN equals NaN and infinities must match exactly.
inline bool close(double a, double e, const Tol& t, double abs_sum = 0) {
  if (std::isnan(e)) return std::isnan(a);
  if (std::isinf(e)) return a == e;
  return std::fabs(a - e) <= t.atol + t.rtol * std::fabs(e) + t.sum_rel * abs_sum;
}

inline void expect_values(const std::vector<double>& actual, const std::vector<double>& expected,
                          const Tol& tol, const std::string& what,
                          const std::vector<double>& abs_sums = {}) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    const double s = abs_sums.empty() ? 0 : abs_sums[i];
    if (!close(actual[i], expected[i], tol, s)) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected "
                    << expected[i] << " (sum |x| " << s << ")";
      ++failures;
    }
  }
}

// Runs `f` with `n` threads and restores the previous count.
template <class F>
auto with_threads(int n, F&& f) {
  const int saved = ox::get_num_threads();
  ox::set_num_threads(n);
  auto r = f();
  ox::set_num_threads(saved);
  return r;
}

}  // namespace rtest
