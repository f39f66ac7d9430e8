// The CUDA elementwise family's host logic, on the CPU: the element conversion the copy and
// elementwise kernels use (kernels/convert.cuh) against the CPU backend's for every pair of
// dtypes, the copy plans (backend/cuda/copy_plan.h), and that the embedded PTX defines every
// kernel the launchers can ask for (a missing one would be an Internal error on a GPU only).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cpu/convert.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"
#include "backend/cuda/copy_plan.h"
#include "backend/cuda/elementwise_kernels.h"
#include "backend/cuda/image.h"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/elementwise_ops.cuh"
#include "backend/cuda_ptx.h"
#include "core/dispatch.h"

namespace {

namespace cuda = ox::cuda::detail;
namespace ew = ox::cuda::kernels::ew;
using ox::DType;

// ---- Element conversion ------------------------------------------------------------------

// The kernels' storage type of the CPU's element type T.
template <class T>
struct EwType {
  using type = T;
};
template <>
struct EwType<ox::Half> {
  using type = ew::F16;
};
template <>
struct EwType<ox::BFloat16> {
  using type = ew::BF16;
};

// Values that meet every conversion rule: fractions both ways (truncation, ties for the 16-bit
// roundings), the edges of every integer width, values past them, 16-bit float overflow and
// subnormals, infinities and NaN.
std::vector<double> interesting_doubles() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0,
          -0.0,
          0.5,
          -0.5,
          1.0,
          -1.0,
          1.5,
          -1.5,
          2.5,
          -2.7,
          100.9,
          127.0,
          127.9,
          128.0,
          -128.0,
          -129.0,
          255.0,
          255.5,
          256.0,
          300.0,
          -300.0,
          32767.0,
          32768.0,
          -32769.0,
          65504.0,
          65519.0,
          65520.0,
          1e5,
          2147483647.0,
          2147483648.0,
          -2147483648.0,
          -2147483649.0,
          4294967296.5,
          9.2233720368547758e18,
          -9.2233720368547758e18,
          1e19,
          -1e19,
          1e30,
          3.4e38,
          1e300,
          -1e300,
          1e-5,
          6e-8,
          1e-40,
          1.00048828125,    // f16 halfway case
          1.001953125,      // bf16 halfway region
          1.0039062500001,  // bf16 just above halfway
          inf,
          -inf,
          std::numeric_limits<double>::quiet_NaN(),
          -std::numeric_limits<double>::quiet_NaN()};
}
std::vector<int64_t> interesting_ints() {
  return {0,
          1,
          -1,
          127,
          128,
          -129,
          255,
          256,
          -256,
          65535,
          65536,
          2147483647,
          int64_t(2147483648),
          -int64_t(2147483649),
          int64_t(1) << 53,
          (int64_t(1) << 53) + 1,
          std::numeric_limits<int64_t>::max(),
          std::numeric_limits<int64_t>::min()};
}

// Elements of type T in plain bytes (std::vector<bool> has no bool elements to address).
template <class T>
class Buffer {
 public:
  explicit Buffer(size_t n = 0) : bytes_(n * sizeof(T)), n_(n) {}
  void push_back(T v) {
    bytes_.resize((n_ + 1) * sizeof(T));
    std::memcpy(bytes_.data() + n_ * sizeof(T), &v, sizeof v);
    ++n_;
  }
  size_t size() const { return n_; }
  T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  T& operator[](size_t i) { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }

 private:
  std::vector<unsigned char> bytes_;
  size_t n_;
};

// Every source element of dtype From made from the interesting values, as the CPU makes them.
template <class From>
Buffer<From> sources() {
  Buffer<From> out;
  for (double v : interesting_doubles()) out.push_back(ox::cpu::convert<From>(v));
  for (int64_t v : interesting_ints()) out.push_back(ox::cpu::convert<From>(v));
  return out;
}

TEST(CudaElementwise, ElementConversionIsTheCpusForEveryPairOfDtypes) {
  int checked = 0;
  for (DType to : ox::kAllDTypes) {
    for (DType from : ox::kAllDTypes) {
      ox::dispatch_dtype(to, [&]<class To>() {
        ox::dispatch_dtype(from, [&]<class From>() {
          using EwTo = typename EwType<To>::type;
          using EwFrom = typename EwType<From>::type;
          static_assert(sizeof(EwTo) == sizeof(To) && sizeof(EwFrom) == sizeof(From));
          for (const From v : sources<From>()) {
            const To want = ox::cpu::convert<To>(v);
            EwFrom in;
            std::memcpy(&in, &v, sizeof v);
            const EwTo got = ew::convert_element<EwTo>(in);
            ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0)
                << ox::dtype_name(from) << " -> " << ox::dtype_name(to) << " of "
                << double(ox::cpu::convert<double>(v));
            ++checked;
          }
        });
      });
    }
  }
  EXPECT_GT(checked, 100 * 60);
}

