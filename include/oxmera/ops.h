#pragma once
// The op surface: free functions (ox::exp, ox::add, ...) and operators. Each validates its
// arguments, promotes dtypes as PyTorch does (docs/OPS.md), broadcasts, and calls one backend
// primitive. Dtype and NaN rules of every op are in docs/OPS.md.

#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/tensor.h"

namespace ox {

// An operand that is a tensor or a bare number: `ox::add(x, 2)`, `ox::pow(2.0, x)`.
class TensorOrScalar {
 public:
  TensorOrScalar(const Tensor& t) : tensor_(t) {}  // NOLINT: operands read like values
  TensorOrScalar(const Scalar& s) : scalar_(s), is_scalar_(true) {}  // NOLINT
  template <class T>
  requires std::is_arithmetic_v<T> TensorOrScalar(T v) : scalar_(v), is_scalar_(true) {}  // NOLINT
  bool is_scalar() const { return is_scalar_; }
  const Tensor& tensor() const { return tensor_; }
  const Scalar& scalar() const { return scalar_; }

 private:
  Tensor tensor_;
  Scalar scalar_;
  bool is_scalar_ = false;
};

// ---- Unary -------------------------------------------------------------------------------
// Floating ops (exp ... nan_to_num) compute integer and bool inputs in f32, as PyTorch.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor logsigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");  // "none" (erf) or "tanh"
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor mish(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even
Tensor trunc(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);  // either may be undefined
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor logical_not(const Tensor& x);
Tensor bitwise_not(const Tensor& x);

// ---- Binary (broadcasting; tensor-scalar forms through TensorOrScalar) -------------------
Tensor add(const TensorOrScalar& a, const TensorOrScalar& b, const Scalar& alpha = 1);
Tensor sub(const TensorOrScalar& a, const TensorOrScalar& b, const Scalar& alpha = 1);
Tensor mul(const TensorOrScalar& a, const TensorOrScalar& b);
// rounding_mode: "" (true division, floating result), "floor" or "trunc" (dtype kept).
Tensor div(const TensorOrScalar& a, const TensorOrScalar& b, std::string_view rounding_mode = "");
Tensor floor_divide(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor remainder(const TensorOrScalar& a, const TensorOrScalar& b);  // sign of the divisor
Tensor fmod(const TensorOrScalar& a, const TensorOrScalar& b);       // sign of the dividend
Tensor pow(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor atan2(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor maximum(const TensorOrScalar& a, const TensorOrScalar& b);  // NaN propagates
Tensor minimum(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor hypot(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logaddexp(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor eq(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor ne(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor lt(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor le(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor gt(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor ge(const TensorOrScalar& a, const TensorOrScalar& b);
// |a - b| <= atol + rtol * |b| elementwise (torch.isclose): a and b of one dtype, broadcast;
// infinities are close to themselves only; NaNs to each other only with equal_nan.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);         // isclose everywhere; synchronizes
bool equal(const Tensor& a, const Tensor& b);  // same shape and values (torch.equal)
Tensor logical_and(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logical_or(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logical_xor(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor bitwise_and(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor bitwise_or(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor bitwise_xor(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor where(const Tensor& condition, const TensorOrScalar& a, const TensorOrScalar& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const TensorOrScalar& value);
Tensor lerp(const Tensor& start, const Tensor& end, const TensorOrScalar& weight);
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);

// ---- Joining and shaping (copies) ----------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);  // views
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);  // views
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij");
Tensor repeat(const Tensor& x, const Dims& repeats);
Tensor tile(const Tensor& x, const Dims& reps);
Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt);
// repeats: a 1-d integer tensor, one count per element along dim (or one for all).
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats,
                         std::optional<int64_t> dim = std::nullopt);
// i repeated repeats[i] times for each i: repeat_interleave(tensor({2, 1})) is [0, 0, 1] (i64).
Tensor repeat_interleave(const Tensor& repeats);
// pads: (before, after) pairs from the last dim backwards, as torch.nn.functional.pad;
// negative amounts crop. mode: "constant", "reflect" or "replicate".
Tensor pad(const Tensor& x, const Dims& pads, std::string_view mode = "constant",
           const Scalar& value = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor roll(const Tensor& x, const Dims& shifts, const Dims& dims = {});

// ---- Softmax, normalization, losses, dropout --------------------------------------------
// Softmax along `dim` (stable: the row max is subtracted; an all -inf row gives NaN, as
// PyTorch). dtype: compute in that dtype (the input is converted first).
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// The backward kernels autograd calls, from the forward output.
Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim);

// Normalization over the trailing `normalized_shape` dims. The *_forward forms also return
// the statistics ([leading dims, 1...]; f32 for 16-bit inputs) the backward kernels take.
struct NormResult {
  Tensor out, mean, rstd;  // mean is undefined for rms_norm
};
struct NormGrads {
  Tensor input, weight, bias;  // undefined where not asked for
};
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
NormResult layer_norm_forward(const Tensor& x, const Shape& normalized_shape,
                              const Tensor& weight = {}, const Tensor& bias = {},
                              double eps = 1e-5);
NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                              const Shape& normalized_shape, const Tensor& mean, const Tensor& rstd,
                              const Tensor& weight, bool want_weight, bool want_bias);
// eps defaults to the dtype's machine epsilon, as torch.nn.functional.rms_norm.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
NormResult rms_norm_forward(const Tensor& x, const Shape& normalized_shape,
                            const Tensor& weight = {}, std::optional<double> eps = std::nullopt);
NormGrads rms_norm_backward(const Tensor& grad_out, const Tensor& x, const Shape& normalized_shape,
                            const Tensor& rstd, const Tensor& weight, bool want_weight);

// Cross-entropy of logits [N, C] / [N, C, d1...] / [C] against i64 class targets [N] /
// [N, d1...] / [], fused (log-softmax + NLL in one pass per row). A target outside [0, C)
// other than ignore_index is an Index error. "mean" divides by the summed weights of the
// targets that are not ignored (NaN when all are), as PyTorch.
struct CrossEntropyOptions {
  OX_NAMED_FIELDS_ONLY;
  Tensor weight = {};  // per-class weights [C], or undefined
  int64_t ignore_index = -100;
  std::string_view reduction = "mean";  // "mean", "sum" or "none"
  double label_smoothing = 0.0;
};
struct CrossEntropyResult {
  Tensor loss, total_weight;  // total_weight: the mean's denominator, for the backward kernel
};
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyOptions& options = {});
CrossEntropyResult cross_entropy_forward(const Tensor& logits, const Tensor& target,
                                         const CrossEntropyOptions& options = {});
Tensor cross_entropy_backward(const Tensor& grad_out, const Tensor& logits, const Tensor& target,
                              const Tensor& total_weight, const CrossEntropyOptions& options = {});

// Zeroes each element with probability p and scales the rest by 1/(1-p) when training; the
// mask comes from the Philox stream (ox::manual_seed makes it reproducible).
struct DropoutResult {
  Tensor out, mask;  // mask: the factor each element was multiplied by (undefined when a no-op)
};
Tensor dropout(const Tensor& x, double p = 0.5, bool train = true, Generator* gen = nullptr);
DropoutResult dropout_forward(const Tensor& x, double p = 0.5, bool train = true,
                              Generator* gen = nullptr);

// ---- Reductions (docs/OPS.md "Reductions") -----------------------------------------------
// dims: any set of dims, negative ones counted from the end, none twice; {} means all dims.
// Each result is bitwise the same for any thread count and any input layout.
// sum/prod of integer or bool tensors give i64; `dtype` converts the input first.
Tensor sum(const Tensor& x, DimList dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, DimList dims = {}, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);  // floating (or a floating dtype)
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
// max/min/amax/amin/argmax/argmin propagate NaN (argmax: the first NaN); ties give the first
// index. The (values, indices) forms read like LibTorch: `auto [v, i] = ox::max(x, 1);`.
Tensor max(const Tensor& x);
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, DimList dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, DimList dims = {}, bool keepdim = false);
// Without a dim: the index into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Floating only; divides by max(n - correction, 0).
Tensor var(const Tensor& x, DimList dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, DimList dims = {}, double correction = 1, bool keepdim = false);
// Stable: max + log(sum(exp(x - max))); an all -inf row gives -inf, a +inf gives inf.
Tensor logsumexp(const Tensor& x, DimList dims = {}, bool keepdim = false);
// Vector norm over dims: p = 0 (count), 1, 2, inf, -inf or any other p; "fro" is 2; "nuc" is
// the nuclear norm over two dims (those of a 2-d x when dims is empty): linalg::matrix_norm.
Tensor norm(const Tensor& x, double p = 2, DimList dims = {}, bool keepdim = false);
Tensor norm(const Tensor& x, std::string_view p, DimList dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, DimList dims = {}, bool keepdim = false);  // bool (u8 for u8)
Tensor any(const Tensor& x, DimList dims = {}, bool keepdim = false);
Tensor count_nonzero(const Tensor& x, DimList dims = {});  // i64
// Inclusive scans along dim; cumsum/cumprod of integer or bool tensors give i64.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// (values, indices); a tie or a NaN moves the index to the later element, as PyTorch.
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);

// ---- Sorting (docs/OPS.md "Sorting") -------------------------------------------------------
// Every dtype. One total order: ascending or descending by value, NaN greater than every
// number, -0 equal to 0, equal values in their original order (always stable, also descending;
// `stable` is taken for LibTorch's signature). Indices are i64 along dim. A 0-d input takes
// dim 0 / -1 and gives itself and index 0. `auto [v, i] = ox::sort(x, 1, true);`
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = true);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = true);
// The k largest (smallest) along dim, in sorted order (also when `sorted` is false): the first
// k of sort(x, dim, largest). k outside [0, size] is an Index error.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
// The k-th smallest (k from 1) along dim: entry k - 1 of sort(x, dim); NaN counts as largest.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
// The lower median (entry (n - 1) / 2 of the sort), as PyTorch; a NaN in the row gives NaN and
// the index of its first NaN. An empty extent is an Empty error (also for kthvalue).
Tensor median(const Tensor& x);  // over all elements, value only
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- Matrix products (docs/OPS.md "Matrix ops") -----------------------------------------
// Operands are promoted (result_type) and must be on one device; bool is refused. Integer
// products wrap; f16/bf16 accumulate in f32 and round once.
// NumPy/PyTorch matmul: 1-D @ 1-D is a dot (0-d); a 1-D left operand gains a leading dim and a
// 1-D right operand a trailing one, dropped from the result; batch dims broadcast. 0-d refused.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);     // [M, K] @ [K, N]
Tensor bmm(const Tensor& a, const Tensor& b);    // [B, M, K] @ [B, K, N], no broadcasting
Tensor mv(const Tensor& a, const Tensor& v);     // [M, K] @ [K] -> [M]
Tensor dot(const Tensor& a, const Tensor& b);    // [K] . [K] -> 0-d
Tensor outer(const Tensor& a, const Tensor& b);  // [M] x [N] -> [M, N] (an elementwise product)
// beta * input + alpha * (a @ b); input broadcasts to the result; beta == 0 ignores input
// (NaN there does not propagate). Integer operands need integral alpha and beta.
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
               const Scalar& alpha = 1);
// Sums over dims_a[i] of a paired with dims_b[i] of b; the result has a's other dims, then b's.
Tensor tensordot(const Tensor& a, const Tensor& b, const Dims& dims_a, const Dims& dims_b);
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);  // a's last with b's first
// Einstein summation: "ij,jk->ik", "bij,bjk->bik", "ii->i" (diagonal), "ii" (trace),
// "...ij,...jk->...ik" (ellipsis broadcasting), implicit output (ellipsis dims, then the labels
// used once, in ASCII order). Labels absent from the output are summed; three or more operands
// are contracted pairwise, smallest intermediate first. A size-1 dim broadcasts against its
// label's size elsewhere. Pure views ("ij->ji", "ii->i") return views, as PyTorch.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

// ---- NN kernels: convolution and pooling (docs/OPS.md "Convolution and pooling") ---------
// NCHW (2-d) and NCL (1-d) layouts, PyTorch semantics; an unbatched input (no N dim) is taken
// too. Floating dtypes only; input, weight and bias share one. The *_grad / *_backward forms
// are the kernels autograd calls.

// One int for both spatial dims, or two (h, w): `.stride = 2`, `.stride = {2, 1}`.
struct IntPair {
  IntPair(int64_t both) : h(both), w(both) {}  // NOLINT: reads like a number
  IntPair(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  int64_t h, w;
};
std::ostream& operator<<(std::ostream& os, const IntPair& p);  // "(h, w)"
// An IntPair that may be left out (`{}`), as pooling's stride, which then equals the kernel.
struct OptionalIntPair {
  OptionalIntPair() = default;
  OptionalIntPair(int64_t both) : value(IntPair(both)) {}  // NOLINT
  OptionalIntPair(int64_t h, int64_t w) : value(IntPair(h, w)) {}
  std::optional<IntPair> value;
};
// Convolution padding: ints (added on both sides), or "valid" (none), or "same" (the output
// has the input's size; stride 1 only; an odd total puts the extra element at the end).
enum class PaddingMode : uint8_t { Explicit, Same, Valid };
struct Conv2dPadding {
  template <class I>  // a template, so that a literal 0 is not taken for a null pointer
  requires std::is_integral_v<I> Conv2dPadding(I both) : value(int64_t(both)) {}  // NOLINT
  Conv2dPadding(int64_t h, int64_t w) : value(h, w) {}
  Conv2dPadding(const char* mode);       // NOLINT: "same" or "valid"
  Conv2dPadding(std::string_view mode);  // NOLINT
  PaddingMode mode = PaddingMode::Explicit;
  IntPair value;
};
struct Conv1dPadding {
  template <class I>
  requires std::is_integral_v<I> Conv1dPadding(I v) : value(int64_t(v)) {}  // NOLINT
  Conv1dPadding(const char* mode);       // NOLINT: "same" or "valid"
  Conv1dPadding(std::string_view mode);  // NOLINT
  PaddingMode mode = PaddingMode::Explicit;
  int64_t value;
};

struct Conv1dOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t stride = 1;
  Conv1dPadding padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
};
struct Conv2dOptions {
  OX_NAMED_FIELDS_ONLY;
  IntPair stride = 1;
  Conv2dPadding padding = 0;
  IntPair dilation = 1;
  int64_t groups = 1;
};
// input [N, C, L], weight [O, C / groups, K], bias [O] or undefined -> [N, O, L_out].
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Conv1dOptions& options = {});
// input [N, C, H, W], weight [O, C / groups, kh, kw], bias [O] or undefined -> [N, O, Ho, Wo]:
// `ox::conv2d(x, w, b, {.stride = 2, .padding = {1, 1}})`, `{.padding = "same"}`.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});
// The gradients of conv2d for an upstream gradient grad_output [N, O, Ho, Wo]: with respect to
// its input (of input_shape), and to its weight (of weight_shape), as torch.nn.grad.
Tensor conv2d_input_grad(const Shape& input_shape, const Tensor& weight, const Tensor& grad_output,
                         const Conv2dOptions& options = {});
Tensor conv2d_weight_grad(const Tensor& input, const Shape& weight_shape, const Tensor& grad_output,
                          const Conv2dOptions& options = {});
struct ConvTranspose2dOptions {
  OX_NAMED_FIELDS_ONLY;
  IntPair stride = 1;
  IntPair padding = 0;
  IntPair output_padding = 0;  // added to one side of the output; < stride or < dilation
  int64_t groups = 1;
  IntPair dilation = 1;
};
// input [N, C, H, W], weight [C, O / groups, kh, kw] -> [N, O, (H - 1) * stride - 2 * padding +
// dilation * (kh - 1) + output_padding + 1, ...]: the input gradient of conv2d.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});

struct MaxPool2dOptions {
  OX_NAMED_FIELDS_ONLY;
  OptionalIntPair stride = {};  // left out: the kernel size
  IntPair padding = 0;          // at most half the kernel; pads with -inf
  IntPair dilation = 1;
  bool ceil_mode = false;
};
// Values and i64 indices (h * W + w within each input plane) of the maxima over each window of
// input [N, C, H, W]; ties give the first maximum, a NaN propagates (the last NaN's index).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntPair kernel_size,
                                                   const MaxPool2dOptions& options = {});
Tensor max_pool2d(const Tensor& input, IntPair kernel_size, const MaxPool2dOptions& options = {});
// Scatters grad_output into a zero tensor of input_shape through indices (Index error for an
// index outside the plane).
Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& indices,
                           const Shape& input_shape);
struct AvgPool2dOptions {
  OX_NAMED_FIELDS_ONLY;
  OptionalIntPair stride = {};  // left out: the kernel size
  IntPair padding = 0;          // at most half the kernel; pads with 0
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override = std::nullopt;  // nonzero
};
Tensor avg_pool2d(const Tensor& input, IntPair kernel_size, const AvgPool2dOptions& options = {});
Tensor avg_pool2d_backward(const Tensor& grad_output, const Shape& input_shape, IntPair kernel_size,
                           const AvgPool2dOptions& options = {});
// Window of output o along a dim of size n: [floor(o * n / out), ceil((o + 1) * n / out)).
Tensor adaptive_avg_pool2d(const Tensor& input, IntPair output_size);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Shape& input_shape);

// ---- Indexing (PyTorch semantics; docs/OPS.md "Indexing") --------------------------------
// Index tensors are i64 or i32. An index out of range is an Index error naming the value and
// the size; nothing is written then. gather, index_select, index_add, scatter* and embedding
// refuse negative indices; take and index_put count them from the end.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);  // index 0-d or 1-d
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);        // shape of index
// out = x with out[..., index[i], ...] (along dim) set / combined with src[i]. index has x's
// number of dims and fits in src, and in x outside `dim`. Duplicate indices: updates apply in
// row-major order of index (Assign: the last wins), the same at any thread count.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// reduce: "sum", "prod", "amax", "amin" or "mean" (integers: floor division); include_self
// false leaves x's own value out wherever something is scattered.
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self = true);
// out = x with out[..., index[i], ...] += alpha * source[..., i, ...] along dim.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
// x[indices] = values (or +=, with accumulate). indices[k] indexes dim k (an undefined tensor
// takes the whole dim; a bool mask covers as many dims as it has); values (of x's dtype)
// broadcast to the indexing result.
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
Tensor masked_select(const Tensor& x, const Tensor& mask);  // 1-d; x and mask broadcast
Tensor nonzero(const Tensor& x);                            // [n, x.dim()] i64, row-major
Tensor take(const Tensor& x, const Tensor& index);          // x as 1-d, shape of index
// i64 [..., num_classes]; -1 takes the largest class + 1.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);
// Rows of weight [num_embeddings, dim]: shape indices.shape + [dim]. padding_idx only matters
// to the gradient; it is checked here.
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);
// In place (x returned); x must not be an expanded tensor.
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self = true);
Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = 1);
Tensor& index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate = false);

