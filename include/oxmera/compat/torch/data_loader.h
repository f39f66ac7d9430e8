#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md, "Data"): LibTorch's data loader,
// torch::data::{DataLoaderOptions, FullDataLoaderOptions, Iterator, StatelessDataLoader,
// make_data_loader}.
//
//   auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
//       std::move(dataset), torch::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... }  // batch: the dataset's BatchType
//
// Each range-for is one epoch: begin() resets the sampler (a RandomSampler draws a new order).
// With workers > 0, each worker thread gets its own copy of the dataset (as in LibTorch) and
// runs get_batch on the requests the loader hands out; results are always delivered in request
// order, so the batches and their order are those of workers = 0 (enforce_ordering(false) does
// not reorder). A batch's exception is rethrown as it is (an ox::Error keeps its kind) when the
// consumer reaches that batch.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "oxmera/compat/torch/data_datasets.h"
#include "oxmera/compat/torch/data_samplers.h"

namespace torch::data {

// LibTorch's chainable options: `DataLoaderOptions().batch_size(64).workers(2)`, or
// `DataLoaderOptions(64)` (implicit, so a batch size converts).
struct DataLoaderOptions {
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}  // NOLINT

#define OX_COMPAT_DATA_ARG(T, name, ...)             \
  DataLoaderOptions& name(const T& value) {          \
    name##_ = value;                                 \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }             \
                                                     \
 private:                                            \
  T name##_ __VA_OPT__(= __VA_ARGS__);               \
                                                     \
 public:
  OX_COMPAT_DATA_ARG(size_t, batch_size, 1)
  OX_COMPAT_DATA_ARG(size_t, workers, 0)
  OX_COMPAT_DATA_ARG(optional<size_t>, max_jobs)  // batches in flight; 2 * workers if unset
  OX_COMPAT_DATA_ARG(optional<std::chrono::milliseconds>, timeout)  // per batch, with workers
  OX_COMPAT_DATA_ARG(bool, enforce_ordering, true)
  OX_COMPAT_DATA_ARG(bool, drop_last, false)
#undef OX_COMPAT_DATA_ARG
};

// The options with max_jobs resolved, as the loader's options() gives them.
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(const DataLoaderOptions& options)
      : batch_size(options.batch_size()),
        workers(options.workers()),
        max_jobs(options.max_jobs().value_or(2 * options.workers())),
        timeout(options.timeout()),
        enforce_ordering(options.enforce_ordering()),
        drop_last(options.drop_last()) {}
  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

// The loader's input iterator: begin() fetches lazily, end() is a sentinel; two iterators are
// equal when both are at the end (or are the same iterator).
template <class Batch>
class Iterator {
 public:
  using difference_type = std::ptrdiff_t;
  using value_type = Batch;
  using pointer = Batch*;
  using reference = Batch&;
  using iterator_category = std::input_iterator_tag;
  using Producer = std::function<optional<Batch>()>;

  Iterator() = default;  // the end
  explicit Iterator(Producer next) : state_(std::make_shared<State>(std::move(next))) {}

  Iterator& operator++() {
    OX_CHECK(state_ && at_batch(), Value, "DataLoader",
             "Attempted to increment iterator past the end");
    state_->batch = state_->next();
    return *this;
  }
  Batch& operator*() const {
    OX_CHECK(state_ && at_batch(), Value, "DataLoader",
             "Attempted to dereference iterator that was past the end");
    return *state_->batch;
  }
  Batch* operator->() const { return &**this; }
  bool operator==(const Iterator& other) const {
    if (state_ && other.state_) return state_ == other.state_;
    if (!state_ && !other.state_) return true;
    return !(state_ ? at_batch() : other.at_batch());
  }

 private:
  struct State {
    explicit State(Producer producer) : next(std::move(producer)) {}
    Producer next;
    optional<Batch> batch;
    bool started = false;
  };
  bool at_batch() const {
    if (!state_->started) {
      state_->batch = state_->next();
      state_->started = true;
    }
    return state_->batch.has_value();
  }
  std::shared_ptr<State> state_;
};

namespace detail {

// Worker threads, each with its own copy of the dataset, running get_batch on numbered requests;
// results are collected by number. reset() discards everything queued or in flight (a result of
// an older epoch is dropped when it arrives).
template <class Dataset, class Batch, class Request>
class WorkerPool {
 public:
  struct Result {
    optional<Batch> batch;
    std::exception_ptr error;
  };

  WorkerPool(const Dataset& dataset, size_t workers) {
    threads_.reserve(workers);
    for (size_t w = 0; w < workers; ++w)
      threads_.emplace_back([this, copy = dataset]() mutable { run(copy); });
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    jobs_ready_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void push(size_t number, Request request) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back({number, generation_, std::move(request)});
    }
    jobs_ready_.notify_one();
  }
  Result pop(size_t number, const optional<std::chrono::milliseconds>& timeout) {
    std::unique_lock lock(mutex_);
    const auto ready = [&] { return results_.count(number) != 0; };
    if (!timeout) {
      results_ready_.wait(lock, ready);
    } else {
      OX_CHECK(results_ready_.wait_for(lock, *timeout, ready), Value, "DataLoader",
               "Timeout in DataLoader queue while waiting for next batch (timeout was ",
               timeout->count(), " ms)");
    }
    auto node = results_.extract(number);
    return std::move(node.mapped());
  }
  void reset() {
    std::lock_guard lock(mutex_);
    jobs_.clear();
    results_.clear();
    ++generation_;
  }

