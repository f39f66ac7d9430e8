#pragma once
// Python-style indexing: `x.index({0, ox::Slice{1, ox::None, 2}, ox::None, ox::Ellipsis, idx})`
// is x[0, 1::2, None, ..., idx], and `x.index_put_({mask}, 0.0)` is x[mask] = 0. Integers,
// slices, None and Ellipsis alone give a view; bool and integer tensors index (a copy).

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "oxmera/tensor.h"

namespace ox {

// A new axis of size 1 (Python's None), and the rest of the dims (Python's ...).
struct NoneIndex {};
struct EllipsisIndex {};
inline constexpr NoneIndex None{};
inline constexpr EllipsisIndex Ellipsis{};

// start:stop:step with Python's meaning: unset ends take the whole dim, negative ends count from
// the end, ends past the dim clamp to it; step (default 1) must be positive, as in PyTorch.
// `ox::Slice{}` is `:`, `ox::Slice{1}` is `1:`, `ox::Slice{ox::None, 3}` is `:3`.
struct Slice {
  // One end or the step: a number, or unset (ox::None, std::nullopt, an empty optional).
  class Bound {
   public:
    Bound() = default;
    template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) Bound(T v)
        : value_(static_cast<int64_t>(v)) {}        // NOLINT
    Bound(NoneIndex) {}                             // NOLINT
    Bound(std::nullopt_t) {}                        // NOLINT
    Bound(std::optional<int64_t> v) : value_(v) {}  // NOLINT
    const std::optional<int64_t>& value() const { return value_; }

   private:
    std::optional<int64_t> value_;
  };

  std::optional<int64_t> start = std::nullopt;
  std::optional<int64_t> stop = std::nullopt;
  std::optional<int64_t> step = std::nullopt;

  Slice() = default;
  Slice(Bound start_, Bound stop_ = {}, Bound step_ = {})  // NOLINT: reads like Python's 1:3
      : start(start_.value()), stop(stop_.value()), step(step_.value()) {}
};

// One entry of an index list.
class TensorIndex {
 public:
  enum class Kind : uint8_t { Integer, Boolean, Slice, None, Ellipsis, Tensor };

  template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) TensorIndex(T i)
      : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT
  // True is a new axis of size 1, False one of size 0 (as x[True] and x[False] in PyTorch).
  TensorIndex(bool b) : kind_(Kind::Boolean), integer_(b) {}             // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(std::move(s)) {}     // NOLINT
  TensorIndex(NoneIndex) : kind_(Kind::None) {}                          // NOLINT
  TensorIndex(EllipsisIndex) : kind_(Kind::Ellipsis) {}                  // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return integer_ != 0; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace ox