// The compute type the unary and binary kernels load into and store from: f32 for 16-bit
// floats, rounding back as the CPU's store does.
TEST(CudaElementwise, SixteenBitFloatsComputeInF32AndRoundAsTheCpu) {
  static_assert(std::is_same_v<ew::compute_of<ew::F16>, float>);
  static_assert(std::is_same_v<ew::compute_of<ew::BF16>, float>);
  static_assert(std::is_same_v<ew::compute_of<int8_t>, int8_t>);
  for (double v : interesting_doubles()) {
    const float f = float(v);
    const ox::Half h(f);
    const ox::BFloat16 b(f);
    EXPECT_EQ(ew::store_value<ew::F16>(f).bits, h.bits) << v;
    EXPECT_EQ(ew::store_value<ew::BF16>(f).bits, b.bits) << v;
    const float back = ew::load_value(ew::F16{h.bits});
    EXPECT_TRUE(back == float(h) || (std::isnan(back) && std::isnan(float(h)))) << v;
    // A float compute value stored into a bool dst (a NaN is true).
    EXPECT_EQ(ew::store_value<bool>(f), ox::cpu::convert<bool>(f)) << v;
  }
}

// ---- Unary and binary elements ---------------------------------------------------------------
// A kernel thread's work on one element (ew::UnaryElement, ew::BinaryElement) against the CPU
// backend's unary and binary over the same values. The functors are shared, so this checks what
// the kernels add around them: the result dtype, 16-bit loads and stores, parameters and alpha.
// Bitwise, except for the rows the CPU computes with its vector approximations (simd::has_unary).

template <class T>
ox::StridedArray host_array(Buffer<T>& v) {
  return {v.data(), {int64_t(v.size())}, {1}, ox::dtype_of<T>, ox::Device::cpu()};
}

template <class T>
std::string describe(T v) {
  return std::to_string(double(ox::cpu::convert<double>(v)));
}

// The same bits, or both NaN: which NaN an operation on NaNs returns depends on the operand order
// the compiler picked (x86), and GPUs return the canonical NaN.
template <class Ew>
bool same_result(const Ew& got, const Ew& want) {
  if (std::memcmp(&got, &want, sizeof got) == 0) return true;
  if constexpr (std::is_floating_point_v<ew::compute_of<Ew>>) {
    return std::isnan(double(ew::load_value(got))) && std::isnan(double(ew::load_value(want)));
  } else {
    return false;
  }
}

const ox::UnaryParams kParams{-2.5, 100.5, -7};

template <ox::UnaryOp kOp, template <class> class F>
void check_unary_row(int& checked) {
  for (DType dt : ox::kAllDTypes) {
    if (!ox::class_takes(ox::unary_class(kOp), dt)) continue;
    ox::dispatch_dtype(dt, [&]<class T>() {
      if constexpr (ox::class_takes(ox::unary_class(kOp), ox::dtype_of<T>)) {
        using E = ew::UnaryElement<kOp, F, typename EwType<T>::type>;
        using Out = std::conditional_t<std::is_same_v<typename E::Out, bool>, bool, T>;
        Buffer<T> src = sources<T>();
        Buffer<Out> want(src.size());
        ox::cpu::unary(kOp, host_array(want), host_array(src), kParams);
        const E op(kParams);
        for (size_t i = 0; i < src.size(); ++i) {
          typename EwType<T>::type in;
          std::memcpy(&in, &src[i], sizeof in);
          const auto got = op(in);
          static_assert(sizeof got == sizeof(Out));
          if constexpr (ox::cpu::simd::has_unary(kOp, ox::dtype_of<T>)) {
            continue;  // the CPU's vector approximation: not the functor, not bitwise
          }
          typename E::Out want_ew;
          std::memcpy(&want_ew, &want[i], sizeof want_ew);
          ASSERT_TRUE(same_result(got, want_ew))
              << ox::unary_name(kOp) << " " << ox::dtype_name(dt) << " of " << describe(src[i]);
          ++checked;
        }
      }
    });
  }
}

TEST(CudaElementwise, UnaryElementsAreTheCpusResults) {
  int checked = 0;
#define OX_CHECK_ROW(code, name, cls, functor) \
  check_unary_row<ox::UnaryOp::code, ox::elementwise::functor>(checked);
  OX_UNARY_OPS(OX_CHECK_ROW)
#undef OX_CHECK_ROW
  EXPECT_GT(checked, 30 * 4 * 60);
}