 private:
  struct Job {
    size_t number;
    uint64_t generation;
    Request request;
  };
  void run(Dataset& dataset) {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        jobs_ready_.wait(lock, [&] { return quit_ || !jobs_.empty(); });
        if (quit_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      Result result;
      try {
        result.batch.emplace(dataset.get_batch(std::move(job.request)));
      } catch (...) {
        result.error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        if (job.generation != generation_) continue;
        results_.emplace(job.number, std::move(result));
      }
      results_ready_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable jobs_ready_, results_ready_;
  std::deque<Job> jobs_;
  std::map<size_t, Result> results_;
  uint64_t generation_ = 0;
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace detail

// The loader of a stateless dataset: batches of the indices `Sampler` gives, made by the
// dataset's get_batch, in the consumer's thread (workers = 0) or by worker threads.
template <class Dataset, class Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : options_(checked(options)), sampler_(std::move(sampler)) {
    if (options_.workers == 0) {
      dataset_.emplace(std::move(dataset));
    } else if constexpr (std::is_copy_constructible_v<Dataset>) {
      pool_ = std::make_unique<Pool>(dataset, options_.workers);
    } else {
      OX_FAIL(Value, "make_data_loader",
              "DataLoaderOptions::workers > 0 needs a copyable dataset (each worker gets a copy)");
    }
  }
  ~StatelessDataLoader() { join(); }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;

  // Starts an epoch: resets the sampler, discards what an unfinished epoch left in flight, and
  // queues the first max_jobs requests for the workers.
  Iterator<BatchType> begin() {
    OX_CHECK(!joined_, Value, "DataLoader", "begin() after join(): the workers are gone");
    sampler_.reset();
    if (pool_) {
      pool_->reset();
      pushed_ = taken_ = 0;
      prefetch(options_.max_jobs);
    }
    return Iterator<BatchType>([this] { return next(); });
  }
  Iterator<BatchType> end() { return Iterator<BatchType>(); }

  // Stops and joins the worker threads (the destructor does it too).
  void join() {
    pool_.reset();
    joined_ = true;
  }
  const FullDataLoaderOptions& options() const noexcept { return options_; }

 private:
  using Pool = detail::WorkerPool<Dataset, BatchType, BatchRequestType>;

  static FullDataLoaderOptions checked(const DataLoaderOptions& options) {
    FullDataLoaderOptions full(options);
    OX_CHECK(full.batch_size > 0, Value, "make_data_loader",
             "DataLoaderOptions::batch_size must be positive, got 0");
    OX_CHECK(full.workers == 0 || full.max_jobs > 0, Value, "make_data_loader",
             "DataLoaderOptions::max_jobs must be positive with workers > 0, got 0");
    return full;
  }
  // The sampler's next indices, or nullopt at the end of the epoch (and for a short last batch
  // under drop_last).
  optional<BatchRequestType> next_request() {
    auto indices = sampler_.next(options_.batch_size);
    if (!indices || indices->empty() ||
        (indices->size() < options_.batch_size && options_.drop_last))
      return nullopt;
    return indices;
  }
  void prefetch(size_t jobs) {
    for (size_t j = 0; j < jobs; ++j) {
      auto request = next_request();
      if (!request) break;
      pool_->push(pushed_++, std::move(*request));
    }
  }
  optional<BatchType> next() {
    if (!pool_) {
      OX_CHECK(dataset_.has_value(), Value, "DataLoader", "the loader was joined");
      if (auto request = next_request()) return dataset_->get_batch(std::move(*request));
      return nullopt;
    }
    if (taken_ == pushed_) return nullopt;
    auto result = pool_->pop(taken_++, options_.timeout);
    prefetch(1);
    if (result.error) std::rethrow_exception(result.error);
    return std::move(result.batch);
  }

  FullDataLoaderOptions options_;
  Sampler sampler_;
  optional<Dataset> dataset_;   // workers = 0
  std::unique_ptr<Pool> pool_;  // workers > 0
  size_t pushed_ = 0, taken_ = 0;
  bool joined_ = false;
};

// A loader of `dataset` with `sampler`.
template <class Dataset, class Sampler>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        Sampler sampler,
                                                                        DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(
      std::move(dataset), std::move(sampler), std::move(options));
}

// A loader of `dataset` with Sampler(dataset.size()): a RandomSampler unless named, as LibTorch.
// `make_data_loader(dataset, 64)` takes 64 as the batch size.
template <class Sampler = samplers::RandomSampler, class Dataset>
requires std::is_constructible_v<Sampler, size_t>
    std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
        Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  const optional<size_t> size = dataset.size();
  OX_CHECK(size.has_value(), Value, "make_data_loader",
           "Expected the dataset to be sized in order to construct the Sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

}  // namespace torch::data
