#pragma once
// Datasets as in torch.utils.data: an indexable collection of examples (a data tensor and a
// target tensor), shared through std::shared_ptr so loaders, subsets and splits can hold one.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "oxmera/tensor.h"

namespace ox::data {

struct Example {
  Tensor data, target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The example at `index` in [0, size()); ErrorKind::Index otherwise. Must be safe to call
  // from several threads at once (DataLoader workers do).
  virtual Example get(int64_t index) const = 0;
  // The examples at `indices`, collated (as PyTorch's __getitems__): by default get() of each,
  // stacked; datasets that hold their examples in tensors gather a batch in one pass instead.
  // Same results, the same errors, the same thread-safety as get().
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
  // The epoch the next examples belong to; datasets with random transforms draw from it (so
  // each epoch augments differently). Wrappers pass it on. DataLoader calls it before each
  // epoch, never while one is being read.
  virtual void set_epoch(int64_t epoch) { (void)epoch; }
};

using DatasetPtr = std::shared_ptr<Dataset>;

// Row i of `data` and of `targets` (a view of each); their first dims must match (Shape).
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets);
  int64_t size() const override;
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;  // two index_selects
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

// An example transform draws any randomness from the generator it is given.
using Transform = std::function<Example(Example, Generator&)>;

// `transform` applied to each example of `dataset`. The generator for example i is seeded
// from (seed, epoch, i) alone, so results do not depend on worker threads or reading order.
class MapDataset : public Dataset {
 public:
  MapDataset(DatasetPtr dataset, Transform transform, uint64_t seed = 0);
  int64_t size() const override;
  Example get(int64_t index) const override;
  void set_epoch(int64_t epoch) override;

 private:
  DatasetPtr dataset_;
  Transform transform_;
  uint64_t seed_;
  std::atomic<int64_t> epoch_{0};
};

// The examples of `dataset` at `indices` (each checked against its size: Index).
class Subset : public Dataset {
 public:
  Subset(DatasetPtr dataset, std::vector<int64_t> indices);
  int64_t size() const override;
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;  // the dataset's, mapped
  void set_epoch(int64_t epoch) override;
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  DatasetPtr dataset_;
  std::vector<int64_t> indices_;
};

// Disjoint random subsets of the given lengths, which must be >= 0 and sum to the dataset's
// size (Value); the order comes from ox::randperm with `gen`.
std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset,
                                                  const std::vector<int64_t>& lengths,
                                                  Generator& gen);

// The datasets one after another.
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr> datasets);
  int64_t size() const override;
  Example get(int64_t index) const override;
  void set_epoch(int64_t epoch) override;

 private:
  std::vector<DatasetPtr> datasets_;
  std::vector<int64_t> ends_;  // cumulative sizes
};

// Mixes (seed, epoch, index) into one 64-bit seed (splitmix64 steps), for per-example
// generators.
uint64_t mix_seed(uint64_t seed, uint64_t epoch, uint64_t index = 0);

}  // namespace ox::data
