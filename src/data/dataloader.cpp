#include "oxmera/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "oxmera/cuda.h"
#include "oxmera/ops.h"

namespace ox::data {

Example collate(const std::vector<Example>& examples) {
  OX_CHECK(!examples.empty(), Value, "collate", "no examples");
  std::vector<Tensor> data, targets;
  for (const auto& e : examples) {
    data.push_back(e.data);
    if (e.target.defined()) targets.push_back(e.target);
  }
  OX_CHECK(targets.empty() || targets.size() == examples.size(), Value, "collate",
           "some examples have a target and some do not");
  return {stack(data), targets.empty() ? Tensor() : stack(targets)};
}

// One pass over the batches. Workers claim batch numbers in order and leave each result in
// its slot; the consumer takes the slots in order, so the batches are those of a single
// thread whatever the timing. At most `window` batches are claimed beyond the consumer.
struct DataLoader::Epoch {
  DatasetPtr dataset;
  std::vector<std::vector<int64_t>> batches;
  int64_t window = 1;
  bool pin_memory = false;

  std::mutex mutex;
  std::condition_variable work_cv, ready_cv;
  std::vector<std::optional<Example>> results;
  std::vector<std::exception_ptr> errors;
  int64_t next_claim = 0;
  int64_t consumed = 0;  // batches handed to the consumer so far
  bool stopping = false;
  std::vector<std::thread> workers;

  int64_t current = -1;  // the batch the iterator shows
  Example batch;

  Example make(int64_t b) const {
    Example batch = dataset->get_batch(batches[size_t(b)]);
    if (pin_memory) {  // in the worker, as PyTorch's pinning thread: the consumer never waits
      batch.data = batch.data.pin_memory();
      if (batch.target.defined()) batch.target = batch.target.pin_memory();
    }
    return batch;
  }

  void work() {
    while (true) {
      int64_t b;
      {
        std::unique_lock lock(mutex);
        work_cv.wait(lock, [&] {
          return stopping || next_claim >= int64_t(batches.size()) ||
                 next_claim < consumed + window;
        });
        if (stopping || next_claim >= int64_t(batches.size())) return;
        b = next_claim++;
      }
      std::optional<Example> result;
      std::exception_ptr error;
      try {
        result = make(b);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex);
        results[size_t(b)] = std::move(result);
        errors[size_t(b)] = error;
      }
      ready_cv.notify_all();
    }
  }

  void start(int64_t num_workers) {
    results.resize(batches.size());
    errors.resize(batches.size());
    for (int64_t w = 0; w < num_workers; ++w) workers.emplace_back([this] { work(); });
  }

  // Moves to batch `current + 1` (or past the end); rethrows a worker's exception.
  void advance() {
    ++current;
    if (current >= int64_t(batches.size())) {
      batch = {};
      return;
    }
    if (workers.empty()) {
      batch = make(current);
      return;
    }
    std::unique_lock lock(mutex);
    const auto slot = size_t(current);
    ready_cv.wait(lock, [&] { return results[slot].has_value() || errors[slot]; });
    consumed = current + 1;
    std::exception_ptr error = std::exchange(errors[slot], nullptr);
    if (!error) batch = std::move(*results[slot]);
    results[slot].reset();
    lock.unlock();
    work_cv.notify_all();
    if (error) std::rethrow_exception(error);
  }

  ~Epoch() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    work_cv.notify_all();
    for (auto& t : workers) t.join();
  }
};

DataLoader::Iterator::Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {}

Example& DataLoader::Iterator::operator*() const {
  OX_CHECK(epoch_ && epoch_->current < int64_t(epoch_->batches.size()), Index, "DataLoader",
           "dereferencing an iterator past the last batch");
  return epoch_->batch;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  OX_CHECK(epoch_ && epoch_->current < int64_t(epoch_->batches.size()), Index, "DataLoader",
           "advancing an iterator past the last batch");
  epoch_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(Sentinel) const {
  return !epoch_ || epoch_->current >= int64_t(epoch_->batches.size());
}

DataLoader::DataLoader(DatasetPtr dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  OX_CHECK(dataset_ != nullptr, Value, "DataLoader", "null dataset");
  OX_CHECK(options_.batch_size >= 1, Value, "DataLoader", "batch_size must be >= 1, got ",
           options_.batch_size);
  OX_CHECK(options_.num_workers >= 0, Value, "DataLoader", "num_workers must be >= 0, got ",
           options_.num_workers);
  OX_CHECK(options_.prefetch >= 1, Value, "DataLoader", "prefetch must be >= 1, got ",
           options_.prefetch);
  OX_CHECK(!(options_.sampler && options_.shuffle), Value, "DataLoader",
           "sampler and shuffle are mutually exclusive (the sampler decides the order)");
}

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler ? options_.sampler->size() : dataset_->size();
  const int64_t b = options_.batch_size;
  // Not (n + b - 1) / b: that overflows for a batch size near INT64_MAX.
  return options_.drop_last ? n / b : n / b + (n % b != 0);
}

std::vector<std::vector<int64_t>> DataLoader::batch_indices(int64_t epoch) const {
  const int64_t n = dataset_->size();
  std::vector<int64_t> order(size_t(n), 0);
  if (options_.sampler) {
    order = options_.sampler->indices(epoch);
    OX_CHECK(int64_t(order.size()) == options_.sampler->size(), Value, "DataLoader",
             "the sampler gave ", order.size(), " indices for epoch ", epoch, " but its size() is ",
             options_.sampler->size());
    for (const int64_t i : order)
      OX_CHECK(i >= 0 && i < n, Index, "DataLoader", "the sampler gave index ", i,
               " for a dataset of ", n, " examples");
  } else if (options_.shuffle) {
    Generator gen(mix_seed(options_.seed, uint64_t(epoch)));
    order = randperm(n, {.dtype = kI64}, &gen).to_vector<int64_t>();
  } else {
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  }
  std::vector<std::vector<int64_t>> batches(static_cast<size_t>(size()));
  for (size_t b = 0; b < batches.size(); ++b) {
    const size_t first = b * size_t(options_.batch_size);
    const size_t last = std::min(order.size(), first + size_t(options_.batch_size));
    batches[b].assign(order.begin() + ptrdiff_t(first), order.begin() + ptrdiff_t(last));
  }
  return batches;
}

DataLoader::Iterator DataLoader::begin() {
  const int64_t epoch = epoch_++;
  dataset_->set_epoch(epoch);
  auto state = std::make_shared<Epoch>();
  state->dataset = dataset_;
  state->batches = batch_indices(epoch);
  state->window = std::max<int64_t>(1, options_.num_workers * options_.prefetch);
  state->pin_memory = options_.pin_memory && cuda::is_available();
  state->start(std::min<int64_t>(options_.num_workers, int64_t(state->batches.size())));
  state->advance();
  return Iterator(std::move(state));
}

}  // namespace ox::data
