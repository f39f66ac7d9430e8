// Check sites: the messages of checks kernels make on device values (backend/kernel_check.h).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <string>

#include "backend/kernel_check.h"
#include "test_util.h"

namespace {

using oxtest::caught;

TEST(KernelCheck, ASiteIsInternedByOpMessageAndKind) {
  const ox::CheckSite a = ox::check_site("kc_op", "value {value} too big");
  EXPECT_GE(a, 0);
  EXPECT_EQ(ox::check_site("kc_op", "value {value} too big"), a);
  EXPECT_NE(ox::check_site("kc_other", "value {value} too big"), a);
  EXPECT_NE(ox::check_site("kc_op", "value {value} too big", ox::ErrorKind::Value), a);
  // The separator cannot be forged by moving text between op and message.
  EXPECT_NE(ox::check_site("kc_opv", "alue {value} too big"), a);
}

TEST(KernelCheck, TheFailureFillsThePlaceholders) {
  const ox::CheckSite site = ox::check_site(
      "kc_fill", "{value} at {position} of {bound}; {unknown} {value} {", ox::ErrorKind::Index);
  const ox::Error e = caught([&] { ox::raise_check_failure({site, -7, 12, 5}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
  EXPECT_EQ(std::string(e.what()), "[kc_fill] -7 at 12 of 5; {unknown} -7 {");
  const ox::CheckSite value_site =
      ox::check_site("kc_value", "p at {position}", ox::ErrorKind::Value);
  EXPECT_EQ(caught([&] {
              ox::raise_check_failure({value_site, 0, 3, 1});
            }).kind(),
            ox::ErrorKind::Value);
}

TEST(KernelCheck, AnUnknownSiteGetsTheGenericMessage) {
  for (const ox::CheckSite site : {-1, 1 << 30}) {
    const ox::Error e = caught([&] { ox::raise_check_failure({site, 9, 2, 4}); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
    EXPECT_EQ(std::string(e.what()), "[kernel] value 9 at position 2 is out of bounds for size 4");
  }
}

TEST(KernelCheck, SynchronizeWaitsForNothingOnTheCpu) {
  EXPECT_NO_THROW(ox::synchronize(ox::Device::cpu()));
  EXPECT_NO_THROW(ox::synchronize());
}

}  // namespace
