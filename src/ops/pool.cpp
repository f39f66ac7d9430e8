// 2-d pooling ops: PyTorch's shape rules and checks, then the backend's pool2d primitives.

#include <cstdint>
#include <ostream>

#include "autograd/record.h"
#include "ops/op_util.h"

namespace ox {

namespace {

// A 4-d view of an input of rank 3 ([C, H, W], unbatched) or 4; the Shape error names the op.
Tensor as_batched(const Tensor& x, const char* op) {
  ops::impl_of(x, op);
  OX_CHECK(x.dim() == 3 || x.dim() == 4, Shape, op,
           "expected a 3-d (unbatched) or 4-d (batched) input, got shape ", x.shape());
  OX_CHECK(is_floating(x.dtype()), DType, op, "needs a floating input, got ", x.dtype());
  return x.dim() == 3 ? x.unsqueeze(0) : x;
}

Shape batched_shape(const Shape& s, const char* op) {
  OX_CHECK(s.size() == 3 || s.size() == 4, Shape, op,
           "expected a 3-d (unbatched) or 4-d (batched) input shape, got ", s);
  if (s.size() == 4) return s;
  return Shape{1, s[0], s[1], s[2]};
}

void check_planes(const Shape& s4, const char* op) {
  OX_CHECK(s4[0] >= 0 && s4[1] > 0 && s4[2] > 0 && s4[3] > 0, Shape, op,
           "expected non-empty channel and spatial dims (only the batch may be 0), got ", s4);
}

// PyTorch's pooling_output_shape: ceil_mode rounds up, but the last window must start inside
// the input or its leading padding.
// In 128 bits: kernel, stride and dilation may be any positive int64.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil,
                    const char* op) {
  __extension__ typedef __int128 i128;
  const i128 num = i128(in) + 2 * i128(pad) - i128(dil) * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  i128 out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= i128(in) + pad) --out;
  OX_CHECK(out <= INT64_MAX, Shape, op, "output size overflows 64 bits");
  return int64_t(out);
}

struct Pooling {
  PoolParams params;
  int64_t out_h, out_w;
};

Pooling pooling(const Shape& s4, IntPair kernel, const OptionalIntPair& stride_opt, IntPair pad,
                IntPair dil, bool ceil_mode, const char* op) {
  const IntPair stride = stride_opt.value.value_or(kernel);
  OX_CHECK(kernel.h > 0 && kernel.w > 0, Value, op, "kernel size must be positive, got ", kernel);
  OX_CHECK(stride.h > 0 && stride.w > 0, Value, op, "stride must be positive, got ", stride);
  OX_CHECK(dil.h > 0 && dil.w > 0, Value, op, "dilation must be positive, got ", dil);
  OX_CHECK(pad.h >= 0 && pad.w >= 0 && pad.h <= kernel.h / 2 && pad.w <= kernel.w / 2, Value, op,
           "padding must be between 0 and half the kernel size, got padding ", pad, " for kernel ",
           kernel);
  check_planes(s4, op);
  Pooling p;
  p.params.window = {kernel.h, kernel.w, stride.h, stride.w, pad.h, pad.w, dil.h, dil.w};
  p.out_h = pooled_size(s4[2], kernel.h, pad.h, stride.h, dil.h, ceil_mode, op);
  p.out_w = pooled_size(s4[3], kernel.w, pad.w, stride.w, dil.w, ceil_mode, op);
  OX_CHECK(p.out_h >= 1 && p.out_w >= 1, Shape, op, "input ", s4, " is too small for kernel ",
           kernel, " with padding ", pad, " and dilation ", dil, ": output size ", p.out_h, "x",
           p.out_w);
  return p;
}

// Undoes as_batched on a result.
Tensor unbatch_like(const Tensor& out, int64_t input_dim) {
  return input_dim == 3 ? out.squeeze(0) : out;
}

// grad_output must be what the forward op returns for the input shape: same rank, N and C,
// and the pooled spatial size.
Tensor checked_grad(const Tensor& grad_output, const Shape& input_shape, int64_t out_h,
                    int64_t out_w, const char* op) {
  ops::impl_of(grad_output, op);
  OX_CHECK(grad_output.dim() == int64_t(input_shape.size()), Shape, op, "grad_output of shape ",
           grad_output.shape(), " does not match an input of shape ", input_shape);
  const Tensor g = as_batched(grad_output, op);
  const Shape s4 = batched_shape(input_shape, op);
  const Shape want{s4[0], s4[1], out_h, out_w};
  OX_CHECK(g.shape() == want, Shape, op, "grad_output of shape ", grad_output.shape(),
           " does not match the output shape ", want, " of an input of shape ", input_shape);
  return g;
}

