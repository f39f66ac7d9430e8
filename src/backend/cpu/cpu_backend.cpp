#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <fstream>
#include <string>
#include <thread>

#include "backend/cpu/cpu_allocator.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown processor";
}

class CpuBackend final : public Backend {
 public:
  DeviceType device_type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }
  Allocator& allocator(int) override { return cpu_allocator(); }

  BackendInfo info() const override {
    BackendInfo info;
    info.name = "cpu";
    info.available = true;
    info.devices.push_back(cpu_model_name());
    info.features.emplace_back("hardware threads",
                               std::to_string(std::thread::hardware_concurrency()));
    info.features.emplace_back("intra-op threads", std::to_string(omp_get_max_threads()));
    info.features.emplace_back("openmp", std::to_string(_OPENMP));
    info.features.emplace_back("allocator cache limit (OXMERA_CPU_CACHE_MB)",
                               std::to_string(cpu_allocator().cache_limit() >> 20) + " MiB");
    return info;
  }

  void copy(const StridedArray& dst, const StridedArray& src) override { cpu::copy(dst, src); }
  void fill(const StridedArray& dst, const Scalar& value) override { cpu::fill(dst, value); }
  void arange(const StridedArray& dst, const Scalar& start, const Scalar& step) override {
    cpu::arange(dst, start, step);
  }
  void linspace(const StridedArray& dst, double start, double end) override {
    cpu::linspace(dst, start, end);
  }
  void random(const StridedArray& dst, const RandomSpec& spec) override { cpu::random(dst, spec); }
  void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed,
                 uint64_t first_block) override {
    cpu::bernoulli(dst, p, seed, first_block);
  }
  void randperm(const StridedArray& dst, uint64_t seed, uint64_t first_block) override {
    cpu::randperm(dst, seed, first_block);
  }
  void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
             const UnaryParams& params) override {
    cpu::unary(op, dst, src, params);
  }
  void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
              double alpha) override {
    cpu::binary(op, dst, a, b, alpha);
  }
  void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
             const StridedArray& b) override {
    cpu::where(dst, cond, a, b);
  }
};

}  // namespace

std::unique_ptr<Backend> make_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace ox::cpu
