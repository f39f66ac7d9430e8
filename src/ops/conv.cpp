// Convolution ops: conv1d, conv2d, their input and weight gradients, conv_transpose2d.
//
// Each is im2col/col2im (backend primitives) around one GEMM (ox::matmul) per chunk of images.
// The column buffer is laid out [groups, C/groups * kh * kw, images * Ho * Wo], so the images
// of a chunk share one large GEMM per group rather than one small GEMM each (the output then
// needs one permuting copy, which also adds the bias), and the weight gradient sums over the
// images inside the GEMM's own reduction. Chunks bound the buffer's memory; their number
// depends on the shapes only, so results do not depend on the thread count. Depthwise
// convolutions (one input channel per group), and on the CPU a single input channel where its
// vector kernels apply, take a direct backend kernel instead (Geometry::direct).

#include <algorithm>
#include <ostream>
#include <string>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "ops/op_util.h"

namespace ox {

std::ostream& operator<<(std::ostream& os, const IntPair& p) {
  return os << "(" << p.h << ", " << p.w << ")";
}

namespace {

// The column buffer of one chunk stays below this (the im2col of a whole large batch could
// take gigabytes); a single image may exceed it.
constexpr int64_t kColumnBudgetBytes = int64_t{256} << 20;

PaddingMode parse_mode(std::string_view mode) {
  OX_CHECK(mode == "same" || mode == "valid", Value, "conv",
           "padding must be ints, \"same\" or \"valid\", got \"", std::string(mode), "\"");
  return mode == "same" ? PaddingMode::Same : PaddingMode::Valid;
}

// a * b and a + b for sizes a caller may make arbitrarily large: a Shape error, not overflow.
int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  OX_CHECK(!__builtin_mul_overflow(a, b, &r), Shape, op, "sizes overflow 64 bits (", a, " * ", b,
           ")");
  return r;
}
int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  OX_CHECK(!__builtin_add_overflow(a, b, &r), Shape, op, "sizes overflow 64 bits (", a, " + ", b,
           ")");
  return r;
}

// Stride, dilation and the padding of each side, checked.
struct Resolved {
  int64_t sh, sw, dh, dw;
  int64_t pad_top, pad_bottom, pad_left, pad_right;
  int64_t groups;
};

// Everything a convolution's kernels need: input [N, C, H, W], weight [O, Cg, KH, KW] with
// C = G * Cg, output [N, O, Ho, Wo].
struct Geometry {
  int64_t N, C, H, W, O, Cg, KH, KW, G, Ho, Wo;
  Window2d window;
  int64_t og() const { return O / G; }
  int64_t cgk() const { return Cg * KH * KW; }
  int64_t L() const { return Ho * Wo; }
  // One input channel per group, one group per channel: a direct kernel beats GEMMs of one row.
  bool depthwise() const { return Cg == 1 && G == C && G > 1; }
  // The depthwise forward and weight gradient also serve a single input channel (a network's
  // first layer on grayscale images) where the CPU's vector kernels take it (f32/f64, stride 1,
  // no padding or dilation; backend/cpu/conv.cpp's plain_window): they write the output in place,
  // where im2col + a GEMM of depth KH * KW + the permuting copy moved every output element three
  // times.
  bool direct(Device device, DType dtype) const {
    const Window2d& w = window;
    const bool plain = w.stride_h == 1 && w.stride_w == 1 && w.pad_h == 0 && w.pad_w == 0 &&
                       w.dilation_h == 1 && w.dilation_w == 1;
    return depthwise() ||
           (C == 1 && G == 1 && device.is_cpu() && plain && (dtype == kF32 || dtype == kF64));
  }
  // A 1x1 kernel over every position: the input is its own column buffer.
  bool pointwise() const {
    return KH == 1 && KW == 1 && window.stride_h == 1 && window.stride_w == 1 &&
           window.pad_h == 0 && window.pad_w == 0 && Ho == H && Wo == W;
  }
};

