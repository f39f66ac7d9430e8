// Sum, prod, mean and count_nonzero: one pass each (reduce_engine.h).

#include "backend/cpu/reduce_engine.h"

namespace ox::cpu::reduce_engine {

namespace {

template <class T>
void sum_like(ReduceOp op, const Geometry& g, const StridedArray& dst, const StridedArray& src) {
  using C = compute_t<T>;
  const auto same = [](auto a) { return a; };
  if constexpr (std::is_floating_point_v<C>) {
    const C n = static_cast<C>(g.n_red);
    switch (op) {
      case ReduceOp::Sum:
        return one_pass<T, C, SumOp<C>, T>(g, dst, src, SumOp<C>{}, same);
      case ReduceOp::Mean:
        return one_pass<T, C, SumOp<C>, T>(g, dst, src, SumOp<C>{}, [n](C a) { return a / n; });
      case ReduceOp::Prod:
        return one_pass<T, C, ProdOp<C>, T>(g, dst, src, ProdOp<C>{}, same);
      default:
        break;
    }
  } else {
    OX_ASSERT(dst.dtype == kI64 && op != ReduceOp::Mean, "integer sum/prod writes i64");
    if (op == ReduceOp::Sum)
      return one_pass<T, int64_t, SumOp<int64_t>, int64_t>(g, dst, src, SumOp<int64_t>{}, same);
    if (op == ReduceOp::Prod)
      return one_pass<T, int64_t, ProdOp<int64_t>, int64_t>(g, dst, src, ProdOp<int64_t>{}, same);
  }
  OX_ASSERT(false, "sum_like given op ", int(op));
}

}  // namespace

void sum_family(ReduceOp op, const Geometry& g, const StridedArray& dst, const StridedArray& src) {
  if (op == ReduceOp::CountNonzero) {
    OX_ASSERT(dst.dtype == kI64, "count_nonzero writes i64");
    return dispatch_dtype(src.dtype, [&]<class T>() {
      one_pass<T, int64_t, NonzeroOp<int64_t>, int64_t>(g, dst, src, {},
                                                        [](int64_t a) { return a; });
    });
  }
  dispatch_dtype(src.dtype, [&]<class T>() { sum_like<T>(op, g, dst, src); });
}

}  // namespace ox::cpu::reduce_engine
