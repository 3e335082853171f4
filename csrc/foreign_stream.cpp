// LaunchRouter (the ordering rules in foreign_stream.h) and the recording foreign stream for tests.
#include "foreign_stream.h"

#include <dlfcn.h>

#include <algorithm>

namespace tmps {

// --- LaunchRouter ----------------------------------------------------------------------------

void LaunchRouter::set_foreign(std::shared_ptr<ForeignStream> foreign) {
  std::lock_guard<std::mutex> lock(mu_);
  if (foreign_ && foreign_ != foreign) wait_foreign_locked();
  std::lock_guard<std::mutex> ptr_lock(foreign_ptr_mu_);
  foreign_ = std::move(foreign);
  foreign_unwaited_ = foreign_uncommitted_ = 0;
}

std::shared_ptr<ForeignStream> LaunchRouter::foreign() const {
  // Not mu_: that one is held across waits, and callers may hold the GIL.
  std::lock_guard<std::mutex> lock(foreign_ptr_mu_);
  return foreign_;
}

void LaunchRouter::set_foreign_commit_every(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  commit_every_ = std::max<size_t>(n, 1);
}

size_t LaunchRouter::foreign_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return foreign_unwaited_;
}

void LaunchRouter::wait_foreign_locked() {
  if (!foreign_ || foreign_unwaited_ == 0) return;
  foreign_unwaited_ = foreign_uncommitted_ = 0;  // even if it throws: the error is reported once
  foreign_->synchronize();
}

std::shared_ptr<DispatchTiming> LaunchRouter::launch_own(const std::shared_ptr<Pipeline>& pipeline,
                                                         const std::vector<Arg>& args, const LaunchConfig& config,
                                                         bool timed, LaunchWait wait) {
  // Triton code reads host memory right after the call; the simulator executes at commit and
  // reports a failed dispatch at the launch that made it.
  const bool waits = wait != LaunchWait::Never || own_.device()->info().is_simulator;
  // One launch at a time from encode to wait (rule 6): the batch a launch waits for then holds
  // its own dispatch only, so the error it rethrows is its own and no other thread's dispatch
  // shares (and is skipped with) a failed batch.
  std::lock_guard<std::mutex> serial(own_launch_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    wait_foreign_locked();  // rule 2
  }
  std::shared_ptr<DispatchTiming> timing = own_.launch(pipeline, args, config, timed);
  if (waits)
    own_.synchronize();
  else
    own_.commit();
  return timing;
}

std::shared_ptr<DispatchTiming> LaunchRouter::launch_foreign(const std::shared_ptr<Pipeline>& pipeline,
                                                             const std::vector<Arg>& args,
                                                             const LaunchConfig& config, bool timed, LaunchWait wait) {
  Dispatch d = own_.prepare(pipeline, args, config);  // validates before anything waits or encodes
  const bool empty = d.threadgroups[0] == 0 || d.threadgroups[1] == 0 || d.threadgroups[2] == 0;
  std::shared_ptr<DispatchTiming> timing = timed ? std::make_shared<DispatchTiming>() : nullptr;
  if (empty) {  // runs nothing, as on CUDA
    if (timing) timing->ready = true;
    return timing;
  }
  own_.synchronize();  // rule 1 (cheap when our stream holds nothing)
  std::lock_guard<std::mutex> lock(mu_);
  if (!foreign_) throw InvalidArgument("kernel '" + pipeline->name() + "': no foreign stream to launch on");
  // A timed dispatch (profiler, benchmarker) gets a command buffer of its own: its time is that
  // command buffer's GPU time, which must not include PyTorch's work or other dispatches.
  if (timing) foreign_->commit();
  foreign_->encode(d, timing);
  ++foreign_unwaited_;
  if (timing) {
    foreign_->commit();
    foreign_uncommitted_ = 0;
  }
  if (wait == LaunchWait::Always) {
    wait_foreign_locked();
  } else if (++foreign_uncommitted_ >= commit_every_) {
    foreign_uncommitted_ = 0;
    foreign_->commit();  // rule 3: let the GPU start, no wait
  }
  return timing;
}

void LaunchRouter::synchronize() {
  own_.synchronize();
  std::lock_guard<std::mutex> lock(mu_);
  wait_foreign_locked();
}

// --- PyTorch's API, resolved at run time --------------------------------------------------------

TorchMpsApi resolve_torch_mps_api(const std::string& library, std::string* error) {
  TorchMpsApi api;
  void* handle = nullptr;
  if (!library.empty()) handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);  // only if loaded
  auto find = [&](const char* name) -> void* {
    void* p = ::dlsym(RTLD_DEFAULT, name);
    if (!p && handle) p = ::dlsym(handle, name);
    if (!p && error) *error += std::string(error->empty() ? "" : ", ") + name;
    return p;
  };
  api.get_command_buffer = reinterpret_cast<void* (*)()>(find(kTorchGetCommandBuffer));
  api.get_dispatch_queue = reinterpret_cast<void* (*)()>(find(kTorchGetDispatchQueue));
  api.commit = reinterpret_cast<void (*)()>(find(kTorchCommit));
  api.synchronize = reinterpret_cast<void (*)()>(find(kTorchSynchronize));
  api.dispatch_sync_f = reinterpret_cast<void (*)(void*, void*, void (*)(void*))>(find("dispatch_sync_f"));
  if (error && !error->empty()) *error = "not found in the process or " + library + ": " + *error;
  // Optional: without them commit() ends PyTorch's encoder instead.
  auto find_optional = [&](const char* name) -> void* {
    void* p = ::dlsym(RTLD_DEFAULT, name);
    return p || !handle ? p : ::dlsym(handle, name);
  };
  void* stream = find_optional(kAtenDefaultMpsStream);
  void* end = find_optional(kAtenEndKernelCoalescing);
  if (stream && end) {
    api.get_default_stream = reinterpret_cast<void* (*)()>(stream);
    api.end_kernel_coalescing = reinterpret_cast<void (*)(void*)>(end);
  }
  // The handle is not closed: RTLD_NOLOAD took a reference to a library that stays loaded anyway.
  return api;
}

}  // namespace tmps
