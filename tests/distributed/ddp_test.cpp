// DistributedDataParallel: 2 ranks with batch B each train like 1 process with batch 2B (the
// same samples), buckets start during backward, no_sync accumulates locally, unused
// parameters, buffers broadcast, and models that differ across ranks are refused.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ranks.h"
#include "test_util.h"

namespace {

namespace dist = ox::distributed;
namespace nn = ox::nn;
using nn::parallel::DistributedDataParallel;
using oxtest::child_rank;
using oxtest::child_world;

nn::Sequential mlp() {
  return nn::Sequential(nn::Linear(12, 32), nn::ReLU(), nn::Linear(32, 32), nn::ReLU(),
                        nn::Linear(32, 5));
}

nn::Sequential cnn() {
  return nn::Sequential(nn::Conv2d(1, 4, {3, 3}, {.padding = 1}), nn::ReLU(), nn::MaxPool2d({2, 2}),
                        nn::Conv2d(4, 8, {3, 3}, {.padding = 1}), nn::ReLU(), nn::Flatten(),
                        nn::Linear(8 * 4 * 4, 5));
}

// Step `step`'s whole batch (2B examples), the same on every rank.
std::pair<ox::Tensor, ox::Tensor> batch(int step, int64_t examples, const ox::Shape& example) {
  ox::Generator gen(1000 + uint64_t(step));
  std::vector<int64_t> dims = {examples};
  for (const int64_t d : example) dims.push_back(d);
  const ox::Shape shape(dims);
  return {ox::randn(shape, {}, &gen), ox::randint(0, 5, {examples}, {.dtype = ox::kI64}, &gen)};
}

// Trains `model` 20 steps with SGD + momentum; with a DDP wrapper on this rank's half of every
// batch, without one on the whole batch. Returns the final parameters, flattened.
std::vector<double> train(nn::Sequential model, bool data_parallel, const ox::Shape& example) {
  constexpr int64_t kPerRank = 8;
  const int rank = child_rank();
  std::function<ox::Tensor(const ox::Tensor&)> forward = [&](const ox::Tensor& x) {
    return model(x);
  };
  DistributedDataParallel ddp = nullptr;
  if (data_parallel) {
    ddp = DistributedDataParallel(model, {.bucket_cap_mb = 0.002});
    forward = [&](const ox::Tensor& x) { return ddp->forward(x); };
  }
  ox::optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  for (int step = 0; step < 20; ++step) {
    auto [x, y] = batch(step, kPerRank * child_world(), example);
    if (data_parallel) {
      x = x.narrow(0, rank * kPerRank, kPerRank);
      y = y.narrow(0, rank * kPerRank, kPerRank);
    }
    opt.zero_grad();
    ox::cross_entropy(forward(x), y).backward();
    opt.step();
  }
  std::vector<double> out;
  for (const ox::Tensor& p : model->parameters())
    for (const double v : p.to(ox::kF64).to_vector<double>()) out.push_back(v);
  return out;
}

void expect_equivalent(const std::function<nn::Sequential()>& make, const ox::Shape& example) {
  oxtest::init_child();
  ox::manual_seed(7 + uint64_t(child_rank()));  // different inits: DDP must broadcast rank 0's
  const std::vector<double> ddp = train(make(), true, example);
  ox::manual_seed(7);  // rank 0's init again, trained alone on the whole batches
  const std::vector<double> alone = train(make(), false, example);
  ASSERT_EQ(ddp.size(), alone.size());
  double worst = 0;
  for (size_t i = 0; i < ddp.size(); ++i)
    worst = std::max(worst, std::abs(ddp[i] - alone[i]) / (1e-3 + std::abs(alone[i])));
  // f32, not bitwise: the lone process sums 2B examples' gradients in one GEMM reduction,
  // the ranks B each and then across ranks.
  EXPECT_LT(worst, 1e-4) << "relative difference after 20 steps";
  std::printf("largest relative difference after 20 steps: %.3g\n", worst);
  // Every rank holds the same parameters, bit for bit (one all-reduce result for all).
  ox::Tensor mine = ox::tensor(ddp, {int64_t(ddp.size())});
  ox::Tensor theirs = mine.clone();
  dist::broadcast(theirs, 0);
  EXPECT_TRUE(ox::equal(mine, theirs));
  dist::destroy_process_group();
}

DIST_CHILD(MlpEquivalence) { expect_equivalent(mlp, {12}); }
DIST_CHILD(CnnEquivalence) { expect_equivalent(cnn, {1, 8, 8}); }

DIST_CHILD(BucketsStartDuringBackward) {
  oxtest::init_child();
  auto model = mlp();
  DistributedDataParallel ddp(model, {.bucket_cap_mb = 0.004});
  const int64_t n = int64_t(model->parameters().size());
  ox::Tensor x = ox::randn({4, 12});
  ox::cross_entropy(ddp->forward(x), ox::zeros({4}, {.dtype = ox::kI64})).backward();
  const auto buckets = ddp->buckets();
  ASSERT_GE(buckets.size(), 3u);
  // The first bucket holds the last parameters and started with the others still to come.
  EXPECT_EQ(buckets[0].parameters[0], n - 1);
  EXPECT_GT(buckets[0].ready_at_launch, 0);
  EXPECT_LT(buckets[0].ready_at_launch, n);
  for (size_t b = 1; b < buckets.size(); ++b)
    EXPECT_GE(buckets[b].ready_at_launch, buckets[b - 1].ready_at_launch);
  EXPECT_EQ(buckets.back().ready_at_launch, n);
  dist::destroy_process_group();
}

DIST_CHILD(NoSyncAccumulatesLocally) {
  dist::init_process_group({.backend = "gloo", .timeout = std::chrono::seconds(30)});
  const int rank = child_rank(), world = child_world();
  auto model = mlp();
  DistributedDataParallel ddp(model);
  // A plain copy of the (broadcast) model, for this rank's local sums.
  auto local = mlp();
  local->load_state_dict(model->state_dict());
  auto micro = [&](int k) {
    ox::Generator gen(uint64_t(100 * rank + k));
    return std::pair{ox::randn({3, 12}, {}, &gen),
                     ox::randint(0, 5, {3}, {.dtype = ox::kI64}, &gen)};
  };
  for (int k = 0; k < 3; ++k) {
    auto [x, y] = micro(k);
    ox::cross_entropy(local(x), y).backward();
    if (k < 2) {
      auto guard = ddp->no_sync();
      ox::cross_entropy(ddp->forward(x), y).backward();
    } else {
      ox::cross_entropy(ddp->forward(x), y).backward();
    }
  }
  // Expected: the mean over ranks of each rank's local sum of three micro-batch gradients.
  const auto got = model->parameters(), mine = local->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<ox::Tensor> all;
    for (int r = 0; r < world; ++r) all.push_back(ox::zeros_like(mine[i].grad()));
    dist::all_gather(all, mine[i].grad().contiguous());
    ox::Tensor want = all[0];
    for (int r = 1; r < world; ++r) want = want + all[size_t(r)];
    want = want / double(world);
    EXPECT_TRUE(ox::allclose(got[i].grad(), want, 1e-5, 1e-6)) << "parameter " << i;
  }
  dist::destroy_process_group();
}

