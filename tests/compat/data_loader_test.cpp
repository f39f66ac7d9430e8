// LibTorch's data API through the compatibility header, written as a LibTorch user writes it: a
// CRTP dataset mapped through transforms into make_data_loader, samplers, epochs, workers, and
// bad input. Expected values are closed forms of the indices.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "test_util.h"

namespace {

using oxtest::caught;
using oxtest::contains;

// Example i: data [2i, 2i + 1] (f32), target i (i64, 0-d). `claimed` lets a test make size()
// lie, so a loader asks for an index past the tensors.
class Rows : public torch::data::datasets::Dataset<Rows> {
 public:
  explicit Rows(int64_t n, int64_t claimed = -1)
      : data_(torch::arange(2 * n).reshape({n, 2}).to(torch::kFloat)),
        targets_(torch::arange(n)),
        size_(claimed < 0 ? n : claimed) {}
  torch::data::Example<> get(size_t index) override {
    return {data_[int64_t(index)], targets_[int64_t(index)]};
  }
  torch::optional<size_t> size() const override { return size_t(size_); }

 private:
  torch::Tensor data_, targets_;
  int64_t size_;
};

// The targets of each batch of one epoch, checking each batch's data against its targets.
template <class Loader>
std::vector<std::vector<int64_t>> epoch_targets(Loader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    const int64_t b = batch.target.size(0);
    EXPECT_EQ(batch.data.sizes(), torch::IntArrayRef({b, 2}));
    EXPECT_EQ(batch.data.dtype(), torch::kFloat);
    EXPECT_EQ(batch.target.dtype(), torch::kLong);
    const auto targets = batch.target.template to_vector<int64_t>();
    const auto data = batch.data.template to_vector<float>();
    for (int64_t k = 0; k < b; ++k) {
      EXPECT_EQ(data[size_t(2 * k)], float(2 * targets[size_t(k)]));
      EXPECT_EQ(data[size_t(2 * k + 1)], float(2 * targets[size_t(k)] + 1));
    }
    out.push_back(targets);
  }
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> out(size_t(n), 0);
  std::iota(out.begin(), out.end(), 0);
  return out;
}

TEST(CompatData, SequentialSamplerGivesStackedBatchesInOrder) {
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(10).map(torch::data::transforms::Stack<>()), 4);
  using Batch = decltype(loader)::element_type::BatchType;
  static_assert(std::is_same_v<Batch, torch::data::Example<>>);
  const std::vector<std::vector<int64_t>> expected = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}};
  EXPECT_EQ(epoch_targets(*loader), expected);
  EXPECT_EQ(epoch_targets(*loader), expected);  // a new range-for is a new epoch
  EXPECT_EQ(loader->options().batch_size, 4u);
  EXPECT_EQ(loader->options().max_jobs, 0u);
}

TEST(CompatData, DropLastDropsTheShortBatch) {
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(10).map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions().batch_size(4).drop_last(true));
  const std::vector<std::vector<int64_t>> expected = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  EXPECT_EQ(epoch_targets(*loader), expected);
  // Exactly divisible: nothing dropped.
  auto whole = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(8).map(torch::data::transforms::Stack<>()),
      torch::data::DataLoaderOptions(4).drop_last(true));
  EXPECT_EQ(flat(epoch_targets(*whole)), iota(8));
}

TEST(CompatData, RandomSamplerIsASeededPermutationPerEpoch) {
  const auto two_epochs = [](uint64_t seed) {
    torch::manual_seed(seed);
    // RandomSampler is make_data_loader's default, as in LibTorch.
    auto loader = torch::data::make_data_loader(Rows(23).map(torch::data::transforms::Stack<>()),
                                                torch::data::DataLoaderOptions(5));
    std::vector<std::vector<std::vector<int64_t>>> epochs;
    for (int e = 0; e < 2; ++e) epochs.push_back(epoch_targets(*loader));
    return epochs;
  };
  const auto a = two_epochs(7);
  for (const auto& epoch : a) {
    ASSERT_EQ(epoch.size(), 5u);  // 5 + 5 + 5 + 5 + 3
    EXPECT_EQ(epoch.back().size(), 3u);
    auto order = flat(epoch);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, iota(23));  // every index once
  }
  EXPECT_NE(flat(a[0]), flat(a[1]));  // reshuffled
  EXPECT_NE(flat(a[0]), iota(23));
  EXPECT_EQ(two_epochs(7), a);  // the same seed, the same orders
  EXPECT_NE(two_epochs(8), a);
}

