// max, min, argmax and argmin (reduce_engine.h).

#include "backend/cpu/reduce_engine.h"

namespace ox::cpu::reduce_engine {

namespace {

template <class T, bool IsMax>
void arg_extreme(const Geometry& g, const StridedArray& dst, const StridedArray& src,
                 const StridedArray* values) {
  const auto m = extremes<T, IsMax>(g, src);
  const T* s = static_cast<const T*>(src.data);
  run(g, src.data, FindFirst<T>{}, m.get(), [&](int64_t o, int64_t idx) {
    const Geometry::Offsets off = g.out_offsets(o);
    at<int64_t>(dst, off.dst) = idx;
    if (values) at<T>(*values, off.val) = s[off.src + g.red_offset(idx)];
  });
}

}  // namespace

void extreme_family(ReduceOp op, const Geometry& g, const StridedArray& dst,
                    const StridedArray& src, const StridedArray* values) {
  if (op == ReduceOp::Max || op == ReduceOp::Min)
    return dispatch_dtype(src.dtype, [&]<class T>() {
      using C = compute_t<T>;
      const auto same = [](C a) { return a; };
      if (op == ReduceOp::Max) {
        one_pass<T, C, ExtremeOp<C, true>, T>(g, dst, src, {}, same);
      } else {
        one_pass<T, C, ExtremeOp<C, false>, T>(g, dst, src, {}, same);
      }
    });
  OX_ASSERT(dst.dtype == kI64 && (!values || values->dtype == src.dtype), "argmax dtypes");
  dispatch_dtype(src.dtype, [&]<class T>() {
    if (op == ReduceOp::ArgMax) {
      arg_extreme<T, true>(g, dst, src, values);
    } else {
      arg_extreme<T, false>(g, dst, src, values);
    }
  });
}

}  // namespace ox::cpu::reduce_engine
