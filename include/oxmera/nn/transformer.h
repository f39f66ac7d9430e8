#pragma once
// TransformerEncoderLayer, as torch.nn.TransformerEncoderLayer.

#include <string>

#include "oxmera/nn/attention.h"
#include "oxmera/nn/dropout.h"
#include "oxmera/nn/linear.h"
#include "oxmera/nn/normalization.h"

namespace ox::nn {

struct TransformerEncoderLayerOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;  // pre-norm (x + sa(norm1(x))) instead of post-norm
  bool bias = true;         // of the linear layers and the layer norms
};

// Children self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2 (PyTorch's
// names, so state dicts carry over).
class TransformerEncoderLayerImpl : public Module {
 public:
  using Options = TransformerEncoderLayerOptions;
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead,
                              const TransformerEncoderLayerOptions& options = {});
  // src (S, N, E), (N, S, E) with batch_first, or (S, E); src_mask and src_key_padding_mask as
  // MultiheadAttention's attn_mask and key_padding_mask (bool true = not attended).
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false) const;
  // The one-tensor form Sequential calls.
  Tensor forward(const Tensor& src) const { return forward(src, Tensor()); }

  int64_t d_model, nhead;
  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr;
  Dropout dropout = nullptr;
  Linear linear2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;
  Dropout dropout1 = nullptr, dropout2 = nullptr;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& padding,
                              bool is_causal) const;
  Tensor feed_forward_block(const Tensor& x) const;
};
OX_MODULE(TransformerEncoderLayer);

}  // namespace ox::nn
