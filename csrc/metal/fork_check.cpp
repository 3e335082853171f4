// Refusing Metal in a forked child (fork_check.h). Policy:
// * g_metal_pid is the process that used Metal (0: none yet). A child inherits it, so in a
//   child it names an ancestor and every Metal entry point refuses.
// * Our own devices record it when made. PyTorch's use is read before every fork(), in the
//   parent, by a pthread_atfork prepare handler (registered when this library loads; prepare
//   handlers run in the parent before fork() takes its locks, so dlopen/dlsym are safe there).
// * PyTorch's stream pointer is found, once, by its mangled name: in the process's global scope
//   (a program linked against libtorch), then in a loaded libtorch_cpu (Python loads torch's
//   libraries RTLD_LOCAL, out of that scope), then in this library's own image (where the
//   emulated Metal runtime's fake PyTorch defines it on Linux builds; a Mac build never does).
#include "metal/fork_check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#if defined(__APPLE__)
#include <mach-o/dyld.h>
#else
#include <link.h>
#endif

#include "errors.h"

namespace tmps {
namespace {

std::atomic<pid_t> g_metal_pid{0};          // 0: no Metal use seen yet
std::atomic<bool> g_through_torch{false};  // g_metal_pid was recorded from PyTorch's MPS stream

// at::mps::MPSStreamImpl::_stream (no leading '_': dlsym adds Mach-O's own).
constexpr const char* kTorchMpsStream = "_ZN2at3mps13MPSStreamImpl7_streamE";

void* symbol_in(const char* image) {
  void* handle = ::dlopen(image, RTLD_LAZY | RTLD_NOLOAD);  // only if loaded; never loads
  if (!handle) return nullptr;
  void* p = ::dlsym(handle, kTorchMpsStream);
  ::dlclose(handle);  // balances NOLOAD's reference; the library stays loaded
  return p;
}

bool is_libtorch_cpu(const char* path) {
  const char* base = std::strrchr(path, '/');
  base = base ? base + 1 : path;
  return std::strncmp(base, "libtorch_cpu.", 13) == 0;
}

std::vector<std::string> loaded_images() {
  std::vector<std::string> out;
#if defined(__APPLE__)
  for (uint32_t i = 0, n = _dyld_image_count(); i < n; ++i)
    if (const char* name = _dyld_get_image_name(i)) out.emplace_back(name);
#else
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
        return 0;
      },
      &out);
#endif
  return out;
}

// The address of PyTorch's stream pointer, or null while no loaded image defines it.
void* const* torch_mps_stream_slot() {
  static std::atomic<void*> found{nullptr};
  if (void* p = found.load()) return static_cast<void* const*>(p);
  void* p = ::dlsym(RTLD_DEFAULT, kTorchMpsStream);
  for (const std::string& image : p ? std::vector<std::string>() : loaded_images())
    if (!p && is_libtorch_cpu(image.c_str())) p = symbol_in(image.c_str());
  if (!p) {
    Dl_info self{};
    if (::dladdr(reinterpret_cast<void*>(&torch_mps_stream_slot), &self) && self.dli_fname)
      p = symbol_in(self.dli_fname);
  }
  if (p) found.store(p);
  return static_cast<void* const*>(p);
}

void before_fork() {
  if (g_metal_pid.load() != 0) return;  // already recorded: this process or an ancestor
  void* const* stream = torch_mps_stream_slot();
  if (stream && *stream) {
    g_through_torch.store(true);
    note_metal_process();
  }
}

const bool g_fork_handler = ::pthread_atfork(&before_fork, nullptr, nullptr) == 0;

}  // namespace

void note_metal_process() {
  pid_t none = 0;
  g_metal_pid.compare_exchange_strong(none, getpid());
}

std::string metal_fork_refusal(const char* what) {
  (void)g_fork_handler;
  const pid_t owner = g_metal_pid.load();
  if (owner == 0 || owner == getpid()) return "";
  return std::string("Metal cannot be used in a forked subprocess (") + what + " in process " +
         std::to_string(getpid()) + ", forked from " + std::to_string(owner) + " which had used Metal" +
         (g_through_torch.load() ? " through PyTorch's MPS backend" : "") +
         "): Metal is not fork-safe. Use multiprocessing's 'spawn' start method, or the simulator device "
         "(TRITON_MPS_DEVICE=sim), which works after fork()";
}

void require_metal_process(const char* what) {
  const std::string refusal = metal_fork_refusal(what);
  if (!refusal.empty()) throw Unavailable(refusal);
}

}  // namespace tmps
