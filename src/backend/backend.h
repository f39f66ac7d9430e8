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

// Elementwise op codes. Every backend implements each as one functor over its kernel template.
enum class UnaryOp : uint8_t {
  // Any numeric dtype, result in the input dtype.
  Neg,
  Abs,
  Sign,
  Square,
  // Floating dtypes only (the op layer converts integer inputs to f32 first).
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Sigmoid,
  LogSigmoid,
  Relu,
  LeakyRelu,
  Elu,
  GeluErf,
  GeluTanh,
  Silu,
  Softplus,
  Mish,
  Erf,
  Erfc,
  Floor,
  Ceil,
  Round,
  Trunc,
  Clamp,
  NanToNum,
  // Any dtype in, bool out.
  IsNan,
  IsInf,
  IsFinite,
  LogicalNot,
  // Integer and bool dtypes.
  BitwiseNot,
};
// Parameters of the ops that take them: LeakyRelu slope a; Elu alpha a; Softplus beta a,
// threshold b; Clamp lo a, hi b; NanToNum nan a, posinf b, neginf c.
struct UnaryParams {
  double a = 0, b = 0, c = 0;
};

enum class BinaryOp : uint8_t {
  // Result in the (common) input dtype.
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  TruncDiv,
  Remainder,
  Fmod,
  Pow,
  Atan2,
  Maximum,
  Minimum,
  Hypot,
  LogAddExp,
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  // Result bool.
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr,
  LogicalXor,
};
constexpr bool binary_returns_bool(BinaryOp op) { return op >= BinaryOp::Eq; }

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceType device_type() const = 0;
  virtual BackendInfo info() const = 0;
  virtual int device_count() const = 0;
  virtual Allocator& allocator(int device_index) = 0;

  // dst[i] = convert(src[i]) for arrays of one shape, any strides and dtypes. A copy between
  // this backend's device and the CPU is this backend's job.
  virtual void copy(const StridedArray& dst, const StridedArray& src) = 0;
  virtual void fill(const StridedArray& dst, const Scalar& value) = 0;
  // Contiguous 1-d dst: start + i * step, in i64 for integer dtypes, f64 otherwise.
  virtual void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) = 0;
  // Contiguous 1-d dst of n >= 2 points from start to end, both ends exact.
  virtual void linspace(const StridedArray& dst, double start, double end) = 0;
  // Contiguous dst; element i (row-major) reads the Philox words philox.h assigns it.
  virtual void random(const StridedArray& dst, const RandomSpec& spec) = 0;
  // Contiguous dst of the same shape as contiguous p: 1 where uniform < p, else 0.
  virtual void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                         uint64_t first_block) = 0;
  // Contiguous 1-d i64/i32/... dst: a Fisher-Yates shuffle of 0..n-1 (philox::bits64).
  virtual void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) = 0;

  // dst = op(src); one shape, any strides; src and dst share a dtype except for the ops that
  // return bool. dst may be src itself (in-place), never a partial overlap.
  virtual void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
                     const UnaryParams& params) = 0;
  // dst = op(a, b) (Add/Sub: a + alpha * b); a, b expanded to dst's shape (stride 0 where they
  // broadcast) and of one dtype; dst of that dtype, or bool for comparisons and logical ops.
  virtual void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a,
                      const StridedArray& b, double alpha) = 0;
  // dst = cond ? a : b; cond bool; a, b and dst of one dtype; all of dst's shape.
  virtual void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
                     const StridedArray& b) = 0;
};

// The registry. The CPU backend is always present; others register when built and usable.
Backend& backend_for(DeviceType type, const char* op);
Backend& backend_for(Device device, const char* op);
Backend* find_backend(DeviceType type);
void register_backend(std::unique_ptr<Backend> backend);

}  // namespace ox
