#pragma once
// The Backend seam: the fixed set of primitives every device implements. The op layer
// validates, promotes, broadcasts and allocates; a primitive only computes. Primitives
// never see mismatched shapes, and never throw for input a caller could get wrong.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/allocator.h"
#include "backend/kernel_check.h"
#include "core/elementwise_ops.h"
#include "core/philox.h"
#include "oxmera/core/device.h"
#include "oxmera/core/dtype.h"
#include "oxmera/core/layout.h"
#include "oxmera/runtime.h"

namespace ox {

// What a kernel sees of a tensor: the address of element [0, ..., 0], shape and strides in
// elements (possibly 0 or negative), dtype. It does not own the memory.
struct StridedArray {
  void* data;
  Shape shape;
  Strides strides;
  DType dtype;
  Device device;

  int64_t numel() const {
    // A 0 first: [2^62, 2^62, 0] is a valid empty shape whose partial products overflow.
    for (int64_t s : shape)
      if (s == 0) return 0;
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  bool is_contiguous() const { return Layout{shape, strides, 0}.is_contiguous(); }
};

struct RandomSpec {
  philox::Kind kind;  // Uniform32, Uniform64, Normal or Integer

  uint64_t seed;
  uint64_t first_block;  // the generator's counter for element 0 (philox.h)
  double a = 0, b = 1;   // uniform: [a, b); normal: mean a, std b
  int64_t low = 0;       // integer: [low, low + range)
  uint64_t range = 1;
};

// Elementwise op codes (UnaryOp, BinaryOp), their dtype classes and UnaryParams come from the
// tables of core/elementwise_ops.h; every backend implements each row with the row's functor.

// Reductions over the trailing dims of src (see Backend::reduce). Accumulators: f32 for
// f32/f16/bf16, f64 for f64, i64 for integer and bool sources; Var/Std/Norm accumulate in f64.
enum class ReduceOp : uint8_t {
  Sum,   // dst: src dtype (floating) or i64 (integer, bool)
  Prod,  // likewise
  Mean,  // floating src; dst of src dtype
  Max,   // NaN propagates; dst of src dtype
  Min,
  ArgMax,  // dst i64: first index of the max (of the first NaN); params.values: the value
  ArgMin,
  All,  // dst bool or u8: x != 0 for every / some element
  Any,
  CountNonzero,  // dst i64
  Var,           // floating; two passes (mean, then squared deviations); params.correction
  Std,           // sqrt of Var
  LogSumExp,     // floating; max + log(sum(exp(x - max))), max itself when it is not finite
  Norm,          // floating; params.p: 0 (count), 1, 2, inf, -inf, or any other p
};
struct ReduceParams {
  double p = 2;
  double correction = 1;
  const StridedArray* values = nullptr;  // ArgMax/ArgMin: also write the values here
};

// Inclusive scans along the last dim (see Backend::scan).
enum class ScanOp : uint8_t {
  Sum,   // dst: src dtype (floating, accumulated in f64) or i64 (integer, bool)
  Prod,  // likewise
  Max,   // dst: src dtype; indices: i64 index of the running max (ties and NaN: the later)
  Min,
};

// ---- NN kernels: sliding windows for convolution and pooling (see Backend::im2col) --------
// A window over the last two dims; 1-d ops use a height of 1. Element (i, j) of the window of
// output position (oh, ow) is input (oh * stride_h - pad_h + i * dilation_h,
// ow * stride_w - pad_w + j * dilation_w); positions outside the input are padding. Only the
// leading padding is given: the output extent (from the arrays' shapes) fixes the trailing one.
struct Window2d {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};
enum class PoolOp : uint8_t {
  Max,          // NaN propagates; i64 index h * W + w of the first maximum (of the last NaN)
  Avg,          // sum over the window clamped to input + padding, divided as PoolParams says
  AdaptiveAvg,  // window of output o: [floor(o * H / Ho), ceil((o + 1) * H / Ho)); no padding
};
enum class DepthwiseOp : uint8_t { Forward, InputGrad, WeightGrad };
struct PoolParams {
  Window2d window;                // Max, Avg
  bool count_include_pad = true;  // Avg: padding counts in the divisor
  int64_t divisor = 0;            // Avg: when nonzero, the divisor of every window
};

// ---- Indexing (see Backend::gather and Backend::scatter) -----------------------------------
// One index array of a gather or scatter. At element i of the iteration, the indexed array's
// address moves by index[i] * stride elements. index[i] must lie in [0, size), or in
// [-size, size) when `wrap` is set (a negative counts from the end, as in Python); a value
// outside is reported to `site` (kernel_check.h) with its position and `size` as the bound.
struct IndexOperand {
  StridedArray index;  // i64 or i32, of the iteration shape (stride 0 where it broadcasts)
  int64_t size = 0;    // extent of the indexed dim
  int64_t stride = 0;  // stride of the indexed dim in the indexed array, in elements
  bool wrap = false;
  CheckSite site = -1;
};
enum class ScatterReduce : uint8_t {
  Assign,  // the last update wins
  Sum,     // integers wrap; bool: or
  Prod,    // integers wrap; bool: and
  Amax,    // NaN propagates
  Amin,
};

// ---- Sorting (see Backend::sort) -------------------------------------------------------------
// The order of a row is its stable sort: ascending (or descending) by value, NaN greater than
// every number, -0 equal to 0, 16-bit floats compared in f32, equal values in index order.
struct SortParams {
  bool descending = false;
  bool select = false;    // write only the element at position k of the order (kthvalue, median)
  int64_t k = 0;          // select: the position, in [0, n)
  bool nan_wins = false;  // select: a row holding a NaN gives its first NaN instead (median)
};

// ---- Optimizer steps (see Backend::optim_step) -----------------------------------------------
enum class OptimStepKind : uint8_t { Sgd, Adam };
// The per-step scalars of one optimizer step, computed on the host in f64 by the optimizer
// (src/optim); the kernel casts each to the parameter's dtype, exactly where the op-composed
// path would, so both give the same bits. Fields a kind does not use are ignored.
struct OptimStepParams {
  bool maximize = false;    // the gradient is negated first
  double weight_decay = 0;  // nonzero: grad += weight_decay * param (L2, coupled)
  bool decoupled = false;   // Adam: param *= param_scale before the update (AdamW)
  double param_scale = 1;
  double update_scale = 0;  // param += update_scale * update (-lr, or -lr / bias_correction1)
  // Adam: m = lerp(m, g, lerp_weight) in PyTorch's two-sided form; v = v * beta2 +
  // one_minus_beta2 * g * g; (amsgrad: vmax = max(vmax, v), read instead of v);
  // update = m / (sqrt(v) / bias_correction2_sqrt + eps).
  double lerp_weight = 0.1, beta2 = 0.999, one_minus_beta2 = 0.001;
  double bias_correction2_sqrt = 1, eps = 1e-8;
  bool amsgrad = false;
  // Sgd: buf = init_buffer ? d : buf * momentum + one_minus_dampening * d; update = nesterov ?
  // d + momentum * buf : buf (momentum nonzero), else d.
  double momentum = 0, one_minus_dampening = 1;
  bool nesterov = false, init_buffer = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceType device_type() const = 0;
  virtual BackendInfo info() const = 0;
  virtual int device_count() const = 0;
  virtual Allocator& allocator(int device_index) = 0;
  // Page-locked host memory that copies with this backend's devices run from asynchronously
  // (what a non-blocking copy to the host writes into); nullptr where there is none.
  virtual Allocator* pinned_host_allocator() { return nullptr; }
  // Returns when every primitive called so far on the device has finished, and raises the
  // first check a kernel failed there since the last synchronizing call (kernel_check.h). A
  // copy to the host synchronizes likewise: it returns when the host data is valid.
  virtual void synchronize(int device_index) = 0;

