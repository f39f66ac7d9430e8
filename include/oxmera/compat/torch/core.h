#pragma once
// The core of the LibTorch compatibility header (oxmera/compat/torch.h): namespace torch's
// tensor, dtype, device and op names over oxmera's, the autograd names, the loss functions of
// namespace torch (at::), save/load, seeding, and LibTorch's macros. docs/COMPAT.md.

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "oxmera/oxmera.h"

namespace torch {

// ---- Types and names -------------------------------------------------------------------------
using ox::Device;
using ox::DeviceType;
using ox::Generator;
using ox::Scalar;
using ox::Tensor;
using ScalarType = ox::DType;
using Dtype = ox::DType;
using IntArrayRef = ox::Shape;
using TensorList = std::vector<Tensor>;
using std::nullopt;  // LibTorch spells them torch::optional / torch::nullopt (c10's)
using std::optional;

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

inline constexpr ScalarType kFloat = ox::kF32;
inline constexpr ScalarType kFloat32 = ox::kF32;
inline constexpr ScalarType kDouble = ox::kF64;
inline constexpr ScalarType kFloat64 = ox::kF64;
inline constexpr ScalarType kHalf = ox::kF16;
inline constexpr ScalarType kFloat16 = ox::kF16;
inline constexpr ScalarType kBFloat16 = ox::kBF16;
inline constexpr ScalarType kLong = ox::kI64;
inline constexpr ScalarType kInt64 = ox::kI64;
inline constexpr ScalarType kInt = ox::kI32;
inline constexpr ScalarType kInt32 = ox::kI32;
inline constexpr ScalarType kShort = ox::kI16;
inline constexpr ScalarType kInt16 = ox::kI16;
inline constexpr ScalarType kChar = ox::kI8;
inline constexpr ScalarType kInt8 = ox::kI8;
inline constexpr ScalarType kByte = ox::kU8;
inline constexpr ScalarType kUInt8 = ox::kU8;
inline constexpr ScalarType kBool = ox::kBool;

// LibTorch's TensorOptions: implicit from a dtype, a device or a device type (so
// `torch::zeros({2}, torch::kLong)` and `torch::ones(3, device)` read as in LibTorch), chainable,
// and converting to oxmera's options. The factories below take it.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) { options_.dtype = dtype; }             // NOLINT
  TensorOptions(Device device) { options_.device = device; }              // NOLINT
  TensorOptions(DeviceType type) { options_.device = Device(type); }      // NOLINT
  TensorOptions(const ox::TensorOptions& options) : options_(options) {}  // NOLINT

  TensorOptions dtype(ScalarType dtype) const {
    return with([&](auto& o) { o.dtype = dtype; });
  }
  TensorOptions device(Device device) const {
    return with([&](auto& o) { o.device = device; });
  }
  TensorOptions requires_grad(bool requires_grad) const {
    return with([&](auto& o) { o.requires_grad = requires_grad; });
  }
  ScalarType dtype() const { return options_.dtype.value_or(ox::default_dtype()); }
  Device device() const { return options_.device.value_or(ox::default_device()); }
  bool requires_grad() const { return options_.requires_grad; }
  bool has_dtype() const { return options_.dtype.has_value(); }
  bool has_device() const { return options_.device.has_value(); }
  operator ox::TensorOptions() const { return options_; }  // NOLINT
  const ox::TensorOptions& ox() const { return options_; }

 private:
  template <class F>
  TensorOptions with(F set) const {
    TensorOptions out = *this;
    set(out.options_);
    return out;
  }
  ox::TensorOptions options_;
};
inline TensorOptions dtype(ScalarType dtype) { return TensorOptions(dtype); }
inline TensorOptions device(Device device) { return TensorOptions(device); }
inline TensorOptions requires_grad(bool requires_grad = true) {
  return TensorOptions().requires_grad(requires_grad);
}

