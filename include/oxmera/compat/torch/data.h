#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md, "Data"): LibTorch's data API in namespace
// torch::data, over oxmera's tensors and IDX reader: examples and CRTP datasets with .map
// (data_datasets.h), transforms (data_transforms.h), samplers (data_samplers.h) and
// make_data_loader (data_loader.h).

#include "oxmera/compat/torch/core.h"
#include "oxmera/compat/torch/data_datasets.h"
#include "oxmera/compat/torch/data_loader.h"
#include "oxmera/compat/torch/data_samplers.h"
#include "oxmera/compat/torch/data_transforms.h"