Resolved resolve(const Conv2dOptions& o, int64_t kh, int64_t kw, const char* op) {
  Resolved r{o.stride.h, o.stride.w, o.dilation.h, o.dilation.w, 0, 0, 0, 0, o.groups};
  OX_CHECK(r.sh > 0 && r.sw > 0, Value, op, "stride must be positive, got ", IntPair(r.sh, r.sw));
  OX_CHECK(r.dh > 0 && r.dw > 0, Value, op, "dilation must be positive, got ", IntPair(r.dh, r.dw));
  OX_CHECK(r.groups > 0, Value, op, "groups must be positive, got ", r.groups);
  switch (o.padding.mode) {
    case PaddingMode::Explicit:
      OX_CHECK(o.padding.value.h >= 0 && o.padding.value.w >= 0, Value, op,
               "padding must not be negative, got ", IntPair(o.padding.value.h, o.padding.value.w));
      r.pad_top = r.pad_bottom = o.padding.value.h;
      r.pad_left = r.pad_right = o.padding.value.w;
      break;
    case PaddingMode::Same: {
      OX_CHECK(r.sh == 1 && r.sw == 1, Value, op,
               "padding=\"same\" is not supported for strided convolutions, got stride ",
               IntPair(r.sh, r.sw));
      const int64_t th = r.dh * std::max<int64_t>(kh - 1, 0),
                    tw = r.dw * std::max<int64_t>(kw - 1, 0);
      r.pad_top = th / 2, r.pad_bottom = th - th / 2;
      r.pad_left = tw / 2, r.pad_right = tw - tw / 2;
      break;
    }
    case PaddingMode::Valid:
      break;
  }
  return r;
}

// input_shape and weight_shape are 4-d.
Geometry geometry(const Shape& in, const Shape& wt, const Resolved& r, const char* op) {
  Geometry g{in[0], in[1], in[2], in[3], wt[0], wt[1], wt[2], wt[3], r.groups, 0, 0, {}};
  OX_CHECK(g.KH > 0 && g.KW > 0, Shape, op, "weight of shape ", wt, " has an empty kernel");
  OX_CHECK(g.C % g.G == 0 && g.O % g.G == 0, Value, op, "groups=", g.G,
           " must divide both the input channels ", g.C, " and the output channels ", g.O,
           " (weight ", wt, ")");
  OX_CHECK(g.Cg * g.G == g.C, Shape, op, "input of shape ", in, " has ", g.C,
           " channels, but weight of shape ", wt, " with groups=", g.G, " expects ", g.Cg * g.G);
  const int64_t span_h = checked_add(checked_mul(r.dh, g.KH - 1, op), 1, op);
  const int64_t span_w = checked_add(checked_mul(r.dw, g.KW - 1, op), 1, op);
  const int64_t padded_h = checked_add(checked_add(g.H, r.pad_top, op), r.pad_bottom, op);
  const int64_t padded_w = checked_add(checked_add(g.W, r.pad_left, op), r.pad_right, op);
  OX_CHECK(padded_h >= span_h && padded_w >= span_w, Shape, op, "kernel of ",
           IntPair(span_h, span_w), " (dilated) is larger than the padded input of ",
           IntPair(padded_h, padded_w), " (input ", in, ", weight ", wt, ")");
  g.Ho = (padded_h - span_h) / r.sh + 1;
  g.Wo = (padded_w - span_w) / r.sw + 1;
  g.window = {g.KH, g.KW, r.sh, r.sw, r.pad_top, r.pad_left, r.dh, r.dw};
  // The output and one image's column buffer must be addressable (kernels index them in int64).
  checked_mul(checked_mul(g.N, g.O, op), checked_mul(g.Ho, g.Wo, op), op);
  checked_mul(checked_mul(g.C, g.KH * g.KW, op), g.L(), op);
  return g;
}

void check_dtypes(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    OX_CHECK(is_floating(t->dtype()), DType, op, "needs floating tensors, got ", t->dtype());
    if (!first) first = t;
    OX_CHECK(t->dtype() == first->dtype(), DType, op, "expected one dtype, got ", first->dtype(),
             " and ", t->dtype());
  }
}

