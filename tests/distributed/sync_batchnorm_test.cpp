// SyncBatchNorm: ranks holding parts of a batch (of unequal sizes) normalize, differentiate and
// update their running statistics as BatchNorm does on the whole batch in one process.

#include <gtest/gtest.h>

#include <oxmera/nn/sync_batchnorm.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <optional>

#include "ranks.h"
#include "test_util.h"

namespace {

namespace dist = ox::distributed;
namespace nn = ox::nn;
using oxtest::child_rank;
using oxtest::child_world;

double max_abs_diff(const ox::Tensor& a, const ox::Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  return (a.to(ox::kF64) - b.to(ox::kF64)).abs().max().item<double>();
}

// Rank r holds rows [first(r), first(r + 1)) of the whole batch: 2 and 5 rows for 2 ranks.
int64_t first(int r) { return r * (r + 3) / 2; }

// momentum nullopt: the running statistics are the average of every batch seen.
void expect_matches_one_process(const ox::Shape& whole_shape, ox::DType dtype,
                                std::optional<double> momentum = 0.3) {
  const int rank = child_rank();
  const int64_t channels = whole_shape[1];
  ox::Generator gen(11);
  const ox::Tensor whole = ox::randn(whole_shape, {.dtype = dtype}, &gen) * 3 + 1;
  const ox::Tensor upstream = ox::randn(whole_shape, {.dtype = dtype}, &gen);
  const ox::Tensor w = ox::rand({channels}, {.dtype = dtype}, &gen) + 0.5;
  const ox::Tensor b = ox::randn({channels}, {.dtype = dtype}, &gen);
  const int64_t begin = first(rank), rows = first(rank + 1) - begin;
  ASSERT_EQ(first(child_world()), whole_shape[0]);

  nn::BatchNorm1d alone(channels, {.momentum = momentum});  // BatchNorm1d: [N, C] and [N, C, L]
  nn::BatchNorm2d alone2d(channels, {.momentum = momentum});
  nn::SyncBatchNorm synced(channels, {.momentum = momentum});
  for (nn::BatchNormImpl* bn : {static_cast<nn::BatchNormImpl*>(alone.get()),
                                static_cast<nn::BatchNormImpl*>(alone2d.get()),
                                static_cast<nn::BatchNormImpl*>(synced.get())}) {
    bn->to(dtype);
    ox::NoGradGuard no_grad;
    bn->weight.copy_(w);
    bn->bias.copy_(b);
  }
  auto reference = [&](const ox::Tensor& x) {
    return whole_shape.size() == 4 ? alone2d(x) : alone(x);
  };
  nn::BatchNormImpl& ref_module =
      whole_shape.size() == 4 ? static_cast<nn::BatchNormImpl&>(*alone2d) : *alone;

  const double tol = dtype == ox::kF64 ? 1e-12 : 2e-5;
  for (int step = 0; step < 2; ++step) {  // the second step reads the updated running stats
    ox::Tensor x_whole = (whole + step).detach().requires_grad_();
    ox::Tensor x_mine = (whole + step).narrow(0, begin, rows).detach().requires_grad_();
    const ox::Tensor y_whole = reference(x_whole);
    const ox::Tensor y_mine = synced(x_mine);
    EXPECT_LT(max_abs_diff(y_mine, y_whole.narrow(0, begin, rows)), tol) << "output, step " << step;

    (y_whole * upstream).sum().backward();
    (y_mine * upstream.narrow(0, begin, rows)).sum().backward();
    EXPECT_LT(max_abs_diff(x_mine.grad(), x_whole.grad().narrow(0, begin, rows)), tol)
        << "input gradient, step " << step;
    // The parameters' gradients summed over ranks are the whole batch's.
    for (auto [mine, theirs] :
         {std::pair{synced->weight, ref_module.weight}, std::pair{synced->bias, ref_module.bias}}) {
      ox::Tensor summed = mine.grad().clone();
      dist::all_reduce(summed);
      EXPECT_LT(max_abs_diff(summed, theirs.grad()), tol * 10) << "parameter gradient";
    }
    synced->zero_grad();
    ref_module.zero_grad();
    EXPECT_LT(max_abs_diff(synced->running_mean, ref_module.running_mean), tol);
    EXPECT_LT(max_abs_diff(synced->running_var, ref_module.running_var), tol);
    EXPECT_EQ(synced->num_batches_tracked.item<int64_t>(), step + 1);
  }
  // Eval mode: the running statistics, with no communication.
  synced->eval();
  ref_module.eval();
  const ox::Tensor x = whole.narrow(0, begin, rows);
  EXPECT_LT(max_abs_diff(synced(x), reference(whole).narrow(0, begin, rows)), tol);
}

DIST_CHILD(SyncBatchNormMatchesOneProcess) {
  oxtest::init_child();
  expect_matches_one_process({5, 3, 4, 2}, ox::kF32);
  expect_matches_one_process({5, 4, 6}, ox::kF64);
  expect_matches_one_process({5, 2}, ox::kF32);
  expect_matches_one_process({5, 3, 4, 2}, ox::kF32, std::nullopt);
  expect_matches_one_process({5, 2}, ox::kF64, std::nullopt);
  dist::destroy_process_group();
}

DIST_CHILD(SyncBatchNormRefusesOneValuePerChannel) {
  oxtest::init_child();
  nn::SyncBatchNorm synced(2);
  // One row on rank 0, none on rank 1: a single value per channel across the ranks.
  const ox::Tensor x = ox::ones({child_rank() == 0 ? 1 : 0, 2});
  const ox::Error e = oxtest::caught([&] { synced(x); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "SyncBatchNorm")) << e.what();
  dist::destroy_process_group();
}

TEST(SyncBatchNorm, TwoRanksNormalizeAsOneProcessWithTheWholeBatch) {
  oxtest::expect_all_passed(oxtest::run_ranks(2, "SyncBatchNormMatchesOneProcess"));
}

TEST(SyncBatchNorm, RefusesASingleValuePerChannelAcrossRanks) {
  oxtest::expect_all_passed(oxtest::run_ranks(2, "SyncBatchNormRefusesOneValuePerChannel"));
}

// Without a process group (or with one rank) it is BatchNorm; bad input is named.
TEST(SyncBatchNorm, WithoutAGroupIsBatchNorm) {
  ASSERT_FALSE(dist::is_initialized());
  ox::Generator gen(3);
  const ox::Tensor x = ox::randn({6, 3, 5}, {}, &gen);
  nn::SyncBatchNorm synced(3);
  nn::BatchNorm1d plain(3);
  EXPECT_TRUE(ox::allclose(synced(x), plain(x), 0, 0));
  EXPECT_TRUE(ox::allclose(synced->running_var, plain->running_var, 0, 0));
  std::ostringstream printed;
  printed << *synced;
  EXPECT_EQ(printed.str(),
            "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  EXPECT_EQ(oxtest::kind_of([&] { synced(ox::ones({3})); }), ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] { synced(ox::ones({2, 4})); }), ox::ErrorKind::Shape);
  EXPECT_EQ(oxtest::kind_of([&] { nn::SyncBatchNorm bad(0); }), ox::ErrorKind::Value);
}

}  // namespace
