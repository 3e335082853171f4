// Per-device contexts for the Python bindings.
#include "py_context.h"

namespace tmps {

std::vector<std::shared_ptr<DeviceContext>>& contexts() {
  static std::vector<std::shared_ptr<DeviceContext>> all;
  static std::once_flag once;
  std::call_once(once, [] {
    for (auto& d : enumerate_devices()) all.push_back(std::make_shared<DeviceContext>(d));
  });
  return all;
}

}  // namespace tmps
