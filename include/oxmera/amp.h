#pragma once
// Mixed precision (ox::amp, docs/MIXED_PRECISION.md): autocast scopes and loss scaling.
#include "oxmera/amp/autocast.h"
#include "oxmera/amp/grad_scaler.h"