TEST(CompatData, SamplersStandAlone) {
  torch::data::samplers::SequentialSampler seq(5);
  EXPECT_EQ(*seq.next(3), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(*seq.next(3), (std::vector<size_t>{3, 4}));
  EXPECT_FALSE(seq.next(3).has_value());
  seq.reset(2);
  EXPECT_EQ(*seq.next(8), (std::vector<size_t>{0, 1}));
  torch::data::samplers::RandomSampler random(6);
  std::vector<size_t> all = *random.next(6);
  EXPECT_EQ(random.index(), 6u);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  random.reset(3);
  EXPECT_EQ(random.next(10)->size(), 3u);
}

TEST(CompatData, WorkersGiveTheSameBatchesAsTheMainThread) {
  for (const bool shuffle : {false, true}) {
    const auto run = [&](torch::data::DataLoaderOptions options) {
      torch::manual_seed(3);
      auto dataset = Rows(37).map(torch::data::transforms::Stack<>());
      std::vector<std::vector<std::vector<int64_t>>> epochs;
      if (shuffle) {
        auto loader = torch::data::make_data_loader(std::move(dataset), options);
        for (int e = 0; e < 3; ++e) epochs.push_back(epoch_targets(*loader));
      } else {
        auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
            std::move(dataset), options);
        for (int e = 0; e < 3; ++e) epochs.push_back(epoch_targets(*loader));
      }
      return epochs;
    };
    const auto base = run(torch::data::DataLoaderOptions(4));
    EXPECT_EQ(run(torch::data::DataLoaderOptions(4).workers(2)), base) << shuffle;
    EXPECT_EQ(run(torch::data::DataLoaderOptions(4).workers(3).max_jobs(1)), base) << shuffle;
    EXPECT_EQ(run(torch::data::DataLoaderOptions(4).workers(2).enforce_ordering(false)), base);
  }
}

TEST(CompatData, LeavingAnEpochEarlyThenStartingAnother) {
  for (const size_t workers : {0, 2}) {
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        Rows(12).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions(2).workers(workers));
    EXPECT_EQ(loader->options().max_jobs, 2 * workers);
    for (auto& batch : *loader) {
      EXPECT_EQ(batch.target.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
      break;
    }
    EXPECT_EQ(flat(epoch_targets(*loader)), iota(12)) << workers;
    loader->join();
  }
}

TEST(CompatData, WithoutStackABatchIsAVectorOfExamples) {
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      Rows(5), torch::data::DataLoaderOptions().batch_size(3));
  std::vector<size_t> sizes;
  int64_t next = 0;
  for (std::vector<torch::data::Example<>>& batch : *loader) {
    sizes.push_back(batch.size());
    for (const auto& example : batch) {
      EXPECT_EQ(example.data.sizes(), torch::IntArrayRef({2}));
      EXPECT_EQ(example.target.item<int64_t>(), next);
      EXPECT_EQ(example.data[1].item<float>(), float(2 * next + 1));
      ++next;
    }
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{3, 2}));
}

TEST(CompatData, TensorDatasetStacksTensorExamples) {
  auto dataset = torch::data::datasets::TensorDataset(torch::arange(12).reshape({6, 2}))
                     .map(torch::data::transforms::Stack<torch::data::TensorExample>());
  EXPECT_EQ(*dataset.size(), 6u);
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), 4);
  std::vector<int64_t> seen;
  for (auto& batch : *loader) {
    const torch::Tensor& rows = batch;  // a TensorExample converts to its data
    EXPECT_EQ(rows.size(1), 2);
    for (int64_t v : batch.data.to_vector<int64_t>()) seen.push_back(v);
  }
  EXPECT_EQ(seen, iota(12));
}

TEST(CompatData, NormalizeScalarAndPerChannel) {
  using torch::data::transforms::Normalize;
  const auto x = torch::arange(12).reshape({3, 2, 2}).to(torch::kFloat).div(10);
  const auto check = [&](const torch::Tensor& got, const std::vector<double>& mean,
                         const std::vector<double>& stddev) {
    ASSERT_EQ(got.sizes(), torch::IntArrayRef({3, 2, 2}));
    const auto values = got.to_vector<float>();
    for (int64_t i = 0; i < 12; ++i) {
      const size_t c = mean.size() == 1 ? 0 : size_t(i / 4);
      const double want = (double(i) / 10 - mean[c]) / stddev[c];
      EXPECT_NEAR(values[size_t(i)], want, 1.3e-6 + 1e-5 * std::abs(want)) << i;
    }
  };
  Normalize<> scalar(0.1307, 0.3081);
  check(scalar(x), {0.1307}, {0.3081});
  Normalize<> channels({0.1, 0.2, 0.3}, {0.5, 2.0, 4.0});
  EXPECT_EQ(channels.mean.sizes(), torch::IntArrayRef({3, 1, 1}));
  check(channels(x), {0.1, 0.2, 0.3}, {0.5, 2.0, 4.0});
  // Through map: the data is normalized, the target passes through.
  auto dataset = Rows(3).map(Normalize<>(1.0, 2.0));
  const std::vector<size_t> indices = {2};
  const auto batch = dataset.get_batch(indices);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].target.item<int64_t>(), 2);
  // [4, 5] -> ([4, 5] - 1) / 2 = [1.5, 2], broadcast against [1, 1, 1] as LibTorch does.
  EXPECT_EQ(batch[0].data.reshape({-1}).to_vector<float>(), (std::vector<float>{1.5f, 2.0f}));
}

