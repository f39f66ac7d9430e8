#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md, "Data"): LibTorch's transforms,
// torch::data::transforms::{BatchTransform, Transform, BatchLambda, Lambda, Collation, Collate,
// Stack, TensorTransform, TensorLambda, Normalize}. A transform is applied by
// `dataset.map(transform)`: per batch (apply_batch), or per example (apply) for Transform.

#include <functional>
#include <utility>
#include <vector>

#include "oxmera/compat/torch/data_datasets.h"

namespace torch::data::transforms {

// Maps a whole batch of InputBatch to OutputBatch.
template <class InputBatch, class OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

// Maps each example of a std::vector batch on its own.
template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual OutputType apply(InputType input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (auto&& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

namespace detail {
// The std::function a lambda transform holds and calls.
template <class Output, class Input>
class HeldFunction {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit HeldFunction(FunctionType function) : function_(std::move(function)) {}

 protected:
  Output call(Input input) { return function_(std::move(input)); }

 private:
  FunctionType function_;
};
}  // namespace detail

// A BatchTransform from a function of the whole batch.
template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output>,
                    private detail::HeldFunction<Output, Input> {
 public:
  using typename detail::HeldFunction<Output, Input>::FunctionType;
  explicit BatchLambda(FunctionType function)
      : detail::HeldFunction<Output, Input>(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return this->call(std::move(input_batch)); }
};

// A Transform from a function of one example.
template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output>, private detail::HeldFunction<Output, Input> {
 public:
  using typename detail::HeldFunction<Output, Input>::FunctionType;
  explicit Lambda(FunctionType function)
      : detail::HeldFunction<Output, Input>(std::move(function)) {}
  Output apply(Input input) override { return this->call(std::move(input)); }
};

// Collation: a BatchTransform from a std::vector of T to one T; Collate: one from a function.
template <class T, class BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
template <class T, class BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

// Stacks a batch of examples into one: data [B, ...] and targets [B, ...] (0-d targets: [B]).
template <class T = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& example : examples) {
      data.push_back(std::move(example.data));
      targets.push_back(std::move(example.target));
    }
    return {ox::stack(data), ox::stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& example : examples) data.push_back(std::move(example.data));
    return ox::stack(data);
  }
};

// A Transform of the data tensor of each example (the target passes through): subclasses define
// `Tensor operator()(Tensor)`.
template <class Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  using typename Transform<E, E>::InputType;
  using typename Transform<E, E>::OutputType;
  virtual Tensor operator()(Tensor input) = 0;
  OutputType apply(InputType input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

// A TensorTransform from a function of the data tensor.
template <class Target = Tensor>
class TensorLambda : public TensorTransform<Target>, private detail::HeldFunction<Tensor, Tensor> {
 public:
  using typename detail::HeldFunction<Tensor, Tensor>::FunctionType;
  explicit TensorLambda(FunctionType function)
      : detail::HeldFunction<Tensor, Tensor>(std::move(function)) {}
  Tensor operator()(Tensor input) override { return this->call(std::move(input)); }
};

// (x - mean) / stddev with mean and stddev f32 [C, 1, 1] (one value, or one per channel of a
// [C, H, W] data tensor), broadcast as LibTorch does; a zero stddev gives inf/nan, as there.
// They are made on the CPU (data sets live there whatever the default device) and follow the
// input to its device.
template <class Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(channel_values(mean)), stddev(channel_values(stddev)) {}
  Tensor operator()(Tensor input) override {
    return input.sub(mean.to(input.device())).div(stddev.to(input.device()));
  }
  Tensor mean, stddev;

 private:
  static Tensor channel_values(ArrayRef<double> values) {
    return torch::tensor(values.vec(), TensorOptions(kFloat32).device(kCPU))
        .unsqueeze(1)
        .unsqueeze(2);
  }
};

}  // namespace torch::data::transforms