Shape batched(const Shape& s, const char* op, const char* what) {
  OX_CHECK(s.size() == 3 || s.size() == 4, Shape, op, "expected a 3-d (unbatched) or 4-d ",
           "(batched) ", what, ", got shape ", s);
  return s.size() == 4 ? s : Shape{1, s[0], s[1], s[2]};
}

Tensor batched(const Tensor& t, const char* op, const char* what) {
  batched(t.shape(), op, what);
  return t.dim() == 4 ? t : t.unsqueeze(0);
}

void check_weight(const Shape& w, const char* op) {
  OX_CHECK(w.size() == 4, Shape, op, "expected a 4-d weight [out, in / groups, kh, kw], got ", w);
}

// Images per chunk, so that a chunk's column buffer stays within the budget.
int64_t chunk_images(const Geometry& g, DType dt) {
  const double per_image =
      std::max(1.0, double(g.C) * double(g.KH * g.KW) * double(g.L()) * double(dtype_size(dt)));
  return std::clamp<int64_t>(int64_t(double(kColumnBudgetBytes) / per_image), 1,
                             std::max<int64_t>(g.N, 1));
}

// The column buffer [G, Cg * KH * KW, nb * L] of images [n0, n0 + nb) of x.
Tensor columns(const Tensor& x, const Geometry& g, int64_t n0, int64_t nb, const char* op) {
  const Tensor xc = x.narrow(0, n0, nb);
  if (g.pointwise())  // the input is its own column buffer: a view when nb == 1
    return xc.reshape({nb, g.G, g.Cg, g.L()})
        .permute({1, 2, 0, 3})
        .reshape({g.G, g.Cg, nb * g.L()});
  Tensor col = make_empty({g.G, g.cgk(), nb * g.L()}, x.dtype(), x.device(), op);
  const Tensor dst = col.view({g.C, g.KH, g.KW, nb, g.Ho, g.Wo}).permute({3, 0, 1, 2, 4, 5});
  backend_for(x.device(), op).im2col(dst.impl()->array(), xc.impl()->array(), g.window);
  return col;
}

// grad_output images [n0, n0 + nb) as [G, Og, nb * L]: a view when nb == 1.
Tensor grouped_output(const Tensor& go, const Geometry& g, int64_t n0, int64_t nb) {
  return go.narrow(0, n0, nb)
      .reshape({nb, g.G, g.og(), g.L()})
      .permute({1, 2, 0, 3})
      .reshape({g.G, g.og(), nb * g.L()});
}

// [G, X, nb * L] viewed as images [nb, G, X, Ho, Wo].
Tensor as_images(const Tensor& t, const Geometry& g, int64_t nb) {
  return t.view({g.G, t.size(1), nb, g.Ho, g.Wo}).permute({2, 0, 1, 3, 4});
}

// `kept_columns`, when given, receives the column buffer of a forward that made one buffer for
// every image, for the weight gradient to reuse (conv_weight_grad).
Tensor conv_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Geometry& g,
                    const char* op, Tensor* kept_columns = nullptr) {
  if (g.N == 0 || g.O == 0 || g.L() == 0 || g.cgk() == 0) {
    Tensor out = zeros({g.N, g.O, g.Ho, g.Wo}, {.dtype = x.dtype(), .device = x.device()});
    return bias.defined() ? add(out, bias.reshape({1, g.O, 1, 1})) : out;
  }
  if (g.direct(x.device(), x.dtype())) {
    Tensor out = make_empty({g.N, g.O, g.Ho, g.Wo}, x.dtype(), x.device(), op);
    const StridedArray none{nullptr, {}, {}, x.dtype(), x.device()};
    backend_for(x.device(), op)
        .depthwise_conv2d(DepthwiseOp::Forward, out.impl()->array(), x.impl()->array(),
                          weight.impl()->array(), bias.defined() ? bias.impl()->array() : none,
                          g.window);
    return out;
  }
  const Tensor w = weight.reshape({g.G, g.og(), g.cgk()});
  const int64_t per_chunk = chunk_images(g, x.dtype());
  if (per_chunk >= g.N) {  // one permuting pass (a view when N == 1), with the bias in it
    const Tensor col = columns(x, g, 0, g.N, op);
    if (kept_columns) *kept_columns = col;
    const Tensor images = as_images(matmul(w, col), g, g.N);
    const Tensor out =
        bias.defined() ? add(images, bias.reshape({1, g.G, g.og(), 1, 1})) : images.contiguous();
    return out.view({g.N, g.O, g.Ho, g.Wo});
  }
  Tensor out = make_empty({g.N, g.O, g.Ho, g.Wo}, x.dtype(), x.device(), op);
  for (int64_t n0 = 0; n0 < g.N; n0 += per_chunk) {
    const int64_t nb = std::min(per_chunk, g.N - n0);
    out.narrow(0, n0, nb)
        .view({nb, g.G, g.og(), g.Ho, g.Wo})
        .copy_(as_images(matmul(w, columns(x, g, n0, nb, op)), g, nb));
  }
  if (bias.defined()) out.add_(bias.reshape({1, g.O, 1, 1}));
  return out;
}

