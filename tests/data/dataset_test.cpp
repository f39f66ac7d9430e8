// Datasets (TensorDataset, MapDataset, Subset, random_split, ConcatDataset) and the example
// transforms, against values worked out by hand or by plain loops here.

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "data/data_test_util.h"

namespace {

using namespace ox::data;
using oxtest::caught;
using oxtest::kind_of;
using oxtest::pairs;

TEST(DataTensorDataset, RowsOfDataAndTargets) {
  auto ds = pairs(3);
  EXPECT_EQ(ds->size(), 3);
  const Example e = ds->get(2);
  EXPECT_EQ(e.data.to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(e.target.dim(), 0);
  EXPECT_EQ(e.target.item<int64_t>(), 2);
}

TEST(DataTensorDataset, Errors) {
  EXPECT_EQ(kind_of([] {
              TensorDataset(ox::zeros({3, 2}), ox::zeros({4}));
            }),
            ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([] { TensorDataset(ox::scalar_tensor(1), ox::zeros({1})); }),
            ox::ErrorKind::Shape);
  auto ds = pairs(3);
  const auto e = caught([&] { ds->get(3); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(oxtest::contains(e, "index 3")) << e.what();
  EXPECT_EQ(kind_of([&] { ds->get(-1); }), ox::ErrorKind::Index);
}

TEST(DataSubset, PicksIndices) {
  auto ds = pairs(5);
  Subset sub(ds, {4, 0, 4});
  EXPECT_EQ(sub.size(), 3);
  EXPECT_EQ(sub.get(0).target.item<int64_t>(), 4);
  EXPECT_EQ(sub.get(1).target.item<int64_t>(), 0);
  EXPECT_EQ(sub.get(2).target.item<int64_t>(), 4);
  EXPECT_EQ(kind_of([&] { sub.get(3); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { Subset(ds, {5}); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { Subset(ds, {-1}); }), ox::ErrorKind::Index);
}

// A dataset with no get_batch of its own: the default, get() of each index stacked.
class PlainRows : public Dataset {
 public:
  explicit PlainRows(std::shared_ptr<TensorDataset> rows) : rows_(std::move(rows)) {}
  int64_t size() const override { return rows_->size(); }
  Example get(int64_t index) const override { return rows_->get(index); }

 private:
  std::shared_ptr<TensorDataset> rows_;
};

TEST(DataGetBatch, GathersWhatGetAndCollateGive) {
  // Data [5, 3, 2] read through a transposed view (strided rows), targets [5, 2].
  std::vector<float> values(30);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.5f - 3;
  const ox::Tensor data = ox::tensor(values, {5, 2, 3}).transpose(1, 2);
  const ox::Tensor targets = ox::arange(10, {.dtype = ox::kI64}).reshape({5, 2});
  auto ds = std::make_shared<TensorDataset>(data, targets);
  const PlainRows plain(ds);
  const std::vector<int64_t> picks = {4, 0, 4, 2};
  const Example fast = ds->get_batch(picks), slow = plain.get_batch(picks);
  ASSERT_EQ(fast.data.shape(), (ox::Shape{4, 3, 2}));
  ASSERT_EQ(fast.target.shape(), (ox::Shape{4, 2}));
  EXPECT_EQ(fast.data.to_vector<float>(), slow.data.to_vector<float>());
  EXPECT_EQ(fast.target.to_vector<int64_t>(), slow.target.to_vector<int64_t>());
  // Row 4 of the data by hand: data[4][i][j] = values[4 * 6 + j * 3 + i].
  const std::vector<float> got = fast.data.to_vector<float>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(got[size_t(i * 2 + j)], values[size_t(24 + j * 3 + i)]);
  // A Subset maps its indices, then asks its dataset for the batch.
  const Subset sub(ds, {3, 1, 4});
  EXPECT_EQ(sub.get_batch({2, 0}).target.to_vector<int64_t>(), (std::vector<int64_t>{8, 9, 6, 7}));
  // 0-d targets collate to [B] either way.
  auto scalars = pairs(4);
  EXPECT_EQ(scalars->get_batch({3, 1}).target.to_vector<int64_t>(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(PlainRows(scalars).get_batch({3, 1}).target.shape(), (ox::Shape{2}));
}

TEST(DataGetBatch, RefusesWhatGetRefuses) {
  auto ds = pairs(3);
  const auto e = caught([&] { ds->get_batch({0, 3}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(oxtest::contains(e, "index 3")) << e.what();
  EXPECT_EQ(kind_of([&] { ds->get_batch({-1}); }), ox::ErrorKind::Index);
  EXPECT_EQ(kind_of([&] { ds->get_batch({}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { PlainRows(ds).get_batch({}); }), ox::ErrorKind::Value);
  const Subset sub(ds, {2, 1});
  EXPECT_EQ(kind_of([&] { sub.get_batch({2}); }), ox::ErrorKind::Index);
}

TEST(DataRandomSplit, DisjointCoverAndReproducible) {
  auto ds = pairs(10);
  ox::Generator gen(7);
  const auto parts = random_split(ds, {6, 0, 4}, gen);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0]->size(), 6);
  EXPECT_EQ(parts[1]->size(), 0);
  EXPECT_EQ(parts[2]->size(), 4);
  std::multiset<int64_t> seen;
  for (const auto& p : parts)
    for (int64_t i = 0; i < p->size(); ++i) seen.insert(p->get(i).target.item<int64_t>());
  std::multiset<int64_t> all;
  for (int64_t i = 0; i < 10; ++i) all.insert(i);
  EXPECT_EQ(seen, all);

  ox::Generator again(7);
  EXPECT_EQ(random_split(ds, {6, 0, 4}, again)[0]->indices(), parts[0]->indices());
  // Not the identity order (a split that never shuffles would pass everything above).
  std::vector<int64_t> first_six = parts[0]->indices();
  EXPECT_NE(first_six, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(DataRandomSplit, LengthsMustSumToSize) {
  auto ds = pairs(5);
  ox::Generator gen(1);
  const auto e = caught([&] { random_split(ds, {2, 2}, gen); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(oxtest::contains(e, "sum to 4")) << e.what();
  EXPECT_EQ(kind_of([&] { random_split(ds, {6, -1}, gen); }), ox::ErrorKind::Value);
}

TEST(DataConcat, IndexesAcrossParts) {
  auto a = pairs(2), b = pairs(3);
  ConcatDataset cat({a, std::make_shared<TensorDataset>(ox::zeros({0, 2}), ox::zeros({0})), b});
  EXPECT_EQ(cat.size(), 5);
  const std::vector<int64_t> expected{0, 1, 0, 1, 2};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(cat.get(i).target.item<int64_t>(), expected[size_t(i)]);
  EXPECT_EQ(cat.get(4).data.to_vector<float>(), (std::vector<float>{4, 5}));
  EXPECT_EQ(kind_of([&] { cat.get(5); }), ox::ErrorKind::Index);
}

TEST(DataTransforms, NormalizePerChannel) {
  Example e{ox::tensor(std::vector<float>{1, 2, 3, 4}, {2, 1, 2}), ox::scalar_tensor(0)};
  ox::Generator gen(0);
  const Example out = Normalize{{1, 2}, {2, 4}}(e, gen);
  EXPECT_EQ(out.data.shape(), ox::Shape({2, 1, 2}));
  // (1-1)/2, (2-1)/2, (3-2)/4, (4-2)/4
  EXPECT_EQ(out.data.to_vector<float>(), (std::vector<float>{0, 0.5f, 0.25f, 0.5f}));
  EXPECT_EQ(out.target.item<int64_t>(), 0);
}

TEST(DataTransforms, NormalizeErrors) {
  ox::Generator gen(0);
  Example f{ox::zeros({2, 2}), {}};
  EXPECT_EQ(kind_of([&] { Normalize{{0, 0, 0}, {1, 1, 1}}(f, gen); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { Normalize{{0}, {0}}(f, gen); }), ox::ErrorKind::Value);
  Example i{ox::zeros({2, 2}, ox::kI64), {}};
  EXPECT_EQ(kind_of([&] { Normalize{{0}, {1}}(i, gen); }), ox::ErrorKind::DType);
}

TEST(DataTransforms, FlipAlwaysAndNever) {
  ox::Generator gen(3);
  Example e{ox::tensor(std::vector<float>{1, 2, 3, 4, 5, 6}, {1, 2, 3}), {}};
  EXPECT_EQ(RandomHorizontalFlip{1.0}(e, gen).data.to_vector<float>(),
            (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(RandomHorizontalFlip{0.0}(e, gen).data.to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(kind_of([&] { RandomHorizontalFlip{1.5}(e, gen); }), ox::ErrorKind::Value);
}

// The 3x3 window at (top, left) of [[1, 2], [3, 4]] padded by one zero on each side, by hand.
std::vector<float> window(int64_t top, int64_t left) {
  const float padded[4][4] = {{0, 0, 0, 0}, {0, 1, 2, 0}, {0, 3, 4, 0}, {0, 0, 0, 0}};
  std::vector<float> out;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 3; ++c) out.push_back(padded[top + r][left + c]);
  return out;
}

TEST(DataTransforms, RandomCropIsAPaddedWindowAndSeeded) {
  // Each example: the same [1, 2, 2] image.
  auto images = std::make_shared<TensorDataset>(
      ox::tensor(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}).expand({40, 1, 2, 2}).contiguous(),
      ox::zeros({40}));
  MapDataset cropped(images, RandomCrop{{3}, 1}, /*seed=*/11);
  std::set<std::pair<int64_t, int64_t>> offsets;
  std::vector<std::vector<float>> epoch0;
  for (int64_t i = 0; i < 40; ++i) {
    const auto got = cropped.get(i).data;
    ASSERT_EQ(got.shape(), ox::Shape({1, 3, 3}));
    const auto values = got.to_vector<float>();
    epoch0.push_back(values);
    bool matched = false;
    for (int64_t t = 0; t < 2 && !matched; ++t)
      for (int64_t l = 0; l < 2 && !matched; ++l)
        if (values == window(t, l)) matched = true, offsets.insert({t, l});
    EXPECT_TRUE(matched) << "example " << i;
    EXPECT_EQ(cropped.get(i).data.to_vector<float>(), values);  // same (seed, epoch, index)
  }
  EXPECT_EQ(offsets.size(), 4u);  // 40 draws reach all four windows
  cropped.set_epoch(1);
  int changed = 0;
  for (int64_t i = 0; i < 40; ++i)
    changed += cropped.get(i).data.to_vector<float>() != epoch0[size_t(i)];
  EXPECT_GT(changed, 0);
  MapDataset other_seed(images, RandomCrop{{3}, 1}, /*seed=*/12);
  changed = 0;
  for (int64_t i = 0; i < 40; ++i)
    changed += other_seed.get(i).data.to_vector<float>() != epoch0[size_t(i)];
  EXPECT_GT(changed, 0);
  ox::Generator gen(0);
  Example small{ox::zeros({1, 2, 2}), {}};
  EXPECT_EQ(kind_of([&] { RandomCrop{{5}, 1}(small, gen); }), ox::ErrorKind::Value);
}

TEST(DataTransforms, FlipHalfTheTimeAndComposed) {
  auto ds = std::make_shared<TensorDataset>(
      ox::tensor(std::vector<float>{1, 3}, {1, 1, 2}).expand({400, 1, 2}).contiguous(),
      ox::zeros({400}));
  // Normalize (mean 1, std 2) gives {0, 1}; a flip gives {1, 0}.
  MapDataset mapped(ds, compose({Normalize{{1}, {2}}, RandomHorizontalFlip{0.5}}), 5);
  int flipped = 0;
  for (int64_t i = 0; i < 400; ++i) {
    const auto v = mapped.get(i).data.to_vector<float>();
    if (v == std::vector<float>{1, 0}) {
      ++flipped;
    } else {
      EXPECT_EQ(v, (std::vector<float>{0, 1}));
    }
  }
  // Binomial(400, 0.5): mean 200, sd 10; 6 sd either side.
  EXPECT_GT(flipped, 140);
  EXPECT_LT(flipped, 260);
}

}  // namespace
