// scaled_dot_product_attention and MultiheadAttention, composed of public ops (matmul, where,
// softmax, dropout), so autograd and every backend come for free.

#include "oxmera/nn/attention.h"

#include <cmath>
#include <limits>

#include "amp/autocast_policy.h"
#include "oxmera/nn/functional.h"
#include "oxmera/nn/init.h"

namespace ox::nn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Attention {
  Tensor output, weights;  // weights after dropout, as PyTorch's MultiheadAttention returns
};

// mask: undefined, bool (true = may attend) or floating (added); checked by the callers.
Attention attend(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& mask,
                 bool is_causal, double scale, double dropout_p, Generator* gen) {
  const DType dt = query.dtype();
  if (dt == kF16 || dt == kBF16) {
    // 16-bit attention runs in f32 and rounds the output and weights once, as PyTorch's math
    // attention (which widens query, key and value) and its fused CPU kernels: the scaled
    // scores, the mask, softmax and the weighted sum are not rounded between them.
    const Tensor wide_mask = mask.defined() && mask.dtype() != kBool ? mask.to(kF32) : mask;
    const Attention wide = attend(query.to(kF32), key.to(kF32), value.to(kF32), wide_mask,
                                  is_causal, scale, dropout_p, gen);
    return {wide.output.to(dt), wide.weights.to(dt)};
  }
  const int64_t L = query.size(-2), S = key.size(-2), E = query.size(-1);
  // Scale whichever of the query and the scores is smaller.
  const bool scale_query = scale != 1.0 && E < S;
  Tensor scores = ox::matmul(scale_query ? ox::mul(query, scale) : query, key.transpose(-2, -1));
  if (scale != 1.0 && !scale_query) scores = ox::mul(scores, scale);
  if (is_causal) {
    const TensorOptions on_device{.device = query.device()};
    Tensor allowed = ox::le(ox::arange(S, on_device), ox::arange(L, on_device).unsqueeze(1));
    scores = ox::where(allowed, scores, kNegInf);
  } else if (mask.defined()) {
    scores = mask.dtype() == kBool ? ox::where(mask, scores, kNegInf)
                                   : ox::add(scores, mask.to(scores.dtype()));
  }
  Tensor weights = ox::softmax(scores, -1);
  if (dropout_p > 0) weights = ox::dropout(weights, dropout_p, /*train=*/true, gen);
  return {ox::matmul(weights, value), weights};
}

void check_mask_dtype(const char* op, const char* name, const Tensor& mask) {
  OX_CHECK(mask.dtype() == kBool || is_floating(mask.dtype()), DType, op, name,
           " must be bool or floating, got ", mask.dtype());
}

}  // namespace

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const AttentionOptions& options) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, query}) {
    AttentionOptions cast_options = options;
    cast_options.attn_mask = cast(options.attn_mask);
    return scaled_dot_product_attention(cast(query), cast(key), cast(value), cast_options);
  }
  constexpr const char* kOp = "scaled_dot_product_attention";
  OX_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, Shape, kOp,
           "query, key and value need at least 2 dims ([..., L, E]), got ", query.shape(), ", ",
           key.shape(), " and ", value.shape());
  OX_CHECK(is_floating(query.dtype()), DType, kOp, "needs floating inputs, got ", query.dtype());
  OX_CHECK(key.dtype() == query.dtype() && value.dtype() == query.dtype(), DType, kOp,
           "query, key and value must share a dtype, got ", query.dtype(), ", ", key.dtype(),
           " and ", value.dtype());
  OX_CHECK(query.size(-1) == key.size(-1), Shape, kOp, "query ", query.shape(), " and key ",
           key.shape(), " differ in their last dim");
  OX_CHECK(key.size(-2) == value.size(-2), Shape, kOp, "key ", key.shape(), " and value ",
           value.shape(), " differ in their number of keys (dim -2)");
  OX_CHECK(!(options.is_causal && options.attn_mask.defined()), Value, kOp,
           "is_causal and attn_mask exclude one another");
  OX_CHECK(options.dropout_p >= 0 && options.dropout_p <= 1, Value, kOp,
           "dropout_p must be in [0, 1], got ", options.dropout_p);
  if (options.attn_mask.defined()) check_mask_dtype(kOp, "attn_mask", options.attn_mask);
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  return attend(query, key, value, options.attn_mask, options.is_causal, scale, options.dropout_p,
                options.generator)
      .output;
}

}  // namespace functional

