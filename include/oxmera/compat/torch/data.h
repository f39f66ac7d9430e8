#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md).

#include "oxmera/compat/torch/core.h"
