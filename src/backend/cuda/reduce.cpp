// CUDA launchers: reduce and scan (kernels/reduce_{sum,extreme,stats}.cu, kernels/scan.cu). The
// plans (kernels/reduce_common.cuh) depend on the shape alone, so results are the same bits
// for any strides and any device; see that header for the order each result is computed in.

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/reduce_common.cuh"
#include "backend/cuda/launch.h"
#include "backend/cuda/reduce_kernels.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

using kernels::ReduceArgs;
using kernels::ScanArgs;

constexpr int kRows = 10;
enum Family { kSumFamily, kExtremeFamily, kStatsFamily, kScanFamily, kFamilies };
const char* const kFamilyNames[kFamilies] = {"reduce_sum", "reduce_extreme", "reduce_stats",
                                             "scan"};
const char* const kPrefixes[kFamilies] = {"ox_reduce_", "ox_reduce_", "ox_reduce_", "ox_scan_"};
const std::array<std::string, kRows> kRowNames[kFamilies] = {
    {"sum", "prod", "mean", "count_nonzero", "all", "any", "", "", "", ""},
    {"max", "min", "argmax", "argmin", "", "", "", "", "", ""},
    {"var_mean", "var", "std", "lse", "norm0", "norm1", "norm2", "norm_inf", "norm_ninf", "norm_p"},
    {"sum", "prod", "max", "min", "", "", "", "", "", ""},
};

struct Step {
  Family family;
  int row;
};

// The passes of a reduction, in order (the rows of kRowNames).
std::vector<Step> reduce_steps(ReduceOp op, double p) {
  switch (op) {
    case ReduceOp::Sum:
      return {{kSumFamily, 0}};
    case ReduceOp::Prod:
      return {{kSumFamily, 1}};
    case ReduceOp::Mean:
      return {{kSumFamily, 2}};
    case ReduceOp::CountNonzero:
      return {{kSumFamily, 3}};
    case ReduceOp::All:
      return {{kSumFamily, 4}};
    case ReduceOp::Any:
      return {{kSumFamily, 5}};
    case ReduceOp::Max:
      return {{kExtremeFamily, 0}};
    case ReduceOp::Min:
      return {{kExtremeFamily, 1}};
    case ReduceOp::ArgMax:
      return {{kExtremeFamily, 2}};
    case ReduceOp::ArgMin:
      return {{kExtremeFamily, 3}};
    case ReduceOp::Var:
      return {{kStatsFamily, 0}, {kStatsFamily, 1}};
    case ReduceOp::Std:
      return {{kStatsFamily, 0}, {kStatsFamily, 2}};
    case ReduceOp::LogSumExp:
      return {{kExtremeFamily, 0}, {kStatsFamily, 3}};
    case ReduceOp::Norm:
      if (p == 0) return {{kStatsFamily, 4}};
      if (p == 1) return {{kStatsFamily, 5}};
      if (p == 2) return {{kStatsFamily, 6}};
      if (p == INFINITY) return {{kStatsFamily, 7}};
      if (p == -INFINITY) return {{kStatsFamily, 8}};
      return {{kStatsFamily, 9}};
  }
  OX_ASSERT(false, "reduce: op ", int(op));
  return {};
}

Step scan_step(ScanOp op) {
  switch (op) {
    case ScanOp::Sum:
      return {kScanFamily, 0};
    case ScanOp::Prod:
      return {kScanFamily, 1};
    case ScanOp::Max:
      return {kScanFamily, 2};
    case ScanOp::Min:
      return {kScanFamily, 3};
  }
  OX_ASSERT(false, "scan: op ", int(op));
  return {kScanFamily, 0};
}

KernelName name_of(Step s, DType dtype) {
  return {kFamilyNames[s.family], std::string(kPrefixes[s.family]) + kRowNames[s.family][s.row] +
                                      "_" + std::string(dtype_name(dtype))};
}

CUfunction function(int device, Step s, DType dtype) {
  static const KernelTable<kRows>* const tables[kFamilies] = {
      new KernelTable<kRows>(kFamilyNames[0], kPrefixes[0], kRowNames[0]),
      new KernelTable<kRows>(kFamilyNames[1], kPrefixes[1], kRowNames[1]),
      new KernelTable<kRows>(kFamilyNames[2], kPrefixes[2], kRowNames[2]),
      new KernelTable<kRows>(kFamilyNames[3], kPrefixes[3], kRowNames[3]),
  };
  return tables[s.family]->get(device, s.row, dtype);
}

// One reduction pass of `a` (its layout, operands and parameters set) by the shape's plan.
void run_pass(const DeviceContext& at, CUfunction f, ReduceArgs a) {
  const kernels::ReducePlan plan = kernels::plan_reduce(a.n_out, a.n_red);
  a.per_block = plan.per_block ? 1 : 0;
  a.nchunks = plan.nchunks;
  a.chunk = plan.chunk;
  a.stage = 0;
  if (!plan.per_block) {
    launch(at, f, grid_for(a.n_out), a);
    return;
  }
  const int64_t tasks = a.n_out * plan.nchunks;
  DeviceBuffer partial(at, plan.nchunks > 1 ? size_t(tasks) * size_t(kernels::kPartialBytes) : 0);
  a.partial = partial.data();
  Grid g;
  g.threads = unsigned(kernels::kReduceBlock);
  g.blocks = unsigned(std::min<int64_t>(tasks, int64_t(1) << 16));  // blocks loop over the rest
  launch(at, f, g, a);
  if (plan.nchunks > 1) {
    a.stage = 1;
    launch(at, f, grid_for(a.n_out), a);
  }
}

}  // namespace

