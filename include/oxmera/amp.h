#pragma once
// Mixed precision (docs/MIXED_PRECISION.md): autocast scopes.
#include "oxmera/amp/autocast.h"