namespace {
constexpr const char* kMha = "MultiheadAttention";

// MHA's masks (bool true = not allowed, floating added) as one mask in SDPA's convention (bool
// true = may attend, floating added): bools stay bool; with any floating mask all are added,
// a bool true becoming -inf, as PyTorch's _canonical_mask.
Tensor merge_masks(const std::vector<Tensor>& masks, DType dtype, Device device) {
  if (masks.empty()) return {};
  bool all_bool = true;
  for (const Tensor& m : masks) all_bool = all_bool && m.dtype() == kBool;
  Tensor merged;
  for (const Tensor& m : masks) {
    if (all_bool) {
      merged = merged.defined() ? ox::logical_or(merged, m) : m;
      continue;
    }
    Tensor additive =
        m.dtype() == kBool
            ? ox::masked_fill(ox::zeros(m.shape(), {.dtype = dtype, .device = device}), m, kNegInf)
            : m.to(dtype);
    merged = merged.defined() ? ox::add(merged, additive) : additive;
  }
  return all_bool ? ox::logical_not(merged) : merged;
}
}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t embed_dim_, int64_t num_heads_,
                                               const MultiheadAttentionOptions& options_)
    : Module("MultiheadAttention"),
      embed_dim(embed_dim_),
      num_heads(num_heads_),
      head_dim(num_heads_ > 0 ? embed_dim_ / num_heads_ : 0),
      options(options_) {
  OX_CHECK(embed_dim > 0 && num_heads > 0, Value, kMha,
           "embed_dim and num_heads must be positive, got ", embed_dim, " and ", num_heads);
  OX_CHECK(embed_dim % num_heads == 0, Value, kMha, "embed_dim ", embed_dim,
           " is not divisible by num_heads ", num_heads);
  OX_CHECK(options.dropout >= 0 && options.dropout <= 1, Value, kMha,
           "dropout must be in [0, 1], got ", options.dropout);
  in_proj_weight = register_parameter("in_proj_weight", ox::empty({3 * embed_dim, embed_dim}));
  if (options.bias) in_proj_bias = register_parameter("in_proj_bias", ox::empty({3 * embed_dim}));
  out_proj = register_module("out_proj",
                             Linear(embed_dim, embed_dim, LinearOptions{.bias = options.bias}));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key,
                                                           const Tensor& value,
                                                           const MHAForwardOptions& fwd) const {
  OX_CHECK(query.dim() == 2 || query.dim() == 3, Shape, kMha,
           "query must be 3-d (batched) or 2-d (unbatched), got ", query.shape());
  OX_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), Shape, kMha, "query ",
           query.shape(), ", key ", key.shape(), " and value ", value.shape(),
           " must have one number of dims");
  check_input_dtype(kMha, query, in_proj_weight);
  check_input_dtype(kMha, key, in_proj_weight);
  check_input_dtype(kMha, value, in_proj_weight);
  OX_CHECK(query.size(-1) == embed_dim && key.size(-1) == embed_dim, Shape, kMha, "query ",
           query.shape(), " and key ", key.shape(), " must end in embed_dim ", embed_dim);
  OX_CHECK(key.shape() == value.shape(), Shape, kMha, "key ", key.shape(), " and value ",
           value.shape(), " must have one shape");
  const bool batched = query.dim() == 3;
  const bool batch_first = options.batch_first;
  const int64_t batch_dim = batch_first ? 0 : 1, seq_dim = batch_first ? 1 : 0;
  const int64_t N = batched ? query.size(batch_dim) : 1;
  const int64_t L = batched ? query.size(seq_dim) : query.size(0);
  const int64_t S = batched ? key.size(seq_dim) : key.size(0);
  OX_CHECK(!batched || key.size(batch_dim) == N, Shape, kMha, "query ", query.shape(), " and key ",
           key.shape(), " differ in batch size", batch_first ? " (batch_first)" : "");

  // Projections in the input's own layout: one matmul when query, key and value are one
  // tensor (self-attention), two when key and value are.
  const int64_t E = embed_dim;
  auto weight_rows = [&](int64_t first, int64_t count) {
    return in_proj_weight.narrow(0, first * E, count * E);
  };
  auto bias_rows = [&](int64_t first, int64_t count) {
    return in_proj_bias.defined() ? in_proj_bias.narrow(0, first * E, count * E) : Tensor();
  };
  using functional::linear;
  Tensor q, k, v;
  if (query.impl() == key.impl() && key.impl() == value.impl()) {
    auto qkv = ox::chunk(linear(query, in_proj_weight, in_proj_bias), 3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = linear(query, weight_rows(0, 1), bias_rows(0, 1));
    if (key.impl() == value.impl()) {
      auto kv = ox::chunk(linear(key, weight_rows(1, 2), bias_rows(1, 2)), 2, -1);
      k = kv[0], v = kv[1];
    } else {
      k = linear(key, weight_rows(1, 1), bias_rows(1, 1));
      v = linear(value, weight_rows(2, 1), bias_rows(2, 1));
    }
  }
  // [N, H, len, head_dim] views of the projections.
  auto split_heads = [&](const Tensor& x) {
    Tensor heads = x.unflatten(x.dim() - 1, {num_heads, head_dim});
    if (!batched) return heads.permute({1, 0, 2}).unsqueeze(0);
    return batch_first ? heads.permute({0, 2, 1, 3}) : heads.permute({1, 2, 0, 3});
  };

  // Masks, made to broadcast against the scores [N, H, L, S].
  std::vector<Tensor> masks;  // MHA's convention: bool true = not allowed, floating added
  if (fwd.attn_mask.defined()) {
    const Tensor& m = fwd.attn_mask;
    check_mask_dtype(kMha, "attn_mask", m);
    if (m.dim() == 2) {
      OX_CHECK(m.size(0) == L && m.size(1) == S, Shape, kMha, "a 2-d attn_mask must be [", L, ", ",
               S, "], got ", m.shape());
      masks.push_back(m);
    } else {
      OX_CHECK(m.dim() == 3 && m.size(0) == N * num_heads && m.size(1) == L && m.size(2) == S,
               Shape, kMha, "attn_mask must be [", L, ", ", S, "] or [", N * num_heads, ", ", L,
               ", ", S, "], got ", m.shape());
      masks.push_back(m.reshape({N, num_heads, L, S}));
    }
  }
  if (fwd.key_padding_mask.defined()) {
    const Tensor& m = fwd.key_padding_mask;
    check_mask_dtype(kMha, "key_padding_mask", m);
    if (batched)
      OX_CHECK(m.dim() == 2 && m.size(0) == N && m.size(1) == S, Shape, kMha,
               "key_padding_mask must be [", N, ", ", S, "], got ", m.shape());
    else
      OX_CHECK(m.dim() == 1 && m.size(0) == S, Shape, kMha, "key_padding_mask must be [", S,
               "] for an unbatched query, got ", m.shape());
    masks.push_back(m.reshape({N, 1, 1, S}));
  }
  // is_causal with an attn_mask is PyTorch's hint that the mask is causal: the mask is used.
  bool causal = fwd.is_causal && !fwd.attn_mask.defined();
  if (causal && !masks.empty()) {
    const TensorOptions on_device{.device = query.device()};
    masks.push_back(ox::gt(ox::arange(S, on_device), ox::arange(L, on_device).unsqueeze(1)));
    causal = false;
  }
  const Tensor mask = merge_masks(masks, query.dtype(), query.device());

  const double dropout_p = is_training() ? options.dropout : 0.0;
  Attention att = attend(split_heads(q), split_heads(k), split_heads(v), mask, causal,
                         1.0 / std::sqrt(static_cast<double>(head_dim)), dropout_p, nullptr);
  // [N, H, L, hd] back to the query's layout, heads joined: the one copy before out_proj.
  Tensor joined;
  if (!batched)
    joined = att.output.squeeze(0).permute({1, 0, 2}).reshape({L, E});
  else if (batch_first)
    joined = att.output.permute({0, 2, 1, 3}).reshape({N, L, E});
  else
    joined = att.output.permute({2, 0, 1, 3}).reshape({L, N, E});
  Tensor output = out_proj(joined);

  Tensor weights;
  if (fwd.need_weights) {
    weights = fwd.average_attn_weights ? ox::mean(att.weights, 1) : att.weights;
    if (!batched) weights = weights.squeeze(0);
  }
  return {output, weights};
}

}  // namespace ox::nn
