#include "oxmera/data/dataset.h"

#include <algorithm>
#include <utility>

#include "oxmera/data/dataloader.h"
#include "oxmera/ops.h"

namespace ox::data {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void check_index(int64_t index, int64_t size, const char* op) {
  OX_CHECK(index >= 0 && index < size, Index, op, "index ", index,
           " is out of range for a dataset of ", size, " examples");
}

}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t epoch, uint64_t index) {
  return splitmix64(splitmix64(splitmix64(seed) ^ epoch) ^ index);
}

Example Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) examples.push_back(get(i));
  return collate(examples);
}

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  OX_CHECK(data_.defined() && targets_.defined(), Value, "TensorDataset",
           "data and targets must be defined tensors");
  OX_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, Shape, "TensorDataset",
           "data and targets need a first dim, got ", data_.shape(), " and ", targets_.shape());
  OX_CHECK(data_.size(0) == targets_.size(0), Shape, "TensorDataset", "data ", data_.shape(),
           " and targets ", targets_.shape(), " differ in their first dim");
}

int64_t TensorDataset::size() const { return data_.size(0); }

Example TensorDataset::get(int64_t index) const {
  check_index(index, size(), "TensorDataset");
  return {data_.select(0, index), targets_.select(0, index)};
}

Example TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  OX_CHECK(!indices.empty(), Value, "collate", "no examples");
  for (int64_t i : indices) check_index(i, size(), "TensorDataset");
  // Indices on the data's device, so that a CUDA dataset gathers its batch there.
  const Tensor index = tensor(indices, {.device = data_.device()});
  const Tensor target_index =
      targets_.device() == data_.device() ? index : tensor(indices, {.device = targets_.device()});
  return {data_.index_select(0, index), targets_.index_select(0, target_index)};
}

MapDataset::MapDataset(DatasetPtr dataset, Transform transform, uint64_t seed)
    : dataset_(std::move(dataset)), transform_(std::move(transform)), seed_(seed) {
  OX_CHECK(dataset_ != nullptr, Value, "MapDataset", "null dataset");
  OX_CHECK(bool(transform_), Value, "MapDataset", "empty transform");
}

int64_t MapDataset::size() const { return dataset_->size(); }

Example MapDataset::get(int64_t index) const {
  check_index(index, size(), "MapDataset");
  Generator gen(mix_seed(seed_, uint64_t(epoch_.load()), uint64_t(index)));
  return transform_(dataset_->get(index), gen);
}

void MapDataset::set_epoch(int64_t epoch) {
  epoch_ = epoch;
  dataset_->set_epoch(epoch);
}

Subset::Subset(DatasetPtr dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  OX_CHECK(dataset_ != nullptr, Value, "Subset", "null dataset");
  const int64_t n = dataset_->size();
  for (int64_t i : indices_)
    OX_CHECK(i >= 0 && i < n, Index, "Subset", "index ", i, " is out of range for a dataset of ", n,
             " examples");
}

int64_t Subset::size() const { return int64_t(indices_.size()); }

Example Subset::get(int64_t index) const {
  check_index(index, size(), "Subset");
  return dataset_->get(indices_[size_t(index)]);
}

Example Subset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    check_index(i, size(), "Subset");
    mapped.push_back(indices_[size_t(i)]);
  }
  return dataset_->get_batch(mapped);
}

void Subset::set_epoch(int64_t epoch) { dataset_->set_epoch(epoch); }

std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset,
                                                  const std::vector<int64_t>& lengths,
                                                  Generator& gen) {
  OX_CHECK(dataset != nullptr, Value, "random_split", "null dataset");
  int64_t total = 0;
  for (int64_t length : lengths) {
    OX_CHECK(length >= 0, Value, "random_split", "negative length ", length);
    total += length;
  }
  OX_CHECK(total == dataset->size(), Value, "random_split", "lengths sum to ", total,
           ", the dataset has ", dataset->size(), " examples");
  const std::vector<int64_t> order = randperm(total, {.dtype = kI64}, &gen).to_vector<int64_t>();
  std::vector<std::shared_ptr<Subset>> parts;
  auto next = order.begin();
  for (int64_t length : lengths) {
    parts.push_back(std::make_shared<Subset>(dataset, std::vector<int64_t>(next, next + length)));
    next += length;
  }
  return parts;
}

ConcatDataset::ConcatDataset(std::vector<DatasetPtr> datasets) : datasets_(std::move(datasets)) {
  int64_t end = 0;
  for (const auto& d : datasets_) {
    OX_CHECK(d != nullptr, Value, "ConcatDataset", "null dataset");
    end += d->size();
    ends_.push_back(end);
  }
}

int64_t ConcatDataset::size() const { return ends_.empty() ? 0 : ends_.back(); }

Example ConcatDataset::get(int64_t index) const {
  check_index(index, size(), "ConcatDataset");
  const auto part = size_t(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
  const int64_t start = part == 0 ? 0 : ends_[part - 1];
  return datasets_[part]->get(index - start);
}

void ConcatDataset::set_epoch(int64_t epoch) {
  for (const auto& d : datasets_) d->set_epoch(epoch);
}

}  // namespace ox::data
