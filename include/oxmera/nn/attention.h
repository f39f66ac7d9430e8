#pragma once
// MultiheadAttention, as torch.nn.MultiheadAttention (key and value of the query's width). The
// attention itself is ox::nn::functional::scaled_dot_product_attention (oxmera/nn/functional.h).

#include <tuple>

#include "oxmera/nn/linear.h"
#include "oxmera/nn/module.h"

namespace ox::nn {

struct MultiheadAttentionOptions {
  OX_NAMED_FIELDS_ONLY;
  double dropout = 0.0;      // on the attention weights, in training mode
  bool bias = true;          // in_proj_bias and out_proj.bias
  bool batch_first = false;  // inputs (N, L, E) instead of (L, N, E)
};

struct MHAForwardOptions {
  OX_NAMED_FIELDS_ONLY;
  // [N, S] (or [S] unbatched): bool true = this key is padding, ignore it; or floating, added.
  Tensor key_padding_mask = {};
  bool need_weights = true;  // also return the attention weights
  // [L, S] or [N * num_heads, L, S]: bool true = NOT allowed to attend (the opposite of
  // scaled_dot_product_attention's convention, as PyTorch); or floating, added to the scores.
  Tensor attn_mask = {};
  bool average_attn_weights = true;  // weights [N, L, S] averaged over heads, else [N, H, L, S]
  // Query i attends to keys j <= i. With an attn_mask it is a hint that the mask is causal (the
  // mask is used as given, as PyTorch); without one the causal mask is built (PyTorch refuses
  // that case).
  bool is_causal = false;
};

// Parameters in_proj_weight [3E, E] (xavier uniform), in_proj_bias [3E] (zeros) and the child
// out_proj (a Linear E -> E, bias zeros); created in f32 on the CPU.
class MultiheadAttentionImpl : public Module {
 public:
  using Options = MultiheadAttentionOptions;
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads,
                         const MultiheadAttentionOptions& options = {});
  // query (L, N, E), key and value (S, N, E); (N, L, E) / (N, S, E) with batch_first; or
  // unbatched (L, E) / (S, E). Returns the output (the query's layout) and, when need_weights,
  // the weights [N, L, S] or [N, H, L, S] ([L, S] / [H, L, S] unbatched); undefined otherwise.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const MHAForwardOptions& options = {}) const;
  void reset_parameters();

  int64_t embed_dim, num_heads, head_dim;
  MultiheadAttentionOptions options;
  Tensor in_proj_weight, in_proj_bias;  // in_proj_bias undefined without bias
  Linear out_proj = nullptr;
};
// OX_MODULE's holder, plus a call that takes braced options: `mha(q, k, v, {.need_weights =
// false})` (a forwarding template cannot deduce a braced list).
class MultiheadAttention : public ModuleHolder<MultiheadAttentionImpl> {
 public:
  using ModuleHolder<MultiheadAttentionImpl>::ModuleHolder;
  using ModuleHolder<MultiheadAttentionImpl>::operator=;
  using ModuleHolder<MultiheadAttentionImpl>::operator();
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const MHAForwardOptions& options) const {
    return detail::call_forward(impl(), query, key, value, options);
  }
};

}  // namespace ox::nn