// ---- Factories, with LibTorch's argument forms -------------------------------------------------
inline Tensor empty(const IntArrayRef& size, const TensorOptions& o = {}) {
  return ox::empty(size, o);
}
inline Tensor zeros(const IntArrayRef& size, const TensorOptions& o = {}) {
  return ox::zeros(size, o);
}
inline Tensor ones(const IntArrayRef& size, const TensorOptions& o = {}) {
  return ox::ones(size, o);
}
inline Tensor full(const IntArrayRef& size, const Scalar& value, const TensorOptions& o = {}) {
  return ox::full(size, value, o);
}
inline Tensor empty_like(const Tensor& like, const TensorOptions& o = {}) {
  return ox::empty_like(like, o);
}
inline Tensor zeros_like(const Tensor& like, const TensorOptions& o = {}) {
  return ox::zeros_like(like, o);
}
inline Tensor ones_like(const Tensor& like, const TensorOptions& o = {}) {
  return ox::ones_like(like, o);
}
inline Tensor full_like(const Tensor& like, const Scalar& value, const TensorOptions& o = {}) {
  return ox::full_like(like, value, o);
}
inline Tensor rand(const IntArrayRef& size, const TensorOptions& o = {}) {
  return ox::rand(size, o);
}
inline Tensor randn(const IntArrayRef& size, const TensorOptions& o = {}) {
  return ox::randn(size, o);
}
inline Tensor rand_like(const Tensor& like, const TensorOptions& o = {}) {
  return ox::rand_like(like, o);
}
inline Tensor randn_like(const Tensor& like, const TensorOptions& o = {}) {
  return ox::randn_like(like, o);
}
inline Tensor randint(int64_t high, const IntArrayRef& size, const TensorOptions& o = kLong) {
  return ox::randint(high, size, o);
}
inline Tensor randint(int64_t low, int64_t high, const IntArrayRef& size,
                      const TensorOptions& o = kLong) {
  return ox::randint(low, high, size, o);
}
inline Tensor randint_like(const Tensor& like, int64_t high, const TensorOptions& o = {}) {
  return ox::randint_like(like, 0, high, o);
}
inline Tensor randint_like(const Tensor& like, int64_t low, int64_t high,
                           const TensorOptions& o = {}) {
  return ox::randint_like(like, low, high, o);
}
inline Tensor randperm(int64_t n, const TensorOptions& o = kLong) { return ox::randperm(n, o); }
inline Tensor arange(const Scalar& end, const TensorOptions& o = {}) { return ox::arange(end, o); }
inline Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o = {}) {
  return ox::arange(start, end, 1, o);
}
inline Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
                     const TensorOptions& o = {}) {
  return ox::arange(start, end, step, o);
}
inline Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                       const TensorOptions& o = {}) {
  return ox::linspace(start.to_double(), end.to_double(), steps, o);
}
inline Tensor eye(int64_t n, const TensorOptions& o = {}) { return ox::eye(n, std::nullopt, o); }
inline Tensor eye(int64_t n, int64_t m, const TensorOptions& o = {}) { return ox::eye(n, m, o); }
inline Tensor scalar_tensor(const Scalar& value, const TensorOptions& o = {}) {
  return ox::scalar_tensor(value, o);
}
// torch::tensor: braced lists, std::vector or one number; as LibTorch, floating values take the
// default dtype (a std::vector<double> too), `int` values i64, other types their own.
namespace detail {
template <class T>
ox::TensorOptions tensor_options(const TensorOptions& o) {
  ox::TensorOptions out = o;
  if (!out.dtype)
    out.dtype = std::is_floating_point_v<T> ? ox::default_dtype()
                : std::is_same_v<T, int>    ? ox::kI64
                                            : ox::dtype_of<T>;
  return out;
}
}  // namespace detail
template <class T>
Tensor tensor(std::initializer_list<T> values, const TensorOptions& o = {}) {
  return ox::tensor(values, detail::tensor_options<T>(o));
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows, const TensorOptions& o = {}) {
  return ox::tensor(rows, detail::tensor_options<T>(o));
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> blocks,
              const TensorOptions& o = {}) {
  return ox::tensor(blocks, detail::tensor_options<T>(o));
}
template <class T>
Tensor tensor(const std::vector<T>& values, const TensorOptions& o = {}) {
  return ox::tensor(values, detail::tensor_options<T>(o));
}
template <class T>
requires std::is_arithmetic_v<T> Tensor tensor(T value, const TensorOptions& o = {}) {
  return ox::scalar_tensor(value, detail::tensor_options<T>(o));
}
// Memory the caller owns, as LibTorch's from_blob (the dtype from the options, f32 unless set).
inline Tensor from_blob(void* data, const IntArrayRef& sizes, const TensorOptions& o = {}) {
  return ox::from_blob(data, sizes, o.dtype(), {}, std::nullopt, o.device());
}
inline Tensor from_blob(void* data, const IntArrayRef& sizes, const IntArrayRef& strides,
                        const TensorOptions& o = {}) {
  return ox::from_blob(data, sizes, o.dtype(), {}, strides, o.device());
}
inline Tensor from_blob(void* data, const IntArrayRef& sizes,
                        const std::function<void(void*)>& deleter, const TensorOptions& o = {}) {
  return ox::from_blob(data, sizes, o.dtype(), deleter, std::nullopt, o.device());
}

