// Every collective on every dtype, 2 and 3 ranks on loopback, against values each rank
// computes alone: rank r's element i is value(r, i), and the expected reduction is computed here
// in f64 over r.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ranks.h"
#include "test_util.h"

namespace {

namespace dist = ox::distributed;
using oxtest::child_rank;
using oxtest::child_world;

constexpr ox::DType kAll[] = {ox::kF32, ox::kF64, ox::kF16, ox::kBF16, ox::kI64,
                              ox::kI32, ox::kI16, ox::kI8,  ox::kU8,   ox::kBool};

// Small integers (so 16-bit floats hold every input exactly), varying with rank and element.
double value(ox::DType dt, int rank, int64_t i, int salt = 0) {
  if (dt == ox::kBool) return (rank + i + salt) % 3 == 0 ? 1.0 : 0.0;
  return double((rank + 1) * 2 + (i + salt) % 5 - 2);
}

ox::Tensor make(ox::DType dt, int rank, const ox::Shape& shape, int salt = 0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = value(dt, rank, i, salt);
  return ox::tensor(v, shape, {.device = ox::Device::cpu()}).to(dt);
}

std::vector<double> values_of(const ox::Tensor& t) { return t.to(ox::kF64).to_vector<double>(); }

double reduce(ox::DType dt, dist::ReduceOp op, int world, int64_t i, int salt = 0) {
  double acc = value(dt, 0, i, salt);
  for (int r = 1; r < world; ++r) {
    const double x = value(dt, r, i, salt);
    switch (op) {
      case dist::ReduceOp::Sum:
      case dist::ReduceOp::Avg:
        acc = dt == ox::kBool ? double(acc != 0 || x != 0) : acc + x;
        break;
      case dist::ReduceOp::Product:
        acc = dt == ox::kBool ? double(acc != 0 && x != 0) : acc * x;
        break;
      case dist::ReduceOp::Min:
        acc = std::min(acc, x);
        break;
      case dist::ReduceOp::Max:
        acc = std::max(acc, x);
        break;
    }
  }
  if (op == dist::ReduceOp::Avg) acc /= world;
  // Integer results wrap as the dtype does.
  if (dt == ox::kI8) acc = double(int8_t(int64_t(acc)));
  if (dt == ox::kU8) acc = double(uint8_t(int64_t(acc)));
  if (dt == ox::kI16) acc = double(int16_t(int64_t(acc)));
  return acc;
}

double tolerance(ox::DType dt, double expected) {
  if (dt == ox::kF16) return std::abs(expected) * 1e-3;
  if (dt == ox::kBF16) return std::abs(expected) * 8e-3;
  return 0.0;  // products of at most three small integers: exact in f32, f64 and the integers
}

void expect_reduced(const ox::Tensor& got, ox::DType dt, dist::ReduceOp op, int world,
                    int salt = 0) {
  const std::vector<double> v = values_of(got);
  for (size_t i = 0; i < v.size(); ++i) {
    const double want = reduce(dt, op, world, int64_t(i), salt);
    ASSERT_NEAR(v[i], want, tolerance(dt, want))
        << dt << " " << dist::reduce_op_name(op) << " element " << i;
  }
}

void init() { oxtest::init_child(); }

DIST_CHILD(AllReduceEveryDTypeAndOp) {
  init();
  const int world = child_world(), rank = child_rank();
  EXPECT_EQ(dist::get_world_size(), world);
  EXPECT_EQ(dist::get_rank(), rank);
  for (const ox::DType dt : kAll)
    for (const dist::ReduceOp op :
         {dist::ReduceOp::Sum, dist::ReduceOp::Product, dist::ReduceOp::Min, dist::ReduceOp::Max,
          dist::ReduceOp::Avg}) {
      if (op == dist::ReduceOp::Avg && !ox::is_floating(dt)) continue;
      ox::Tensor t = make(dt, rank, {5, 3});
      dist::all_reduce(t, op);
      expect_reduced(t, dt, op, world);
    }
  // Past Gloo's 1 MiB segment, so the ring splits it: 300001 f32 (an odd count).
  ox::Tensor big = make(ox::kF32, rank, {300001});
  dist::all_reduce(big);
  expect_reduced(big, ox::kF32, dist::ReduceOp::Sum, world);
  // A 0-d tensor and an empty one.
  ox::Tensor scalar =
      ox::full({}, double(rank + 1), {.dtype = ox::kF64, .device = ox::Device::cpu()});
  dist::all_reduce(scalar, dist::ReduceOp::Max);
  EXPECT_EQ(scalar.item<double>(), double(world));
  ox::Tensor empty = ox::zeros({0, 4}, {.device = ox::Device::cpu()});
  dist::all_reduce(empty);
  EXPECT_EQ(empty.numel(), 0);
  dist::destroy_process_group();
  EXPECT_FALSE(dist::is_initialized());
}

DIST_CHILD(EveryOtherCollective) {
  init();
  const int world = child_world(), rank = child_rank();
  for (const ox::DType dt : kAll) {
    SCOPED_TRACE(testing::Message() << dt);
    // broadcast from the last rank
    ox::Tensor b = make(dt, rank, {4, 2});
    dist::broadcast(b, world - 1);
    EXPECT_EQ(values_of(b), values_of(make(dt, world - 1, {4, 2})));
    // all_gather into a list and into one tensor
    std::vector<ox::Tensor> outs;
    for (int r = 0; r < world; ++r)
      outs.push_back(ox::zeros({3, 2}, {.dtype = dt, .device = ox::Device::cpu()}));
    dist::all_gather(outs, make(dt, rank, {3, 2}));
    for (int r = 0; r < world; ++r)
      EXPECT_EQ(values_of(outs[size_t(r)]), values_of(make(dt, r, {3, 2})));
    ox::Tensor gathered = ox::zeros({world * 3, 2}, {.dtype = dt, .device = ox::Device::cpu()});
    dist::all_gather_into_tensor(gathered, make(dt, rank, {3, 2}));
    for (int r = 0; r < world; ++r)
      EXPECT_EQ(values_of(gathered.slice(0, r * 3, r * 3 + 3)), values_of(make(dt, r, {3, 2})));
    // reduce_scatter: input k of rank r is value(r, ., salt k); rank r keeps the sum of salt r
    std::vector<ox::Tensor> ins;
    for (int k = 0; k < world; ++k) ins.push_back(make(dt, rank, {6}, k));
    ox::Tensor mine = ox::zeros({6}, {.dtype = dt, .device = ox::Device::cpu()});
    dist::reduce_scatter(mine, ins, dist::ReduceOp::Max);
    expect_reduced(mine, dt, dist::ReduceOp::Max, world, rank);
    // reduce_scatter_tensor: rank r keeps rows [2r, 2r+2) of the sum
    ox::Tensor whole = make(dt, rank, {world * 2, 3});
    const std::vector<double> whole_before = values_of(whole);
    ox::Tensor part = ox::zeros({2, 3}, {.dtype = dt, .device = ox::Device::cpu()});
    dist::reduce_scatter_tensor(part, whole, dist::ReduceOp::Sum);
    const std::vector<double> got = values_of(part);
    for (int64_t i = 0; i < 6; ++i) {
      const double want = reduce(dt, dist::ReduceOp::Sum, world, rank * 6 + i);
      EXPECT_NEAR(got[size_t(i)], want, tolerance(dt, want)) << i;
    }
    EXPECT_EQ(values_of(whole), whole_before);  // the input is left alone
  }
  // Chunks past the ring's 1 MiB segment (an odd element count, so the last segment is short),
  // averaged; and empty chunks.
  const int64_t chunk = 300001;
  ox::Tensor big = make(ox::kF32, rank, {world * chunk});
  ox::Tensor big_part = ox::zeros({chunk}, {.device = ox::Device::cpu()});
  dist::reduce_scatter_tensor(big_part, big, dist::ReduceOp::Avg);
  const std::vector<double> big_got = values_of(big_part);
  for (int64_t i = 0; i < chunk; ++i) {
    const double sum = reduce(ox::kF32, dist::ReduceOp::Sum, world, rank * chunk + i);
    ASSERT_EQ(big_got[size_t(i)], double(float(sum) / float(world))) << i;  // f32's division
  }
  ox::Tensor none = ox::zeros({0}, {.device = ox::Device::cpu()});
  dist::reduce_scatter_tensor(none, ox::zeros({0}, {.device = ox::Device::cpu()}));
  dist::barrier();
  dist::destroy_process_group();
}

DIST_CHILD(SendRecvAndAsync) {
  init();
  const int world = child_world(), rank = child_rank();
  auto group = dist::default_group();
  // A ring exchange, every rank sending first: posted sends do not wait for the receive.
  const ox::Tensor out = make(ox::kI32, rank, {7});
  ox::Tensor in = ox::zeros({7}, {.dtype = ox::kI32, .device = ox::Device::cpu()});
  dist::WorkPtr s = group->send(out, (rank + 1) % world, 5);
  dist::WorkPtr r = group->recv(in, (rank + world - 1) % world, 5);
  s->wait();
  r->wait();
  EXPECT_TRUE(s->is_completed() && r->is_completed());
  EXPECT_EQ(values_of(in), values_of(make(ox::kI32, (rank + world - 1) % world, {7})));
  // Blocking send/recv of an empty tensor between ranks 0 and 1.
  ox::Tensor none = ox::zeros({0}, {.device = ox::Device::cpu()});
  if (rank == 0) dist::send(none, 1, 9);
  if (rank == 1) dist::recv(none, 0, 9);
  // Three all-reduces in flight at once, waited in order.
  std::vector<ox::Tensor> ts;
  std::vector<dist::WorkPtr> works;
  for (int k = 0; k < 3; ++k) {
    ts.push_back(make(ox::kF64, rank, {1000}, k));
    works.push_back(dist::all_reduce(ts.back(), dist::ReduceOp::Sum, {.async_op = true}));
  }
  for (int k = 0; k < 3; ++k) {
    works[size_t(k)]->wait();
    expect_reduced(ts[size_t(k)], ox::kF64, dist::ReduceOp::Sum, world, k);
  }
  // A bucket: several tensors in one collective.
  std::vector<ox::Tensor> bucket = {make(ox::kF32, rank, {3}), make(ox::kF32, rank, {2, 2}, 1)};
  group->all_reduce_coalesced(bucket, dist::ReduceOp::Sum)->wait();
  expect_reduced(bucket[0], ox::kF32, dist::ReduceOp::Sum, world);
  expect_reduced(bucket[1], ox::kF32, dist::ReduceOp::Sum, world, 1);
  dist::barrier();
  dist::destroy_process_group();
}

DIST_CHILD(SubGroups) {
  init();
  const int world = child_world(), rank = child_rank();
  // The first and the last rank; the others get no group but must call new_group too.
  dist::ProcessGroupPtr ends = dist::new_group({0, world - 1});
  dist::ProcessGroupPtr all = dist::new_group({});
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->size(), world);
  if (rank == 0 || rank == world - 1) {
    ASSERT_NE(ends, nullptr);
    EXPECT_EQ(ends->size(), 2);
    EXPECT_EQ(ends->rank(), rank == 0 ? 0 : 1);
    ox::Tensor t = ox::full({3}, double(rank + 1), {.device = ox::Device::cpu()});
    dist::all_reduce(t, dist::ReduceOp::Sum, {.group = ends});
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>(3, float(1 + world)));
  } else {
    EXPECT_EQ(ends, nullptr);
  }
  ox::Tensor u = ox::full({2}, double(rank), {.device = ox::Device::cpu()});
  dist::all_reduce(u, dist::ReduceOp::Max, {.group = all});
  EXPECT_EQ(u.to_vector<float>(), std::vector<float>(2, float(world - 1)));
  dist::barrier();
  dist::destroy_process_group();
}

