#pragma once
// The elementwise op tables: every unary and binary op in one row each. From them come the
// UnaryOp / BinaryOp codes, their names, their dtype classes (which the op layer reads to
// promote or refuse dtypes) and each backend's dispatch (the CPU's in backend/cpu/unary.cpp and
// binary.cpp). The scalar math of each row is the functor of the same name in core/ops/
// (unary_math.h, binary_math.h), shared by every backend.
//
// A new elementwise op: one row here, its functor in core/ops/, its public function (declared
// in include/oxmera/ops.h, defined in src/ops/unary.cpp or binary.cpp with its vjp), its node
// name in src/autograd/op_list.cpp when differentiable, and its tests. docs/ARCHITECTURE.md.

#include <cstdint>

#include "oxmera/core/dtype.h"

namespace ox {

// Which dtypes an op takes, and what it makes of them. The op layer applies the rule; a kernel
// only ever sees dtypes its class takes (others are internal errors).
enum class DTypeClass : uint8_t {
  Numeric,         // integers and floats, result of the input dtype; bool refused
  NumericOrBool,   // the same, and bool computed logically (add: or, mul: and, ...)
  Floating,        // floats; integer and bool inputs are converted to f32 first
  FloatingOrCopy,  // floats; integer and bool inputs are returned unchanged (a copy)
  IntegralOrBool,  // integers and bool; floats refused
  AnyToBool,       // every dtype, result bool
};

// Whether the kernels of an op of class c take elements of dtype dt.
constexpr bool class_takes(DTypeClass c, DType dt) {
  switch (c) {
    case DTypeClass::Numeric:
      return dt != kBool;
    case DTypeClass::Floating:
    case DTypeClass::FloatingOrCopy:
      return is_floating(dt);
    case DTypeClass::IntegralOrBool:
      return !is_floating(dt);
    case DTypeClass::NumericOrBool:
    case DTypeClass::AnyToBool:
      return true;
  }
  return false;
}

// X(code, "name", dtype class, functor). The name is the public op's, as errors and autograd
// nodes show it (gelu's two forms share one; div with a rounding mode says "div").
// clang-format off
#define OX_UNARY_OPS(X)                                      \
  X(Neg,        "neg",         Numeric,        Neg)          \
  X(Abs,        "abs",         Numeric,        Abs)          \
  X(Sign,       "sign",        Numeric,        Sign)         \
  X(Square,     "square",      Numeric,        Square)       \
  X(Exp,        "exp",         Floating,       Exp)          \
  X(Exp2,       "exp2",        Floating,       Exp2)         \
  X(Expm1,      "expm1",       Floating,       Expm1)        \
  X(Log,        "log",         Floating,       Log)          \
  X(Log2,       "log2",        Floating,       Log2)         \
  X(Log10,      "log10",       Floating,       Log10)        \
  X(Log1p,      "log1p",       Floating,       Log1p)        \
  X(Sqrt,       "sqrt",        Floating,       Sqrt)         \
  X(Rsqrt,      "rsqrt",       Floating,       Rsqrt)        \
  X(Reciprocal, "reciprocal",  Floating,       Reciprocal)   \
  X(Sin,        "sin",         Floating,       Sin)          \
  X(Cos,        "cos",         Floating,       Cos)          \
  X(Tan,        "tan",         Floating,       Tan)          \
  X(Asin,       "asin",        Floating,       Asin)         \
  X(Acos,       "acos",        Floating,       Acos)         \
  X(Atan,       "atan",        Floating,       Atan)         \
  X(Sinh,       "sinh",        Floating,       Sinh)         \
  X(Cosh,       "cosh",        Floating,       Cosh)         \
  X(Tanh,       "tanh",        Floating,       Tanh)         \
  X(Sigmoid,    "sigmoid",     Floating,       Sigmoid)      \
  X(LogSigmoid, "logsigmoid",  Floating,       LogSigmoid)   \
  X(Relu,       "relu",        Numeric,        Relu)         \
  X(LeakyRelu,  "leaky_relu",  Floating,       LeakyRelu)    \
  X(Elu,        "elu",         Floating,       Elu)          \
  X(GeluErf,    "gelu",        Floating,       GeluErf)      \
  X(GeluTanh,   "gelu",        Floating,       GeluTanh)     \
  X(Silu,       "silu",        Floating,       Silu)         \
  X(Softplus,   "softplus",    Floating,       Softplus)     \
  X(Mish,       "mish",        Floating,       Mish)         \
  X(Erf,        "erf",         Floating,       Erf)          \
  X(Erfc,       "erfc",        Floating,       Erfc)         \
  X(Floor,      "floor",       FloatingOrCopy, Floor)        \
  X(Ceil,       "ceil",        FloatingOrCopy, Ceil)         \
  X(Round,      "round",       FloatingOrCopy, Round)        \
  X(Trunc,      "trunc",       FloatingOrCopy, Trunc)        \
  X(Clamp,      "clamp",       Numeric,        Clamp)        \
  X(NanToNum,   "nan_to_num",  FloatingOrCopy, NanToNum)     \
  X(IsNan,      "isnan",       AnyToBool,      IsNan)        \
  X(IsInf,      "isinf",       AnyToBool,      IsInf)        \
  X(IsFinite,   "isfinite",    AnyToBool,      IsFinite)     \
  X(LogicalNot, "logical_not", AnyToBool,      LogicalNot)   \
  X(BitwiseNot, "bitwise_not", IntegralOrBool, BitwiseNot)

// Add and Sub take alpha: a op alpha * b (binary_takes_alpha). The gelu_backward rows are
// gelu's gradient g * gelu'(x) in one pass (a = g, b = x), as PyTorch's gelu_backward;
// relu_backward is relu's, g where the result y > 0 and 0 elsewhere (a = g, b = y).
#define OX_BINARY_OPS(X)                                     \
  X(Add,        "add",          NumericOrBool,  Add)         \
  X(Sub,        "sub",          Numeric,        Sub)         \
  X(Mul,        "mul",          NumericOrBool,  Mul)         \
  X(Div,        "div",          Floating,       Div)         \
  X(FloorDiv,   "floor_divide", Numeric,        FloorDivide) \
  X(TruncDiv,   "div",          Numeric,        TruncDivide) \
  X(Remainder,  "remainder",    Numeric,        Remainder)   \
  X(Fmod,       "fmod",         Numeric,        Fmod)        \
  X(Pow,        "pow",          Numeric,        Pow)         \
  X(Atan2,      "atan2",        Floating,       Atan2)       \
  X(Maximum,    "maximum",      NumericOrBool,  Maximum)     \
  X(Minimum,    "minimum",      NumericOrBool,  Minimum)     \
  X(Hypot,      "hypot",        Floating,       Hypot)       \
  X(LogAddExp,  "logaddexp",    Floating,       LogAddExp)   \
  X(GeluErfBackward,  "gelu_backward", Floating,  GeluErfBackward)  \
  X(GeluTanhBackward, "gelu_backward", Floating,  GeluTanhBackward) \
  X(ReluBackward,     "relu_backward", Numeric,   ReluBackward)     \
  X(BitwiseAnd, "bitwise_and",  IntegralOrBool, BitwiseAnd)  \
  X(BitwiseOr,  "bitwise_or",   IntegralOrBool, BitwiseOr)   \
  X(BitwiseXor, "bitwise_xor",  IntegralOrBool, BitwiseXor)  \
  X(Eq,         "eq",           AnyToBool,      Eq)          \
  X(Ne,         "ne",           AnyToBool,      Ne)          \
  X(Lt,         "lt",           AnyToBool,      Lt)          \
  X(Le,         "le",           AnyToBool,      Le)          \
  X(Gt,         "gt",           AnyToBool,      Gt)          \
  X(Ge,         "ge",           AnyToBool,      Ge)          \
  X(LogicalAnd, "logical_and",  AnyToBool,      LogicalAnd)  \
  X(LogicalOr,  "logical_or",   AnyToBool,      LogicalOr)   \
  X(LogicalXor, "logical_xor",  AnyToBool,      LogicalXor)
// clang-format on

#define OX_ELEMENTWISE_CODE(code, name, cls, functor) code,
#define OX_ELEMENTWISE_NAME(code, name, cls, functor) name,
#define OX_ELEMENTWISE_CLASS(code, name, cls, functor) DTypeClass::cls,
#define OX_ELEMENTWISE_COUNT(code, name, cls, functor) +1

enum class UnaryOp : uint8_t { OX_UNARY_OPS(OX_ELEMENTWISE_CODE) };
enum class BinaryOp : uint8_t { OX_BINARY_OPS(OX_ELEMENTWISE_CODE) };
inline constexpr int kUnaryOpCount = 0 OX_UNARY_OPS(OX_ELEMENTWISE_COUNT);
inline constexpr int kBinaryOpCount = 0 OX_BINARY_OPS(OX_ELEMENTWISE_COUNT);

namespace detail {
inline constexpr const char* kUnaryNames[] = {OX_UNARY_OPS(OX_ELEMENTWISE_NAME)};
inline constexpr DTypeClass kUnaryClasses[] = {OX_UNARY_OPS(OX_ELEMENTWISE_CLASS)};
inline constexpr const char* kBinaryNames[] = {OX_BINARY_OPS(OX_ELEMENTWISE_NAME)};
inline constexpr DTypeClass kBinaryClasses[] = {OX_BINARY_OPS(OX_ELEMENTWISE_CLASS)};
}  // namespace detail

#undef OX_ELEMENTWISE_CODE
#undef OX_ELEMENTWISE_NAME
#undef OX_ELEMENTWISE_CLASS
#undef OX_ELEMENTWISE_COUNT

constexpr const char* unary_name(UnaryOp op) { return detail::kUnaryNames[int(op)]; }
constexpr DTypeClass unary_class(UnaryOp op) { return detail::kUnaryClasses[int(op)]; }
constexpr const char* binary_name(BinaryOp op) { return detail::kBinaryNames[int(op)]; }
constexpr DTypeClass binary_class(BinaryOp op) { return detail::kBinaryClasses[int(op)]; }

constexpr bool binary_returns_bool(BinaryOp op) {
  return binary_class(op) == DTypeClass::AnyToBool;
}
constexpr bool binary_takes_alpha(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub;
}

// Parameters of the unary ops that take them: LeakyRelu slope a; Elu alpha a; Softplus beta a,
// threshold b; Clamp lo a, hi b; NanToNum nan a, posinf b, neginf c. Each functor converts the
// ones it reads to its compute type.
struct UnaryParams {
  double a = 0, b = 0, c = 0;
};

}  // namespace ox
