#pragma once
// LibTorch programs on oxmera: `#include <oxmera/compat/torch.h>` instead of <torch/torch.h>,
// and `target_link_libraries(app PRIVATE oxmera::oxmera)` instead of ${TORCH_LIBRARIES}.
// Namespaces torch, at and c10 name oxmera's tensors, ops, modules (with LibTorch's options
// classes), optimizers, data pipeline and files; where LibTorch's semantics differ from
// oxmera's, these follow LibTorch. What is covered, what differs and what is out of scope
// (TorchScript): docs/COMPAT.md.

#include "oxmera/compat/torch/core.h"
#include "oxmera/compat/torch/data.h"
#include "oxmera/compat/torch/nn.h"
#include "oxmera/compat/torch/optim.h"
