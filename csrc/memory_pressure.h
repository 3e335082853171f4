// The operating system's memory-pressure signal, for releasing cached buffers before the
// system starts swapping. macOS: a dispatch source (warn / critical). Elsewhere there is no
// such signal; the pool's own policy (release on allocation failure, stay under the device's
// recommended working set) is what applies.
#pragma once

#include <functional>
#include <memory>

namespace tmps {

class MemoryPressureWatch {
 public:
  enum class Level { Warn, Critical };
  // `on_pressure` runs on a system queue; it must be thread-safe.
  explicit MemoryPressureWatch(std::function<void(Level)> on_pressure);
  ~MemoryPressureWatch();
  MemoryPressureWatch(const MemoryPressureWatch&) = delete;
  MemoryPressureWatch& operator=(const MemoryPressureWatch&) = delete;
  bool active() const;  // false where the OS has no signal

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tmps