  // dst[i] = convert(src[i]) for arrays of one shape, any strides and dtypes. A copy between
  // this backend's device and the CPU is this backend's job; it returns when dst can be read
  // and src reused. With `non_blocking` (the op layer sets it only when the CPU side is
  // page-locked memory it keeps from reuse until the copy completes: cuda::record_stream) a
  // copy between that memory and the device may return at once, ordered on the current stream;
  // the host synchronizes before it reads the CPU side.
  virtual void copy(const StridedArray& dst, const StridedArray& src, bool non_blocking) = 0;
  virtual void fill(const StridedArray& dst, const Scalar& value) = 0;
  // Contiguous 1-d dst: start + i * step, in i64 for integer dtypes, f64 otherwise.
  virtual void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) = 0;
  // Contiguous 1-d dst of n >= 2 points from start to end, both ends exact.
  virtual void linspace(const StridedArray& dst, double start, double end) = 0;
  // Contiguous dst; element i (row-major) reads the Philox words philox.h assigns it.
  virtual void random(const StridedArray& dst, const RandomSpec& spec) = 0;
  // Contiguous dst: 1 where uniform < p, else 0, for contiguous floating p of dst's shape or of
  // one element (every draw's probability). A p outside [0, 1] (or NaN) is reported to `site`
  // (position: its row-major index).
  virtual void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                         uint64_t first_block, CheckSite site) = 0;
  // Contiguous 1-d i64/i32/... dst: a Fisher-Yates shuffle of 0..n-1 (philox::bits64).
  virtual void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) = 0;

  // ---- Reductions and scans -----------------------------------------------------------------
  // src has shape out_shape + reduced_shape (the op layer permutes the reduced dims to the end),
  // dst has out_shape; each dst element reduces its src elements in row-major order of the
  // reduced dims. The result is a function of the values alone: bitwise the same for any
  // strides and any thread count. An empty reduced extent gives the identity (Sum 0, Prod 1,
  // All true, Any false, CountNonzero 0, LogSumExp -inf, Norm 0 for finite p >= 0); the op
  // layer refuses it for the other ops.
  virtual void reduce(ReduceOp op, const StridedArray& dst, const StridedArray& src,
                      const ReduceParams& params) = 0;
  // Inclusive scan of src along its last dim into dst (same shape); `indices` (i64, same
  // shape) is required for Max/Min and ignored otherwise.
  virtual void scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
                    const StridedArray* indices) = 0;

  // dst = op(src); one shape, any strides; src and dst share a dtype except for the ops that
  // return bool. dst may be src itself (in-place), never a partial overlap.
  virtual void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
                     const UnaryParams& params) = 0;
  // dst = op(a, b) (Add/Sub: a + alpha * b); a, b expanded to dst's shape (stride 0 where they
  // broadcast) and of one dtype; dst of that dtype, or bool for comparisons and logical ops.
  virtual void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a,
                      const StridedArray& b, double alpha) = 0;

  // ---- Matrix multiplication ----------------------------------------------------------------
  // dst = beta * dst + alpha * (a @ b) for every batch index: a [..., M, K], b [..., K, N],
  // dst [..., M, N], all with the same batch dims (zero or more; the op layer broadcasts them,
  // stride 0). a and b take any strides (0, negative); dst any strides without internal overlap,
  // and overlapping neither a nor b. One dtype, not bool; integers wrap and take integral
  // alpha/beta. beta == 0: dst is not read (NaN there does not propagate). K == 0: dst =
  // beta * dst. Bitwise the same for any thread count.
  virtual void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
                      const Scalar& alpha, const Scalar& beta) = 0;
  // dst = cond ? a : b; cond bool; a, b and dst of one dtype; all of dst's shape.
  virtual void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
                     const StridedArray& b) = 0;

  // ---- Normalization and losses (fused: one pass over each row) ----------------------------
  // Rows of contiguous [rows, n] arrays of one floating dtype. softmax: dst = softmax or
  // log_softmax of each row of src (an all -inf row gives NaN, as PyTorch).
  virtual void softmax(const StridedArray& dst, const StridedArray& src, bool log) = 0;
  // grad_in from grad_out and the forward output y: softmax gi = y * (go - sum(go * y));
  // log_softmax gi = go - exp(y) * sum(go).
  virtual void softmax_backward(const StridedArray& grad_in, const StridedArray& grad_out,
                                const StridedArray& y, bool log) = 0;
  // Normalizes each row of src: (x - mean) * rstd (rms: x * rstd, rstd = 1/sqrt(mean(x^2)+eps)),
  // then * weight + bias when given (data null: absent). mean and rstd ([rows], f32 for 16-bit
  // inputs, else the input dtype) are written for the backward pass (mean untouched for rms).
  virtual void layer_norm(const StridedArray& dst, const StridedArray& mean,
                          const StridedArray& rstd, const StridedArray& src,
                          const StridedArray& weight, const StridedArray& bias, double eps,
                          bool rms) = 0;
  // Gradients of layer_norm: grad_in [rows, n]; grad_weight, grad_bias [n] (data null: not
  // wanted), summed over rows in a fixed order.
  virtual void layer_norm_backward(const StridedArray& grad_in, const StridedArray& grad_weight,
                                   const StridedArray& grad_bias, const StridedArray& grad_out,
                                   const StridedArray& src, const StridedArray& mean,
                                   const StridedArray& rstd, const StridedArray& weight,
                                   bool rms) = 0;
  // Cross-entropy of contiguous logits [rows, classes] against i64 targets [rows]: per-row
  // loss (0 where target == ignore_index) into loss [rows]; class weights [classes] or null;
  // label smoothing spreads `smoothing` of the target mass uniformly. row_weight [rows] gets
  // each row's target weight (1 without class weights, 0 for ignored rows): the denominator of
  // a mean. A target outside [0, classes) that is not ignore_index is reported to `site`
  // (value: the target, position: its row, bound: classes); the outputs are then unspecified.
  virtual void cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                             const StridedArray& logits, const StridedArray& target,
                             const StridedArray& weight, int64_t ignore_index, double smoothing,
                             CheckSite site) = 0;
  // d(loss_row)/d(logits) * grad_loss[row] into grad_logits [rows, classes].
  virtual void cross_entropy_backward(const StridedArray& grad_logits,
                                      const StridedArray& grad_loss, const StridedArray& logits,
                                      const StridedArray& target, const StridedArray& weight,
                                      int64_t ignore_index, double smoothing) = 0;

  // ---- NN kernels: convolution and pooling (cpu/conv.cpp, cpu/pool.cpp) --------------------
  // Floating arrays of one dtype, [N, C, H, W] planes with any strides unless said otherwise.
  // im2col: dst [N, C, kh, kw, Ho, Wo] (any strides; the op layer picks the GEMM layout) gets
  // the input element at each window position, 0 in padding.
  virtual void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) = 0;
  // col2im, the adjoint: contiguous dst [N, C, H, W] (overwritten) = the sum, per position, of
  // the src [N, C, kh, kw, Ho, Wo] elements im2col would have copied from it; each plane in one
  // fixed order (no atomics), so the result does not depend on the thread count.
  virtual void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) = 0;
  // Depthwise convolution, direct (im2col would copy the input kh * kw times for GEMMs of one
  // row each): groups == C, weight [C * M, 1, kh, kw], output channel o reads input channel
  // o / M. Forward: dst [N, C * M, Ho, Wo] = conv(a = input, b = weight) + bias [C * M] (data
  // null: none). InputGrad: dst [N, C, H, W] from a = grad_output, b = weight. WeightGrad:
  // dst [C * M, 1, kh, kw] from a = grad_output, b = input. dst contiguous (overwritten); every
  // element is summed in one fixed order.
  virtual void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                                const StridedArray& b, const StridedArray& bias,
                                const Window2d& w) = 0;
  // Pools src [N, C, H, W] into contiguous dst [N, C, Ho, Wo]; Max also writes contiguous i64
  // indices [N, C, Ho, Wo] (-1 for a window that holds no input element; its value is -inf).
  virtual void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
                      const StridedArray& src, const PoolParams& p) = 0;
  // Contiguous grad_src [N, C, H, W] (overwritten) from grad_dst [N, C, Ho, Wo]: Max scatters
  // through indices (any strides; -1 skipped), Avg and AdaptiveAvg spread each gradient over
  // its window, plane by plane in a fixed order. An index outside [-1, H * W) is skipped and
  // reported to `site` (value, row-major position in indices, bound H * W).
  virtual void pool2d_backward(PoolOp op, const StridedArray& grad_src,
                               const StridedArray& grad_dst, const StridedArray& indices,
                               const PoolParams& p, CheckSite site) = 0;

  // ---- Indexing (cpu/index.cpp) --------------------------------------------------------------
  // The iteration runs over dst's shape: dst[i] = src[i + sum_k indices[k].index[i] *
  // indices[k].stride]. src is the indexed array restrided to dst's shape (stride 0 along the
  // dims the indices drive); any dtype, dst's. The index arrays share one dtype (i64 or i32).
  // Every index is checked (IndexOperand); on a failure nothing is written (CPU) or dst is
  // unspecified (a device, which raises at the next synchronizing call). An empty iteration
  // checks nothing.
  virtual void gather(const StridedArray& dst, const StridedArray& src,
                      const std::vector<IndexOperand>& indices) = 0;
  // The adjoint, over src's shape: dst[i + sum_k index_k[i] * stride_k] = reduce(that, src[i]).
  // dst is the destination restrided to src's shape (stride 0 along the indexed dims), of src's
  // dtype. The op layer guarantees that the destination has no internal overlap and that
  // neither src nor the indices overlap it. Updates meeting at one element are applied in
  // row-major order of the iteration, so the result does not depend on the thread count.
  // Checks every index, as gather.
  virtual void scatter(const StridedArray& dst, const StridedArray& src,
                       const std::vector<IndexOperand>& indices, ScatterReduce reduce) = 0;
  // Coordinates of the elements of src (any dtype and strides) that are not zero (NaN is not
  // zero), in row-major order, into contiguous i64 dst [n, src.ndim]; n is their count (the op
  // layer counts them with reduce CountNonzero).
  virtual void nonzero(const StridedArray& dst, const StridedArray& src) = 0;

  // ---- Sorting (cpu/sort.cpp) -----------------------------------------------------------------
  // Sorts each row along the last dim of src (any dtype and strides; the op layer moves the
  // sorted dim last). values (src's dtype; data null: not written) and indices (i64) have src's
  // leading dims and a last dim m: without select, the first m elements of each row's order
  // (SortParams; m == n is the whole sort, m < n the top m); with select (m == 1), the element at
  // position k. Values are copied from src bit for bit. A 0-d src is one row of one element.
  // Results do not depend on the thread count.
  virtual void sort(const StridedArray& values, const StridedArray& indices,
                    const StridedArray& src, const SortParams& params) = 0;

  // ---- Optimizer steps (cpu/optim_step.cpp) ---------------------------------------------------
  // One pass over a parameter, updating it and its state in place (OptimStepParams says how).
  // param, grad and the state buffers are contiguous, of one shape and one floating dtype (f32
  // or f64); buffers a kind does not use have null data. Adam: buf1 exp_avg, buf2 exp_avg_sq,
  // buf3 max_exp_avg_sq; Sgd: buf1 momentum_buffer. No host synchronisation.
  virtual void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                          const StridedArray& buf1, const StridedArray& buf2,
                          const StridedArray& buf3, const OptimStepParams& params) = 0;

  // ---- Linear algebra (cpu/linalg.cpp, on LAPACK) ----------------------------------------------
  // Matrices are f32 or f64 [..., rows, cols] in LAPACK's column-major form: strides[-2] == 1
  // and strides[-1] >= max(1, rows); the batch dims take any strides (0 for a broadcast input,
  // never for one that is written). info and pivots are contiguous i32 of the batch shape (plus
  // pivots' last dim). info[b]: 0 success; k > 0 LAPACK's failure code (a leading minor that is
  // not positive definite, a zero pivot, a non-converging iteration); kLinalgNonFinite for a
  // matrix holding NaN or Inf, which is then left as it is (iterative LAPACK routines can loop
  // or return garbage on such input). Batches are spread over threads, LAPACK runs single-
  // threaded within each, so results do not depend on the thread count.
  static constexpr int32_t kLinalgNonFinite = -1;
  // In place: the Cholesky factor in the triangle `upper` names, zeros in the other (from the
  // failing column on, a matrix whose info is k > 0 holds LAPACK's partial work).
  virtual void cholesky(const StridedArray& a, const StridedArray& info, bool upper) = 0;
  // In place: getrf's L and U of a [..., m, n] and its 1-based pivots [..., min(m, n)].
  virtual void lu_factor(const StridedArray& a, const StridedArray& pivots,
                         const StridedArray& info) = 0;
  // b [..., n, k] overwritten with op(A)^-1 b, op(A) = A or Aᵀ (transpose); A [..., n, n]
  // triangular (`upper`; the other triangle is not read; unit_diagonal: its diagonal is not
  // read either and taken as 1). A singular A gives Inf/NaN, not an error (the op layer checks).
  virtual void triangular_solve(const StridedArray& a, const StridedArray& b, bool upper,
                                bool transpose, bool unit_diagonal) = 0;
  // b [..., n, k] overwritten with op(A)^-1 b from lu_factor's LU and pivots.
  virtual void lu_solve(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                        bool transpose) = 0;
  // In place: geqrf's R on and above the diagonal and Householder vectors below it, tau
  // [..., min(m, n)].
  virtual void geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) = 0;
  // q [..., m, c] (c <= m; its first tau.shape[-1] columns hold geqrf's vectors) overwritten
  // with the first c columns of the product of the reflectors.
  virtual void orgqr(const StridedArray& q, const StridedArray& tau) = 0;
  // Eigenvalues ascending into w [..., n] from the `upper` or lower triangle of a; vectors:
  // a is overwritten with the orthonormal eigenvectors (columns), else destroyed.
  virtual void eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info,
                    bool vectors, bool upper) = 0;
  // Singular values descending into s [..., k]; a [..., m, n] is destroyed. With u and vh
  // (data non-null): u [..., m, m or k] and vh [..., n or k, n] (full_matrices or not).
  virtual void svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
                   const StridedArray& vh, const StridedArray& info, bool full_matrices) = 0;
};

// The registry. The CPU backend is always present; others register when built and usable.
Backend& backend_for(DeviceType type, const char* op);
Backend& backend_for(Device device, const char* op);
Backend* find_backend(DeviceType type);
void register_backend(std::unique_ptr<Backend> backend);

}  // namespace ox
