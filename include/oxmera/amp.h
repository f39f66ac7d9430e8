#pragma once
// Mixed precision (ox::amp): loss scaling, and (added at merge) autocast.

// The autocast header (oxmera/amp/autocast.h) joins this umbrella at merge.
#include "oxmera/amp/grad_scaler.h"
