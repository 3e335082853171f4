// Device discovery: Metal devices (macOS) first, then the simulator, which always exists.
#include "device.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tmps {

bool memcheck_default() {
  const char* v = std::getenv("TRITON_MPS_MEMCHECK");
  if (!v || !*v || std::strcmp(v, "1") == 0) return true;
  if (std::strcmp(v, "0") == 0) return false;
  throw InvalidArgument(std::string("TRITON_MPS_MEMCHECK must be 0 or 1, got '") + v + "'");
}

std::shared_ptr<Device> simulator_device() {
  // One simulator per process: it owns worker threads and loaded kernel libraries.
  static std::once_flag once;
  static std::shared_ptr<Device> sim;
  std::call_once(once, [] { sim = make_sim_device(); });
  return sim;
}

std::vector<std::shared_ptr<Device>> enumerate_devices() {
  static std::once_flag once;
  static std::vector<std::shared_ptr<Device>> metal;
  std::call_once(once, [] { metal = enumerate_metal_devices(); });
  std::vector<std::shared_ptr<Device>> all = metal;
  all.push_back(simulator_device());
  return all;
}

}  // namespace tmps