struct AddOne : torch::data::transforms::TensorTransform<> {
  torch::Tensor operator()(torch::Tensor input) override { return input + 1; }
};

TEST(CompatData, LambdaTensorLambdaAndTensorTransform) {
  using torch::data::Example;
  namespace transforms = torch::data::transforms;
  auto dataset = Rows(6)
                     .map(transforms::Lambda<Example<>>(
                         [](Example<> e) { return Example<>(e.data, e.target * 100); }))
                     .map(transforms::TensorLambda<>([](torch::Tensor x) { return x * 3; }))
                     .map(AddOne())
                     .map(transforms::Stack<>())
                     .map(transforms::BatchLambda<Example<>, int64_t>(
                         [](Example<> batch) { return batch.target.sum().item<int64_t>(); }));
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(dataset), 4);
  std::vector<int64_t> sums;
  for (int64_t s : *loader) sums.push_back(s);
  EXPECT_EQ(sums, (std::vector<int64_t>{600, 900}));  // 100 * (0+1+2+3), 100 * (4+5)
  // data: 3 * [2i, 2i + 1] + 1
  auto mapped =
      Rows(3).map(transforms::TensorLambda<>([](torch::Tensor x) { return x * 3; })).map(AddOne());
  const auto batch = mapped.get_batch(std::vector<size_t>{1});
  EXPECT_EQ(batch[0].data.to_vector<float>(), (std::vector<float>{7.0f, 10.0f}));
}

// A dataset that can be moved but not copied.
class MoveOnly : public torch::data::datasets::Dataset<MoveOnly> {
 public:
  MoveOnly() : rows_(std::make_unique<Rows>(3)) {}
  torch::data::Example<> get(size_t index) override { return rows_->get(index); }
  torch::optional<size_t> size() const override { return rows_->size(); }

 private:
  std::unique_ptr<Rows> rows_;
};

TEST(CompatData, AMoveOnlyDatasetLoadsWithoutWorkers) {
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      MoveOnly().map(torch::data::transforms::Stack<>()), 2);
  EXPECT_EQ(flat(epoch_targets(*loader)), iota(3));
  const ox::Error e = caught([] {
    torch::data::make_data_loader(MoveOnly(), torch::data::DataLoaderOptions(2).workers(1));
  });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e, "copyable")) << e.what();
}

TEST(CompatData, BadInputIsATypedError) {
  Rows rows(4);
  EXPECT_EQ(oxtest::kind_of([&] { rows.get(4); }), ox::ErrorKind::Index);
  // A dataset claiming 6 examples but holding 4: the loader reaches index 4, in the consumer's
  // thread or in a worker; the error is rethrown as it is.
  for (const size_t workers : {0, 2}) {
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        Rows(4, 6).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions(3).workers(workers));
    int64_t batches = 0;
    const ox::Error e = caught([&] {
      for (auto& batch : *loader) batches += batch.target.size(0) > 0;
    });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << e.what();
    EXPECT_EQ(batches, 1) << workers;
  }
  const ox::Error zero = caught([] {
    torch::data::make_data_loader(Rows(4), torch::data::DataLoaderOptions().batch_size(0));
  });
  EXPECT_EQ(zero.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(zero, "batch_size")) << zero.what();
  const ox::Error jobs = caught([] {
    torch::data::make_data_loader(Rows(4),
                                  torch::data::DataLoaderOptions(2).workers(1).max_jobs(0));
  });
  EXPECT_TRUE(contains(jobs, "max_jobs")) << jobs.what();
  torch::data::datasets::TensorDataset tensors(torch::zeros({3, 2}));
  EXPECT_EQ(oxtest::kind_of([&] { tensors.get(size_t(-1)); }), ox::ErrorKind::Index);
}

}  // namespace
