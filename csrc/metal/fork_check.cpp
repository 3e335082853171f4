#include "metal/fork_check.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "errors.h"

namespace tmps {
namespace {
std::atomic<pid_t> g_metal_pid{0};  // 0: no Metal device made yet
}  // namespace

void note_metal_process() {
  pid_t none = 0;
  g_metal_pid.compare_exchange_strong(none, getpid());
}

void require_metal_process(const char* what) {
  const pid_t owner = g_metal_pid.load();
  if (owner == 0 || owner == getpid()) return;
  throw Unavailable(std::string("Metal cannot be used in a forked subprocess (") + what + " in process " +
                    std::to_string(getpid()) + ", forked from " + std::to_string(owner) +
                    " which had used Metal): Metal is not fork-safe. Use multiprocessing's 'spawn' start "
                    "method, or the simulator device (TRITON_MPS_DEVICE=sim), which works after fork()");
}

}  // namespace tmps
