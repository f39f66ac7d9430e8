#pragma once
// Checks a kernel makes on values only the device holds (indices, class targets). The op layer
// registers what a failing value means as a site: the op's name and a message with the
// placeholders {value}, {position} and {bound}. A kernel that finds a bad value reports
// (site, value, position, bound). The CPU backend raises at once; a device backend records the
// first report in a word on the device and raises it at the next synchronizing call (a copy to
// the host, item(), synchronize()), so that a check never makes the host wait for the device.

#include <cstdint>
#include <string_view>

#include "oxmera/core/error.h"

namespace ox {

// An interned check message; -1 is the generic "value out of bounds" message.
using CheckSite = int32_t;

// A failed check as a kernel reports it: plain integers, so that device code can write it.
struct CheckFailure {
  CheckSite site = -1;
  int64_t value = 0;     // the value that failed
  int64_t position = 0;  // where it was (row-major over the checked array)
  int64_t bound = 0;     // the size it had to lie within
};

// The site for (op, message, kind); the same triple always gives the same id. Thread-safe.
CheckSite check_site(std::string_view op, std::string_view message,
                     ErrorKind kind = ErrorKind::Index);

// ox::Error of the site's kind: "[op] message" with the placeholders filled in.
[[noreturn]] void raise_check_failure(const CheckFailure& failure);

}  // namespace ox
