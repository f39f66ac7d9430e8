#pragma once
// What one thread of a unary or binary kernel (kernels/elementwise.cu) does to one element:
// load the storage type as its compute type (f32 for f16/bf16), apply the row's shared functor
// (core/ops/), store as the CPU's store converts (kernels/convert.cuh). OX_HOST_DEVICE, so the
// host tests (tests/backend/cuda_elementwise_test.cpp) run it against the CPU backend.

#include <type_traits>

#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/rounding.cuh"
#include "core/elementwise_ops.h"
#include "core/host_device.h"
#include "core/ops/binary_math.h"
#include "core/ops/unary_math.h"

namespace ox::cuda::kernels::ew {

// a * b rounded on its own. nvcc contracts a * b + c into one fused multiply-add by default
// (--fmad=true), which the CPU backend (built without FMA) never does; the _rn intrinsics are
// never contracted. Integers wrap.
template <class C>
OX_HOST_DEVICE inline C mul_rounded(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return rn::mul(a, b);
  } else {
    return ox::elementwise::Mul<C>{}(a, b);
  }
}

// elementwise::WithAlpha, F(x, alpha * y), with the product rounded before F adds it.
template <template <class> class F, class C>
struct WithAlphaRounded {
  C alpha;
  OX_HOST_DEVICE explicit WithAlphaRounded(double a) : alpha(ox::elementwise::alpha_as<C>(a)) {}
  OX_HOST_DEVICE C operator()(C x, C y) const { return F<C>{}(x, mul_rounded(alpha, y)); }
};

// dst element = op(src element) of row kOp (functor F) for storage type T.
template <UnaryOp kOp, template <class> class F, class T>
struct UnaryElement {
  using C = compute_of<T>;
  using Out = std::conditional_t<unary_class(kOp) == DTypeClass::AnyToBool, bool, T>;
  F<C> f;
  OX_HOST_DEVICE explicit UnaryElement(const UnaryParams& p)
      : f(ox::elementwise::make_unary<F, C>(p)) {}
  OX_HOST_DEVICE Out operator()(T x) const { return store_value<Out>(f(load_value(x))); }
};

// Whether row kOp of storage type T multiplies b by alpha, as the CPU's binary_loop decides:
// Add and Sub with alpha != 1, except for bool, which ignores alpha.
template <BinaryOp kOp, class T>
OX_HOST_DEVICE inline bool binary_uses_alpha(double alpha) {
  if constexpr (binary_takes_alpha(kOp) && !std::is_same_v<compute_of<T>, bool>) {
    return alpha != 1;
  } else {
    return false;
  }
}

// dst element = op(a element, b element) of row kOp (functor F) for storage type T; with
// kAlpha, through WithAlphaRounded (only for the rows and types binary_uses_alpha names).
template <BinaryOp kOp, template <class> class F, class T, bool kAlpha>
struct BinaryElement {
  using C = compute_of<T>;
  using Out = std::conditional_t<binary_returns_bool(kOp), bool, T>;
  using Functor = std::conditional_t<kAlpha, WithAlphaRounded<F, C>, F<C>>;
  Functor f;
  OX_HOST_DEVICE explicit BinaryElement(double alpha) : f(make(alpha)) {}
  OX_HOST_DEVICE Out operator()(T a, T b) const {
    return store_value<Out>(f(load_value(a), load_value(b)));
  }

 private:
  OX_HOST_DEVICE static Functor make(double alpha) {
    if constexpr (kAlpha) {
      return Functor(alpha);
    } else {
      return Functor{};
    }
  }
};

}  // namespace ox::cuda::kernels::ew
