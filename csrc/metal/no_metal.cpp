// Builds without Metal (Linux, or macOS without metal-cpp): no Metal devices, the simulator only.
#include "device.h"
#include "foreign_stream.h"

namespace tmps {

std::vector<std::shared_ptr<Device>> enumerate_metal_devices() { return {}; }

std::shared_ptr<ForeignStream> make_torch_mps_stream(const std::shared_ptr<Device>&, const TorchMpsApi&) {
  return nullptr;
}

}  // namespace tmps
