// The functional forms that are composites of ops (linear, bilinear, group_norm, batch_norm,
// dropout2d, embedding); attention is in attention.cpp.

#include "oxmera/nn/functional.h"

#include "amp/autocast_policy.h"
#include "nn/batch_norm.h"
#include "oxmera/autograd.h"

namespace ox::nn::functional {

namespace {

// A view of a per-channel tensor [C] that broadcasts against [N, C, d1, ...] of `dims` dims.
Tensor per_channel(const Tensor& t, int64_t dims) {
  Shape shape(static_cast<size_t>(std::max<int64_t>(dims - 1, 1)), 1);
  shape[0] = t.size(0);
  return t.view(shape);
}

// The dtype a normalization computes its statistics and affine map in: f32 for the 16-bit
// floats (as PyTorch's batch_norm and group_norm kernels, whose accumulators are f32), so that
// x * scale + shift, where both terms can be far larger than their sum, is rounded once.
DType norm_compute_dtype(DType dt) { return dt == kF16 || dt == kBF16 ? kF32 : dt; }

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, input})
    return linear(cast(input), cast(weight), cast(bias));
  OX_CHECK(input.defined() && weight.defined(), Value, "linear",
           "input and weight must be defined");
  OX_CHECK(weight.dim() == 2 && input.dim() >= 1 && input.size(-1) == weight.size(1), Shape,
           "linear", "input ", input.shape(), " does not match weight ", weight.shape(),
           " (expected [..., ", weight.dim() == 2 ? weight.size(1) : -1, "])");
  OX_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), Shape, "linear",
           "bias ", bias.defined() ? bias.shape() : Shape{}, " does not match weight ",
           weight.shape());
  if (input.dim() == 2)
    return bias.defined() ? addmm(bias, input, weight.t()) : mm(input, weight.t());
  // Leading dims flatten into one GEMM (a view when the input allows it).
  Shape out_shape = input.shape();
  out_shape[out_shape.size() - 1] = weight.size(0);
  const Tensor rows = input.reshape({-1, input.size(-1)});
  const Tensor out = bias.defined() ? addmm(bias, rows, weight.t()) : mm(rows, weight.t());
  return out.view(out_shape);
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias) {
  OX_CHECK(weight.dim() == 3, Shape, "bilinear", "weight must be [out, in1, in2], got ",
           weight.shape());
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  OX_CHECK(input1.dim() >= 1 && input2.dim() >= 1 && input1.size(-1) == in1 &&
               input2.size(-1) == in2 &&
               Shape(input1.shape().begin(), input1.shape().end() - 1) ==
                   Shape(input2.shape().begin(), input2.shape().end() - 1),
           Shape, "bilinear", "inputs ", input1.shape(), " and ", input2.shape(),
           " do not match weight ", weight.shape());
  OX_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out), Shape, "bilinear", "bias ",
           bias.defined() ? bias.shape() : Shape{}, " does not match ", out, " outputs");
  const Tensor x1 = input1.reshape({-1, in1}), x2 = input2.reshape({-1, in2});
  // (x1 · W[o]) for every o in one GEMM, then the dot with x2 along in2.
  const Tensor left = mm(x1, weight.permute({1, 0, 2}).reshape({in1, out * in2}));
  Tensor result = (left.view({-1, out, in2}) * x2.unsqueeze(1)).sum(-1);
  if (bias.defined()) result = result + bias;
  Shape out_shape = input1.shape();
  out_shape[out_shape.size() - 1] = out;
  return result.view(out_shape);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return group_norm(cast(input), num_groups, cast(weight), cast(bias), eps);
  OX_CHECK(input.dim() >= 2, Shape, "group_norm", "input must be [N, C, ...], got ", input.shape());
  const int64_t channels = input.size(1);
  OX_CHECK(num_groups > 0 && channels % num_groups == 0, Value, "group_norm", channels,
           " channels cannot be split into ", num_groups, " groups");
  for (const Tensor* t : {&weight, &bias})
    OX_CHECK(!t->defined() || (t->dim() == 1 && t->size(0) == channels), Shape, "group_norm",
             "weight and bias must be [", channels, "], got ", t->shape());
  // Each group of channels (and its spatial extent) is one row of the fused layer norm. 16-bit
  // inputs normalize and scale in f32 and round once (the backward then also runs in f32).
  const DType acc = norm_compute_dtype(input.dtype());
  const Tensor x = input.to(acc);
  const int64_t per_group = input.numel() / std::max<int64_t>(input.size(0) * num_groups, 1);
  Tensor out = layer_norm(x.reshape({x.size(0), num_groups, per_group}), {per_group}, {}, {}, eps)
                   .view(x.shape());
  if (weight.defined()) out = out * per_channel(weight.to(acc), input.dim());
  if (bias.defined()) out = out + per_channel(bias.to(acc), input.dim());
  return out.to(input.dtype());
}

