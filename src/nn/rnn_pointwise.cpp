// The gate arithmetic of LSTM and GRU steps: one pass over the gates on the CPU (forward and
// backward, recomputing the activations from the saved pre-activations instead of keeping
// them), and the same formulas in public ops for other devices and for create_graph.

#include "nn/rnn_pointwise.h"

#include "core/dispatch.h"

#include <atomic>
#include <cmath>

#include "oxmera/autograd.h"
#include "oxmera/nn/rnn.h"
#include "oxmera/ops.h"

namespace ox::nn {

namespace {
std::atomic<bool> fused_enabled{true};
}  // namespace

void set_fused_rnn_enabled(bool enabled) { fused_enabled.store(enabled); }
bool fused_rnn_enabled() { return fused_enabled.load(); }

namespace detail {
namespace {

// Rows are spread over threads only when there is enough work; each element is computed the
// same way whatever the split, so results never depend on the thread count.
constexpr int64_t kParallelElements = 1 << 15;

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// Each element loads in C (f32 for the 16-bit floats), computes every gate in C and rounds only
// what it stores: one rounding per output, as PyTorch's fused CUDA cell (accscalar_t).
template <class T>
compute_t<T> ld(T x) {
  return static_cast<compute_t<T>>(x);
}

bool can_fuse(std::initializer_list<const Tensor*> tensors) {
  if (!fused_rnn_enabled()) return false;
  const DType dt = (*tensors.begin())->dtype();
  if (!is_floating(dt)) return false;
  for (const Tensor* t : tensors)
    if (!t->device().is_cpu() || t->dtype() != dt) return false;
  return true;
}

Tensor zeros_if_undefined(const Tensor& grad, const Tensor& like) {
  return grad.defined() ? grad : zeros_like(like);
}

// ---- LSTM ------------------------------------------------------------------------------------

template <class T>
void lstm_forward_kernel(const T* gates, const T* c, T* h_out, T* c_out, int64_t n, int64_t h) {
  using C = compute_t<T>;
#pragma omp parallel for schedule(static) if (n * h >= kParallelElements)
  for (int64_t row = 0; row < n; ++row) {
    const T* g = gates + row * 4 * h;
    for (int64_t j = 0; j < h; ++j) {
      const C i = sigmoid(ld(g[j])), f = sigmoid(ld(g[h + j])), gg = std::tanh(ld(g[2 * h + j])),
              o = sigmoid(ld(g[3 * h + j]));
      const C c2 = f * ld(c[row * h + j]) + i * gg;
      c_out[row * h + j] = static_cast<T>(c2);
      h_out[row * h + j] = static_cast<T>(o * std::tanh(c2));
    }
  }
}

// dh, dc2 may be null (no gradient reached that output).
template <class T>
void lstm_backward_kernel(const T* gates, const T* c, const T* dh, const T* dc2, T* dgates, T* dc,
                          int64_t n, int64_t h) {
  using C = compute_t<T>;
#pragma omp parallel for schedule(static) if (n * h >= kParallelElements)
  for (int64_t row = 0; row < n; ++row) {
    const T* g = gates + row * 4 * h;
    T* dg = dgates + row * 4 * h;
    for (int64_t j = 0; j < h; ++j) {
      const int64_t k = row * h + j;
      const C i = sigmoid(ld(g[j])), f = sigmoid(ld(g[h + j])), gg = std::tanh(ld(g[2 * h + j])),
              o = sigmoid(ld(g[3 * h + j]));
      const C cp = ld(c[k]);
      const C tc = std::tanh(f * cp + i * gg);
      const C dhk = dh ? ld(dh[k]) : C(0);
      const C dct = (dc2 ? ld(dc2[k]) : C(0)) + dhk * o * (C(1) - tc * tc);
      dg[j] = static_cast<T>(dct * gg * i * (C(1) - i));
      dg[h + j] = static_cast<T>(dct * cp * f * (C(1) - f));
      dg[2 * h + j] = static_cast<T>(dct * i * (C(1) - gg * gg));
      dg[3 * h + j] = static_cast<T>(dhk * tc * o * (C(1) - o));
      dc[k] = static_cast<T>(dct * f);
    }
  }
}

std::pair<Tensor, Tensor> lstm_composite(const Tensor& gates, const Tensor& c) {
  const std::vector<Tensor> ch = chunk(gates, 4, 1);
  const Tensor i = sigmoid(ch[0]), f = sigmoid(ch[1]), g = tanh(ch[2]), o = sigmoid(ch[3]);
  const Tensor c2 = f * c + i * g;
  return {o * tanh(c2), c2};
}

// The backward in public ops (differentiable again, on any device).
std::vector<Tensor> lstm_composite_backward(const Tensor& gates, const Tensor& c, const Tensor& dh,
                                            const Tensor& dc2) {
  const std::vector<Tensor> ch = chunk(gates, 4, 1);
  const Tensor i = sigmoid(ch[0]), f = sigmoid(ch[1]), g = tanh(ch[2]), o = sigmoid(ch[3]);
  const Tensor tc = tanh(f * c + i * g);
  const Tensor dhz = zeros_if_undefined(dh, c);
  const Tensor dct = zeros_if_undefined(dc2, c) + dhz * o * (1.0 - tc * tc);
  Tensor dgates = cat({dct * g * i * (1.0 - i), dct * c * f * (1.0 - f), dct * i * (1.0 - g * g),
                       dhz * tc * o * (1.0 - o)},
                      1);
  return {dgates, dct * f};
}

struct LSTMPointwise : autograd::Function<LSTMPointwise> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, const Tensor& gates_in,
                                     const Tensor& c_in) {
    const Tensor gates = gates_in.contiguous(), c = c_in.contiguous();
    const int64_t n = c.size(0), h = c.size(1);
    Tensor h_out = empty({n, h}, {.dtype = c.dtype(), .device = c.device()}),
           c_out = empty({n, h}, {.dtype = c.dtype(), .device = c.device()});
    dispatch_float(c.dtype(), [&]<class T>() {
      lstm_forward_kernel<T>(gates.data_ptr<T>(), c.data_ptr<T>(), h_out.data_ptr<T>(),
                             c_out.data_ptr<T>(), n, h);
    });
    ctx->save_for_backward({gates_in, c_in});
    return {h_out, c_out};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
    const std::vector<Tensor> saved = ctx->get_saved_variables();
    const Tensor &gates_s = saved[0], &c_s = saved[1];
    const Tensor& dh = grads[0];
    const Tensor& dc2 = grads[1];
    if (is_grad_enabled() || !can_fuse({&gates_s, &c_s}) ||
        (dh.defined() && !can_fuse({&gates_s, &dh})) ||
        (dc2.defined() && !can_fuse({&gates_s, &dc2})))
      return lstm_composite_backward(gates_s, c_s, dh, dc2);
    const Tensor gates = gates_s.contiguous(), c = c_s.contiguous();
    const Tensor dhc = dh.defined() ? dh.contiguous() : Tensor();
    const Tensor dcc = dc2.defined() ? dc2.contiguous() : Tensor();
    const int64_t n = c.size(0), h = c.size(1);
    Tensor dgates = empty({n, 4 * h}, {.dtype = c.dtype(), .device = c.device()}),
           dc = empty({n, h}, {.dtype = c.dtype(), .device = c.device()});
    dispatch_float(c.dtype(), [&]<class T>() {
      lstm_backward_kernel<T>(gates.data_ptr<T>(), c.data_ptr<T>(),
                              dhc.defined() ? dhc.data_ptr<T>() : nullptr,
                              dcc.defined() ? dcc.data_ptr<T>() : nullptr, dgates.data_ptr<T>(),
                              dc.data_ptr<T>(), n, h);
    });
    return {dgates, dc};
  }

