#pragma once
// What the indexing kernels share (index.cpp: gather and nonzero; scatter.cpp: scatter and its
// reductions, compiled apart because they are instantiated for every dtype, index type and
// reduction): walks over a run-time number of operands, the dtype dispatchers, and the check of
// every index value before anything is written.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu::index_walk {

// A walk over one iteration shape for a number of operands known only at run time (a gather
// has one index array per indexed dim). Dims are merged as merge_dims does; strides in bytes.
struct Walk {
  Shape shape;                   // at least one dim
  std::vector<Strides> strides;  // per operand

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
};

// The walk over `dims` of `shape` (in that order, outer first); size-1 dims are dropped.
inline Walk make_walk(const Shape& shape, const std::vector<Strides>& strides, const Dims& dims) {
  const size_t nops = strides.size();
  Walk w;
  w.strides.resize(nops);
  for (int64_t d : dims) {
    if (shape[d] == 1) continue;
    bool merge = !w.shape.empty();
    for (size_t k = 0; k < nops && merge; ++k)
      merge = w.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      w.shape[w.shape.size() - 1] *= shape[d];
      for (size_t k = 0; k < nops; ++k) w.strides[k][w.strides[k].size() - 1] = strides[k][d];
    } else {
      w.shape.push_back(shape[d]);
      for (size_t k = 0; k < nops; ++k) w.strides[k].push_back(strides[k][d]);
    }
  }
  if (w.shape.empty()) {
    w.shape.push_back(1);
    for (auto& s : w.strides) s.push_back(0);
  }
  return w;
}

inline Dims all_dims(size_t n) {
  Dims d = Dims::filled(n, 0);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<int64_t>(i);
  return d;
}

// Calls run(offsets, steps, n) for each stretch of n elements along the innermost dim of the
// row-major element range [begin, end): offsets of the stretch's first element from each
// operand's base, and the steps between its elements, in bytes.
template <class Run>
void walk_runs(const Walk& w, int64_t begin, int64_t end, Run&& run) {
  const size_t nd = w.shape.size(), nops = w.strides.size();
  const int64_t inner = w.shape[nd - 1];
  Dims index(nd, 0), row(nops, 0), off(nops, 0), step(nops, 0);
  int64_t rest = begin / inner;
  for (size_t d = nd - 1; d-- > 0;) {
    index[d] = rest % w.shape[d];
    rest /= w.shape[d];
  }
  for (size_t k = 0; k < nops; ++k) {
    step[k] = w.strides[k][nd - 1];
    for (size_t d = 0; d + 1 < nd; ++d) row[k] += index[d] * w.strides[k][d];
  }
  int64_t pos = begin % inner;
  while (begin < end) {
    const int64_t n = std::min(inner - pos, end - begin);
    for (size_t k = 0; k < nops; ++k) off[k] = row[k] + pos * step[k];
    run(off.data(), step.data(), n);
    begin += n;
    pos = 0;
    for (size_t d = nd - 1; d-- > 0;) {  // odometer step over the outer dims
      if (++index[d] < w.shape[d]) {
        for (size_t k = 0; k < nops; ++k) row[k] += w.strides[k][d];
        break;
      }
      index[d] = 0;
      for (size_t k = 0; k < nops; ++k) row[k] -= (w.shape[d] - 1) * w.strides[k][d];
    }
  }
}

inline Strides byte_strides(const StridedArray& a) {
  Strides s = a.strides;
  const auto size = static_cast<int64_t>(dtype_size(a.dtype));
  for (int64_t& v : s) v *= size;
  return s;
}

template <class F>
decltype(auto) dispatch_index(DType dt, F&& f) {
  if (dt == kI32) return f.template operator()<int32_t>();
  OX_ASSERT(dt == kI64, "index kernel given ", dt);
  return f.template operator()<int64_t>();
}

// Elements move as unsigned words of their size: a gather or an assignment needs no arithmetic.
template <class F>
decltype(auto) dispatch_bytes(size_t size, F&& f) {
  switch (size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    default:
      OX_ASSERT(size == 8, "no element type of ", size, " bytes");
  }
  return f.template operator()<uint64_t>();
}

// ---- Checking ------------------------------------------------------------------------------

// Raises the first out-of-range value of one index operand, row-major over the dims where the
// index moves (a broadcast dim repeats values already seen).
template <class I>
void check_operand(const IndexOperand& op) {
  const StridedArray& a = op.index;
  Dims moving;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.strides[d] != 0) moving.push_back(static_cast<int64_t>(d));
  const Walk w = make_walk(a.shape, {byte_strides(a)}, moving);
  const int64_t n = w.numel(), size = op.size, lo = op.wrap ? -size : 0;
  const char* base = static_cast<const char*>(a.data);
  std::atomic<int64_t> first{n};
  parallel_for(0, n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    int64_t pos = b;
    bool found = false;
    walk_runs(w, b, e, [&](const int64_t* off, const int64_t* step, int64_t len) {
      if (found) return;
      const char* p = base + off[0];
      for (int64_t i = 0; i < len; ++i) {
        const int64_t v = *reinterpret_cast<const I*>(p + i * step[0]);
        if (v < lo || v >= size) [[unlikely]] {
          found = true;
          int64_t seen = first.load();
          while (pos + i < seen && !first.compare_exchange_weak(seen, pos + i)) {
          }
          return;
        }
      }
      pos += len;
    });
  });
  const int64_t at = first.load();
  if (at == n) return;
  CheckFailure bad{op.site, 0, at, size};
  walk_runs(w, at, at + 1, [&](const int64_t* off, const int64_t*, int64_t) {
    bad.value = *reinterpret_cast<const I*>(base + off[0]);
  });
  raise_check_failure(bad);
}

// Checks every operand, in order, before anything is written.
template <class I>
void check_all(const std::vector<IndexOperand>& indices) {
  for (const IndexOperand& op : indices) check_operand<I>(op);
}

// The index operands of a walk: operand 2 + k of the walk is index k.
struct IndexBases {
  std::vector<const char*> base;  // element [0, ...] of each index array
  std::vector<int64_t> size;      // to wrap negatives
  std::vector<int64_t> jump;      // bytes the indexed address moves per unit of index
};

inline IndexBases index_bases(const std::vector<IndexOperand>& indices, DType data_dtype) {
  IndexBases ib;
  const auto elem = static_cast<int64_t>(dtype_size(data_dtype));
  for (const IndexOperand& op : indices) {
    ib.base.push_back(static_cast<const char*>(op.index.data));
    ib.size.push_back(op.size);
    ib.jump.push_back(op.stride * elem);
  }
  return ib;
}

// Byte offset the indices move the indexed address by at one element; the indices are known
// to be in range, so a negative one is a wrapped one.
template <class I>
inline int64_t index_offset(const IndexBases& ib, const int64_t* off, const int64_t* step,
                            int64_t i) {
  int64_t o = 0;
  for (size_t k = 0; k < ib.base.size(); ++k) {
    int64_t v = *reinterpret_cast<const I*>(ib.base[k] + off[2 + k] + i * step[2 + k]);
    if (v < 0) v += ib.size[k];
    o += v * ib.jump[k];
  }
  return o;
}

inline std::vector<Strides> walk_strides(const StridedArray& dst, const StridedArray& src,
                                         const std::vector<IndexOperand>& indices) {
  std::vector<Strides> s{byte_strides(dst), byte_strides(src)};
  for (const IndexOperand& op : indices) s.push_back(byte_strides(op.index));
  return s;
}

}  // namespace ox::cpu::index_walk
