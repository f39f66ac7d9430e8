#pragma once
// Embedding: a lookup table of num_embeddings rows of embedding_dim, initialised N(0, 1) with
// the padding_idx row zero.

#include "oxmera/nn/functional.h"
#include "oxmera/nn/module.h"

namespace ox::nn {

using EmbeddingOptions = functional::EmbeddingOptions;

class EmbeddingImpl : public Module {
 public:
  using Options = EmbeddingOptions;
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim,
                const EmbeddingOptions& options = {});
  // indices: i64 or i32 of any shape -> shape + [embedding_dim].
  Tensor forward(const Tensor& indices) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t num_embeddings, embedding_dim;
  EmbeddingOptions options;  // padding_idx normalized to [0, num_embeddings)
  Tensor weight;
};
OX_MODULE(Embedding);

}  // namespace ox::nn
