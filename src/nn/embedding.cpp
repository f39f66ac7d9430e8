#include "oxmera/nn/embedding.h"

#include <ostream>

#include "oxmera/autograd.h"
#include "oxmera/nn/init.h"

namespace ox::nn {

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim, const EmbeddingOptions& options)
    : Module("Embedding"), num_embeddings(num), embedding_dim(dim), options(options) {
  OX_CHECK(num >= 0 && dim >= 0, Value, "Embedding", "sizes must be >= 0, got ", num, " and ", dim);
  if (auto& padding = this->options.padding_idx) {
    OX_CHECK(*padding >= -num && *padding < num, Index, "Embedding", "padding_idx ", *padding,
             " is out of range for ", num, " embeddings");
    if (*padding < 0) *padding += num;
  }
  weight = register_parameter("weight", empty({num, dim}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx).zero_();
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) const {
  return functional::embedding(indices, weight, options);
}

void EmbeddingImpl::pretty_print(std::ostream& os) const {
  os << "Embedding(" << num_embeddings << ", " << embedding_dim;
  if (options.padding_idx) os << ", padding_idx=" << *options.padding_idx;
  if (options.max_norm) os << ", max_norm=" << *options.max_norm;
  os << ")";
}

}  // namespace ox::nn