TEST(DistributedCollectives, TwoRanks) {
  for (const char* child : {"AllReduceEveryDTypeAndOp", "EveryOtherCollective", "SendRecvAndAsync"})
    oxtest::expect_all_passed(oxtest::run_ranks(2, child));
}

TEST(DistributedCollectives, UnderMpirun) {
  if (!dist::is_backend_available("mpi")) GTEST_SKIP() << "this build has no MPI";
  if (std::system("command -v mpirun > /dev/null") != 0) GTEST_SKIP() << "no mpirun";
  std::string output;
  EXPECT_TRUE(oxtest::run_under_mpirun(
      2, {"AllReduceEveryDTypeAndOp", "EveryOtherCollective", "SendRecvAndAsync", "SubGroups"},
      output))
      << output;
  EXPECT_NE(output.find("[  PASSED  ] 4 tests"), std::string::npos) << output;
}

TEST(DistributedCollectives, ThreeRanks) {
  for (const char* child :
       {"AllReduceEveryDTypeAndOp", "EveryOtherCollective", "SendRecvAndAsync", "SubGroups"})
    oxtest::expect_all_passed(oxtest::run_ranks(3, child));
}

// ---- One rank, in this process: what every collective refuses -------------------------------

struct OneRankGroup {
  OneRankGroup() {
    dist::init_process_group(
        {.backend = "gloo",
         .init_method = "tcp://127.0.0.1:" + std::to_string(oxtest::free_port()),
         .rank = 0,
         .world_size = 1,
         .timeout = std::chrono::seconds(10)});
  }
  ~OneRankGroup() { dist::destroy_process_group(); }
};