// d(loss)/d(input) of shape [N, C, H, W]; the forward of a transposed convolution.
Tensor conv_input_grad(const Tensor& go, const Tensor& weight, const Geometry& g, DType dt,
                       Device device, const char* op) {
  if (g.N == 0 || g.C == 0 || g.H == 0 || g.W == 0 || g.O == 0 || g.L() == 0)
    return zeros({g.N, g.C, g.H, g.W}, {.dtype = dt, .device = device});
  Tensor grad_input = make_empty({g.N, g.C, g.H, g.W}, dt, device, op);
  if (g.depthwise()) {  // not direct(): no vector kernel for the input gradient
    backend_for(device, op)
        .depthwise_conv2d(DepthwiseOp::InputGrad, grad_input.impl()->array(), go.impl()->array(),
                          weight.impl()->array(), {}, g.window);
    return grad_input;
  }
  const Tensor wt = weight.reshape({g.G, g.og(), g.cgk()}).transpose(1, 2);
  const int64_t per_chunk = chunk_images(g, dt);
  for (int64_t n0 = 0; n0 < g.N; n0 += per_chunk) {
    const int64_t nb = std::min(per_chunk, g.N - n0);
    const Tensor col = matmul(wt, grouped_output(go, g, n0, nb));  // [G, Cg * KH * KW, nb * L]
    Tensor dst = grad_input.narrow(0, n0, nb);
    if (g.pointwise()) {
      dst.view({nb, g.G, g.Cg, g.H, g.W}).copy_(as_images(col, g, nb));
      continue;
    }
    const Tensor src = col.view({g.C, g.KH, g.KW, nb, g.Ho, g.Wo}).permute({3, 0, 1, 2, 4, 5});
    backend_for(device, op).col2im(dst.impl()->array(), src.impl()->array(), g.window);
  }
  return grad_input;
}

// a [G, M, K] @ b [G, N, K]^T for the weight gradient, whose K (images * Ho * Wo) is long and
// whose M x N is small: the K range is cut into slices of one length (plus a remainder), their
// products are one batched GEMM that spreads over threads, and the slices are summed in
// order. The cut depends on the shapes only.
Tensor sliced_product(const Tensor& a, const Tensor& b) {
  constexpr int64_t kSliceLength = 4096, kMaxSlices = 32;
  const int64_t G = a.size(0), M = a.size(1), N = b.size(1), K = a.size(2);
  const int64_t slices = std::min(K / kSliceLength, kMaxSlices);
  if (slices <= 1) return matmul(a, b.transpose(1, 2));
  const int64_t len = K / slices, main = slices * len;
  const Tensor as = a.narrow(2, 0, main).view({G, M, slices, len}).permute({0, 2, 1, 3});
  const Tensor bs = b.narrow(2, 0, main).view({G, N, slices, len}).permute({0, 2, 3, 1});
  Tensor out = sum(matmul(as, bs), {1});
  if (main < K)
    out =
        add(out, matmul(a.narrow(2, main, K - main), b.narrow(2, main, K - main).transpose(1, 2)));
  return out;
}

