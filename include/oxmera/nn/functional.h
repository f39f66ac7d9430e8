#pragma once
// ox::nn::functional: every layer and activation as a function of its inputs and parameters,
// as torch.nn.functional. Losses are in oxmera/nn/loss.h (included here). Functions that are
// the same as an op of ops.h (conv2d, max_pool2d, layer_norm, softmax, ...) are that op.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxmera/nn/loss.h"
#include "oxmera/ops.h"
#include "oxmera/tensor.h"

namespace ox::nn::functional {

// ---- Activations ----------------------------------------------------------------------------
using ox::elu;
using ox::gelu;
using ox::leaky_relu;
using ox::log_softmax;
using ox::logsigmoid;
using ox::mish;
using ox::relu;
using ox::sigmoid;
using ox::silu;
using ox::softmax;
using ox::softplus;
using ox::tanh;

// ---- Linear ---------------------------------------------------------------------------------
// input [..., in] @ weight[out, in]ᵀ + bias[out].
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// out[..., o] = Σ_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o].
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias = {});

// ---- Convolution, pooling, normalization (the ops of ops.h) ---------------------------------
using ox::adaptive_avg_pool2d;
using ox::avg_pool2d;
using ox::conv1d;
using ox::conv2d;
using ox::conv_transpose2d;
using ox::layer_norm;
using ox::max_pool2d;
using ox::rms_norm;

// Normalizes each of num_groups groups of channels of input [N, C, ...] over the group and the
// spatial dims; weight and bias [C].
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);

// Batch normalization of input [N, C, ...] per channel. In training the batch statistics
// normalize (biased variance) and, where given, running_mean/running_var are updated in place:
// running = (1 - momentum) * running + momentum * batch (unbiased variance). Outside training
// the running statistics normalize.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

// ---- Vision ---------------------------------------------------------------------------------
struct InterpolateOptions {
  OX_NAMED_FIELDS_ONLY;
  // The output's spatial size, or the scale of each spatial dim (one value: all of them); one
  // of the two. With scale_factor the output size is floor(input size * scale).
  std::vector<int64_t> size = {};
  std::vector<double> scale_factor = {};
  // "nearest", "nearest-exact", "linear" (3-D input), "bilinear" / "bicubic" (4-D),
  // "trilinear" (5-D).
  std::string mode = "nearest";
  // Interpolating modes only: map the corner pixels' centres onto each other (default false).
  std::optional<bool> align_corners = std::nullopt;
  // With scale_factor: true maps coordinates by the output size's ratio, as if size were given;
  // otherwise by 1 / scale_factor (PyTorch's default).
  std::optional<bool> recompute_scale_factor = std::nullopt;
  bool antialias = false;  // must be false: no antialiasing filter
};
// Resamples input [N, C, W], [N, C, H, W] or [N, C, D, H, W] as torch.nn.functional.interpolate,
// a spatial dim at a time; differentiable. Nearest modes take any dtype, the others floating
// ones (16-bit floats computed in f32).
Tensor interpolate(const Tensor& input, const InterpolateOptions& options = {});
// [*, C r², H, W] -> [*, C, H r, W r], and back.
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);

// Normalizes each channel of each sample of input [N, C, ...] over its spatial dims (with
// use_input_stats; otherwise by running_mean/var), then weight and bias [C] where given. Given
// running statistics are updated with the instances' statistics averaged over the batch.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {},
                     const Tensor& running_var = {}, const Tensor& weight = {},
                     const Tensor& bias = {}, bool use_input_stats = true, double momentum = 0.1,
                     double eps = 1e-5);

// ---- Dropout --------------------------------------------------------------------------------
using ox::dropout;
// Zeroes whole channels of input [N, C, ...] (or [C, ...]) with probability p, scaling the rest
// by 1 / (1 - p), when training.
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true,
                 Generator* gen = nullptr);

// ---- Embedding ------------------------------------------------------------------------------
struct EmbeddingOptions {
  OX_NAMED_FIELDS_ONLY;
  std::optional<int64_t> padding_idx = std::nullopt;  // that row gets no gradient
  std::optional<double> max_norm = std::nullopt;      // rows looked up are renormed in place first
  double norm_type = 2.0;
};
Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingOptions& options = {});

// ---- Attention ------------------------------------------------------------------------------
struct AttentionOptions {
  OX_NAMED_FIELDS_ONLY;
  Tensor attn_mask = {};  // bool (true: may attend) or floating (added to the scores)
  double dropout_p = 0.0;
  bool is_causal = false;                      // query i attends to keys j <= i; excludes attn_mask
  std::optional<double> scale = std::nullopt;  // default 1 / sqrt(E)
  Generator* generator = nullptr;              // for the dropout mask
};
// softmax(query @ keyᵀ * scale + mask) @ value for query [..., L, E], key [..., S, E],
// value [..., S, Ev] -> [..., L, Ev]; batch dims broadcast. A row with no key to attend to
// gives NaN, as PyTorch.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const AttentionOptions& options = {});

}  // namespace ox::nn::functional