template <ox::BinaryOp kOp, template <class> class F>
void check_binary_row(int& checked) {
  for (DType dt : ox::kAllDTypes) {
    if (!ox::class_takes(ox::binary_class(kOp), dt)) continue;
    ox::dispatch_dtype(dt, [&]<class T>() {
      if constexpr (ox::class_takes(ox::binary_class(kOp), ox::dtype_of<T>)) {
        using EwT = typename EwType<T>::type;
        using Out = std::conditional_t<ox::binary_returns_bool(kOp), bool, T>;
        const Buffer<T> values = sources<T>();
        Buffer<T> a, b;
        for (const T x : values)
          for (const T y : values) a.push_back(x), b.push_back(y);
        for (const double alpha : {1.0, 2.5, -2.0}) {
          Buffer<Out> want(a.size());
          ox::cpu::binary(kOp, host_array(want), host_array(a), host_array(b), alpha);
          const bool with_alpha = ew::binary_uses_alpha<kOp, EwT>(alpha);
          const ew::BinaryElement<kOp, F, EwT, false> plain(alpha);
          for (size_t i = 0; i < a.size(); ++i) {
            EwT x, y;
            std::memcpy(&x, &a[i], sizeof x);
            std::memcpy(&y, &b[i], sizeof y);
            typename ew::BinaryElement<kOp, F, EwT, false>::Out got = plain(x, y);
            if constexpr (ox::binary_takes_alpha(kOp) && !std::is_same_v<T, bool>) {
              if (with_alpha) got = ew::BinaryElement<kOp, F, EwT, true>(alpha)(x, y);
            }
            static_assert(sizeof got == sizeof(Out));
            if constexpr (ox::cpu::simd::has_binary(kOp, ox::dtype_of<T>)) {
              continue;  // the CPU's vector approximation: not the functor, not bitwise
            }
            decltype(got) want_ew;
            std::memcpy(&want_ew, &want[i], sizeof want_ew);
            ASSERT_TRUE(same_result(got, want_ew))
                << ox::binary_name(kOp) << " " << ox::dtype_name(dt) << " of " << describe(a[i])
                << ", " << describe(b[i]) << " alpha " << alpha;
            ++checked;
          }
        }
      }
    });
  }
}

TEST(CudaElementwise, BinaryElementsAreTheCpusResults) {
  int checked = 0;
#define OX_CHECK_ROW(code, name, cls, functor) \
  check_binary_row<ox::BinaryOp::code, ox::elementwise::functor>(checked);
  OX_BINARY_OPS(OX_CHECK_ROW)
#undef OX_CHECK_ROW
  EXPECT_GT(checked, 26 * 4 * 3 * 60 * 60);
}

// ---- Copy plans ----------------------------------------------------------------------------

ox::StridedArray array(ox::Shape shape, ox::Strides strides, DType dtype, ox::Device device) {
  return {nullptr, std::move(shape), std::move(strides), dtype, device};
}

