// DataLoader: batching, drop_last, shuffling per (seed, epoch), workers giving the same
// batches as the consumer thread, early exit with workers, and exceptions from workers.

#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "data/data_test_util.h"

namespace {

using namespace ox::data;
using oxtest::caught;
using oxtest::kind_of;
using oxtest::pairs;

// The targets of one epoch, batch by batch.
std::vector<std::vector<int64_t>> epoch_targets(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) out.push_back(batch.target.to_vector<int64_t>());
  return out;
}

TEST(DataLoaderTest, BatchesInOrder) {
  DataLoader loader(pairs(10), {.batch_size = 4});
  EXPECT_EQ(loader.size(), 3);
  std::vector<ox::Shape> shapes;
  std::vector<std::vector<int64_t>> targets;
  for (auto& batch : loader) {
    shapes.push_back(batch.data.shape());
    EXPECT_EQ(batch.target.dim(), 1);
    targets.push_back(batch.target.to_vector<int64_t>());
    // data rows are {2t, 2t + 1} for each target t
    const auto values = batch.data.to_vector<float>();
    for (size_t k = 0; k < targets.back().size(); ++k) {
      EXPECT_EQ(values[2 * k], float(2 * targets.back()[k]));
      EXPECT_EQ(values[2 * k + 1], float(2 * targets.back()[k] + 1));
    }
  }
  EXPECT_EQ(shapes, (std::vector<ox::Shape>{{4, 2}, {4, 2}, {2, 2}}));
  EXPECT_EQ(targets, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
}

TEST(DataLoaderTest, DropLast) {
  DataLoader loader(pairs(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(loader.size(), 2);
  EXPECT_EQ(epoch_targets(loader), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  DataLoader exact(pairs(8), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(exact.size(), 2);
  DataLoader empty(pairs(3), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(empty.size(), 0);
  EXPECT_TRUE(epoch_targets(empty).empty());
}

TEST(DataLoaderTest, ShuffleReproduciblePerEpochAndDifferentAcross) {
  DataLoader a(pairs(20), {.batch_size = 5, .shuffle = true, .seed = 3});
  const auto e0 = epoch_targets(a);
  const auto e1 = epoch_targets(a);
  EXPECT_EQ(a.epoch(), 2);
  std::vector<int64_t> flat;
  for (const auto& b : e0) flat.insert(flat.end(), b.begin(), b.end());
  std::vector<int64_t> sorted = flat;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(20);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);  // a permutation
  EXPECT_NE(flat, all);    // shuffled
  EXPECT_NE(e0, e1);       // each epoch its own order

  DataLoader b(pairs(20), {.batch_size = 5, .shuffle = true, .seed = 3});
  EXPECT_EQ(epoch_targets(b), e0);
  EXPECT_EQ(epoch_targets(b), e1);
  b.set_epoch(0);
  EXPECT_EQ(epoch_targets(b), e0);

  DataLoader c(pairs(20), {.batch_size = 5, .shuffle = true, .seed = 4});
  EXPECT_NE(epoch_targets(c), e0);
}

// Every value of every batch of `epochs` epochs.
std::vector<std::vector<float>> run(DatasetPtr ds, DataLoaderOptions options, int epochs) {
  DataLoader loader(std::move(ds), options);
  std::vector<std::vector<float>> out;
  for (int e = 0; e < epochs; ++e)
    for (auto& batch : loader) {
      out.push_back(batch.data.to_vector<float>());
      const auto t = batch.target.to_vector<int64_t>();
      out.emplace_back(t.begin(), t.end());
    }
  return out;
}

TEST(DataLoaderTest, WorkersGiveTheSameBatches) {
  // Random flips, so the check covers transform randomness as well as order.
  auto ds = std::make_shared<MapDataset>(pairs(37), RandomHorizontalFlip{0.5}, 9);
  DataLoaderOptions options{.batch_size = 4, .shuffle = true, .seed = 5};
  const auto serial = run(ds, options, 2);
  bool any_flip = false;
  for (size_t k = 0; k < serial.size(); k += 2)
    for (size_t j = 0; j + 1 < serial[k].size(); j += 2)
      any_flip |= serial[k][j] > serial[k][j + 1];
  EXPECT_TRUE(any_flip);
  for (int64_t workers : {1, 3}) {
    options.num_workers = workers;
    for (int64_t prefetch : {1, 4}) {
      options.prefetch = prefetch;
      EXPECT_EQ(run(ds, options, 2), serial) << workers << " workers, prefetch " << prefetch;
    }
  }
}

TEST(DataLoaderTest, PinMemoryGivesTheSameBatchesPinnedWhereCudaRuns) {
  auto ds = std::make_shared<MapDataset>(pairs(37), RandomHorizontalFlip{0.5}, 9);
  DataLoaderOptions options{.batch_size = 4, .shuffle = true, .num_workers = 2, .seed = 5};
  const auto plain = run(ds, options, 2);
  options.pin_memory = true;
  EXPECT_EQ(run(ds, options, 2), plain);
  DataLoader loader(ds, options);
  for (auto& batch : loader) {
    // Pinned where CUDA can use it; elsewhere the option is ignored, as PyTorch does.
    EXPECT_EQ(batch.data.is_pinned(), ox::cuda::is_available());
    EXPECT_EQ(batch.target.is_pinned(), ox::cuda::is_available());
  }
}

TEST(DataLoaderTest, TransformsDrawPerEpoch) {
  // The loader passes its epoch to the MapDataset: flips differ between epochs, and set_epoch
  // brings an epoch's flips back.
  auto ds = std::make_shared<MapDataset>(pairs(64), RandomHorizontalFlip{0.5}, 2);
  DataLoader loader(ds, {.batch_size = 64});
  const auto first = (*loader.begin()).data.to_vector<float>();
  const auto second = (*loader.begin()).data.to_vector<float>();
  EXPECT_NE(first, second);
  loader.set_epoch(0);
  EXPECT_EQ((*loader.begin()).data.to_vector<float>(), first);
}

// A dataset whose get sleeps a little, so workers are busy when the consumer leaves.
class SlowDataset : public Dataset {
 public:
  int64_t size() const override { return 200; }
  Example get(int64_t index) const override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return {ox::full({2}, double(index)), ox::scalar_tensor(index)};
  }
};

TEST(DataLoaderTest, EarlyBreakStopsWorkers) {
  auto ds = std::make_shared<SlowDataset>();
  for (int round = 0; round < 10; ++round) {
    DataLoader loader(ds, {.batch_size = 2, .num_workers = 3, .prefetch = 2});
    int seen = 0;
    for (auto& batch : loader) {
      EXPECT_EQ(batch.target.to_vector<int64_t>(), (std::vector<int64_t>{2 * seen, 2 * seen + 1}));
      if (++seen == 1 + round % 3) break;
    }
    EXPECT_EQ(seen, 1 + round % 3);
    // Iterators left unfinished without a loop: begin() then drop it.
    { auto it = loader.begin(); }
  }
  // ds is only shared with the loaders' finished epochs; no worker still holds it.
  EXPECT_EQ(ds.use_count(), 1);
}

// Throws an ox::Error for one index.
class FailingDataset : public Dataset {
 public:
  int64_t size() const override { return 12; }
  Example get(int64_t index) const override {
    OX_CHECK(index != 5, Value, "FailingDataset", "example ", index, " is broken");
    return {ox::full({1}, double(index)), ox::scalar_tensor(index)};
  }
};

TEST(DataLoaderTest, WorkerExceptionReachesConsumer) {
  for (int64_t workers : {0, 1, 3}) {
    DataLoader loader(std::make_shared<FailingDataset>(),
                      {.batch_size = 4, .num_workers = workers});
    int delivered = 0;
    const auto e = caught([&] {
      for (auto& batch : loader) {
        (void)batch;
        ++delivered;
      }
    });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << workers;
    EXPECT_TRUE(oxtest::contains(e, "example 5 is broken")) << e.what();
    EXPECT_EQ(delivered, 1) << workers;  // batch 0 (0..3) arrives, batch 1 (4..7) fails
  }
}

TEST(DataLoaderTest, OptionErrors) {
  EXPECT_EQ(kind_of([] { DataLoader(pairs(3), {.batch_size = 0}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { DataLoader(pairs(3), {.num_workers = -1}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { DataLoader(pairs(3), {.prefetch = 0}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { DataLoader(nullptr); }), ox::ErrorKind::Value);
}

TEST(DataCollate, StacksDataAndTargets) {
  const Example batch = collate({{ox::tensor({1.0f, 2.0f}), ox::scalar_tensor(int64_t(7))},
                                 {ox::tensor({3.0f, 4.0f}), ox::scalar_tensor(int64_t(8))}});
  EXPECT_EQ(batch.data.shape(), ox::Shape({2, 2}));
  EXPECT_EQ(batch.data.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(batch.target.shape(), ox::Shape({2}));
  EXPECT_EQ(batch.target.to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(kind_of([] { collate({}); }), ox::ErrorKind::Value);
}

}  // namespace