Tensor pool_backward(PoolOp kind, const Tensor& g4, const Tensor& indices4,
                     const Shape& input_shape, const PoolParams& params, const char* op) {
  const Shape s4 = batched_shape(input_shape, op);
  Tensor grad_input = make_empty(s4, g4.dtype(), g4.device(), op);
  const StridedArray none{nullptr, {}, {}, kI64, g4.device()};
  const CheckSite site = check_site(op,
                                    "index {value} at flat position {position} of the indices "
                                    "is outside the input plane of {bound} elements");
  backend_for(g4.device(), op)
      .pool2d_backward(kind, grad_input.impl()->array(), g4.impl()->array(),
                       indices4.defined() ? indices4.impl()->array() : none, params, site);
  return input_shape.size() == 3 ? grad_input.squeeze(0) : grad_input;
}

}  // namespace

namespace {

std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& input, IntPair kernel_size,
                                           const MaxPool2dOptions& options);

}  // namespace

// Gradients flow to each window's recorded maximum (the first one among ties), as PyTorch.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntPair kernel_size,
                                                   const MaxPool2dOptions& options) {
  if (!autograd::needs_grad({&input})) return max_pool2d_impl(input, kernel_size, options);
  auto [out, indices] =
      autograd::without_grad([&] { return max_pool2d_impl(input, kernel_size, options); });
  autograd::record(
      "max_pool2d", {input}, {out}, {indices},
      [shape = input.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
        return std::vector<Tensor>{max_pool2d_backward(g[0], s[0], shape)};
      });
  return {out, indices};
}

namespace {

std::tuple<Tensor, Tensor> max_pool2d_impl(const Tensor& input, IntPair kernel_size,
                                           const MaxPool2dOptions& options) {
  const char* op = "max_pool2d";
  const Tensor x = as_batched(input, op);
  const Pooling p = pooling(x.shape(), kernel_size, options.stride, options.padding,
                            options.dilation, options.ceil_mode, op);
  const Shape out_shape{x.size(0), x.size(1), p.out_h, p.out_w};
  Tensor out = make_empty(out_shape, x.dtype(), x.device(), op);
  Tensor indices = make_empty(out_shape, kI64, x.device(), op);
  backend_for(x.device(), op)
      .pool2d(PoolOp::Max, out.impl()->array(), indices.impl()->array(), x.impl()->array(),
              p.params);
  return {unbatch_like(out, input.dim()), unbatch_like(indices, input.dim())};
}

}  // namespace

Tensor max_pool2d(const Tensor& input, IntPair kernel_size, const MaxPool2dOptions& options) {
  return std::get<0>(max_pool2d_with_indices(input, kernel_size, options));
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& indices,
                           const Shape& input_shape) {
  const char* op = "max_pool2d_backward";
  ops::impl_of(grad_output, op);
  ops::impl_of(indices, op);
  ops::common_device(op, {&grad_output, &indices});
  OX_CHECK(indices.dtype() == kI64, DType, op, "indices must be i64, got ", indices.dtype());
  OX_CHECK(indices.shape() == grad_output.shape(), Shape, op, "indices of shape ", indices.shape(),
           " do not match grad_output of shape ", grad_output.shape());
  const Shape s4 = batched_shape(input_shape, op);
  check_planes(s4, op);
  const int64_t out_h = grad_output.dim() >= 2 ? grad_output.size(-2) : 0;
  const int64_t out_w = grad_output.dim() >= 2 ? grad_output.size(-1) : 0;
  const Tensor g = checked_grad(grad_output, input_shape, out_h, out_w, op);
  const Tensor i4 = indices.dim() == 3 ? indices.unsqueeze(0) : indices;
  if (!autograd::needs_grad({&grad_output}))
    return pool_backward(PoolOp::Max, g, i4, input_shape, {}, op);
  // Linear in grad_output: the adjoint of the scatter is a gather through the same indices.
  Tensor out = autograd::without_grad(
      [&] { return pool_backward(PoolOp::Max, g, i4, input_shape, {}, op); });
  autograd::record(op, {grad_output, indices}, {out}, {indices},
                   [](const std::vector<Tensor>& c, const std::vector<Tensor>& s) {
                     const Tensor& idx = s[0];
                     const Tensor picked =
                         gather(c[0].flatten(-2), -1, idx.flatten(-2)).view(idx.shape());
                     return std::vector<Tensor>{picked, Tensor()};
                   });
  return out;
}

