// scatter: assignment, and the sum/prod/amax/amin reductions, through index arrays; every index
// is checked before anything is written (index_walk.h).

#include "backend/cpu/index_walk.h"

namespace ox::cpu {

namespace {

using namespace index_walk;

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
// amax (IsMax) and amin: a NaN coming in wins; a NaN already in d stays, as nothing compares
// past it.
template <bool IsMax>
struct ExtremeOp {
  template <class T>
  static void apply(T& d, T s) {
    using C = compute_t<T>;
    const C a = C(d), b = C(s);
    const bool beyond = IsMax ? b > a : b < a;
    if constexpr (std::is_floating_point_v<C>) {
      if (b != b || beyond) d = s;
    } else {
      if (beyond) d = s;
    }
  }
};
using AmaxOp = ExtremeOp<true>;
using AminOp = ExtremeOp<false>;

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
    Dims off = Dims::filled(nops, 0);
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

}  // namespace

void scatter(const StridedArray& dst, const StridedArray& src,
             const std::vector<IndexOperand>& indices, ScatterReduce reduce) {
  if (src.numel() == 0) return;
  const DType idt = indices.empty() ? kI64 : indices[0].index.dtype;
  dispatch_index(idt, [&]<class I>() {
    check_all<I>(indices);
    if (reduce == ScatterReduce::Assign) {
      dispatch_bytes(dtype_size(dst.dtype),
                     [&]<class U>() { scatter_kernel<U, I, AssignOp>(dst, src, indices); });
      return;
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
  });
}

}  // namespace ox::cpu
