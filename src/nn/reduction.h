#pragma once
// A loss's reduction argument, parsed once for the functional forms and the loss modules.

#include <string_view>

#include "oxmera/core/error.h"

namespace ox::nn::detail {

enum class Reduction { None, Mean, Sum, BatchMean };

// "none", "mean", "sum" (and "batchmean" where allowed); anything else is a Value error.
inline Reduction parse_reduction(std::string_view reduction, const char* op,
                                 bool allow_batchmean = false) {
  if (reduction == "none") return Reduction::None;
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (allow_batchmean && reduction == "batchmean") return Reduction::BatchMean;
  OX_FAIL(Value, op, "reduction must be \"none\", \"mean\"",
          allow_batchmean ? ", \"sum\" or \"batchmean\"" : " or \"sum\"", ", got \"", reduction,
          "\"");
}

}  // namespace ox::nn::detail
