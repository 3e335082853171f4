// Launching into another framework's GPU stream (PyTorch's MPS stream), and the ordering rules
// between that stream and the device's own Launcher.
//
// A launch that binds a torch `mps` tensor is encoded into the command buffer PyTorch is
// recording, on PyTorch's serial dispatch queue: it is then ordered after every PyTorch op
// issued before it and before every op issued after it, with no CPU wait. Launches that bind
// only our own buffers, numpy arrays or CPU tensors go to our own Launcher (queue and batching).
// LaunchRouter keeps the two ordered (README "Ordering of launches"):
//  1. a launch on the foreign stream first waits for our own stream if that holds any work
//     (a kernel there may have written a buffer this launch reads: two queues are not ordered);
//  2. a launch on our own stream first waits for the foreign stream if anything was encoded
//     there since the last wait (same reason, the other way round);
//  3. foreign launches are not waited for (unless asked: TRITON_MPS_LAUNCH_SYNC=1); PyTorch
//     makes them visible at its next synchronize() or host read. Every `commit_every` foreign
//     launches we ask the owner to commit, so the GPU starts on them (no wait);
//  4. synchronize() waits for both;
//  5. a timed dispatch (profiler, benchmarker) on the foreign stream is committed alone (commit
//     before and after it), so its command buffer's GPU time is its own.
//  6. launches on our own stream from several threads run one at a time from encode to wait:
//     each waiting launch rethrows its own dispatch's error only, and a failed dispatch never
//     shares a batch with (and so never skips) another thread's. A launch that does not wait
//     (TRITON_MPS_LAUNCH_SYNC=0 on Metal) reports its error at the next wait, whoever's it is.
//
// Implementations: the PyTorch MPS stream (csrc/metal/torch_stream.cpp, resolved from the
// loaded torch library at run time) and, for tests, RecordingForeignStream (any device; it
// records the encode/commit/synchronize sequence: csrc/python/test_bindings.cpp).
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device.h"
#include "launcher.h"

namespace tmps {

class ForeignStream {
 public:
  virtual ~ForeignStream() = default;
  virtual const std::string& name() const = 0;
  // Encode `d` into the command buffer the owner is recording, on the owner's queue; returns
  // once encoded (the GPU runs it after the owner commits). Keeps d's buffers alive until the
  // dispatch completed; fills `timing` (when given) then.
  virtual void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) = 0;
  // Ask the owner to submit what it recorded so far; no wait.
  virtual void commit() = 0;
  // Submit and wait until everything recorded so far completed; rethrows a failed dispatch of ours.
  virtual void synchronize() = 0;
};

// How long a launch may leave its work in flight.
enum class LaunchWait {
  Default,  // own stream: wait (host memory is read right after a Triton launch); foreign: no wait
  Always,   // TRITON_MPS_LAUNCH_SYNC=1: wait after every launch (debugging)
  Never,    // TRITON_MPS_LAUNCH_SYNC=0: never wait (the caller synchronizes)
};

class LaunchRouter {
 public:
  explicit LaunchRouter(Launcher& own) : own_(own) {}

  void set_foreign(std::shared_ptr<ForeignStream> foreign);  // null: none (waits for the old one first)
  std::shared_ptr<ForeignStream> foreign() const;
  // Launches per commit of the foreign stream (rule 3); 0 acts as 1.
  void set_foreign_commit_every(size_t n);

  // Validate and encode on our own stream (rule 2 first). The simulator executes there.
  std::shared_ptr<DispatchTiming> launch_own(const std::shared_ptr<Pipeline>& pipeline, const std::vector<Arg>& args,
                                             const LaunchConfig& config, bool timed, LaunchWait wait);
  // Validate and encode on the foreign stream (rule 1 first). Throws InvalidArgument without one.
  std::shared_ptr<DispatchTiming> launch_foreign(const std::shared_ptr<Pipeline>& pipeline,
                                                 const std::vector<Arg>& args, const LaunchConfig& config, bool timed,
                                                 LaunchWait wait);
  void synchronize();  // rule 4
  // Foreign launches not yet waited for (0 when the foreign stream is idle as far as we know).
  size_t foreign_pending() const;