// d(loss)/d(weight) of shape [O, Cg, KH, KW]: sum over the chunks, in order. `columns`, the
// forward's buffer for all images when it kept one, saves making it again.
Tensor conv_weight_grad(const Tensor& x, const Tensor& go, const Geometry& g, const char* op,
                        const Tensor& columns_of_all = {}) {
  if (g.N == 0 || g.O == 0 || g.L() == 0 || g.cgk() == 0)
    return zeros({g.O, g.Cg, g.KH, g.KW}, {.dtype = x.dtype(), .device = x.device()});
  if (g.direct(x.device(), x.dtype())) {
    Tensor grad = make_empty({g.O, g.Cg, g.KH, g.KW}, x.dtype(), x.device(), op);
    backend_for(x.device(), op)
        .depthwise_conv2d(DepthwiseOp::WeightGrad, grad.impl()->array(), go.impl()->array(),
                          x.impl()->array(), {}, g.window);
    return grad;
  }
  const int64_t per_chunk = chunk_images(g, x.dtype());
  Tensor grad;
  for (int64_t n0 = 0; n0 < g.N; n0 += per_chunk) {
    const int64_t nb = std::min(per_chunk, g.N - n0);
    const Tensor col =
        columns_of_all.defined() && nb == g.N ? columns_of_all : columns(x, g, n0, nb, op);
    const Tensor part = sliced_product(grouped_output(go, g, n0, nb), col);
    grad = grad.defined() ? add(grad, part) : part;
  }
  return grad.view({g.O, g.Cg, g.KH, g.KW});
}

// Which of (input, weight, bias) take a gradient, fixed when the op records, as PyTorch's
// needs_input_grad: the first convolution of a network skips its input's GEMM and col2im.
struct GradsWanted {
  bool input, weight, bias;
};
GradsWanted grads_wanted(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return {input.requires_grad(), weight.requires_grad(), bias.defined() && bias.requires_grad()};
}

// The bias's gradient: the upstream gradient summed per channel, over each image's positions
// first (contiguous runs, the fast reduction) and then over the images.
Tensor channel_sums(const Tensor& g) {
  return g.dim() == 3 ? sum(g, {1, 2}) : sum(sum(g, {2, 3}), {0});
}

void check_bias(const Tensor& bias, int64_t channels, const char* op) {
  if (!bias.defined()) return;
  OX_CHECK(bias.dim() == 1 && bias.size(0) == channels, Shape, op, "expected a bias of shape [",
           channels, "], got ", bias.shape());
}

}  // namespace

Conv2dPadding::Conv2dPadding(const char* mode) : mode(parse_mode(mode)), value(0) {}
Conv2dPadding::Conv2dPadding(std::string_view mode) : mode(parse_mode(mode)), value(0) {}
Conv1dPadding::Conv1dPadding(const char* mode) : mode(parse_mode(mode)), value(0) {}
Conv1dPadding::Conv1dPadding(std::string_view mode) : mode(parse_mode(mode)), value(0) {}

