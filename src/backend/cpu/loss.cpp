// Fused cross-entropy: log-softmax and the negative log-likelihood of each row in one pass,
// and its gradient. Rows are independent, so any split over threads gives the same result.

#include <cmath>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

template <class C>
C row_logsumexp(const C* x, int64_t n) {
  C max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = (x[i] > max || x[i] != x[i]) ? x[i] : max;
  if (std::isinf(max)) return max;  // all -inf: -inf; any +inf: +inf
  C sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  return max + std::log(sum);
}

template <class I>
int64_t first_bad_target(const I* target, int64_t rows, int64_t classes, int64_t ignore) {
  for (int64_t r = 0; r < rows; ++r) {
    const auto t = static_cast<int64_t>(target[r]);
    if (t != ignore && (t < 0 || t >= classes)) return r;
  }
  return -1;
}

template <class T>
void cross_entropy_rows(const StridedArray& loss, const StridedArray& row_weight,
                        const StridedArray& logits, const StridedArray& target,
                        const StridedArray& weight, int64_t ignore, double smoothing,
                        CheckSite site) {
  using C = compute_t<T>;
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  const int64_t* t = static_cast<const int64_t*>(target.data);
  if (const int64_t bad = first_bad_target(t, rows, classes, ignore); bad >= 0)
    raise_check_failure({site, t[bad], bad, classes});
  const T* x = static_cast<const T*>(logits.data);
  const T* w = static_cast<const T*>(weight.data);
  T* out = static_cast<T*>(loss.data);
  T* out_weight = static_cast<T*>(row_weight.data);
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(classes, 1)),
               [&](int64_t r0, int64_t r1) {
                 std::vector<C> row(static_cast<size_t>(classes));
                 for (int64_t r = r0; r < r1; ++r) {
                   if (t[r] == ignore) {
                     out[r] = convert<T>(0.0);
                     out_weight[r] = convert<T>(0.0);
                     continue;
                   }
                   for (int64_t c = 0; c < classes; ++c) row[c] = C(x[r * classes + c]);
                   const double lse = double(row_logsumexp(row.data(), classes));
                   const double wt = w ? double(C(w[t[r]])) : 1.0;
                   double l = (1.0 - smoothing) * wt * (lse - double(row[t[r]]));
                   if (smoothing > 0) {
                     double smooth = 0;
                     for (int64_t c = 0; c < classes; ++c)
                       smooth += (w ? double(C(w[c])) : 1.0) * (lse - double(row[c]));
                     l += smoothing / double(classes) * smooth;
                   }
                   out[r] = convert<T>(l);
                   out_weight[r] = convert<T>(wt);
                 }
               });
}

template <class T>
void cross_entropy_backward_rows(const StridedArray& grad, const StridedArray& grad_loss,
                                 const StridedArray& logits, const StridedArray& target,
                                 const StridedArray& weight, int64_t ignore, double smoothing) {
  using C = compute_t<T>;
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  const int64_t* t = static_cast<const int64_t*>(target.data);
  const T* x = static_cast<const T*>(logits.data);
  const T* w = static_cast<const T*>(weight.data);
  const T* gl = static_cast<const T*>(grad_loss.data);
  T* g = static_cast<T*>(grad.data);
  double weight_total = 0;
  for (int64_t c = 0; c < classes; ++c) weight_total += w ? double(C(w[c])) : 1.0;
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(classes, 1)),
               [&](int64_t r0, int64_t r1) {
                 std::vector<C> row(static_cast<size_t>(classes));
                 for (int64_t r = r0; r < r1; ++r) {
                   T* gr = g + r * classes;
                   if (t[r] == ignore) {
                     for (int64_t c = 0; c < classes; ++c) gr[c] = convert<T>(0.0);
                     continue;
                   }
                   for (int64_t c = 0; c < classes; ++c) row[c] = C(x[r * classes + c]);
                   const double lse = double(row_logsumexp(row.data(), classes));
                   const double wt = w ? double(C(w[t[r]])) : 1.0, scale = double(C(gl[r]));
                   // d/dx_c: (1-s) w_t (p_c - [c == t]) + (s / C) (W p_c - w_c), W the weight
                   // total.
                   for (int64_t c = 0; c < classes; ++c) {
                     const double p = std::exp(double(row[c]) - lse);
                     double d = (1.0 - smoothing) * wt * (p - (c == t[r] ? 1.0 : 0.0));
                     if (smoothing > 0)
                       d += smoothing / double(classes) *
                            (weight_total * p - (w ? double(C(w[c])) : 1.0));
                     gr[c] = convert<T>(d * scale);
                   }
                 }
               });
}

}  // namespace

void cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                   const StridedArray& logits, const StridedArray& target,
                   const StridedArray& weight, int64_t ignore_index, double smoothing,
                   CheckSite site) {
  dispatch_floating(logits.dtype, [&]<class T>() {
    cross_entropy_rows<T>(loss, row_weight, logits, target, weight, ignore_index, smoothing, site);
  });
}

void cross_entropy_backward(const StridedArray& grad, const StridedArray& grad_loss,
                            const StridedArray& logits, const StridedArray& target,
                            const StridedArray& weight, int64_t ignore_index, double smoothing) {
  dispatch_floating(logits.dtype, [&]<class T>() {
    cross_entropy_backward_rows<T>(grad, grad_loss, logits, target, weight, ignore_index,
                                   smoothing);
  });
}

}  // namespace ox::cpu
