#pragma once
// DataLoader, as torch.utils.data.DataLoader: batches of a dataset, collated by stacking,
// optionally shuffled per epoch and prepared ahead by worker threads.
//
//   ox::data::DataLoader loader(dataset, {.batch_size = 64, .shuffle = true, .num_workers = 2});
//   for (auto& batch : loader) { ... batch.data ... batch.target ... }
//
// Each range-for is one epoch. The shuffle order comes from ox::randperm with a generator
// seeded from (seed, epoch), so every epoch is reproducible and differs from the others.
// Workers change only the speed: the batches and their order are those of num_workers = 0.
// Leaving a loop early stops and joins the workers; an exception thrown while preparing a
// batch is rethrown when the consumer reaches that batch.

#include <cstdint>
#include <memory>
#include <vector>

#include "oxmera/data/dataset.h"
#include "oxmera/data/sampler.h"

namespace ox::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  OX_NAMED_FIELDS_ONLY;
  bool shuffle = false;
  bool drop_last = false;   // drop a last batch smaller than batch_size
  int64_t num_workers = 0;  // 0: batches are made in the consumer's thread
  uint64_t seed = 0;
  int64_t prefetch = 2;  // batches in flight per worker
  // Batches in page-locked memory (Tensor::pin_memory), for asynchronous copies to a CUDA device
  // (to(device, {.non_blocking = true})); ignored where CUDA is unavailable, as PyTorch does.
  bool pin_memory = false;
  // Which indices an epoch batches, in order (sampler.h); not with shuffle, as in PyTorch.
  SamplerPtr sampler{};
};

// Stacks the examples' data and targets along a new first dim (0-d targets give [B]).
Example collate(const std::vector<Example>& examples);

class DataLoader {
  struct Epoch;

 public:
  class Sentinel {};
  class Iterator {
   public:
    Example& operator*() const;
    Example* operator->() const { return &**this; }
    Iterator& operator++();
    bool operator==(Sentinel) const;

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<Epoch> epoch);
    std::shared_ptr<Epoch> epoch_;
  };

  DataLoader(DatasetPtr dataset, DataLoaderOptions options = {});

  // Starts the next epoch (set_epoch's, then one more after each begin()).
  Iterator begin();
  Sentinel end() const { return {}; }
  int64_t size() const;  // batches per epoch
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }  // the epoch the next begin() reads
  // The dataset indices of each batch of `epoch`, in order.
  std::vector<std::vector<int64_t>> batch_indices(int64_t epoch) const;
  const DataLoaderOptions& options() const { return options_; }
  const DatasetPtr& dataset() const { return dataset_; }

 private:
  DatasetPtr dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace ox::data