namespace {

Tensor conv2d_checked(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dOptions& options, const char* op) {
  ops::impl_of(input, op);
  ops::impl_of(weight, op);
  ops::common_device(op, {&input, &weight, &bias});
  check_dtypes(op, {&input, &weight, &bias});
  const Tensor x = batched(input, op, "input");
  check_weight(weight.shape(), op);
  const Resolved r = resolve(options, weight.size(2), weight.size(3), op);
  const Geometry g = geometry(x.shape(), weight.shape(), r, op);
  check_bias(bias, g.O, op);
  if (autograd::needs_grad({&input, &weight, &bias})) {
    // conv2d is linear in each argument; its gradients are the two gradient ops (which have
    // rules of their own, so this differentiates again) and the bias's channel sums.
    const GradsWanted wanted = grads_wanted(input, weight, bias);
    // The weight gradient multiplies by the same columns as the forward: they are kept (the
    // memory of one im2col buffer until backward) rather than made twice.
    Tensor cols;
    Tensor out = autograd::without_grad([&] {
      const Tensor o4 = conv_forward(x, weight, bias, g, op, wanted.weight ? &cols : nullptr);
      return input.dim() == 3 ? o4.squeeze(0) : o4;
    });
    autograd::record(op, {input, weight, bias}, {out}, {input, weight},
                     [options, wanted, g, cols, op](const std::vector<Tensor>& grads,
                                                    const std::vector<Tensor>& s) {
                       const Tensor &go = grads[0], &in = s[0], &w = s[1];
                       Tensor weight_grad;
                       // With create_graph the gradient op records its own rule, so it runs as the
                       // op.
                       if (wanted.weight && cols.defined() && !is_grad_enabled())
                         weight_grad =
                             conv_weight_grad(in.dim() == 3 ? in.unsqueeze(0) : in,
                                              go.dim() == 3 ? go.unsqueeze(0) : go, g, op, cols);
                       else if (wanted.weight)
                         weight_grad = conv2d_weight_grad(in, w.shape(), go, options);
                       return std::vector<Tensor>{
                           wanted.input ? conv2d_input_grad(in.shape(), w, go, options) : Tensor(),
                           weight_grad, wanted.bias ? channel_sums(go) : Tensor()};
                     });
    return out;
  }
  const Tensor out = conv_forward(x, weight, bias, g, op);
  return input.dim() == 3 ? out.squeeze(0) : out;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, input})
    return conv2d(cast(input), cast(weight), cast(bias), options);
  return conv2d_checked(input, weight, bias, options, "conv2d");
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv1dOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, input})
    return conv1d(cast(input), cast(weight), cast(bias), options);
  const char* op = "conv1d";
  ops::impl_of(input, op);
  ops::impl_of(weight, op);
  OX_CHECK(input.dim() == 2 || input.dim() == 3, Shape, op,
           "expected a 2-d (unbatched) or 3-d (batched) input, got shape ", input.shape());
  OX_CHECK(weight.dim() == 3, Shape, op, "expected a 3-d weight [out, in / groups, k], got ",
           weight.shape());
  // The checks whose messages name shapes, in 1-d terms, before the 2-d form takes over.
  const int64_t C = input.size(-2), L = input.size(-1), K = weight.size(2);
  OX_CHECK(options.groups <= 0 || weight.size(1) * options.groups == C || C % options.groups != 0 ||
               weight.size(0) % options.groups != 0,
           Shape, op, "input of shape ", input.shape(), " has ", C,
           " channels, but weight of shape ", weight.shape(), " with groups=", options.groups,
           " expects ", weight.size(1) * options.groups);
  if (options.padding.mode == PaddingMode::Explicit && options.dilation > 0 && K > 0 &&
      options.padding.value >= 0)
    OX_CHECK(L + 2 * options.padding.value >= options.dilation * (K - 1) + 1, Shape, op,
             "kernel of ", options.dilation * (K - 1) + 1,
             " (dilated) is larger than the padded input of ", L + 2 * options.padding.value,
             " (input ", input.shape(), ", weight ", weight.shape(), ")");
  // A 1-d convolution is a 2-d one over a height of 1.
  Conv2dOptions o2{.stride = {1, options.stride},
                   .padding = {0, options.padding.value},
                   .dilation = {1, options.dilation},
                   .groups = options.groups};
  o2.padding.mode = options.padding.mode;
  return conv2d_checked(input.unsqueeze(-2), weight.unsqueeze(2), bias, o2, op).squeeze(-2);
}

