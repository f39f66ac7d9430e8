// TransformerEncoderLayer: PyTorch's _sa_block and _ff_block, in pre-norm or post-norm order.

#include "oxmera/nn/transformer.h"

#include "oxmera/ops.h"

namespace ox::nn {

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(
    int64_t d_model_, int64_t nhead_, const TransformerEncoderLayerOptions& options_)
    : Module("TransformerEncoderLayer"), d_model(d_model_), nhead(nhead_), options(options_) {
  constexpr const char* kOp = "TransformerEncoderLayer";
  OX_CHECK(options.activation == "relu" || options.activation == "gelu", Value, kOp,
           "activation must be \"relu\" or \"gelu\", got \"", options.activation, "\"");
  OX_CHECK(options.dim_feedforward > 0, Value, kOp, "dim_feedforward must be positive, got ",
           options.dim_feedforward);
  const LinearOptions linear_options{.bias = options.bias};
  const LayerNormOptions norm_options{.eps = options.layer_norm_eps, .bias = options.bias};
  // Registration order is PyTorch's, so parameters() and state_dict() list the same order.
  self_attn = register_module(
      "self_attn",
      MultiheadAttention(d_model, nhead,
                         MultiheadAttentionOptions{.dropout = options.dropout,
                                                   .bias = options.bias,
                                                   .batch_first = options.batch_first}));
  linear1 = register_module("linear1", Linear(d_model, options.dim_feedforward, linear_options));
  dropout = register_module("dropout", Dropout(options.dropout));
  linear2 = register_module("linear2", Linear(options.dim_feedforward, d_model, linear_options));
  norm1 = register_module("norm1", LayerNorm(Shape{d_model}, norm_options));
  norm2 = register_module("norm2", LayerNorm(Shape{d_model}, norm_options));
  dropout1 = register_module("dropout1", Dropout(options.dropout));
  dropout2 = register_module("dropout2", Dropout(options.dropout));
}

Tensor TransformerEncoderLayerImpl::self_attention_block(const Tensor& x, const Tensor& mask,
                                                         const Tensor& padding,
                                                         bool is_causal) const {
  Tensor attended = std::get<0>(self_attn(x, x, x,
                                          MHAForwardOptions{.key_padding_mask = padding,
                                                            .need_weights = false,
                                                            .attn_mask = mask,
                                                            .is_causal = is_causal}));
  return dropout1(attended);
}

Tensor TransformerEncoderLayerImpl::feed_forward_block(const Tensor& x) const {
  Tensor hidden = linear1(x);
  hidden = options.activation == "gelu" ? ox::gelu(hidden) : ox::relu(hidden);
  return dropout2(linear2(dropout(hidden)));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask,
                                            bool is_causal) const {
  Tensor x = src;
  if (options.norm_first) {
    x = x + self_attention_block(norm1(x), src_mask, src_key_padding_mask, is_causal);
    return x + feed_forward_block(norm2(x));
  }
  x = norm1(x + self_attention_block(x, src_mask, src_key_padding_mask, is_causal));
  return norm2(x + feed_forward_block(x));
}

}  // namespace ox::nn