// ---- Ops: the free functions of oxmera's op surface, by the same names -----------------------
using ox::abs;
using ox::acos;
using ox::adaptive_avg_pool2d;
using ox::adaptive_avg_pool2d_backward;
using ox::add;
using ox::addcdiv;
using ox::addcmul;
using ox::addmm;
using ox::all;
using ox::allclose;
using ox::amax;
using ox::amin;
using ox::any;
using ox::argmax;
using ox::argmin;
using ox::argsort;
using ox::asin;
using ox::atan;
using ox::atan2;
using ox::avg_pool2d;
using ox::avg_pool2d_backward;
using ox::baddbmm;
using ox::bernoulli;
using ox::bitwise_and;
using ox::bitwise_not;
using ox::bitwise_or;
using ox::bitwise_xor;
using ox::bmm;
using ox::cat;
using ox::ceil;
using ox::chunk;
using ox::clamp;
using ox::conv1d;
using ox::conv2d;
using ox::conv2d_input_grad;
using ox::conv2d_weight_grad;
using ox::conv_transpose2d;
using ox::cos;
using ox::cosh;
using ox::count_nonzero;
using ox::cross_entropy;
using ox::cross_entropy_backward;
using ox::cummax;
using ox::cummin;
using ox::cumprod;
using ox::cumsum;
using ox::default_generator;
using ox::div;
using ox::dot;
using ox::dropout;
using ox::einsum;
using ox::elu;
using ox::embedding;
using ox::eq;
using ox::equal;
using ox::erf;
using ox::erfc;
using ox::exp;
using ox::exp2;
using ox::expm1;
using ox::floor;
using ox::floor_divide;
using ox::fmod;
using ox::gather;
using ox::ge;
using ox::gelu;
using ox::gt;
using ox::hypot;
using ox::index_add;
using ox::index_put;
using ox::index_select;
using ox::isclose;
using ox::isfinite;
using ox::isinf;
using ox::isnan;
using ox::kthvalue;
using ox::layer_norm;
using ox::le;
using ox::leaky_relu;
using ox::lerp;
using ox::log;
using ox::log10;
using ox::log1p;
using ox::log2;
using ox::log_softmax;
using ox::log_softmax_backward;
using ox::logaddexp;
using ox::logical_and;
using ox::logical_not;
using ox::logical_or;
using ox::logical_xor;
using ox::logsigmoid;
using ox::logsumexp;
using ox::lt;
using ox::manual_seed;
using ox::masked_fill;
using ox::masked_select;
using ox::matmul;
using ox::max;
using ox::max_pool2d;
using ox::max_pool2d_backward;
using ox::max_pool2d_with_indices;
using ox::maximum;
using ox::mean;
using ox::median;
using ox::meshgrid;
using ox::min;
using ox::minimum;
using ox::mish;
using ox::mm;
using ox::mul;
using ox::mv;
using ox::nan_to_num;
using ox::ne;
using ox::neg;
using ox::nonzero;
using ox::norm;
using ox::one_hot;
using ox::outer;
using ox::pad;
using ox::pow;
using ox::prod;
using ox::reciprocal;
using ox::relu;
using ox::remainder;
using ox::repeat;
using ox::repeat_interleave;
using ox::rms_norm;
using ox::roll;
using ox::round;
using ox::rsqrt;
using ox::scatter;
using ox::scatter_add;
using ox::scatter_reduce;
using ox::sigmoid;
using ox::sign;
using ox::silu;
using ox::sin;
using ox::sinh;
using ox::softmax;
using ox::softmax_backward;
using ox::softplus;
using ox::sort;
using ox::split;
using ox::sqrt;
using ox::square;
using ox::stack;
using ox::std;
using ox::sub;
using ox::sum;
using ox::take;
using ox::tan;
using ox::tanh;
using ox::tensordot;
using ox::tile;
using ox::topk;
using ox::tril;
using ox::triu;
using ox::trunc;
using ox::var;
using ox::where;