Tensor conv2d_input_grad(const Shape& input_shape, const Tensor& weight, const Tensor& grad_output,
                         const Conv2dOptions& options) {
  const char* op = "conv2d_input_grad";
  ops::impl_of(weight, op);
  ops::impl_of(grad_output, op);
  ops::common_device(op, {&weight, &grad_output});
  check_dtypes(op, {&weight, &grad_output});
  const Shape in4 = batched(input_shape, op, "input shape");
  OX_CHECK(grad_output.dim() == int64_t(input_shape.size()), Shape, op, "grad_output of shape ",
           grad_output.shape(), " does not match an input of shape ", input_shape);
  check_weight(weight.shape(), op);
  const Resolved r = resolve(options, weight.size(2), weight.size(3), op);
  const Geometry g = geometry(in4, weight.shape(), r, op);
  const Tensor go = batched(grad_output, op, "grad_output");
  OX_CHECK(go.shape() == Shape({g.N, g.O, g.Ho, g.Wo}), Shape, op, "grad_output of shape ",
           grad_output.shape(), " does not match the output ", Shape({g.N, g.O, g.Ho, g.Wo}),
           " of input ", input_shape, " and weight ", weight.shape());
  if (autograd::needs_grad({&weight, &grad_output})) {
    // Bilinear in (weight, grad_output): <c, input_grad(w, go)> = <conv2d(c, w), go>.
    Tensor gi = autograd::without_grad([&] {
      const Tensor gi4 = conv_input_grad(go, weight, g, weight.dtype(), weight.device(), op);
      return input_shape.size() == 3 ? gi4.squeeze(0) : gi4;
    });
    autograd::record(op, {weight, grad_output}, {gi}, {weight, grad_output},
                     [options](const std::vector<Tensor>& grads, const std::vector<Tensor>& s) {
                       const Tensor &c = grads[0], &w = s[0], &go = s[1];
                       return std::vector<Tensor>{conv2d_weight_grad(c, w.shape(), go, options),
                                                  conv2d(c, w, Tensor(), options)};
                     });
    return gi;
  }
  const Tensor gi = conv_input_grad(go, weight, g, weight.dtype(), weight.device(), op);
  return input_shape.size() == 3 ? gi.squeeze(0) : gi;
}