// ---- Operators (at least one tensor operand) ---------------------------------------------
Tensor operator-(const Tensor& x);
Tensor operator~(const Tensor& x);
#define OX_DECLARE_BINARY_OPERATOR(sym)                  \
  Tensor operator sym(const Tensor& a, const Tensor& b); \
  Tensor operator sym(const Tensor& a, const Scalar& b); \
  Tensor operator sym(const Scalar& a, const Tensor& b);
OX_DECLARE_BINARY_OPERATOR(+)
OX_DECLARE_BINARY_OPERATOR(-)
OX_DECLARE_BINARY_OPERATOR(*)
OX_DECLARE_BINARY_OPERATOR(/)
OX_DECLARE_BINARY_OPERATOR(%)
OX_DECLARE_BINARY_OPERATOR(==)
OX_DECLARE_BINARY_OPERATOR(!=)
OX_DECLARE_BINARY_OPERATOR(<)
OX_DECLARE_BINARY_OPERATOR(<=)
OX_DECLARE_BINARY_OPERATOR(>)
OX_DECLARE_BINARY_OPERATOR(>=)
OX_DECLARE_BINARY_OPERATOR(&)
OX_DECLARE_BINARY_OPERATOR(|)
OX_DECLARE_BINARY_OPERATOR(^)
#undef OX_DECLARE_BINARY_OPERATOR
Tensor& operator+=(Tensor& a, const TensorOrScalar& b);
Tensor& operator-=(Tensor& a, const TensorOrScalar& b);
Tensor& operator*=(Tensor& a, const TensorOrScalar& b);
Tensor& operator/=(Tensor& a, const TensorOrScalar& b);

}  // namespace ox