TEST(CudaElementwise, CopyPlansPickTheRouteAndTheStages) {
  const ox::Device cpu = ox::Device::cpu();
  const ox::Device gpu0(ox::DeviceType::CUDA, 0), gpu1(ox::DeviceType::CUDA, 1);
  const auto contiguous = [](DType dt, ox::Device d) { return array({2, 3}, {3, 1}, dt, d); };
  const auto transposed = [](DType dt, ox::Device d) { return array({2, 3}, {1, 2}, dt, d); };
  using cuda::CopyRoute;

  struct Case {
    ox::StridedArray dst, src;
    CopyRoute route;
    bool src_stage, dst_stage;
  };
  const std::vector<Case> cases = {
      // One device: a memcpy for contiguous same-dtype arrays, else the kernel.
      {contiguous(ox::kF32, gpu0), contiguous(ox::kF32, gpu0), CopyRoute::OnDevice, false, false},
      {contiguous(ox::kF16, gpu0), contiguous(ox::kF32, gpu0), CopyRoute::OnDevice, true, false},
      {transposed(ox::kF32, gpu0), contiguous(ox::kF32, gpu0), CopyRoute::OnDevice, false, true},
      // Uploads: the host converts and contiguizes, the device scatters.
      {contiguous(ox::kF32, gpu0), contiguous(ox::kF32, cpu), CopyRoute::Upload, false, false},
      {contiguous(ox::kF32, gpu0), transposed(ox::kF32, cpu), CopyRoute::Upload, true, false},
      {contiguous(ox::kI64, gpu1), contiguous(ox::kI32, cpu), CopyRoute::Upload, true, false},
      {transposed(ox::kF32, gpu1), contiguous(ox::kF32, cpu), CopyRoute::Upload, false, true},
      // Downloads: the device converts and contiguizes, the host scatters.
      {contiguous(ox::kF32, cpu), contiguous(ox::kF32, gpu0), CopyRoute::Download, false, false},
      {contiguous(ox::kF64, cpu), contiguous(ox::kF32, gpu0), CopyRoute::Download, true, false},
      {transposed(ox::kBool, cpu), transposed(ox::kBool, gpu0), CopyRoute::Download, true, true},
      // Between devices.
      {contiguous(ox::kU8, gpu1), contiguous(ox::kU8, gpu0), CopyRoute::Peer, false, false},
      {transposed(ox::kU8, gpu0), contiguous(ox::kI8, gpu1), CopyRoute::Peer, true, true},
      // Nothing to copy.
      {array({0, 3}, {3, 1}, ox::kF32, gpu0), array({0, 3}, {1, 0}, ox::kF64, cpu), CopyRoute::None,
       false, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const cuda::CopyPlan plan = cuda::plan_copy(cases[i].dst, cases[i].src);
    EXPECT_EQ(plan.route, cases[i].route) << "case " << i;
    EXPECT_EQ(plan.src_stage, cases[i].src_stage) << "case " << i;
    EXPECT_EQ(plan.dst_stage, cases[i].dst_stage) << "case " << i;
    EXPECT_EQ(plan.memcpy(), !cases[i].src_stage && !cases[i].dst_stage) << "case " << i;
  }
  // Broadcast sources (stride 0) are not contiguous: staged, never one memcpy.
  const cuda::CopyPlan broadcast =
      cuda::plan_copy(contiguous(ox::kF32, gpu0), array({2, 3}, {0, 1}, ox::kF32, gpu0));
  EXPECT_TRUE(broadcast.src_stage);
}

// ---- Every kernel the launchers can ask for is in the embedded PTX ---------------------------

TEST(CudaElementwise, EveryUnaryAndBinaryRowHasAKernelForEachDtypeOfItsClassAndNoOther) {
  const std::set<std::string> names = oxtest::ptx_kernels("elementwise");
  std::set<std::string> wanted;
  for (int op = 0; op < ox::kUnaryOpCount; ++op)
    for (DType dt : ox::kAllDTypes)
      if (ox::class_takes(ox::unary_class(ox::UnaryOp(op)), dt))
        wanted.insert(cuda::unary_kernel_name(ox::UnaryOp(op), dt));
  for (int op = 0; op < ox::kBinaryOpCount; ++op)
    for (DType dt : ox::kAllDTypes)
      if (ox::class_takes(ox::binary_class(ox::BinaryOp(op)), dt))
        wanted.insert(cuda::binary_kernel_name(ox::BinaryOp(op), dt));
  for (const char* w : {"1", "2", "4", "8"}) {
    wanted.insert(std::string("ox_where_w") + w);
    wanted.insert(std::string("ox_fill_strided_w") + w);
  }
  for (const std::string& name : wanted) EXPECT_TRUE(names.count(name)) << name << " is missing";
  for (const std::string& name : names)
    EXPECT_TRUE(wanted.count(name)) << name << " is defined but no launcher asks for it";
  EXPECT_EQ(cuda::unary_kernel_name(ox::UnaryOp::GeluTanh, ox::kBF16), "ox_unary_GeluTanh_bf16");
  EXPECT_EQ(cuda::binary_kernel_name(ox::BinaryOp::Eq, ox::kBool), "ox_binary_Eq_bool");
}

TEST(CudaElementwise, CopyHasAKernelForEveryPairAndFillForEveryDtype) {
  const std::set<std::string> copies = oxtest::ptx_kernels("copy");
  EXPECT_EQ(copies.size(), size_t(ox::kNumDTypes * ox::kNumDTypes));
  for (DType to : ox::kAllDTypes)
    for (DType from : ox::kAllDTypes) {
      const std::string name = cuda::copy_kernel_name(to, from);
      EXPECT_TRUE(copies.count(name)) << name << " is missing";
    }
  EXPECT_EQ(cuda::copy_kernel_name(ox::kF16, ox::kI64), "ox_copy_f16_i64");
  const std::set<std::string> fills = oxtest::ptx_kernels("fill");
  for (const char* w : {"1", "2", "4", "8"})
    EXPECT_TRUE(fills.count(std::string("ox_fill_w") + w)) << w;
  for (DType dt : ox::kAllDTypes) {
    std::string arange = "ox_arange_", linspace = "ox_linspace_";
    arange += ox::dtype_name(dt);
    linspace += ox::dtype_name(dt);
    EXPECT_TRUE(fills.count(arange)) << arange;
    EXPECT_TRUE(fills.count(linspace)) << linspace;
  }
}

}  // namespace
#endif  // OXMERA_TEST_WITH_CUDA
