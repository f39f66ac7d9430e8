#pragma once
// The CPU kernels' element conversion: core/convert.h's, under the names the kernels use.

#include "core/convert.h"

namespace ox::cpu {

using elementwise::convert;
using elementwise::is_half_v;
using elementwise::scalar_as;
using elementwise::truncate_like_x86;

}  // namespace ox::cpu
