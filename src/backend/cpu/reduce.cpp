// Reductions: the entry point, and all/any. The order every reduction computes in is described
// in reduce_engine.h; the families are compiled in reduce_sum.cpp, reduce_extreme.cpp and
// reduce_stats.cpp.

#include "backend/cpu/reduce_engine.h"

namespace ox::cpu {

namespace {

using namespace reduce_engine;

template <class T>
void logical(ReduceOp op, const Geometry& g, const StridedArray& dst, const StridedArray& src) {
  const auto same = [](uint8_t a) { return a; };
  const auto write = [&]<class Out>() {
    if (op == ReduceOp::All) {
      one_pass<T, uint8_t, LogicalOp<true>, Out>(g, dst, src, {}, same);
    } else {
      one_pass<T, uint8_t, LogicalOp<false>, Out>(g, dst, src, {}, same);
    }
  };
  OX_ASSERT(dst.dtype == kBool || dst.dtype == kU8, "all/any write bool or u8");
  if (dst.dtype == kBool) {
    write.template operator()<bool>();
  } else {
    write.template operator()<uint8_t>();
  }
}

}  // namespace

void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src, const ReduceParams& p) {
  const reduce_engine::Geometry g(dst, src, p.values);
  if (g.n_out == 0) return;
  OX_ASSERT(g.n_red > 0 || op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::All ||
                op == ReduceOp::Any || op == ReduceOp::CountNonzero || op == ReduceOp::LogSumExp ||
                op == ReduceOp::Norm,
            "reduce: op ", int(op), " over an empty extent");
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::Mean:
    case ReduceOp::CountNonzero:
      return reduce_engine::sum_family(op, g, dst, src);
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return reduce_engine::extreme_family(op, g, dst, src, p.values);
    case ReduceOp::All:
    case ReduceOp::Any:
      return dispatch_dtype(src.dtype, [&]<class T>() { logical<T>(op, g, dst, src); });
    case ReduceOp::Var:
    case ReduceOp::Std:
    case ReduceOp::LogSumExp:
    case ReduceOp::Norm:
      return reduce_engine::stats_family(op, g, dst, src, p);
  }
}

}  // namespace ox::cpu
