// CUDA launchers: random, bernoulli, randperm (kernels/random.cu). Element i of a draw reads the
// Philox words philox.h assigns it, and kernels/random.cuh computes its value as the CPU backend
// does, so a seed gives the CPU's bits (normals: within a few ULP of them).

#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/random.cuh"
#include "backend/cuda/launch.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

namespace rng = kernels::rng;

// f(type) with the kernels' storage type of `dtype` (16-bit floats as rng::F16/BF16).
template <class F>
decltype(auto) dispatch_storage(DType dtype, F&& f) {
  switch (dtype) {
    case DType::F32:
      return f.template operator()<float>();
    case DType::F64:
      return f.template operator()<double>();
    case DType::F16:
      return f.template operator()<rng::F16>();
    case DType::BF16:
      return f.template operator()<rng::BF16>();
    case DType::I64:
      return f.template operator()<int64_t>();
    case DType::I32:
      return f.template operator()<int32_t>();
    case DType::I16:
      return f.template operator()<int16_t>();
    case DType::I8:
      return f.template operator()<int8_t>();
    case DType::U8:
      return f.template operator()<uint8_t>();
    case DType::Bool:
      return f.template operator()<bool>();
  }
  OX_ASSERT(false, "invalid dtype ", static_cast<int>(dtype));
  return f.template operator()<float>();
}

// The p_dtype code of ox_random_bernoulli_* and ox_random_check_p.
int32_t probability_code(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 0;
    case DType::F64:
      return 1;
    case DType::F16:
      return 2;
    case DType::BF16:
      return 3;
    default:
      OX_ASSERT(false, "bernoulli given a probability of dtype ", dtype_name(dtype));
      return 0;
  }
}

constexpr int kRandomRows = 7;
enum Row { Uniform32, Uniform64, Normal, Integer, Bernoulli, Iota, Shuffle };
const KernelTable<kRandomRows>& kernels_table() {
  static const KernelTable<kRandomRows> table(
      "random", "ox_random_",
      {"uniform32", "uniform64", "normal", "integer", "bernoulli", "iota", "shuffle"});
  return table;
}

const KernelRef kRandomCheckInit("random", "ox_random_check_p_init");
const KernelRef kRandomCheck("random", "ox_random_check_p");
const KernelRef kRandomCheckReport("random", "ox_random_check_p_report");

}  // namespace

void CudaBackend::random(const StridedArray& dst, const RandomSpec& spec) {
  OX_ASSERT(dst.is_contiguous(), "random given a strided dst");
  const int64_t n = dst.numel();
  if (n == 0 || spec.kind == philox::Kind::Bernoulli) return;  // the CPU draws nothing either
  const DeviceContext at = enter(dst);
  Row row = Uniform32;
  switch (spec.kind) {
    case philox::Kind::Uniform32:
      row = Uniform32;
      break;
    case philox::Kind::Uniform64:
      row = Uniform64;
      break;
    case philox::Kind::Normal:
      row = Normal;
      break;
    case philox::Kind::Integer:
      row = Integer;
      break;
    case philox::Kind::Bernoulli:
      return;
  }
  const CUfunction f = kernels_table().get(at.device, row, dst.dtype);
  const auto per = int64_t(philox::elements_per_block(spec.kind));
  const Grid grid = grid_for((n + per - 1) / per);
  dispatch_storage(dst.dtype, [&]<class T>() {
    rng::Draw<T> d{};
    d.seed = spec.seed;
    d.first_block = spec.first_block;
    d.a = spec.a;
    d.scale = spec.kind == philox::Kind::Normal ? spec.b : spec.b - spec.a;
    d.b = spec.b;
    d.top = rng::largest_below<T>(spec.b);
    d.low = spec.low;
    d.range = spec.range;
    launch(at, f, grid, dst.data, n, d);
  });
}

void CudaBackend::bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                            uint64_t first_block, CheckSite site) {
  OX_ASSERT(dst.is_contiguous() && p.is_contiguous(), "bernoulli given strided operands");
  const int64_t n = dst.numel(), np = p.numel();
  OX_ASSERT(np == 1 || np == n, "bernoulli given ", np, " probabilities for ", n, " draws");
  if (n == 0 && np == 0) return;
  const DeviceContext at = enter(dst);
  const int32_t code = probability_code(p.dtype);
  // The first bad p, found by index (atomicMin), so the report is the CPU's whatever the grid.
  if (np > 0) {
    DeviceBuffer min_bad(at, sizeof(unsigned long long));
    auto* bad = min_bad.as<unsigned long long>();
    const Grid one{1, 1};
    launch(at, kRandomCheckInit.get(at.device), one, bad);
    launch(at, kRandomCheck.get(at.device), grid_for(np), static_cast<const void*>(p.data), code,
           np, bad);
    launch(at, kRandomCheckReport.get(at.device), one, static_cast<const unsigned long long*>(bad),
           check_word(at.device), int32_t(site));
  }
  if (n == 0) return;
  const int32_t one_p = np == 1 ? 1 : 0;
  const CUfunction f = kernels_table().get(at.device, Bernoulli, dst.dtype);
  launch(at, f, grid_for((n + 3) / 4), dst.data, n, static_cast<const void*>(p.data), code, one_p,
         seed, first_block);
}

void CudaBackend::randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) {
  OX_ASSERT(dst.is_contiguous(), "randperm given a strided dst");
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  launch(at, kernels_table().get(at.device, Iota, dst.dtype), grid_for(n), dst.data, n);
  // Fisher-Yates is sequential: one thread walks it, after the iota in stream order.
  launch(at, kernels_table().get(at.device, Shuffle, dst.dtype), Grid{1, 1}, dst.data, n, seed,
         first_block);
}

}  // namespace ox::cuda::detail
