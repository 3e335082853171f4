// Launcher: validates and binds arguments, packs scalars, encodes dispatches into
// an open batch and commits lazily (on synchronize, on a pending-work threshold, before the
// host reads). Never commit-and-wait per launch. The simulator runs through this same code.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device.h"

namespace tmps {

// One launch argument as given by the caller, matched against the kernel's [[buffer(n)]]
// parameters in binding order.
struct Arg {
  enum class Kind { Buffer, Scalar };
  Kind kind = Kind::Buffer;
  std::shared_ptr<RawBuffer> buffer;  // Kind::Buffer
  uint64_t offset = 0;                // byte offset into buffer
  uint64_t size = 0;                  // bytes the caller may use from offset (0: to the end)
  std::vector<uint8_t> bytes;         // Kind::Scalar: the value's bytes, already in the kernel's type
};

struct LaunchConfig {
  std::array<uint32_t, 3> threadgroups{1, 1, 1};
  std::array<uint32_t, 3> threads_per_group{1, 1, 1};
  // (index, bytes) for [[threadgroup(index)]] parameters; every such parameter needs an entry.
  // Lengths are rounded up to 16 bytes (Metal's rule) before the 32 KiB limit is checked.
  std::vector<std::pair<uint32_t, uint32_t>> threadgroup_memory;
  // When >= 0: every Scalar argument is written into one argument buffer bound at this index
  // (the kernel declares `constant Args& a [[buffer(k)]]`), at natural alignment, in order.
  //
  // Layout rule (what the compiler's `struct Args` must match): scalars are laid out in the
  // order they appear in `args`. A scalar of n bytes is aligned to the largest power of two
  // dividing n, capped at 16 (so 1/2/4/8-byte scalars are aligned to their size); padding is
  // zero. The total is rounded up to the largest alignment used, exactly as a C struct with
  // those members in that order. The Buffer arguments are matched, in order, against the
  // kernel's other [[buffer(n)]] parameters sorted by n. When the struct's size is known
  // (ParamInfo::type_size) it must equal the packed size. Packing needs at least one scalar.
  // Without packing, more than 31 bindings is a LimitExceeded error.
  int pack_scalars_at = -1;
};

class Launcher {
 public:
  explicit Launcher(std::shared_ptr<Device> device);
  ~Launcher();

  // Validate `args` against the pipeline's parameters (count, buffer vs scalar, sizes known
  // to the backend, Metal's limits) and encode the dispatch. Throws InvalidArgument or
  // LimitExceeded naming the kernel and parameter; nothing is encoded then.
  // A zero threadgroup dimension is InvalidArgument; a grid with zero threadgroups is validated and
  // then encodes nothing (an empty Triton grid). Dispatch errors surface in synchronize().
  // Returns the dispatch's timing record when `timed` (filled after completion), else null.
  std::shared_ptr<DispatchTiming> launch(const std::shared_ptr<Pipeline>& pipeline, const std::vector<Arg>& args,
                                         const LaunchConfig& config, bool timed = false);
  // Validate as launch() does and return the dispatch without encoding it (for another stream,
  // csrc/foreign_stream.h).
  Dispatch prepare(const std::shared_ptr<Pipeline>& pipeline, const std::vector<Arg>& args,
                   const LaunchConfig& config) const;
  void commit();       // submit the open batch (no wait)
  void synchronize();  // commit and wait for everything submitted; rethrows dispatch errors
  size_t pending() const;            // dispatches encoded but not committed
  void set_commit_threshold(size_t n);  // commit automatically after n pending dispatches (default 64; 0 acts as 1)
  const std::shared_ptr<Device>& device() const;

 private:
  std::shared_ptr<Device> device_;
  mutable std::mutex mu_;
  std::unique_ptr<Batch> open_;
  std::deque<std::unique_ptr<Batch>> in_flight_;
  size_t threshold_ = 64;
  // Serializes synchronize() callers so each returns only after everything submitted before
  // its call completed, while launches (under mu_) continue during the wait.
  std::mutex sync_mu_;
  // First error of a batch whose commit() failed; rethrown by the next synchronize().
  std::exception_ptr deferred_error_;
  void commit_locked();
};

}  // namespace tmps
