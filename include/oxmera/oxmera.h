#pragma once
// Everything oxmera offers, in one include.

#include "oxmera/autograd.h"
#include "oxmera/core/device.h"
#include "oxmera/core/dtype.h"
#include "oxmera/core/error.h"
#include "oxmera/core/half.h"
#include "oxmera/core/layout.h"
#include "oxmera/core/shape.h"
#include "oxmera/data.h"
#include "oxmera/indexing.h"
#include "oxmera/io.h"
#include "oxmera/nn.h"
#include "oxmera/ops.h"
#include "oxmera/optim.h"
#include "oxmera/runtime.h"
#include "oxmera/tensor.h"
#include "oxmera/version.h"