  template <class F>
  static void dispatch_float(DType dt, F&& fn) {
    if (dt == kF64)
      fn.template operator()<double>();
    else if (dt == kF16)
      fn.template operator()<Half>();
    else if (dt == kBF16)
      fn.template operator()<BFloat16>();
    else
      fn.template operator()<float>();
  }
};

// ---- GRU -------------------------------------------------------------------------------------

template <class T>
void gru_forward_kernel(const T* gx, const T* gh, const T* hp, T* h_out, int64_t n, int64_t h) {
  using C = compute_t<T>;
#pragma omp parallel for schedule(static) if (n * h >= kParallelElements)
  for (int64_t row = 0; row < n; ++row) {
    const T* x = gx + row * 3 * h;
    const T* y = gh + row * 3 * h;
    for (int64_t j = 0; j < h; ++j) {
      const C r = sigmoid(ld(x[j]) + ld(y[j])), z = sigmoid(ld(x[h + j]) + ld(y[h + j]));
      const C nn = std::tanh(ld(x[2 * h + j]) + r * ld(y[2 * h + j]));
      h_out[row * h + j] = static_cast<T>(nn + z * (ld(hp[row * h + j]) - nn));
    }
  }
}

template <class T>
void gru_backward_kernel(const T* gx, const T* gh, const T* hp, const T* dh2, T* dgx, T* dgh, T* dh,
                         int64_t n, int64_t h) {
  using C = compute_t<T>;
#pragma omp parallel for schedule(static) if (n * h >= kParallelElements)
  for (int64_t row = 0; row < n; ++row) {
    const T* x = gx + row * 3 * h;
    const T* y = gh + row * 3 * h;
    T* dx = dgx + row * 3 * h;
    T* dy = dgh + row * 3 * h;
    for (int64_t j = 0; j < h; ++j) {
      const int64_t k = row * h + j;
      const C r = sigmoid(ld(x[j]) + ld(y[j])), z = sigmoid(ld(x[h + j]) + ld(y[h + j]));
      const C hn = ld(y[2 * h + j]);
      const C nn = std::tanh(ld(x[2 * h + j]) + r * hn);
      const C d = ld(dh2[k]);
      const C dpn = d * (C(1) - z) * (C(1) - nn * nn);
      const C dpr = dpn * hn * r * (C(1) - r);
      const C dpz = d * (ld(hp[k]) - nn) * z * (C(1) - z);
      dx[j] = dy[j] = static_cast<T>(dpr);
      dx[h + j] = dy[h + j] = static_cast<T>(dpz);
      dx[2 * h + j] = static_cast<T>(dpn);
      dy[2 * h + j] = static_cast<T>(dpn * r);
      dh[k] = static_cast<T>(d * z);
    }
  }
}

Tensor gru_composite(const Tensor& gx, const Tensor& gh, const Tensor& h) {
  const std::vector<Tensor> xs = chunk(gx, 3, 1), hs = chunk(gh, 3, 1);
  const Tensor r = sigmoid(xs[0] + hs[0]), z = sigmoid(xs[1] + hs[1]);
  const Tensor n = tanh(xs[2] + r * hs[2]);
  return n + z * (h - n);
}

std::vector<Tensor> gru_composite_backward(const Tensor& gx, const Tensor& gh, const Tensor& h,
                                           const Tensor& dh2) {
  const std::vector<Tensor> xs = chunk(gx, 3, 1), hs = chunk(gh, 3, 1);
  const Tensor r = sigmoid(xs[0] + hs[0]), z = sigmoid(xs[1] + hs[1]);
  const Tensor n = tanh(xs[2] + r * hs[2]);
  const Tensor dpn = dh2 * (1.0 - z) * (1.0 - n * n);
  const Tensor dpr = dpn * hs[2] * r * (1.0 - r);
  const Tensor dpz = dh2 * (h - n) * z * (1.0 - z);
  return {cat({dpr, dpz, dpn}, 1), cat({dpr, dpz, dpn * r}, 1), dh2 * z};
}

struct GRUPointwise : autograd::Function<GRUPointwise> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& gx_in, const Tensor& gh_in,
                        const Tensor& h_in) {
    const Tensor gx = gx_in.contiguous(), gh = gh_in.contiguous(), hp = h_in.contiguous();
    const int64_t n = hp.size(0), h = hp.size(1);
    Tensor out = empty({n, h}, {.dtype = hp.dtype(), .device = hp.device()});
    LSTMPointwise::dispatch_float(hp.dtype(), [&]<class T>() {
      gru_forward_kernel<T>(gx.data_ptr<T>(), gh.data_ptr<T>(), hp.data_ptr<T>(), out.data_ptr<T>(),
                            n, h);
    });
    ctx->save_for_backward({gx_in, gh_in, h_in});
    return out;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
    const std::vector<Tensor> saved = ctx->get_saved_variables();
    const Tensor &gx_s = saved[0], &gh_s = saved[1], &h_s = saved[2];
    const Tensor dh2 = zeros_if_undefined(grads[0], h_s);
    if (is_grad_enabled() || !can_fuse({&gx_s, &gh_s, &h_s, &dh2}))
      return gru_composite_backward(gx_s, gh_s, h_s, dh2);
    const Tensor gx = gx_s.contiguous(), gh = gh_s.contiguous(), hp = h_s.contiguous(),
                 d = dh2.contiguous();
    const int64_t n = hp.size(0), h = hp.size(1);
    Tensor dgx = empty({n, 3 * h}, {.dtype = hp.dtype(), .device = hp.device()}),
           dgh = empty({n, 3 * h}, {.dtype = hp.dtype(), .device = hp.device()}),
           dh = empty({n, h}, {.dtype = hp.dtype(), .device = hp.device()});
    LSTMPointwise::dispatch_float(hp.dtype(), [&]<class T>() {
      gru_backward_kernel<T>(gx.data_ptr<T>(), gh.data_ptr<T>(), hp.data_ptr<T>(), d.data_ptr<T>(),
                             dgx.data_ptr<T>(), dgh.data_ptr<T>(), dh.data_ptr<T>(), n, h);
    });
    return {dgx, dgh, dh};
  }
};

}  // namespace

std::pair<Tensor, Tensor> lstm_pointwise(const Tensor& gates, const Tensor& c) {
  if (!can_fuse({&gates, &c})) return lstm_composite(gates, c);
  const std::vector<Tensor> out = LSTMPointwise::apply(gates, c);
  return {out[0], out[1]};
}

Tensor gru_pointwise(const Tensor& gx, const Tensor& gh, const Tensor& h) {
  if (!can_fuse({&gx, &gh, &h})) return gru_composite(gx, gh, h);
  return GRUPointwise::apply(gx, gh, h);
}

}  // namespace detail
}  // namespace ox::nn