std::vector<KernelName> reduce_kernel_names(ReduceOp op, DType src, double p) {
  std::vector<KernelName> names;
  for (const Step s : reduce_steps(op, p)) names.push_back(name_of(s, src));
  return names;
}

std::vector<KernelName> scan_kernel_names(ScanOp op, DType src) {
  return {name_of(scan_step(op), src)};
}

void CudaBackend::reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src,
                         const ReduceParams& params) {
  const size_t k = dst.shape.size();
  OX_ASSERT(src.shape.size() >= k, "reduce: src has fewer dims than dst");
  const Shape oshape(src.shape.begin(), src.shape.begin() + ptrdiff_t(k));
  OX_ASSERT(oshape == dst.shape, "reduce: dst shape ", dst.shape, " vs src ", src.shape);
  const int64_t n_out = dst.numel();
  if (n_out == 0) return;
  const Strides osrc(src.strides.begin(), src.strides.begin() + ptrdiff_t(k));
  const Shape rshape(src.shape.begin() + ptrdiff_t(k), src.shape.end());
  const Strides rsrc(src.strides.begin() + ptrdiff_t(k), src.strides.end());
  // A zero first: the partial products of [2^62, 2^62, 0] overflow.
  int64_t n_red = std::find(rshape.begin(), rshape.end(), 0) != rshape.end() ? 0 : 1;
  for (const int64_t s : rshape) n_red *= n_red ? s : 0;
  OX_ASSERT(n_red > 0 || op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::All ||
                op == ReduceOp::Any || op == ReduceOp::CountNonzero || op == ReduceOp::LogSumExp ||
                op == ReduceOp::Norm,
            "reduce: op ", int(op), " over an empty extent");
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  OX_ASSERT(!arg || (dst.dtype == kI64 && (!params.values || params.values->dtype == src.dtype)),
            "argmax dtypes");

  ReduceArgs a;
  const StridedArray* values = arg ? params.values : nullptr;
  const Strides& vstr = values ? values->strides : dst.strides;
  a.out = make_offsets<3>(oshape, {&dst.strides, &osrc, &vstr}, "reduce");
  a.red = make_offsets<1>(rshape, {&rsrc}, "reduce");
  a.n_out = n_out;
  a.n_red = n_red;
  a.src = src.data;
  a.dst = dst.data;
  a.values = values ? values->data : nullptr;
  a.p = params.p;
  a.correction = params.correction;

  const DeviceContext at = enter(src);
  const std::vector<Step> steps = reduce_steps(op, params.p);
  if (steps.size() == 1) {
    run_pass(at, function(at.device, steps[0], src.dtype), a);
    return;
  }
  // Two passes: the first (the f64 mean; the max in src's dtype) into a per-output scratch that
  // the second reads as its parameter.
  const size_t param_bytes = op == ReduceOp::LogSumExp ? dtype_size(src.dtype) : sizeof(double);
  DeviceBuffer param(at, size_t(n_out) * param_bytes);
  ReduceArgs first = a;
  first.dst = param.data();
  first.dense_dst = 1;
  run_pass(at, function(at.device, steps[0], src.dtype), first);
  a.param = param.data();
  run_pass(at, function(at.device, steps[1], src.dtype), a);
}

void CudaBackend::scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
                       const StridedArray* indices) {
  if (src.numel() == 0) return;
  const bool extreme = op == ScanOp::Max || op == ScanOp::Min;
  OX_ASSERT(!extreme || (indices && indices->dtype == kI64 && dst.dtype == src.dtype),
            "cummax/cummin need i64 indices");
  const StridedArray* idx = extreme ? indices : nullptr;
  const size_t nd = src.shape.size();
  const size_t k = nd ? nd - 1 : 0;
  ScanArgs a;
  a.n = nd ? src.shape[k] : 1;
  if (nd) {
    a.s_dst = dst.strides[k];
    a.s_src = src.strides[k];
    a.s_idx = idx ? idx->strides[k] : 0;
  }
  const Shape oshape(src.shape.begin(), src.shape.begin() + ptrdiff_t(k));
  const Strides od(dst.strides.begin(), dst.strides.begin() + ptrdiff_t(k));
  const Strides os(src.strides.begin(), src.strides.begin() + ptrdiff_t(k));
  const Strides oi = idx ? Strides(idx->strides.begin(), idx->strides.begin() + ptrdiff_t(k)) : od;
  a.outer = make_offsets<3>(oshape, {&od, &os, &oi}, "scan");
  a.n_rows = src.numel() / a.n;
  const kernels::ScanPlan plan = kernels::plan_scan(a.n_rows, a.n);
  a.nchunks = plan.nchunks;
  a.chunk = plan.chunk;
  a.src = src.data;
  a.dst = dst.data;
  a.idx = idx ? static_cast<int64_t*>(idx->data) : nullptr;

  const DeviceContext at = enter(src);
  const CUfunction f = function(at.device, scan_step(op), src.dtype);
  if (plan.nchunks == 1) {
    a.stage = 2;
    launch(at, f, grid_for(a.n_rows), a);
    return;
  }
  const int64_t tasks = a.n_rows * plan.nchunks;
  DeviceBuffer partial(at, size_t(tasks) * size_t(kernels::kPartialBytes));
  a.partial = partial.data();
  a.stage = 0;  // chunk totals
  launch(at, f, grid_for(tasks), a);
  a.stage = 1;  // carries, per row in chunk order
  launch(at, f, grid_for(a.n_rows), a);
  a.stage = 2;  // the scan of each chunk from its carry
  launch(at, f, grid_for(tasks), a);
}

}  // namespace ox::cuda::detail
