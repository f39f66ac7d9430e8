// CUDA launchers: optim_step (kernels/optim.cu). One grid-stride launch over the parameter's
// elements; the scalars are cast on the host as the CPU backend casts them (optim_plan.h).

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/optim_plan.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

const KernelRef adam_f32("optim", "ox_optim_adam_f32");
const KernelRef adam_f64("optim", "ox_optim_adam_f64");
const KernelRef sgd_f32("optim", "ox_optim_sgd_f32");
const KernelRef sgd_f64("optim", "ox_optim_sgd_f64");

template <class T>
void step(const KernelRef& adam, const KernelRef& sgd, OptimStepKind kind,
          const StridedArray& param, const StridedArray& grad, const StridedArray& buf1,
          const StridedArray& buf2, const StridedArray& buf3, const OptimStepParams& params) {
  const int64_t n = param.numel();
  if (n == 0) return;
  const DeviceContext at = enter(param);
  const kernels::OptimScalars<T> s = optim_scalars<T>(kind, params);
  T* p = static_cast<T*>(param.data);
  const T* g = static_cast<const T*>(grad.data);
  T* b1 = static_cast<T*>(buf1.data);
  if (kind == OptimStepKind::Adam) {
    T* b2 = static_cast<T*>(buf2.data);
    T* b3 = static_cast<T*>(buf3.data);
    launch(at, adam.get(at.device), grid_for(n), p, g, b1, b2, b3, n, s);
  } else {
    launch(at, sgd.get(at.device), grid_for(n), p, g, b1, n, s);
  }
}

}  // namespace

void CudaBackend::optim_step(OptimStepKind kind, const StridedArray& param,
                             const StridedArray& grad, const StridedArray& buf1,
                             const StridedArray& buf2, const StridedArray& buf3,
                             const OptimStepParams& params) {
  switch (param.dtype) {
    case DType::F32:
      step<float>(adam_f32, sgd_f32, kind, param, grad, buf1, buf2, buf3, params);
      return;
    case DType::F64:
      step<double>(adam_f64, sgd_f64, kind, param, grad, buf1, buf2, buf3, params);
      return;
    default:
      OX_FAIL(Device, "optim_step", "the CUDA optimizer step takes f32 and f64 parameters, got ",
              param.dtype);
  }
}

}  // namespace ox::cuda::detail
