// Device: parsing, printing, equality.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <sstream>
#include <string>

#include "test_util.h"

namespace {

using oxtest::caught;

TEST(Device, DefaultIsCpu) {
  constexpr ox::Device d;
  EXPECT_TRUE(d.is_cpu());
  EXPECT_FALSE(d.is_cuda());
  EXPECT_EQ(d.type(), ox::DeviceType::CPU);
  EXPECT_EQ(d.index(), 0);
  EXPECT_EQ(d, ox::Device::cpu());
}

TEST(Device, Factories) {
  EXPECT_EQ(ox::Device::cuda().type(), ox::DeviceType::CUDA);
  EXPECT_EQ(ox::Device::cuda().index(), 0);
  EXPECT_EQ(ox::Device::cuda(5).index(), 5);
  EXPECT_TRUE(ox::Device::cuda(5).is_cuda());
  EXPECT_FALSE(ox::Device::cuda(5).is_cpu());
}

TEST(Device, ParseCpu) {
  const ox::Device d = ox::Device::parse("cpu");
  EXPECT_TRUE(d.is_cpu());
  EXPECT_EQ(d.index(), 0);
}

TEST(Device, ParseCudaDefaultsToIndexZero) {
  const ox::Device d = ox::Device::parse("cuda");
  EXPECT_TRUE(d.is_cuda());
  EXPECT_EQ(d.index(), 0);
}

TEST(Device, ParseCudaWithIndex) {
  EXPECT_EQ(ox::Device::parse("cuda:3"), ox::Device(ox::DeviceType::CUDA, 3));
  EXPECT_EQ(ox::Device::parse("cuda:0"), ox::Device::cuda(0));
  EXPECT_EQ(ox::Device::parse("cuda:12").index(), 12);
  EXPECT_EQ(ox::Device::parse("cuda:2147483647").index(), 2147483647);
}

TEST(Device, ParseRejectsMalformedStringsWithValueError) {
  for (const char* bad :
       {"gpu", "cuda:", "cuda:-1", "cuda:1x", "", "CPU", "Cuda", "cpu:0", "cuda:+1", "cuda: 1",
        " cuda", "cuda ", "cuda:1:2", "cuda0", "cuda:2147483648", "cuda:x", "cuda:0x1"}) {
    const ox::Error e = caught([&] { ox::Device::parse(bad); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << "'" << bad << "'";
    std::string quoted = "'";  // built by appending: GCC 12 misfires -Wrestrict on a + b + c
    quoted += bad;
    quoted += '\'';
    EXPECT_NE(std::string(e.what()).find(quoted), std::string::npos) << e.what();
  }
}

TEST(Device, Str) {
  EXPECT_EQ(ox::Device::cpu().str(), "cpu");
  EXPECT_EQ(ox::Device::cuda().str(), "cuda:0");
  EXPECT_EQ(ox::Device::cuda(7).str(), "cuda:7");
  std::ostringstream out;
  out << ox::Device::cuda(2) << ' ' << ox::Device::cpu();
  EXPECT_EQ(out.str(), "cuda:2 cpu");
  EXPECT_EQ(ox::device_type_name(ox::DeviceType::CPU), "cpu");
  EXPECT_EQ(ox::device_type_name(ox::DeviceType::CUDA), "cuda");
}

TEST(Device, StrRoundTripsThroughParse) {
  for (const ox::Device d :
       {ox::Device::cpu(), ox::Device::cuda(0), ox::Device::cuda(1), ox::Device::cuda(15)})
    EXPECT_EQ(ox::Device::parse(d.str()), d) << d;
}

TEST(Device, Equality) {
  EXPECT_EQ(ox::Device::cpu(), ox::Device::cpu());
  EXPECT_EQ(ox::Device::cuda(1), ox::Device::cuda(1));
  EXPECT_NE(ox::Device::cuda(0), ox::Device::cuda(1));
  EXPECT_NE(ox::Device::cpu(), ox::Device::cuda(0));
  EXPECT_FALSE(ox::Device::cpu() == ox::Device::cuda(0));
  EXPECT_TRUE(ox::Device::cuda(2) != ox::Device::cuda(3));
  static_assert(ox::Device::cuda(4) == ox::Device(ox::DeviceType::CUDA, 4));
}

}  // namespace

namespace {

TEST(DefaultDevice, IsTheCpuUnlessSetAndGuardsNest) {
  OXTEST_SKIP_ON_TEST_DEVICE("the test device is the default");
  EXPECT_EQ(ox::default_device(), ox::Device::cpu());
  {
    const ox::DeviceGuard outer(ox::Device::cuda(1));
    EXPECT_EQ(ox::default_device(), ox::Device::cuda(1));
    {
      const ox::DeviceGuard inner(ox::Device::cpu());
      EXPECT_EQ(ox::default_device(), ox::Device::cpu());
    }
    EXPECT_EQ(ox::default_device(), ox::Device::cuda(1));
  }
  EXPECT_EQ(ox::default_device(), ox::Device::cpu());
  ox::set_default_device(ox::Device::cuda(2));
  EXPECT_EQ(ox::default_device(), ox::Device::cuda(2));
  ox::set_default_device(ox::Device::cpu());
  EXPECT_EQ(oxtest::caught([] { ox::DeviceGuard g(ox::Device(ox::DeviceType::CUDA, -1)); }).kind(),
            ox::ErrorKind::Device);
}

}  // namespace