inline ScalarType get_default_dtype() { return ox::default_dtype(); }
inline void set_default_dtype(ScalarType dtype) { ox::set_default_dtype(dtype); }

// Functions LibTorch has in namespace torch that oxmera has as methods.
inline Tensor reshape(const Tensor& x, const IntArrayRef& shape) { return x.reshape(shape); }
inline Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1) {
  return x.flatten(start_dim, end_dim);
}
inline Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }
inline Tensor permute(const Tensor& x, const IntArrayRef& dims) { return x.permute(dims); }
inline Tensor squeeze(const Tensor& x) { return x.squeeze(); }
inline Tensor squeeze(const Tensor& x, int64_t dim) { return x.squeeze(dim); }
inline Tensor unsqueeze(const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }
inline Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  return x.narrow(dim, start, length);
}
inline Tensor select(const Tensor& x, int64_t dim, int64_t index) { return x.select(dim, index); }
inline Tensor t(const Tensor& x) { return x.t(); }
inline Tensor flip(const Tensor& x, const IntArrayRef& dims) { return x.flip(dims); }
inline Tensor clone(const Tensor& x) { return x.clone(); }
inline Tensor detach(const Tensor& x) { return x.detach(); }
inline Tensor clamp_min(const Tensor& x, const Scalar& min) { return x.clamp_min(min); }
inline Tensor clamp_max(const Tensor& x, const Scalar& max) { return x.clamp_max(max); }
inline Tensor& relu_(Tensor& x) { return x.relu_(); }
inline Tensor& sigmoid_(Tensor& x) { return x.sigmoid_(); }
inline Tensor& tanh_(Tensor& x) { return x.tanh_(); }
inline Tensor log_sigmoid(const Tensor& x) { return ox::logsigmoid(x); }

// ---- Losses of namespace torch (at::), with LibTorch's positional arguments -------------------
// torch::Reduction::Mean and torch::kMean both name a reduction.
namespace Reduction {
enum Reduction { None, Mean, Sum, END };
}  // namespace Reduction
namespace enumtype {
struct kNone {};
struct kMean {};
struct kSum {};
struct kBatchMean {};
}  // namespace enumtype
inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kBatchMean kBatchMean{};

namespace detail {
inline std::string_view reduction_name(int64_t reduction) {
  OX_CHECK(reduction >= Reduction::None && reduction <= Reduction::Sum, Value, "torch::Reduction",
           "unknown reduction ", reduction, " (Reduction::None, Mean or Sum)");
  return reduction == Reduction::None ? "none" : reduction == Reduction::Mean ? "mean" : "sum";
}
}  // namespace detail