Tensor conv2d_weight_grad(const Tensor& input, const Shape& weight_shape, const Tensor& grad_output,
                          const Conv2dOptions& options) {
  const char* op = "conv2d_weight_grad";
  ops::impl_of(input, op);
  ops::impl_of(grad_output, op);
  ops::common_device(op, {&input, &grad_output});
  check_dtypes(op, {&input, &grad_output});
  const Tensor x = batched(input, op, "input");
  OX_CHECK(grad_output.dim() == input.dim(), Shape, op, "grad_output of shape ",
           grad_output.shape(), " does not match an input of shape ", input.shape());
  check_weight(weight_shape, op);
  const Resolved r = resolve(options, weight_shape[2], weight_shape[3], op);
  const Geometry g = geometry(x.shape(), weight_shape, r, op);
  const Tensor go = batched(grad_output, op, "grad_output");
  OX_CHECK(go.shape() == Shape({g.N, g.O, g.Ho, g.Wo}), Shape, op, "grad_output of shape ",
           grad_output.shape(), " does not match the output ", Shape({g.N, g.O, g.Ho, g.Wo}),
           " of input ", input.shape(), " and weight ", weight_shape);
  if (autograd::needs_grad({&input, &grad_output})) {
    // Bilinear in (input, grad_output): <c, weight_grad(x, go)> = <conv2d(x, c), go>.
    Tensor gw = autograd::without_grad([&] { return conv_weight_grad(x, go, g, op); });
    autograd::record(op, {input, grad_output}, {gw}, {input, grad_output},
                     [options](const std::vector<Tensor>& grads, const std::vector<Tensor>& s) {
                       const Tensor &c = grads[0], &in = s[0], &go = s[1];
                       return std::vector<Tensor>{conv2d_input_grad(in.shape(), c, go, options),
                                                  conv2d(in, c, Tensor(), options)};
                     });
    return gw;
  }
  return conv_weight_grad(x, go, g, op);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, input})
    return conv_transpose2d(cast(input), cast(weight), cast(bias), options);
  const char* op = "conv_transpose2d";
  ops::impl_of(input, op);
  ops::impl_of(weight, op);
  ops::common_device(op, {&input, &weight, &bias});
  check_dtypes(op, {&input, &weight, &bias});
  const Tensor x = batched(input, op, "input");
  check_weight(weight.shape(), op);
  const IntPair s = options.stride, p = options.padding, d = options.dilation,
                op_ = options.output_padding;
  const int64_t G = options.groups;
  OX_CHECK(s.h > 0 && s.w > 0, Value, op, "stride must be positive, got ", IntPair(s.h, s.w));
  OX_CHECK(d.h > 0 && d.w > 0, Value, op, "dilation must be positive, got ", IntPair(d.h, d.w));
  OX_CHECK(p.h >= 0 && p.w >= 0, Value, op, "padding must not be negative, got ",
           IntPair(p.h, p.w));
  OX_CHECK(G > 0, Value, op, "groups must be positive, got ", G);
  OX_CHECK(op_.h >= 0 && op_.w >= 0 && (op_.h < s.h || op_.h < d.h) && (op_.w < s.w || op_.w < d.w),
           Value, op, "output_padding ", IntPair(op_.h, op_.w),
           " must be smaller than either stride ", IntPair(s.h, s.w), " or dilation ",
           IntPair(d.h, d.w));
  const int64_t N = x.size(0), C_in = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t KH = weight.size(2), KW = weight.size(3);
  OX_CHECK(KH > 0 && KW > 0, Shape, op, "weight of shape ", weight.shape(), " has an empty kernel");
  OX_CHECK(weight.size(0) == C_in, Shape, op, "input of shape ", input.shape(), " has ", C_in,
           " channels, but weight of shape ", weight.shape(), " expects ", weight.size(0));
  OX_CHECK(C_in % G == 0, Value, op, "groups=", G, " must divide the input channels ", C_in);
  const int64_t C_out = weight.size(1) * G;
  check_bias(bias, C_out, op);
  auto out_size = [&](int64_t in, int64_t st, int64_t pad, int64_t dil, int64_t k, int64_t extra) {
    const int64_t grown = checked_add(checked_mul(in - 1, st, op), checked_mul(dil, k - 1, op), op);
    return checked_add(checked_add(grown, extra + 1, op), -checked_mul(2, pad, op), op);
  };
  const int64_t Hout = out_size(H, s.h, p.h, d.h, KH, op_.h);
  const int64_t Wout = out_size(W, s.w, p.w, d.w, KW, op_.w);
  OX_CHECK(Hout > 0 && Wout > 0, Shape, op, "input of shape ", input.shape(), " and weight ",
           weight.shape(), " give an output of ", IntPair(Hout, Wout));
  // The input gradient of a conv2d whose input is this op's output and whose output is x.
  Geometry g{N,  C_out, Hout, Wout, C_in, weight.size(1),
             KH, KW,    G,    H,    W,    {KH, KW, s.h, s.w, p.h, p.w, d.h, d.w}};
  auto forward = [&] {
    Tensor out = conv_input_grad(x, weight, g, x.dtype(), x.device(), op);
    if (bias.defined()) out.add_(bias.reshape({1, C_out, 1, 1}));
    return input.dim() == 3 ? out.squeeze(0) : out;
  };
  if (!autograd::needs_grad({&input, &weight, &bias})) return forward();
  // The adjoint of conv2d with these options (output_padding only sizes the output): the input
  // gradient is a conv2d of the upstream gradient, the weight gradient conv2d's weight gradient
  // with the roles of input and output exchanged.
  Tensor out = autograd::without_grad(forward);
  const Conv2dOptions conv{.stride = s, .padding = {p.h, p.w}, .dilation = d, .groups = G};
  autograd::record(op, {input, weight, bias}, {out}, {input, weight},
                   [conv, wanted = grads_wanted(input, weight, bias)](
                       const std::vector<Tensor>& grads, const std::vector<Tensor>& sv) {
                     const Tensor &c = grads[0], &in = sv[0], &w = sv[1];
                     return std::vector<Tensor>{
                         wanted.input ? conv2d(c, w, Tensor(), conv) : Tensor(),
                         wanted.weight ? conv2d_weight_grad(c, w.shape(), in, conv) : Tensor(),
                         wanted.bias ? channel_sums(c) : Tensor()};
                   });
  return out;
}

}  // namespace ox
