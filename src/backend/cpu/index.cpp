// Indexing kernels: gather and scatter through index arrays, and nonzero. Index values are
// data, so gather and scatter check every one of them before they write anything.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

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
Walk make_walk(const Shape& shape, const std::vector<Strides>& strides, const Dims& dims) {
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

Dims all_dims(size_t n) {
  Dims d(n);
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

Strides byte_strides(const StridedArray& a) {
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

// The first out-of-range value of one index operand, row-major over the dims where the index
// moves (a broadcast dim repeats values already seen); none when ok.
template <class I>
IndexCheck check_operand(const IndexOperand& op, int64_t which) {
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
  if (at == n) return {};
  IndexCheck bad{false, which, 0, size};
  walk_runs(w, at, at + 1, [&](const int64_t* off, const int64_t*, int64_t) {
    bad.value = *reinterpret_cast<const I*>(base + off[0]);
  });
  return bad;
}

template <class I>
IndexCheck check_all(const std::vector<IndexOperand>& indices) {
  for (size_t k = 0; k < indices.size(); ++k) {
    IndexCheck c = check_operand<I>(indices[k], static_cast<int64_t>(k));
    if (!c.ok) return c;
  }
  return {};
}

// The index operands of a walk: operand 2 + k of the walk is index k.
struct IndexBases {
  std::vector<const char*> base;  // element [0, ...] of each index array
  std::vector<int64_t> size;      // to wrap negatives
  std::vector<int64_t> jump;      // bytes the indexed address moves per unit of index
};

IndexBases index_bases(const std::vector<IndexOperand>& indices, DType data_dtype) {
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

std::vector<Strides> walk_strides(const StridedArray& dst, const StridedArray& src,
                                  const std::vector<IndexOperand>& indices) {
  std::vector<Strides> s{byte_strides(dst), byte_strides(src)};
  for (const IndexOperand& op : indices) s.push_back(byte_strides(op.index));
  return s;
}

// ---- Gather --------------------------------------------------------------------------------

template <class U, class I>
void gather_kernel(const StridedArray& dst, const StridedArray& src,
                   const std::vector<IndexOperand>& indices) {
  const Walk w = make_walk(dst.shape, walk_strides(dst, src, indices), all_dims(dst.shape.size()));
  const IndexBases ib = index_bases(indices, src.dtype);
  char* const d0 = static_cast<char*>(dst.data);
  const char* const s0 = static_cast<const char*>(src.data);
  const size_t nidx = indices.size();
  parallel_for(0, w.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    walk_runs(w, b, e, [&](const int64_t* off, const int64_t* step, int64_t n) {
      char* d = d0 + off[0];
      const char* s = s0 + off[1];
      bool fixed = true;  // the indices do not move along this stretch (a row of embedding)
      for (size_t k = 0; k < nidx; ++k) fixed = fixed && step[2 + k] == 0;
      if (fixed) {
        s += index_offset<I>(ib, off, step, 0);
        if (step[0] == sizeof(U) && step[1] == sizeof(U)) {
          std::memcpy(d, s, static_cast<size_t>(n) * sizeof(U));
          return;
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<U*>(d + i * step[0]) = *reinterpret_cast<const U*>(s + i * step[1]);
        return;
      }
      if (nidx == 1) {  // gather, index_select, take: one index, no inner loop over indices
        const char* ip = ib.base[0] + off[2];
        const int64_t is = step[2], size = ib.size[0], jump = ib.jump[0];
        for (int64_t i = 0; i < n; ++i) {
          int64_t v = *reinterpret_cast<const I*>(ip + i * is);
          if (v < 0) v += size;
          *reinterpret_cast<U*>(d + i * step[0]) =
              *reinterpret_cast<const U*>(s + i * step[1] + v * jump);
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<U*>(d + i * step[0]) =
            *reinterpret_cast<const U*>(s + i * step[1] + index_offset<I>(ib, off, step, i));
    });
  });
}

// ---- Scatter -------------------------------------------------------------------------------

struct AssignOp {
  template <class T>
  static void apply(T& d, T s) {
    d = s;
  }
};
struct SumOp {
  template <class T>
  static void apply(T& d, T s) {
    if constexpr (std::is_same_v<T, bool>)
      d = d || s;
    else if constexpr (std::is_integral_v<T>)
      d = wrap_add(d, s);
    else
      d = convert<T>(compute_t<T>(d) + compute_t<T>(s));
  }
};
struct ProdOp {
  template <class T>
  static void apply(T& d, T s) {
    if constexpr (std::is_same_v<T, bool>)
      d = d && s;
    else if constexpr (std::is_integral_v<T>)
      d = wrap_mul(d, s);
    else
      d = convert<T>(compute_t<T>(d) * compute_t<T>(s));
  }
};
struct AmaxOp {
  template <class T>
  static void apply(T& d, T s) {
    using C = compute_t<T>;
    const C a = C(d), b = C(s);
    if constexpr (std::is_floating_point_v<C>) {
      if (b != b || b > a) d = s;  // a NaN already in d stays: nothing compares above it
    } else {
      if (b > a) d = s;
    }
  }
};
struct AminOp {
  template <class T>
  static void apply(T& d, T s) {
    using C = compute_t<T>;
    const C a = C(d), b = C(s);
    if constexpr (std::is_floating_point_v<C>) {
      if (b != b || b < a) d = s;
    } else {
      if (b < a) d = s;
    }
  }
};

// Applies the updates of one stretch: dst, src and the indices are operands 0, 1, 2... of the
// walk, and `shift` moves each operand's base (the position along the other group of dims).
template <class T, class I, class Op>
struct ScatterRun {
  char* dst;
  const char* src;
  const IndexBases* ib;
  const int64_t* shift;

  void operator()(const int64_t* off_in, const int64_t* step, int64_t n) const {
    const size_t nops = 2 + ib->base.size();
    Dims off(nops);
    for (size_t k = 0; k < nops; ++k) off[k] = off_in[k] + shift[k];
    char* d = dst + off[0];
    const char* s = src + off[1];
    bool fixed = true;
    for (size_t k = 2; k < nops; ++k) fixed = fixed && step[k] == 0;
    if (fixed) {  // one destination row for the whole stretch (index_add, index_put of rows)
      d += index_offset<I>(*ib, off.data(), step, 0);
      if (step[0] == sizeof(T) && step[1] == sizeof(T)) {
        T* __restrict dt = reinterpret_cast<T*>(d);
        const T* __restrict st = reinterpret_cast<const T*>(s);
        for (int64_t i = 0; i < n; ++i) Op::apply(dt[i], st[i]);
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        Op::apply(*reinterpret_cast<T*>(d + i * step[0]),
                  *reinterpret_cast<const T*>(s + i * step[1]));
      return;
    }
    if (nops == 3) {  // one index: no loop over indices per element
      const char* ip = ib->base[0] + off[2];
      const int64_t size = ib->size[0], jump = ib->jump[0];
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = *reinterpret_cast<const I*>(ip + i * step[2]);
        if (v < 0) v += size;
        Op::apply(*reinterpret_cast<T*>(d + i * step[0] + v * jump),
                  *reinterpret_cast<const T*>(s + i * step[1]));
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      Op::apply(*reinterpret_cast<T*>(d + i * step[0] + index_offset<I>(*ib, off.data(), step, i)),
                *reinterpret_cast<const T*>(s + i * step[1]));
  }
};

// Bytes the operands that are read (src and indices) step along a walk's innermost dim.
int64_t read_step(const Walk& w) {
  int64_t sum = 0;
  for (size_t k = 1; k < w.strides.size(); ++k) sum += std::abs(w.strides[k].back());
  return sum;
}

// Dims where the destination does not move (stride 0) are where updates can meet: they are
// walked in row-major order inside one task. Dims where it moves reach distinct elements, so
// tasks split those.
template <class T, class I, class Op>
void scatter_kernel(const StridedArray& dst, const StridedArray& src,
                    const std::vector<IndexOperand>& indices) {
  const Shape& shape = src.shape;
  Dims meet, apart;
  for (size_t d = 0; d < shape.size(); ++d)
    (dst.strides[d] == 0 ? meet : apart).push_back(static_cast<int64_t>(d));
  const std::vector<Strides> strides = walk_strides(dst, src, indices);
  const Walk wm = make_walk(shape, strides, meet), wa = make_walk(shape, strides, apart);
  const IndexBases ib = index_bases(indices, src.dtype);
  char* const d0 = static_cast<char*>(dst.data);
  const char* const s0 = static_cast<const char*>(src.data);
  const int64_t n_meet = wm.numel(), n_apart = wa.numel();
  const size_t nops = strides.size();
  // The innermost loop runs along whichever group reads memory in smaller steps: for each
  // meeting position a stretch of positions apart (index_add of rows), or for each position
  // apart all meeting positions (scatter along the last dim, index_put into a 1-d tensor).
  const int64_t apart_step = read_step(wa), meet_step = read_step(wm);
  const bool rows_inner =
      n_meet == 1 ||
      (n_apart > 1 &&
       (apart_step < meet_step || (apart_step == meet_step && wa.shape.back() >= wm.shape.back())));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / n_meet);
  parallel_for(0, n_apart, grain, [&](int64_t b, int64_t e) {
    Dims shift(nops, 0);
    if (rows_inner) {
      walk_runs(wm, 0, n_meet, [&](const int64_t* off, const int64_t* step, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          for (size_t k = 0; k < nops; ++k) shift[k] = off[k] + i * step[k];
          walk_runs(wa, b, e, ScatterRun<T, I, Op>{d0, s0, &ib, shift.data()});
        }
      });
    } else {
      walk_runs(wa, b, e, [&](const int64_t* off, const int64_t* step, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          for (size_t k = 0; k < nops; ++k) shift[k] = off[k] + i * step[k];
          walk_runs(wm, 0, n_meet, ScatterRun<T, I, Op>{d0, s0, &ib, shift.data()});
        }
      });
    }
  });
}

// ---- Nonzero -------------------------------------------------------------------------------

template <class T>
inline bool is_nonzero(const char* p) {
  if constexpr (is_half_v<T>)
    return static_cast<float>(*reinterpret_cast<const T*>(p)) != 0.0f;
  else
    return *reinterpret_cast<const T*>(p) != T(0);
}

// Fixed-size chunks: each counts its nonzeros, then writes its rows from the prefix sum.
constexpr int64_t kNonzeroChunk = 1 << 16;

template <class T>
void nonzero_kernel(const StridedArray& dst, const StridedArray& src) {
  const int64_t numel = src.numel();
  if (numel == 0) return;
  const Shape& shape = src.shape;
  const size_t nd = shape.size();
  const Strides sb = byte_strides(src);
  const Walk w = make_walk(shape, {sb}, all_dims(nd));
  const char* base = static_cast<const char*>(src.data);
  const int64_t chunks = (numel + kNonzeroChunk - 1) / kNonzeroChunk;
  std::vector<int64_t> start(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t count = 0;
      walk_runs(w, c * kNonzeroChunk, std::min(numel, (c + 1) * kNonzeroChunk),
                [&](const int64_t* off, const int64_t* step, int64_t n) {
                  const char* p = base + off[0];
                  for (int64_t i = 0; i < n; ++i) count += is_nonzero<T>(p + i * step[0]);
                });
      start[static_cast<size_t>(c) + 1] = count;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) start[c + 1] += start[c];
  int64_t* out = static_cast<int64_t*>(dst.data);
  OX_ASSERT(dst.shape.size() == 2 && dst.shape[0] == start[chunks],
            "nonzero given an output of shape ", dst.shape, " for ", start[chunks], " elements");
  if (nd == 0) return;  // rows of no coordinates
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t pos = c * kNonzeroChunk;
      const int64_t end = std::min(numel, pos + kNonzeroChunk);
      Dims index(nd, 0);
      int64_t rest = pos, offset = 0;
      for (size_t d = nd; d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
        offset += index[d] * sb[d];
      }
      int64_t* row = out + start[c] * static_cast<int64_t>(nd);
      const size_t last = nd - 1;
      const int64_t inner = shape[last], step = sb[last];
      while (pos < end) {  // a stretch along the last dim, then an odometer step
        const int64_t n = std::min(inner - index[last], end - pos);
        const char* p = base + offset;
        for (int64_t j = 0; j < n; ++j) {
          if (is_nonzero<T>(p + j * step)) {
            std::copy(index.begin(), index.begin() + last, row);
            row[last] = index[last] + j;
            row += nd;
          }
        }
        pos += n;
        index[last] += n;
        offset += n * step;
        for (size_t d = last + 1; d-- > 0;) {
          if (index[d] < shape[d]) break;
          offset -= shape[d] * sb[d];
          index[d] = 0;
          if (d == 0) break;
          ++index[d - 1];
          offset += sb[d - 1];
        }
      }
    }
  });
}

}  // namespace

IndexCheck gather(const StridedArray& dst, const StridedArray& src,
                  const std::vector<IndexOperand>& indices) {
  if (dst.numel() == 0) return {};
  if (indices.empty()) {
    cpu::copy(dst, src);
    return {};
  }
  return dispatch_index(indices[0].index.dtype, [&]<class I>() -> IndexCheck {
    if (IndexCheck c = check_all<I>(indices); !c.ok) return c;
    dispatch_bytes(dtype_size(dst.dtype),
                   [&]<class U>() { gather_kernel<U, I>(dst, src, indices); });
    return {};
  });
}

IndexCheck scatter(const StridedArray& dst, const StridedArray& src,
                   const std::vector<IndexOperand>& indices, ScatterReduce reduce) {
  if (src.numel() == 0) return {};
  const DType idt = indices.empty() ? kI64 : indices[0].index.dtype;
  return dispatch_index(idt, [&]<class I>() -> IndexCheck {
    if (IndexCheck c = check_all<I>(indices); !c.ok) return c;
    if (reduce == ScatterReduce::Assign) {
      dispatch_bytes(dtype_size(dst.dtype),
                     [&]<class U>() { scatter_kernel<U, I, AssignOp>(dst, src, indices); });
      return {};
    }
    dispatch_dtype(dst.dtype, [&]<class T>() {
      switch (reduce) {
        case ScatterReduce::Sum:
          return scatter_kernel<T, I, SumOp>(dst, src, indices);
        case ScatterReduce::Prod:
          return scatter_kernel<T, I, ProdOp>(dst, src, indices);
        case ScatterReduce::Amax:
          return scatter_kernel<T, I, AmaxOp>(dst, src, indices);
        case ScatterReduce::Amin:
          return scatter_kernel<T, I, AminOp>(dst, src, indices);
        case ScatterReduce::Assign:
          break;
      }
    });
    return {};
  });
}

void nonzero(const StridedArray& dst, const StridedArray& src) {
  dispatch_dtype(src.dtype, [&]<class T>() { nonzero_kernel<T>(dst, src); });
}

}  // namespace ox::cpu
