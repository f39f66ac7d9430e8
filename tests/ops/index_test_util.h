#pragma once
// Shared by the indexing tests: inputs in every layout docs/TESTING.md names, values read back in
// row-major order, row-major offsets, a stateless value source and thread-count comparisons.
// Expected values are computed by the tests with plain loops over values read back from the
// inputs; oxmera only builds inputs and reads results (copies, tested on their own).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

namespace idxtest {

using ox::DType;
using ox::Tensor;
using oxtest::bytes_of;
using oxtest::contiguous_from;
using oxtest::integer_at;
using oxtest::mix;
using oxtest::shape_str;
using oxtest::ShapeV;
using oxtest::Source;

enum class Lay { Contig, Transposed, Narrowed, Expanded, Flipped };
inline constexpr Lay kLayouts[] = {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Expanded,
                                   Lay::Flipped};
// Layouts a destination written in place can have (an expanded one is refused).
inline constexpr Lay kWritable[] = {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Flipped};

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
  }
  return "?";
}

// ---- Values ----------------------------------------------------------------------------------

// Uniform in [lo, hi), a fixed function of (i, salt).
inline double uniform_at(int64_t i, uint64_t salt, double lo, double hi) {
  const double u =
      static_cast<double>(mix(static_cast<uint64_t>(i) * 0x9E3779B1u ^ (salt << 7)) >> 11) *
      0x1p-53;
  return lo + (hi - lo) * u;
}

// A tensor of `shape` laid out as `lay`; an expanded one repeats its values along dim 0, so
// read the logical values back with values() / ints().
inline Tensor make(const ShapeV& shape, DType dt, Lay lay, const Source& src) {
  const size_t nd = shape.size();
  switch (lay) {
    case Lay::Contig:
      return contiguous_from(shape, dt, src);
    case Lay::Transposed: {
      if (nd >= 2) {
        ShapeV rev(shape.rbegin(), shape.rend());
        ox::Dims perm;
        for (size_t d = nd; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
        return contiguous_from(rev, dt, src).permute(perm);
      }
      if (nd == 1) return contiguous_from({shape[0], 2}, dt, src).select(1, 0);  // stride 2
      return contiguous_from(shape, dt, src);
    }
    case Lay::Narrowed: {  // offset and gaps inside a buffer of sentinels
      ShapeV padded = shape;
      for (auto& s : padded) s += 2;
      if (nd == 0) padded = {3};
      Tensor v = ox::full(ox::Shape(padded), 3, dt);
      if (nd == 0) {
        v = v.select(0, 1);
      } else {
        for (size_t d = 0; d < nd; ++d) v = v.narrow(static_cast<int64_t>(d), 1, shape[d]);
      }
      v.copy_(contiguous_from(shape, dt, src));
      return v;
    }
    case Lay::Expanded: {
      if (nd == 0) return contiguous_from(shape, dt, src);
      ShapeV base = shape;
      base[0] = 1;
      return contiguous_from(base, dt, src).expand(ox::Shape(shape));
    }
    case Lay::Flipped: {
      ox::Dims all;
      for (size_t d = 0; d < nd; ++d) all.push_back(static_cast<int64_t>(d));
      return contiguous_from(shape, dt, src).flip(all);
    }
  }
  return {};
}

// An index tensor in a layout with values in [lo, hi].
inline Tensor make_index(const ShapeV& shape, DType dt, Lay lay, int64_t lo, int64_t hi,
                         uint64_t salt = 1) {
  return make(shape, dt, lay, [&](int64_t i) { return double(integer_at(i, salt, lo, hi)); });
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
inline std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

// Row-major offset of `index` in `shape`.
inline int64_t flat(const std::vector<int64_t>& index, const ShapeV& shape) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + index[d];
  return o;
}

// f(): at 1 and at 2 threads; the two results must be bitwise the same.
inline void expect_thread_independent(const std::function<Tensor()>& f, const std::string& what) {
  ox::set_num_threads(1);
  const Tensor a = f();
  ox::set_num_threads(2);
  const Tensor b = f();
  EXPECT_EQ(bytes_of(a), bytes_of(b)) << what << ": 1 and 2 threads differ";
}

// The message of the error `f` throws must name every string in `parts`.
inline void expect_index_error(const std::function<void()>& f, std::vector<std::string> parts,
                               const std::string& what) {
  const ox::Error e = oxtest::caught(f);
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << what << ": " << e.what();
  for (const std::string& p : parts)
    EXPECT_TRUE(oxtest::contains(e, p)) << what << ": \"" << e.what() << "\" lacks \"" << p << "\"";
}

inline const DType kIndexDTypes[] = {ox::kI64, ox::kI32};

}  // namespace idxtest