TEST(DistributedCollectives, OneRankIsTheIdentity) {
  OneRankGroup g;
  ox::Tensor t = make(ox::kF32, 0, {4});
  dist::all_reduce(t, dist::ReduceOp::Avg);
  expect_reduced(t, ox::kF32, dist::ReduceOp::Avg, 1);
  std::vector<ox::Tensor> outs = {ox::zeros({4}, {.device = ox::Device::cpu()})};
  dist::all_gather(outs, t);
  EXPECT_EQ(values_of(outs[0]), values_of(t));
  dist::barrier();
}

TEST(DistributedCollectives, RefusesBadArguments) {
  using oxtest::kind_of;
  OneRankGroup g;
  const ox::Device cpu = ox::Device::cpu();
  ox::Tensor m = ox::zeros({4, 3}, {.device = cpu});
  ox::Tensor strided = m.t();
  EXPECT_EQ(kind_of([&] { dist::all_reduce(strided); }), ox::ErrorKind::Value);
  ox::Tensor ints = ox::zeros({3}, {.dtype = ox::kI32, .device = cpu});
  EXPECT_EQ(kind_of([&] { dist::all_reduce(ints, dist::ReduceOp::Avg); }), ox::ErrorKind::DType);
  ox::Tensor undefined;
  EXPECT_EQ(kind_of([&] { dist::all_reduce(undefined); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { dist::broadcast(m, 1); }), ox::ErrorKind::Value);
  std::vector<ox::Tensor> two = {m, m};
  EXPECT_EQ(kind_of([&] { dist::all_gather(two, m); }), ox::ErrorKind::Value);
  std::vector<ox::Tensor> wrong = {ox::zeros({5}, {.device = cpu})};
  EXPECT_EQ(kind_of([&] { dist::all_gather(wrong, m); }), ox::ErrorKind::Shape);
  std::vector<ox::Tensor> wrong_dtype = {ints};
  ox::Tensor three = ox::zeros({3}, {.device = cpu});
  EXPECT_EQ(kind_of([&] { dist::all_gather(wrong_dtype, three); }), ox::ErrorKind::DType);
  ox::Tensor small = ox::zeros({2}, {.device = cpu});
  EXPECT_EQ(kind_of([&] { dist::all_gather_into_tensor(small, m); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { dist::reduce_scatter_tensor(small, m); }), ox::ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { dist::send(m, 0); }), ox::ErrorKind::Value);  // to itself
  EXPECT_EQ(kind_of([&] { dist::init_process_group({.rank = 0, .world_size = 1}); }),
            ox::ErrorKind::Value);  // twice
  const ox::Error e = oxtest::caught([&] { dist::all_reduce(strided); });
  EXPECT_NE(std::string(e.what()).find("[all_reduce]"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("contiguous"), std::string::npos) << e.what();
}

TEST(DistributedCollectives, RefusesBadSetUp) {
  using oxtest::kind_of;
  ox::Tensor t = ox::zeros({2}, {.device = ox::Device::cpu()});
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_EQ(dist::get_rank(), 0);
  EXPECT_EQ(dist::get_world_size(), 1);
  EXPECT_EQ(kind_of([&] { dist::all_reduce(t); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { dist::new_group({0}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] {
              dist::init_process_group({.backend = "carrier-pigeon", .rank = 0, .world_size = 1});
            }),
            ox::ErrorKind::Value);
  EXPECT_EQ(
      kind_of([] {
        dist::init_process_group({.init_method = "tcp://127.0.0.1:1", .rank = 2, .world_size = 2});
      }),
      ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] {
              dist::init_process_group({.init_method = "udp://x:1", .rank = 0, .world_size = 1});
            }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] {
              dist::init_process_group(
                  {.init_method = "tcp://127.0.0.1:http", .rank = 0, .world_size = 1});
            }),
            ox::ErrorKind::Value);
  EXPECT_FALSE(dist::is_initialized());
}

}  // namespace
