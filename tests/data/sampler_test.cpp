// DistributedSampler: PyTorch's counts, padding and dropping, shards disjoint and covering,
// the same shuffle on every rank (seeded by seed and epoch), and a DataLoader batching it.

#include <algorithm>
#include <set>
#include <vector>

#include "data/data_test_util.h"

namespace {

using namespace ox::data;
using oxtest::kind_of;
using oxtest::pairs;

std::vector<int64_t> shard(int64_t n, int64_t replicas, int64_t rank, bool drop_last,
                           bool shuffle = false, int64_t epoch = 0) {
  return DistributedSampler(n, {.num_replicas = replicas,
                                .rank = rank,
                                .shuffle = shuffle,
                                .seed = 7,
                                .drop_last = drop_last})
      .indices(epoch);
}

TEST(DistributedSamplerTest, PadsByRepeatingTheFirstIndices) {
  // 10 examples on 3 ranks: ceil(10 / 3) = 4 each, the order 0..9 padded with 0, 1.
  EXPECT_EQ(shard(10, 3, 0, false), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(shard(10, 3, 1, false), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(shard(10, 3, 2, false), (std::vector<int64_t>{2, 5, 8, 1}));
  // Fewer examples than ranks: the one example repeats.
  EXPECT_EQ(shard(1, 4, 3, false), (std::vector<int64_t>{0}));
  EXPECT_EQ(DistributedSampler(10, {.num_replicas = 3, .rank = 0}).size(), 4);
}

TEST(DistributedSamplerTest, DropLastCutsTheTail) {
  // ceil((10 - 3) / 3) = 3 each: 9 of the 10 examples, 9 dropped.
  EXPECT_EQ(shard(10, 3, 0, true), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(shard(10, 3, 1, true), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(shard(10, 3, 2, true), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(shard(9, 3, 2, true), (std::vector<int64_t>{2, 5, 8}));  // divisible: nothing dropped
  EXPECT_TRUE(shard(2, 3, 0, true).empty());
  EXPECT_TRUE(shard(0, 2, 1, false).empty());
}

TEST(DistributedSamplerTest, ShuffledShardsAreDisjointAndChangePerEpoch) {
  for (const int64_t epoch : {0, 1}) {
    std::multiset<int64_t> all;
    for (int64_t r = 0; r < 4; ++r)
      for (const int64_t i : shard(103, 4, r, false, true, epoch)) all.insert(i);
    // 26 each, 104 in all: every example once, and one (the first of the order) twice.
    EXPECT_EQ(all.size(), 104u);
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 103u);
  }
  EXPECT_NE(shard(103, 4, 0, false, true, 0), shard(103, 4, 0, false, true, 1));
  EXPECT_EQ(shard(103, 4, 2, false, true, 5), shard(103, 4, 2, false, true, 5));
  EXPECT_NE(shard(103, 4, 0, false, true, 0), shard(103, 4, 0, false, false, 0));
}

TEST(DistributedSamplerTest, WithoutAProcessGroupItIsOneReplica) {
  DistributedSampler s(5, {.shuffle = false});
  EXPECT_EQ(s.num_replicas(), 1);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.indices(0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(DistributedSamplerTest, RefusesBadArguments) {
  EXPECT_EQ(kind_of([] { DistributedSampler(10, {.num_replicas = 2, .rank = 2}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { DistributedSampler(10, {.num_replicas = 0, .rank = 0}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { DistributedSampler(-1, {.num_replicas = 1, .rank = 0}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { DistributedSampler(10, {.num_replicas = 2, .rank = -5}); }),
            ox::ErrorKind::Value);
}

TEST(DistributedSamplerTest, DataLoaderBatchesTheShardPerEpoch) {
  auto sampler = std::make_shared<DistributedSampler>(
      10, DistributedSamplerOptions{.num_replicas = 3, .rank = 1, .shuffle = true, .seed = 3});
  DataLoader loader(pairs(10), {.batch_size = 3, .sampler = sampler});
  EXPECT_EQ(loader.size(), 2);  // 4 indices: a batch of 3 and one of 1
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    for (auto& batch : loader)
      for (const int64_t t : batch.target.to_vector<int64_t>()) seen.push_back(t);
    EXPECT_EQ(seen, sampler->indices(epoch)) << epoch;
  }
  const std::vector<int64_t> first = sampler->indices(0);
  EXPECT_EQ(loader.batch_indices(0)[0], (std::vector<int64_t>(first.begin(), first.begin() + 3)));
}

// A sampler that breaks its promise: its indices leave the dataset.
class OutOfRange final : public Sampler {
 public:
  std::vector<int64_t> indices(int64_t) const override { return {0, 99}; }
  int64_t size() const override { return 2; }
};

TEST(DistributedSamplerTest, DataLoaderRefusesSamplerWithShuffleOrBadIndices) {
  auto sampler = std::make_shared<DistributedSampler>(
      10, DistributedSamplerOptions{.num_replicas = 1, .rank = 0});
  EXPECT_EQ(kind_of([&] { DataLoader(pairs(10), {.shuffle = true, .sampler = sampler}); }),
            ox::ErrorKind::Value);
  DataLoader bad(pairs(10), {.batch_size = 2, .sampler = std::make_shared<OutOfRange>()});
  EXPECT_EQ(kind_of([&] { bad.batch_indices(0); }), ox::ErrorKind::Index);
}

}  // namespace