Tensor avg_pool2d(const Tensor& input, IntPair kernel_size, const AvgPool2dOptions& options) {
  const char* op = "avg_pool2d";
  const Tensor x = as_batched(input, op);
  Pooling p =
      pooling(x.shape(), kernel_size, options.stride, options.padding, 1, options.ceil_mode, op);
  OX_CHECK(!options.divisor_override || *options.divisor_override != 0, Value, op,
           "divisor_override must be nonzero");
  p.params.count_include_pad = options.count_include_pad;
  p.params.divisor = options.divisor_override.value_or(0);
  auto forward = [&] {
    Tensor out = make_empty({x.size(0), x.size(1), p.out_h, p.out_w}, x.dtype(), x.device(), op);
    const StridedArray none{nullptr, {}, {}, kI64, x.device()};
    backend_for(x.device(), op)
        .pool2d(PoolOp::Avg, out.impl()->array(), none, x.impl()->array(), p.params);
    return unbatch_like(out, input.dim());
  };
  if (!autograd::needs_grad({&input})) return forward();
  Tensor out = autograd::without_grad(forward);
  autograd::record(
      op, {input}, {out}, {},
      [shape = input.shape(), kernel_size, options](const std::vector<Tensor>& g,
                                                    const std::vector<Tensor>&) {
        return std::vector<Tensor>{avg_pool2d_backward(g[0], shape, kernel_size, options)};
      });
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Shape& input_shape, IntPair kernel_size,
                           const AvgPool2dOptions& options) {
  const char* op = "avg_pool2d_backward";
  Pooling p = pooling(batched_shape(input_shape, op), kernel_size, options.stride, options.padding,
                      1, options.ceil_mode, op);
  OX_CHECK(!options.divisor_override || *options.divisor_override != 0, Value, op,
           "divisor_override must be nonzero");
  p.params.count_include_pad = options.count_include_pad;
  p.params.divisor = options.divisor_override.value_or(0);
  const Tensor g = checked_grad(grad_output, input_shape, p.out_h, p.out_w, op);
  if (!autograd::needs_grad({&grad_output}))
    return pool_backward(PoolOp::Avg, g, Tensor(), input_shape, p.params, op);
  // Linear in grad_output, the transpose of avg_pool2d: its adjoint is avg_pool2d itself.
  Tensor out = autograd::without_grad(
      [&] { return pool_backward(PoolOp::Avg, g, Tensor(), input_shape, p.params, op); });
  autograd::record(
      op, {grad_output}, {out}, {},
      [kernel_size, options](const std::vector<Tensor>& c, const std::vector<Tensor>&) {
        return std::vector<Tensor>{avg_pool2d(c[0], kernel_size, options)};
      });
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntPair output_size) {
  const char* op = "adaptive_avg_pool2d";
  const Tensor x = as_batched(input, op);
  OX_CHECK(output_size.h >= 0 && output_size.w >= 0, Value, op,
           "output size must not be negative, got ", output_size);
  check_planes(x.shape(), op);
  auto forward = [&] {
    Tensor out =
        make_empty({x.size(0), x.size(1), output_size.h, output_size.w}, x.dtype(), x.device(), op);
    const StridedArray none{nullptr, {}, {}, kI64, x.device()};
    backend_for(x.device(), op)
        .pool2d(PoolOp::AdaptiveAvg, out.impl()->array(), none, x.impl()->array(), {});
    return unbatch_like(out, input.dim());
  };
  if (!autograd::needs_grad({&input})) return forward();
  Tensor out = autograd::without_grad(forward);
  autograd::record(
      op, {input}, {out}, {},
      [shape = input.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
        return std::vector<Tensor>{adaptive_avg_pool2d_backward(g[0], shape)};
      });
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Shape& input_shape) {
  const char* op = "adaptive_avg_pool2d_backward";
  const Shape s4 = batched_shape(input_shape, op);
  check_planes(s4, op);
  ops::impl_of(grad_output, op);
  const int64_t out_h = grad_output.dim() >= 2 ? grad_output.size(-2) : 0;
  const int64_t out_w = grad_output.dim() >= 2 ? grad_output.size(-1) : 0;
  const Tensor g = checked_grad(grad_output, input_shape, out_h, out_w, op);
  if (!autograd::needs_grad({&grad_output}))
    return pool_backward(PoolOp::AdaptiveAvg, g, Tensor(), input_shape, {}, op);
  // Linear in grad_output; its adjoint is adaptive_avg_pool2d to grad_output's size.
  Tensor out = autograd::without_grad(
      [&] { return pool_backward(PoolOp::AdaptiveAvg, g, Tensor(), input_shape, {}, op); });
  autograd::record(
      op, {grad_output}, {out}, {},
      [size = IntPair(out_h, out_w)](const std::vector<Tensor>& c, const std::vector<Tensor>&) {
        return std::vector<Tensor>{adaptive_avg_pool2d(c[0], size)};
      });
  return out;
}

}  // namespace ox
