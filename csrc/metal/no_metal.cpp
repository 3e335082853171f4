// Builds without Metal (Linux, or macOS without metal-cpp): no Metal devices, the simulator only.
#include "device.h"

namespace tmps {

std::vector<std::shared_ptr<Device>> enumerate_metal_devices() { return {}; }

}  // namespace tmps
