#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md, "Data"): LibTorch's samplers,
// torch::data::samplers::{Sampler, SequentialSampler, RandomSampler}. A sampler hands the loader
// the dataset indices of each batch; reset() starts an epoch. DistributedSampler, StreamSampler
// and save/load through archives are not provided.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "oxmera/compat/torch/data_datasets.h"

namespace torch::data::samplers {

template <class BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  // Starts over, with a new dataset size when given.
  virtual void reset(optional<size_t> new_size) = 0;
  // The next batch of at most batch_size indices; nullopt once the epoch is exhausted.
  virtual optional<BatchRequest> next(size_t batch_size) = 0;
};

// 0, 1, ..., size - 1 in order.
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(optional<size_t> new_size = nullopt) override {
    if (new_size) size_ = *new_size;
    index_ = 0;
  }
  optional<std::vector<size_t>> next(size_t batch_size) override {
    const size_t left = size_ - index_;
    if (left == 0) return nullopt;
    std::vector<size_t> batch(std::min(batch_size, left));
    std::iota(batch.begin(), batch.end(), index_);
    index_ += batch.size();
    return batch;
  }
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

// A permutation of 0 .. size - 1 from torch::randperm on the default generator, drawn anew by
// each reset (the loader resets at each epoch), so torch::manual_seed fixes every epoch's order.
class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size, Dtype index_dtype = kInt64) : index_dtype_(index_dtype) {
    OX_CHECK(size >= 0, Value, "RandomSampler", "size must be >= 0, got ", size);
    draw(size);
  }
  void reset(optional<size_t> new_size = nullopt) override {
    draw(new_size ? int64_t(*new_size) : int64_t(order_.size()));
  }
  optional<std::vector<size_t>> next(size_t batch_size) override {
    const size_t left = order_.size() - index_;
    if (left == 0) return nullopt;
    std::vector<size_t> batch(std::min(batch_size, left));
    for (size_t i = 0; i < batch.size(); ++i) batch[i] = size_t(order_[index_ + i]);
    index_ += batch.size();
    return batch;
  }
  size_t index() const noexcept { return index_; }

 private:
  void draw(int64_t size) {
    order_ = torch::randperm(size, index_dtype_).to_vector<int64_t>();
    index_ = 0;
  }
  Dtype index_dtype_;
  std::vector<int64_t> order_;
  size_t index_ = 0;
};

}  // namespace torch::data::samplers
