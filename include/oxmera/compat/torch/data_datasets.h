#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md, "Data"): LibTorch's examples and datasets,
// torch::data::Example and torch::data::datasets::{BatchDataset, Dataset, MapDataset,
// TensorDataset, SharedBatchDataset, MNIST}. The CRTP classes are LibTorch's: a dataset is a
// value type, `.map(transform)` returns a new dataset type, and the loader takes it by value.

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oxmera/compat/torch/core.h"

namespace torch {

// c10::ArrayRef: a non-owning view of contiguous values, implicitly made from one value, a
// braced list, a std::vector, a std::array or a C array. It never outlives the call it is
// passed to.
template <class T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;
  using size_type = size_t;

  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), size_(size_t(end - begin)) {}
  template <class A>
  ArrayRef(const std::vector<T, A>& values)
      : data_(values.data()), size_(values.size()) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(const std::array<T, N>& values) : data_(values.data()), size_(N) {}  // NOLINT
  template <size_t N>
  constexpr ArrayRef(const T (&values)[N]) : data_(values), size_(N) {}  // NOLINT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // the list outlives the call, as wanted
#endif
  constexpr ArrayRef(const std::initializer_list<T>& values)  // NOLINT
      : data_(values.begin()), size_(values.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  const T& at(size_t i) const {
    OX_CHECK(i < size_, Index, "ArrayRef::at", "index ", i, " is out of range for ", size_,
             " values");
    return data_[i];
  }
  const T& front() const { return at(0); }
  const T& back() const { return at(size_ - 1); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

namespace data {

// One example: a data value and a target. Example<Data, NoTarget> (TensorExample) has data only
// and converts to it.
template <class Data = Tensor, class Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;
  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}
  Data data;
  Target target;
};

namespace example {
using NoTarget = void;
}  // namespace example

template <class Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;
  Example() = default;
  Example(Data data) : data(std::move(data)) {}  // NOLINT
  operator Data&() { return data; }              // NOLINT
  operator const Data&() const { return data; }  // NOLINT
  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

namespace datasets {

template <class Source, class AppliedTransform>
class MapDataset;
template <class D, class T>
MapDataset<D, T> map(D dataset, T transform);

// A dataset that makes whole batches: get_batch(request) and size() (nullopt when unsized).
// Self is the deriving class (CRTP), so `.map(t)` can hold it by value.
template <class Self, class Batch = std::vector<Example<>>, class BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  // Stateful (chunk/stream) datasets are not provided; every dataset here is stateless.
  static constexpr bool is_stateful = false;

  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  virtual optional<size_t> size() const = 0;

  // A MapDataset applying `transform` to each batch of this one (a copy; a move for an rvalue).
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// A dataset of single examples: the deriving class defines `ExampleType get(size_t index)` and
// `optional<size_t> size() const`; get_batch calls get for each index in order.
template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// `transform.apply_batch` over each batch of `dataset`: the batch type becomes the transform's
// OutputBatchType, the request type stays the source's.
template <class Source, class AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<Source, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(request)));
  }
  optional<size_t> size() const override { return dataset_.size(); }
  const Source& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

template <class D, class T>
MapDataset<D, T> map(D dataset, T transform) {
  static_assert(std::is_same_v<typename D::BatchType, typename T::InputBatchType>,
                "torch::data::datasets::map: the dataset's BatchType does not match the "
                "transform's InputBatchType (Stack<> takes std::vector<Example<>>: map it last)");
  return {std::move(dataset), std::move(transform)};
}

namespace detail {
inline int64_t checked_index(size_t index, int64_t size, const char* op) {
  OX_CHECK(index < size_t(size), Index, op, "index ", index, " is out of range for a dataset of ",
           size, " examples");
  return int64_t(index);
}
}  // namespace detail

// Row i of one tensor (or of the stack of several), with no target.
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  explicit TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(ox::stack(tensors)) {}
  explicit TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {}
  TensorExample get(size_t index) override {
    return tensor[detail::checked_index(index, tensor.size(0), "TensorDataset::get")];
  }
  optional<size_t> size() const override { return size_t(tensor.size(0)); }
  Tensor tensor;
};

// A dataset shared through a std::shared_ptr (copies of it, in loader workers, share one).
template <class Underlying>
class SharedBatchDataset
    : public BatchDataset<SharedBatchDataset<Underlying>, typename Underlying::BatchType,
                          typename Underlying::BatchRequestType> {
 public:
  using BatchType = typename Underlying::BatchType;
  using BatchRequestType = typename Underlying::BatchRequestType;

  SharedBatchDataset(std::shared_ptr<Underlying> dataset)  // NOLINT
      : dataset_(std::move(dataset)) {}
  BatchType get_batch(BatchRequestType request) override {
    return dataset_->get_batch(std::move(request));
  }
  optional<size_t> size() const override { return dataset_->size(); }
  Underlying& operator*() { return *dataset_; }
  const Underlying& operator*() const { return *dataset_; }
  Underlying* operator->() { return dataset_.get(); }
  const Underlying* operator->() const { return dataset_.get(); }

 private:
  std::shared_ptr<Underlying> dataset_;
};

template <class Underlying, class... Args>
SharedBatchDataset<Underlying> make_shared_dataset(Args&&... args) {
  return std::make_shared<Underlying>(std::forward<Args>(args)...);
}

// MNIST (or Fashion-MNIST) in `root`: {train,t10k}-{images-idx3,labels-idx1}-ubyte, plain or
// .gz, read by ox::data::read_idx. As LibTorch: images f32 [N, 1, 28, 28] scaled to [0, 1],
// targets i64 [N]; get(i) is (images()[i], targets()[i]).
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain) : train_(mode == Mode::kTrain) {
    const ox::data::MnistDataset files(root, train_);
    images_ = files.images().to(kFloat).div(255).unsqueeze(1);
    targets_ = files.labels();
  }
  Example<> get(size_t index) override {
    const int64_t i = detail::checked_index(index, targets_.size(0), "MNIST::get");
    return {images_[i], targets_[i]};
  }
  optional<size_t> size() const override { return size_t(targets_.size(0)); }
  bool is_train() const noexcept { return train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool train_;
};

}  // namespace datasets
}  // namespace data
}  // namespace torch

namespace c10 {
using torch::ArrayRef;
}  // namespace c10