 private:
  Launcher& own_;
  std::mutex own_launch_mu_;  // rule 6; taken before mu_
  mutable std::mutex mu_;     // foreign-stream state; held across waits for the foreign stream
  mutable std::mutex foreign_ptr_mu_;  // foreign_ itself (written under mu_ too), for foreign()
  std::shared_ptr<ForeignStream> foreign_;
  size_t foreign_unwaited_ = 0;    // encoded since the last foreign synchronize()
  size_t foreign_uncommitted_ = 0;  // encoded since the last foreign commit()
  size_t commit_every_ = 64;
  void wait_foreign_locked();
};

// PyTorch's public C++ API for custom Metal work (torch/mps.h, namespace torch::mps), as plain
// function pointers so that the native core never links against torch: resolved at run time
// from the loaded torch library (resolve_torch_mps_api), or supplied by a test. In C++ (not
// Objective-C++) torch/mps.h declares the command buffer and the queue as `void*`.
struct TorchMpsApi {
  void* (*get_command_buffer)() = nullptr;  // id<MTLCommandBuffer> PyTorch is recording
  void* (*get_dispatch_queue)() = nullptr;  // dispatch_queue_t: PyTorch's serial queue
  void (*commit)() = nullptr;               // commit what is recorded; no wait
  void (*synchronize)() = nullptr;          // commit and wait
  // libdispatch's dispatch_sync_f (a test supplies its own queue discipline).
  void (*dispatch_sync_f)(void* queue, void* context, void (*work)(void*)) = nullptr;
  // Optional (ATen internals, exported by libtorch_cpu): at::mps::getDefaultMPSStream() and
  // MPSStream::endKernelCoalescing() (a non-virtual member: `this` comes first). PyTorch's ops
  // leave a compute encoder open on the command buffer; torch < 2.9's get_command_buffer does
  // not end it. Without these the stream ends it with commit() (which ends it too, then commits).
  void* (*get_default_stream)() = nullptr;
  void (*end_kernel_coalescing)(void* stream) = nullptr;
  bool complete() const { return get_command_buffer && get_dispatch_queue && commit && synchronize && dispatch_sync_f; }
};

// The Itanium-mangled names of torch::mps::get_command_buffer() and friends (no leading '_':
// dlsym adds Mach-O's own).
inline constexpr const char* kTorchGetCommandBuffer = "_ZN5torch3mps18get_command_bufferEv";
inline constexpr const char* kTorchGetDispatchQueue = "_ZN5torch3mps18get_dispatch_queueEv";
inline constexpr const char* kTorchCommit = "_ZN5torch3mps6commitEv";
inline constexpr const char* kTorchSynchronize = "_ZN5torch3mps11synchronizeEv";
inline constexpr const char* kAtenDefaultMpsStream = "_ZN2at3mps19getDefaultMPSStreamEv";
inline constexpr const char* kAtenEndKernelCoalescing = "_ZN2at3mps9MPSStream19endKernelCoalescingEv";

// Looks the API up in the process (RTLD_DEFAULT), then in `library` (the loaded libtorch_cpu;
// never loads it). Returns an incomplete API (complete() false) when torch is not there; the
// error says what was missing.
TorchMpsApi resolve_torch_mps_api(const std::string& library, std::string* error);

// PyTorch's MPS stream on a Metal device (csrc/metal/torch_stream.cpp); null on builds without
// Metal or for a device that is not a Metal device.
std::shared_ptr<ForeignStream> make_torch_mps_stream(const std::shared_ptr<Device>& device, const TorchMpsApi& api);

}  // namespace tmps