inline Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                       int64_t reduction = Reduction::Mean, int64_t ignore_index = -100) {
  return ox::nn::functional::nll_loss(input, target,
                                      {.weight = weight,
                                       .ignore_index = ignore_index,
                                       .reduction = detail::reduction_name(reduction)});
}
inline Tensor cross_entropy_loss(const Tensor& input, const Tensor& target,
                                 const Tensor& weight = {}, int64_t reduction = Reduction::Mean,
                                 int64_t ignore_index = -100, double label_smoothing = 0.0) {
  return ox::nn::functional::cross_entropy(input, target,
                                           {.weight = weight,
                                            .ignore_index = ignore_index,
                                            .reduction = detail::reduction_name(reduction),
                                            .label_smoothing = label_smoothing});
}
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                   const Tensor& weight = {}, int64_t reduction = Reduction::Mean) {
  return ox::nn::functional::binary_cross_entropy(
      input, target, {.weight = weight, .reduction = detail::reduction_name(reduction)});
}
inline Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                               const Tensor& weight = {},
                                               const Tensor& pos_weight = {},
                                               int64_t reduction = Reduction::Mean) {
  return ox::nn::functional::binary_cross_entropy_with_logits(
      input, target,
      {.weight = weight, .reduction = detail::reduction_name(reduction), .pos_weight = pos_weight});
}
inline Tensor mse_loss(const Tensor& input, const Tensor& target,
                       int64_t reduction = Reduction::Mean) {
  return ox::nn::functional::mse_loss(input, target,
                                      {.reduction = detail::reduction_name(reduction)});
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target,
                      int64_t reduction = Reduction::Mean) {
  return ox::nn::functional::l1_loss(input, target,
                                     {.reduction = detail::reduction_name(reduction)});
}
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                             int64_t reduction = Reduction::Mean, double beta = 1.0) {
  return ox::nn::functional::smooth_l1_loss(
      input, target, {.reduction = detail::reduction_name(reduction), .beta = beta});
}
inline Tensor kl_div(const Tensor& input, const Tensor& target, int64_t reduction = Reduction::Mean,
                     bool log_target = false) {
  return ox::nn::functional::kl_div(
      input, target, {.reduction = detail::reduction_name(reduction), .log_target = log_target});
}

// ---- Autograd --------------------------------------------------------------------------------
using ox::NoGradGuard;
// torch::AutoGradMode(enabled): sets grad mode for its scope.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(ox::is_grad_enabled()) {
    ox::set_grad_enabled(enabled);
  }
  ~AutoGradMode() { ox::set_grad_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};
inline bool is_grad_enabled() { return ox::is_grad_enabled(); }
namespace autograd {
using ox::autograd::AutogradContext;
using ox::autograd::backward;
using ox::autograd::Function;
using ox::autograd::grad;
using variable_list = std::vector<Tensor>;
}  // namespace autograd

// ---- Files, seeds, CUDA ----------------------------------------------------------------------
// torch::save / torch::load write and read safetensors files, whatever the name (".pt" too).
using ox::load;
using ox::save;
namespace cuda {
inline bool is_available() { return ox::cuda::is_available(); }
inline int64_t device_count() { return ox::cuda::device_count(); }
inline void manual_seed(uint64_t seed) { ox::manual_seed(seed); }  // one generator for all
inline void manual_seed_all(uint64_t seed) { ox::manual_seed(seed); }
inline void synchronize() { ox::synchronize(); }
}  // namespace cuda

namespace indexing {
using ox::Ellipsis;
using ox::None;
using ox::Slice;
using ox::TensorIndex;
}  // namespace indexing

// TorchScript is out of scope: using torch::jit is a compile error saying so.
namespace jit {
template <class... Args>
void load(Args&&...) {
  static_assert(sizeof...(Args) < 0,
                "oxmera's LibTorch compatibility header has no TorchScript (torch::jit): load the "
                "weights with torch::load / ox::load_pytorch and build the model in C++");
}
}  // namespace jit

namespace detail {
template <class... Args>
std::string check_message(const char* condition, const Args&... args) {
  std::ostringstream os;
  if constexpr (sizeof...(Args) == 0)
    os << "Expected " << condition << " to be true, but got false.";
  else
    (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace torch

// LibTorch's other namespaces: at:: and c10:: name the same things.
namespace at = torch;
namespace c10 {
using std::nullopt;
using std::optional;
using torch::Device;
using torch::DeviceType;
using torch::IntArrayRef;
using torch::kCPU;
using torch::kCUDA;
using torch::Scalar;
using torch::ScalarType;
}  // namespace c10

// TORCH_CHECK(cond, message parts...): a Value error with the parts (or the condition);
// AT_ASSERT(cond): an Internal error naming the condition.
#define TORCH_CHECK(cond, ...)                                                                     \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::ox::detail::throw_error(::ox::ErrorKind::Value, "TORCH_CHECK",                             \
                                ::torch::detail::check_message(#cond __VA_OPT__(, ) __VA_ARGS__)); \
  } while (false)
#define AT_ASSERT(cond, ...) OX_ASSERT(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) OX_ASSERT(cond __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_MODULE(Name) OX_MODULE(Name)