// Two heads; the forward uses one.
struct TwoHeadsImpl : nn::Module {
  TwoHeadsImpl() : Module("TwoHeads") {
    used = register_module("used", nn::Linear(4, 2));
    unused = register_module("unused", nn::Linear(4, 2));
  }
  ox::Tensor forward(const ox::Tensor& x) { return used(x); }
  nn::Linear used = nullptr, unused = nullptr;
};
OX_MODULE(TwoHeads);

DIST_CHILD(UnusedParameters) {
  dist::init_process_group({.backend = "gloo", .timeout = std::chrono::seconds(30)});
  TwoHeads strict;
  DistributedDataParallel plain(strict);
  const ox::Error e = oxtest::caught([&] { plain->forward(ox::ones({2, 4})).sum().backward(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_NE(std::string(e.what()).find("find_unused_parameters"), std::string::npos) << e.what();
  TwoHeads model;
  DistributedDataParallel ddp(model, {.find_unused_parameters = true});
  for (int step = 0; step < 2; ++step) {
    model->zero_grad();
    ddp->forward(ox::full({2, 4}, double(child_rank() + 1))).sum().backward();
    // d(sum)/dW of the used head: the column sums of x, averaged over ranks.
    const double mean_x = 2 * (1 + child_world()) / 2.0;
    for (const float g : model->used->weight.grad().to_vector<float>())
      EXPECT_FLOAT_EQ(g, float(mean_x));
    for (const float g : model->unused->weight.grad().to_vector<float>()) EXPECT_EQ(g, 0.0f);
  }
  dist::destroy_process_group();
}

DIST_CHILD(BuffersFollowRankZero) {
  dist::init_process_group({.backend = "gloo", .timeout = std::chrono::seconds(30)});
  auto model = nn::Sequential(nn::Linear(3, 4), nn::BatchNorm1d(4));
  DistributedDataParallel ddp(model);
  ddp->forward(ox::full({5, 3}, double(child_rank())) +
               ox::arange(15).reshape({5, 3}).to(ox::kF32));
  // The running statistics were updated by each rank's own batch; the next forward starts by
  // taking rank 0's.
  ddp->forward(ox::zeros({5, 3}));
  ox::Tensor mean = model->named_buffers()["1.running_mean"].clone();
  ox::Tensor zero = mean.clone();
  dist::broadcast(zero, 0);
  // After the broadcast and one more identical update (zeros input on every rank), equal.
  EXPECT_TRUE(ox::equal(mean, zero));
  dist::destroy_process_group();
}

DIST_CHILD(DifferentModelsAreRefused) {
  dist::init_process_group({.backend = "gloo", .timeout = std::chrono::seconds(30)});
  nn::Linear model = child_rank() == 0 ? nn::Linear(3, 4) : nn::Linear(3, 5);
  const ox::Error e = oxtest::caught([&] { DistributedDataParallel ddp(model); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Distributed) << e.what();
  dist::destroy_process_group();
}

TEST(DistributedDataParallel, MlpTrainsAsOneProcessWithTheWholeBatch) {
  oxtest::expect_all_passed(oxtest::run_ranks(2, "MlpEquivalence"));
}

TEST(DistributedDataParallel, MlpUnderMpirun) {
  if (!dist::is_backend_available("mpi")) GTEST_SKIP() << "this build has no MPI";
  if (std::system("command -v mpirun > /dev/null") != 0) GTEST_SKIP() << "no mpirun";
  std::string output;
  EXPECT_TRUE(oxtest::run_under_mpirun(2, {"MlpEquivalence", "BucketsStartDuringBackward"}, output))
      << output;
  EXPECT_NE(output.find("[  PASSED  ] 2 tests"), std::string::npos) << output;
}

TEST(DistributedDataParallel, CnnTrainsAsOneProcessWithTheWholeBatch) {
  oxtest::expect_all_passed(oxtest::run_ranks(2, "CnnEquivalence"));
}

TEST(DistributedDataParallel, BucketsStartDuringBackward) {
  oxtest::expect_all_passed(oxtest::run_ranks(2, "BucketsStartDuringBackward"));
}

TEST(DistributedDataParallel, NoSyncAndUnusedParametersAndBuffers) {
  for (const char* child : {"NoSyncAccumulatesLocally", "UnusedParameters", "BuffersFollowRankZero",
                            "DifferentModelsAreRefused"})
    oxtest::expect_all_passed(oxtest::run_ranks(2, child));
}

}  // namespace
