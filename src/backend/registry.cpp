// The backend registry and the process-wide runtime settings.

#include <omp.h>

#include <array>
#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "oxmera/core/error.h"

namespace ox {

namespace {

struct Registry {
  std::mutex mutex;
  std::array<std::unique_ptr<Backend>, kNumDeviceTypes> backends;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // never destroyed: tensors in static storage may outlive it
    reg->backends[static_cast<int>(DeviceType::CPU)] = cpu::make_backend();
    return reg;
  }();
  return *r;
}

}  // namespace

Backend* find_backend(DeviceType type) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.backends[static_cast<int>(type)].get();
}

void register_backend(std::unique_ptr<Backend> backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.backends[static_cast<int>(backend->device_type())] = std::move(backend);
}

Backend& backend_for(DeviceType type, const char* op) {
  Backend* b = find_backend(type);
  OX_CHECK(b, Device, op, "no ", device_type_name(type),
           " backend in this build (`oxmera doctor` says which backends exist and why)");
  return *b;
}

Backend& backend_for(Device device, const char* op) {
  Backend& b = backend_for(device.type(), op);
  OX_CHECK(device.index() >= 0 && device.index() < b.device_count(), Device, op, "device ", device,
           " does not exist (", b.device_count(), " ", device_type_name(device.type()),
           " device(s) present)");
  return b;
}

std::vector<BackendInfo> backend_infos() {
  std::vector<BackendInfo> infos;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const auto type = static_cast<DeviceType>(t);
    if (Backend* b = find_backend(type)) {
      infos.push_back(b->info());
    } else {
      BackendInfo missing;
      missing.name = std::string(device_type_name(type));
      missing.reason = "not built into this library";
      infos.push_back(missing);
    }
  }
  return infos;
}

void set_num_threads(int n) {
  OX_CHECK(n >= 1, Value, "set_num_threads", "thread count must be at least 1, got ", n);
  omp_set_num_threads(n);
  cpu::set_blas_threads(n);
}

int get_num_threads() { return omp_get_max_threads(); }

void empty_cache() {
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (Backend* b = find_backend(static_cast<DeviceType>(t)))
      for (int d = 0; d < b->device_count(); ++d) b->allocator(d).empty_cache();
}

}  // namespace ox
