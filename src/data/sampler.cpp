#include "oxmera/data/sampler.h"

#include "oxmera/data/dataset.h"
#include "oxmera/distributed.h"
#include "oxmera/ops.h"

namespace ox::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size),
      num_replicas_(options.num_replicas >= 0 ? options.num_replicas
                                              : distributed::get_world_size()),
      rank_(options.rank >= 0 ? options.rank : distributed::get_rank()),
      options_(options) {
  OX_CHECK(dataset_size >= 0, Value, "DistributedSampler", "dataset size must be >= 0, got ",
           dataset_size);
  OX_CHECK(num_replicas_ >= 1, Value, "DistributedSampler", "num_replicas must be >= 1, got ",
           num_replicas_);
  OX_CHECK(options.rank >= -1 && rank_ < num_replicas_, Value, "DistributedSampler",
           "invalid rank ", options.rank, ", rank should be in the interval [0, ",
           num_replicas_ - 1, "]");
  // PyTorch's counts: without drop_last every rank gets ceil(n / replicas), the padding
  // repeating the first indices; with it, the largest count all ranks can have.
  num_samples_ = options.drop_last && dataset_size % num_replicas_ != 0
                     ? (dataset_size - num_replicas_ + num_replicas_ - 1) / num_replicas_
                     : (dataset_size + num_replicas_ - 1) / num_replicas_;
  num_samples_ = std::max<int64_t>(num_samples_, 0);
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(size_t(dataset_size_), 0);
  if (options_.shuffle) {
    Generator gen(mix_seed(options_.seed, uint64_t(epoch)));
    order = randperm(dataset_size_, {.dtype = kI64}, &gen).to_vector<int64_t>();
  } else {
    for (int64_t i = 0; i < dataset_size_; ++i) order[size_t(i)] = i;
  }
  const size_t total = size_t(num_samples_ * num_replicas_);
  if (total <= order.size()) {
    order.resize(total);
  } else if (!order.empty()) {  // pad by repeating from the start, as often as needed
    const size_t n = order.size();
    for (size_t i = n; i < total; ++i) order.push_back(order[i - n]);
  }
  std::vector<int64_t> mine;
  mine.reserve(size_t(num_samples_));
  for (size_t i = size_t(rank_); i < order.size(); i += size_t(num_replicas_))
    mine.push_back(order[i]);
  return mine;
}

}  // namespace ox::data
