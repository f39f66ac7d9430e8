// var, std, logsumexp and the p-norms, floating dtypes only (reduce_engine.h).

#include "backend/cpu/reduce_engine.h"

namespace ox::cpu::reduce_engine {

namespace {

template <class T>
void var_std(const Geometry& g, const StridedArray& dst, const StridedArray& src, bool take_sqrt,
             double correction) {
  const double n = static_cast<double>(g.n_red);
  const std::unique_ptr<double[]> mean = scratch_array<double>(g.n_out, "reduce");
  run(g, src.data, Lanes<T, double, NoParam, SumOp<double>>{}, nullptr,
      [&](int64_t o, double s) { mean[static_cast<size_t>(o)] = s / n; });
  const double denom = std::max(n - correction, 0.0);
  run(g, src.data, Lanes<T, double, double, SqDevOp>{}, mean.get(), [&](int64_t o, double ss) {
    const double v = ss / denom;
    at<T>(dst, g.out_offsets(o).dst) = convert<T>(take_sqrt ? std::sqrt(v) : v);
  });
}

template <class T>
void logsumexp(const Geometry& g, const StridedArray& dst, const StridedArray& src) {
  using C = compute_t<T>;
  const auto m = extremes<T, true>(g, src);
  // Where the max is not finite (all -inf, some +inf, NaN) it is the result; the sum of
  // exp(x - m) computed there is NaN and unused.
  run(g, src.data, Lanes<T, C, C, ExpOp<C>>{}, m.get(), [&](int64_t o, C s) {
    const C mo = m[static_cast<size_t>(o)];
    at<T>(dst, g.out_offsets(o).dst) = convert<T>(std::isfinite(mo) ? mo + std::log(s) : mo);
  });
}

template <class T>
void norm(const Geometry& g, const StridedArray& dst, const StridedArray& src, double p) {
  const auto same = [](double a) { return a; };
  if (p == 0) return one_pass<T, double, NonzeroOp<double>, T>(g, dst, src, {}, same);
  if (p == 1) return one_pass<T, double, AbsOp, T>(g, dst, src, {}, same);
  if (p == 2)
    return one_pass<T, double, SquareOp, T>(g, dst, src, {}, [](double a) { return std::sqrt(a); });
  if (p == INFINITY)
    return one_pass<T, double, ExtremeOp<double, true, true>, T>(g, dst, src, {}, same);
  if (p == -INFINITY)
    return one_pass<T, double, ExtremeOp<double, false, true>, T>(g, dst, src, {}, same);
  one_pass<T, double, PowOp, T>(g, dst, src, PowOp{{}, p},
                                [p](double a) { return std::pow(a, 1.0 / p); });
}

}  // namespace

void stats_family(ReduceOp op, const Geometry& g, const StridedArray& dst, const StridedArray& src,
                  const ReduceParams& p) {
  dispatch_floating(src.dtype, [&]<class T>() {
    if (op == ReduceOp::Var || op == ReduceOp::Std) {
      var_std<T>(g, dst, src, op == ReduceOp::Std, p.correction);
    } else if (op == ReduceOp::LogSumExp) {
      logsumexp<T>(g, dst, src);
    } else {
      OX_ASSERT(op == ReduceOp::Norm, "stats_family given op ", int(op));
      norm<T>(g, dst, src, p.p);
    }
  });
}

}  // namespace ox::cpu::reduce_engine