namespace {

double in_dtype(double momentum, DType) { return momentum; }
Tensor in_dtype(const Tensor& momentum, DType dtype) { return momentum.to(dtype); }

// Momentum is a double, or a 0-d tensor on the input's device (BatchNorm's cumulative average,
// whose factor depends on a count the host does not read).
template <class Momentum>
Tensor batch_norm_with(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training,
                       const Momentum& momentum, double eps) {
  // On autocast's f32 list: the statistics of a 16-bit activation are taken in f32.
  if (amp::OpCast cast{amp::CastPolicy::Float32, input})
    return batch_norm_with(cast(input), running_mean, running_var, cast(weight), cast(bias),
                           training, momentum, eps);
  OX_CHECK(input.dim() >= 2, Shape, "batch_norm", "input must be [N, C, ...], got ", input.shape());
  OX_CHECK(is_floating(input.dtype()), DType, "batch_norm", "input must be floating, got ",
           input.dtype());
  const int64_t channels = input.size(1);
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    OX_CHECK(!t->defined() || (t->dim() == 1 && t->size(0) == channels), Shape, "batch_norm",
             "per-channel tensors must be [", channels, "], got ", t->shape());
  OX_CHECK(training || (running_mean.defined() && running_var.defined()), Value, "batch_norm",
           "running_mean and running_var are needed outside training");
  Dims reduce_dims = {0};
  for (int64_t d = 2; d < input.dim(); ++d) reduce_dims.push_back(d);
  const int64_t count = input.numel() / std::max<int64_t>(channels, 1);

  // 16-bit inputs: the statistics, the running update and x * scale + shift in f32, each result
  // rounded once (the backward then also runs in f32).
  const DType acc = norm_compute_dtype(input.dtype());
  const Tensor x = input.to(acc);
  Tensor mean, var;
  if (training) {
    OX_CHECK(count > 1, Value, "batch_norm",
             "expected more than 1 value per channel when "
             "training, got input ",
             input.shape());
    mean = x.mean(reduce_dims);
    var = x.var(reduce_dims, /*correction=*/0);
    if (running_mean.defined()) {
      NoGradGuard no_grad;
      const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
      const auto m = in_dtype(momentum, acc);
      Tensor(running_mean).copy_(running_mean.to(acc) * (1 - m) + mean.detach() * m);
      Tensor(running_var).copy_(running_var.to(acc) * (1 - m) + var.detach() * (m * unbias));
    }
  } else {
    mean = running_mean.to(acc);
    var = running_var.to(acc);
  }
  const int64_t dims = input.dim();
  Tensor scale = rsqrt(var + eps);
  if (weight.defined()) scale = scale * weight.to(acc);
  Tensor shift = -mean * scale;
  if (bias.defined()) shift = shift + bias.to(acc);
  // One fused multiply-add pass over the input: x * scale + shift, per channel.
  return addcmul(per_channel(shift, dims), x, per_channel(scale, dims)).to(input.dtype());
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  return batch_norm_with(input, running_mean, running_var, weight, bias, training, momentum, eps);
}

Tensor dropout2d(const Tensor& input, double p, bool training, Generator* gen) {
  OX_CHECK(p >= 0 && p <= 1, Value, "dropout2d", "probability ", p, " is outside [0, 1]");
  OX_CHECK(input.dim() == 3 || input.dim() == 4, Shape, "dropout2d",
           "input must be [N, C, H, W] or [C, H, W], got ", input.shape());
  if (!training || p == 0) return input;
  Shape mask_shape = input.shape();
  for (size_t d = input.dim() == 4 ? 2 : 1; d < mask_shape.size(); ++d) mask_shape[d] = 1;
  if (p == 1) return input * zeros(mask_shape, {.dtype = input.dtype(), .device = input.device()});
  const Tensor keep =
      bernoulli(mask_shape, 1 - p, {.dtype = input.dtype(), .device = input.device()}, gen);
  return input * (keep * (1.0 / (1.0 - p)));
}

Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingOptions& options) {
  OX_CHECK(weight.defined() && weight.dim() == 2, Shape, "embedding",
           "weight must be [num_embeddings, dim], got ",
           weight.defined() ? weight.shape() : Shape{});
  std::optional<int64_t> padding = options.padding_idx;
  if (padding) {
    const int64_t rows = weight.size(0);
    OX_CHECK(*padding >= -rows && *padding < rows, Index, "embedding", "padding_idx ", *padding,
             " is out of range for ", rows, " embeddings");
    if (*padding < 0) *padding += rows;
  }
  if (options.max_norm) {
    // Rows looked up whose norm exceeds max_norm are scaled down in place, as PyTorch's
    // embedding_renorm_ (the weight changes outside autograd).
    NoGradGuard no_grad;
    const Tensor flat = indices.reshape({-1});
    const Tensor rows = index_select(weight, 0, flat);
    const Tensor norms = rows.norm(options.norm_type, {1}, /*keepdim=*/true);
    const Tensor scale = where(norms > *options.max_norm, *options.max_norm / (norms + 1e-7), 1.0);
    Tensor target = weight.detach();
    index_put_(target, {flat}, (rows * scale).to(weight.dtype()));
  }
  return ox::embedding(weight, indices, padding);
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  OX_CHECK(input.defined(), Value, "instance_norm", "input is undefined");
  OX_CHECK(input.dim() >= 3, Shape, "instance_norm", "input must be [N, C, *spatial], got ",
           input.shape());
  const int64_t n = input.size(0), c = input.size(1);
  OX_CHECK(!use_input_stats || input.numel() == 0 || input.numel() / (n * c) > 1, Value,
           "instance_norm", "expected more than 1 spatial element per instance, got input ",
           input.shape());
  OX_CHECK(running_mean.defined() == running_var.defined(), Value, "instance_norm",
           "give both running_mean and running_var, or neither");
  // Batch normalization of one sample with N C channels (PyTorch's own reduction): each
  // instance's statistics, per-channel parameters and statistics repeated per sample.
  Shape folded = input.shape();
  folded[0] = 1;
  folded[1] = n * c;
  const auto per_instance = [n](const Tensor& t) { return t.defined() ? t.repeat({n}) : t; };
  const Tensor mean = per_instance(running_mean), var = per_instance(running_var);
  const Tensor out = batch_norm(input.reshape(folded), mean, var, per_instance(weight),
                                per_instance(bias), use_input_stats, momentum, eps);
  if (use_input_stats && running_mean.defined() && n > 0) {
    NoGradGuard no_grad;
    Tensor(running_mean).copy_(mean.view({n, c}).mean({0}));  // handles share the storage
    Tensor(running_var).copy_(var.view({n, c}).mean({0}));
  }
  return out.reshape(input.shape());
}

}  // namespace ox::nn::functional

namespace ox::nn::detail {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, const Tensor& momentum,
                  double eps) {
  return functional::batch_norm_with(input, running_mean, running_var, weight, bias, training,
                                     momentum, eps);
}

}  // namespace ox::nn::detail
