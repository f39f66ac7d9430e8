#pragma once
// Samplers: which dataset indices an epoch visits, in order. A DataLoader given one batches
// its indices instead of 0..n-1 (or a shuffle of them).
//
//   auto sampler = std::make_shared<ox::data::DistributedSampler>(dataset->size());
//   ox::data::DataLoader loader(dataset, {.batch_size = 32, .sampler = sampler});
//
// The epoch is the DataLoader's (its set_epoch, or one more per range-for), so the
// `sampler.set_epoch(e)` of a PyTorch loop becomes `loader.set_epoch(e)`.

#include <cstdint>
#include <memory>
#include <vector>

#include "oxmera/core/options.h"

namespace ox::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The indices epoch `epoch` visits, each in [0, dataset size).
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  // How many indices every epoch has.
  virtual int64_t size() const = 0;
};
using SamplerPtr = std::shared_ptr<const Sampler>;

struct DistributedSamplerOptions {
  int64_t num_replicas = -1;  // -1: the default process group's world size (1 without one)
  int64_t rank = -1;          // -1: this process's rank in it (0 without one)
  OX_NAMED_FIELDS_ONLY;
  bool shuffle = true;
  uint64_t seed = 0;  // every rank must pass the same seed
  // Drop the tail so that every rank gets the same count; otherwise the first indices are
  // repeated to pad the epoch to a multiple of num_replicas.
  bool drop_last = false;
};

// As torch.utils.data.DistributedSampler: one epoch's order (a permutation seeded by seed and
// the epoch, the same on every rank, or 0..n-1) padded or cut to a multiple of num_replicas,
// then every num_replicas-th index from `rank` on. The ranks' shards are disjoint but for the
// padding, and together cover the whole (or all but the dropped tail of the) dataset.
class DistributedSampler final : public Sampler {
 public:
  explicit DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }

 private:
  int64_t dataset_size_, num_replicas_, rank_, num_samples_;
  DistributedSamplerOptions options_;
};

}  // namespace ox::data
