// The door from the optimizers to the backend's fused optimizer step.

#include "backend/backend.h"
#include "optim/update.h"
#include "tensor/tensor_impl.h"

namespace ox::optim::detail {

bool can_fuse(const Tensor& param, const Tensor& grad) {
  const DType dt = param.dtype();
  return (dt == kF32 || dt == kF64) && grad.dtype() == dt && grad.device() == param.device() &&
         grad.shape() == param.shape() && param.is_contiguous() && grad.is_contiguous();
}

void fused_step(OptimStepKind kind, const Tensor& param, const Tensor& grad, const Tensor& buf1,
                const Tensor& buf2, const Tensor& buf3, const OptimStepParams& params) {
  const auto array = [&](const Tensor& t) {
    if (!t.defined())
      return StridedArray{nullptr, param.shape(), param.strides(), param.dtype(), param.device()};
    OX_ASSERT(t.is_contiguous() && t.shape() == param.shape() && t.dtype() == param.dtype(),
              "optimizer state of shape ", t.shape(), " does not match its parameter");
    return t.impl()->array();
  };
  backend_for(param.device(), "optim_step")
      .optim_step(kind, array(param), array(grad), array(buf1), array(buf2), array(buf3), params);
  for (const Tensor* t : {&param, &buf1, &buf2, &buf3})
    if (t->defined()) t->impl()->storage()->bump_version();
}

}  // namespace ox::optim::detail
