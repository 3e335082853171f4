// Launcher: validates a launch against the kernel's parameters and Metal's limits, builds the
// dispatch (bindings, packed scalars), and encodes it into an open batch that is committed
// lazily. All checks run before anything is encoded, so a rejected launch leaves no trace.
#include "launcher.h"

#include "metal_limits.h"
#include "scalar_types.h"

#include <algorithm>
#include <cstring>

namespace tmps {

namespace {

// Metal's fixed limits (metal_limits.h); the device and pipeline may be lower.
constexpr uint64_t kMaxThreadsPerGroup = limits::kMaxThreadsPerThreadgroup;
constexpr uint64_t kMaxThreadgroupMemory = limits::kMaxThreadgroupMemory;
constexpr uint32_t kMaxBufferBindings = limits::kMaxBufferBindings;
constexpr uint32_t kThreadgroupMemoryGranule = limits::kThreadgroupMemoryGranule;

std::string kernel_of(const Pipeline& p) { return "kernel '" + p.name() + "'"; }

std::string line_of(const ParamInfo& p) {
  return p.line ? ", MSL line " + std::to_string(p.line) : std::string();
}

// "'x' ([[buffer(0)]] device float*, MSL line 3)"
std::string describe(const ParamInfo& p) {
  const char* space = "";
  switch (p.space) {
    case ParamInfo::Space::Device: space = "device "; break;
    case ParamInfo::Space::Constant: space = "constant "; break;
    case ParamInfo::Space::Threadgroup: space = "threadgroup "; break;
    case ParamInfo::Space::Thread: space = ""; break;
  }
  return "'" + p.name + "' ([[buffer(" + std::to_string(p.index) + ")]] " + space + p.type +
         (p.is_pointer ? "*" : "&") + line_of(p) + ")";
}

std::string name_list(const std::vector<const ParamInfo*>& params) {
  std::string s;
  for (const ParamInfo* p : params) {
    if (!s.empty()) s += ", ";
    s += p->name;
  }
  return s;
}

// Alignment of a packed scalar of n bytes: the largest power of two dividing n, at most 16.
size_t packed_alignment(size_t n) {
  size_t a = 1;
  while (a < 16 && n % (a * 2) == 0) a *= 2;
  return a;
}

size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Checks a Buffer argument against its parameter and returns the binding.
Binding bind_buffer(const Pipeline& pipe, const DeviceInfo& info, size_t arg_no, const Arg& arg, const ParamInfo& p) {
  const std::string who = kernel_of(pipe) + ": argument " + std::to_string(arg_no) + " " + describe(p);
  if (!arg.buffer) throw InvalidArgument(who + " has no buffer");
  const uint64_t length = arg.buffer->length();
  if (arg.offset > length) {
    throw InvalidArgument(who + ": offset " + std::to_string(arg.offset) + " is past the end of its " +
                          std::to_string(length) + "-byte buffer");
  }
  // Metal's rule (its API validation): a buffer binds at an offset inside it, below its length.
  // The simulator binds an empty view at the end.
  if (!info.is_simulator && arg.offset == length) {
    throw InvalidArgument(who + ": offset " + std::to_string(arg.offset) + " is not inside the buffer's " +
                          std::to_string(length) + " bytes (Metal binds a buffer at an offset below its length)");
  }
  if (arg.size != 0 && arg.size > length - arg.offset) {
    throw InvalidArgument(who + ": range of " + std::to_string(arg.size) + " bytes at offset " +
                          std::to_string(arg.offset) + " exceeds its " + std::to_string(length) + "-byte buffer");
  }
  const uint64_t usable = arg.size != 0 ? arg.size : length - arg.offset;
  // A reference (T&) reads exactly one T; check it when the backend knows sizeof(T).
  if (!p.is_pointer && p.type_size != 0 && usable < p.type_size) {
    throw InvalidArgument(who + " needs " + std::to_string(p.type_size) + " bytes at offset " +
                          std::to_string(arg.offset) + " but the buffer has " + std::to_string(usable));
  }
  // Metal requires the offset of a `device T*` binding to be a multiple of T's alignment; a
  // misaligned view (numpy slices of a byte array, odd storage offsets) would read shifted data.
  if (const size_t align = msl_type_alignment(p.type); align > 1) {
    void* base = arg.buffer->contents();
    const uint64_t at = (base ? reinterpret_cast<uintptr_t>(base) : arg.buffer->native_offset()) + arg.offset;
    if (at % align != 0) {
      throw InvalidArgument(who + ": its data starts " + std::to_string(at % align) + " bytes past a multiple of " +
                            std::to_string(align) + "; Metal needs buffer offsets aligned to the element type "
                            "(copy the misaligned view first, e.g. numpy.array(view) or tensor.clone())");
    }
  }
  Binding b;
  b.kind = Binding::Kind::Buffer;
  b.index = p.index;
  b.buffer = arg.buffer;
  b.offset = arg.offset;
  return b;
}

// Checks a Scalar argument bound directly (setBytes) to its parameter.
Binding bind_scalar(const Pipeline& pipe, size_t arg_no, const Arg& arg, const ParamInfo& p) {
  const std::string who = kernel_of(pipe) + ": argument " + std::to_string(arg_no) + " " + describe(p);
  if (p.space == ParamInfo::Space::Device) {
    throw InvalidArgument(who + " is device memory and needs a buffer, but a scalar was given");
  }
  if (arg.bytes.empty()) throw InvalidArgument(who + ": the scalar has no bytes");
  if (p.type_size != 0) {
    if (!p.is_pointer && arg.bytes.size() != p.type_size) {
      throw InvalidArgument(who + " takes " + std::to_string(p.type_size) + " bytes but the scalar has " +
                            std::to_string(arg.bytes.size()));
    }
    if (p.is_pointer && arg.bytes.size() % p.type_size != 0) {
      throw InvalidArgument(who + ": " + std::to_string(arg.bytes.size()) + " bytes is not a whole number of " +
                            std::to_string(p.type_size) + "-byte elements");
    }
  }
  Binding b;
  b.kind = Binding::Kind::Bytes;
  b.index = p.index;
  b.bytes = arg.bytes;
  return b;
}

// The dispatch's bindings: each argument to its [[buffer(n)]] parameter (scalars as bytes, or
// packed into one argument buffer at config.pack_scalars_at), within Metal's binding limit.
void bind_arguments(Dispatch& d, const Pipeline& pipe, const DeviceInfo& info, const std::vector<Arg>& args,
                    const LaunchConfig& config) {
  const std::string kernel = kernel_of(pipe);
  std::vector<const ParamInfo*> buffer_params;
  for (const ParamInfo& p : pipe.params())
    if (p.kind == ParamInfo::Kind::Buffer) buffer_params.push_back(&p);
  std::stable_sort(buffer_params.begin(), buffer_params.end(),
                   [](const ParamInfo* a, const ParamInfo* b) { return a->index < b->index; });

  const uint32_t max_bindings =
      info.max_buffer_bindings ? std::min(info.max_buffer_bindings, kMaxBufferBindings) : kMaxBufferBindings;
  const bool packing = config.pack_scalars_at >= 0;

  if (!packing) {
    if (args.size() != buffer_params.size()) {
      throw InvalidArgument(kernel + " takes " + std::to_string(buffer_params.size()) + " buffer arguments (" +
                            name_list(buffer_params) + "), got " + std::to_string(args.size()));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const ParamInfo& p = *buffer_params[i];
      d.bindings.push_back(args[i].kind == Arg::Kind::Buffer ? bind_buffer(pipe, info, i, args[i], p)
                                                             : bind_scalar(pipe, i, args[i], p));
    }
    if (args.size() > max_bindings) {
      throw LimitExceeded(kernel + " needs " + std::to_string(args.size()) + " buffer bindings; Metal allows " +
                          std::to_string(max_bindings) + " (pack the scalar arguments into one argument buffer)");
    }
  } else {
    const uint32_t pack_index = static_cast<uint32_t>(config.pack_scalars_at);
    const ParamInfo* pack_param = nullptr;
    std::vector<const ParamInfo*> buffer_slots;
    for (const ParamInfo* p : buffer_params) {
      if (p->index == pack_index && !pack_param) {
        pack_param = p;
      } else {
        buffer_slots.push_back(p);
      }
    }
    if (!pack_param) {
      throw InvalidArgument(kernel + " has no [[buffer(" + std::to_string(pack_index) +
                            ")]] parameter to receive the packed scalar arguments");
    }
    size_t num_buffers = 0;
    for (const Arg& a : args) num_buffers += a.kind == Arg::Kind::Buffer;
    if (num_buffers != buffer_slots.size()) {
      throw InvalidArgument(kernel + " takes " + std::to_string(buffer_slots.size()) + " buffer arguments (" +
                            name_list(buffer_slots) + ") plus scalars packed into '" + pack_param->name +
                            "' (buffer(" + std::to_string(pack_index) + ")), got " + std::to_string(num_buffers) +
                            " buffer arguments");
    }
    // Lay the scalars out like a C struct with these members in order.
    std::vector<uint8_t> packed;
    size_t max_align = 1;
    size_t slot = 0;
    size_t num_scalars = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      if (a.kind == Arg::Kind::Buffer) {
        d.bindings.push_back(bind_buffer(pipe, info, i, a, *buffer_slots[slot++]));
        continue;
      }
      if (a.bytes.empty()) {
        throw InvalidArgument(kernel + ": argument " + std::to_string(i) + " (scalar packed into '" +
                              pack_param->name + "') has no bytes");
      }
      size_t align = packed_alignment(a.bytes.size());
      max_align = std::max(max_align, align);
      size_t at = align_up(packed.size(), align);
      packed.resize(at + a.bytes.size(), 0);
      std::memcpy(packed.data() + at, a.bytes.data(), a.bytes.size());
      ++num_scalars;
    }
    if (num_scalars == 0) {
      throw InvalidArgument(kernel + ": pack_scalars_at=" + std::to_string(pack_index) +
                            " but there are no scalar arguments to pack");
    }
    packed.resize(align_up(packed.size(), max_align), 0);
    if (pack_param->type_size != 0 && pack_param->type_size != packed.size()) {
      throw InvalidArgument(kernel + ": the " + std::to_string(num_scalars) + " packed scalar arguments take " +
                            std::to_string(packed.size()) + " bytes but " + describe(*pack_param) + " is " +
                            std::to_string(pack_param->type_size) + " bytes");
    }
    Binding b;
    b.kind = Binding::Kind::Bytes;
    b.index = pack_index;
    b.bytes = std::move(packed);
    d.bindings.push_back(std::move(b));
    if (d.bindings.size() > max_bindings) {
      throw LimitExceeded(kernel + " needs " + std::to_string(d.bindings.size()) +
                          " buffer bindings even with packed scalars; Metal allows " + std::to_string(max_bindings));
    }
  }
  for (const Binding& b : d.bindings) {
    if (b.index >= max_bindings) {
      throw LimitExceeded(kernel + " binds [[buffer(" + std::to_string(b.index) + ")]]; Metal's binding indices end at " +
                          std::to_string(max_bindings - 1));
    }
  }
}

// Threads per threadgroup within Metal's, the device's and the pipeline's limits.
void check_threads(const Pipeline& pipe, const DeviceInfo& info, const LaunchConfig& config) {
  const std::string kernel = kernel_of(pipe);
  uint64_t max_threads = kMaxThreadsPerGroup;
  if (info.max_threads_per_threadgroup) max_threads = std::min<uint64_t>(max_threads, info.max_threads_per_threadgroup);
  if (pipe.max_total_threads_per_threadgroup())
    max_threads = std::min<uint64_t>(max_threads, pipe.max_total_threads_per_threadgroup());
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (config.threads_per_group[i] == 0) {
      throw InvalidArgument(kernel + ": threads must be between 1 and 2**32-1 in each dimension, got (" +
                            std::to_string(config.threads_per_group[0]) + ", " +
                            std::to_string(config.threads_per_group[1]) + ", " +
                            std::to_string(config.threads_per_group[2]) + "): a threadgroup has no zero dimension");
    }
    threads *= config.threads_per_group[i];
  }
  if (threads > max_threads) {
    throw LimitExceeded(kernel + ": " + std::to_string(threads) + " threads per threadgroup exceeds the limit of " +
                        std::to_string(max_threads) + " for this pipeline");
  }
}

// Threadgroup memory: each [[threadgroup(n)]] length rounded to Metal's granule, every
// threadgroup parameter given a size, the total within the limits.
void size_threadgroup_memory(Dispatch& d, const Pipeline& pipe, const DeviceInfo& info, const LaunchConfig& config) {
  const std::string kernel = kernel_of(pipe);
  uint64_t max_tg_memory = kMaxThreadgroupMemory;
  if (info.max_threadgroup_memory) max_tg_memory = std::min<uint64_t>(max_tg_memory, info.max_threadgroup_memory);
  uint64_t tg_memory = pipe.static_threadgroup_memory();
  const uint32_t max_indices =
      info.max_buffer_bindings ? std::min(info.max_buffer_bindings, kMaxBufferBindings) : kMaxBufferBindings;
  for (const auto& [index, bytes] : config.threadgroup_memory) {
    if (index >= max_indices) {
      throw InvalidArgument(kernel + ": threadgroup_memory names threadgroup(" + std::to_string(index) +
                            "); Metal's threadgroup indices end at " + std::to_string(max_indices - 1));
    }
    uint32_t rounded = static_cast<uint32_t>(align_up(bytes, kThreadgroupMemoryGranule));
    if (rounded < bytes) throw LimitExceeded(kernel + ": threadgroup(" + std::to_string(index) + ") size overflows");
    d.threadgroup_memory.emplace_back(index, rounded);
    tg_memory += rounded;
  }
  for (const ParamInfo& param : pipe.params()) {
    if (param.kind != ParamInfo::Kind::Threadgroup) continue;
    const ParamInfo* p = &param;
    bool given = std::any_of(config.threadgroup_memory.begin(), config.threadgroup_memory.end(),
                             [&](const auto& e) { return e.first == p->index && e.second > 0; });
    if (!given) {
      throw InvalidArgument(kernel + ": threadgroup parameter '" + p->name + "' ([[threadgroup(" +
                            std::to_string(p->index) + ")]]" + line_of(*p) + ") has no size in threadgroup_memory");
    }
  }
  if (tg_memory > max_tg_memory) {
    throw LimitExceeded(kernel + " uses " + std::to_string(tg_memory) + " bytes of threadgroup memory (" +
                        std::to_string(pipe.static_threadgroup_memory()) + " static); the limit is " +
                        std::to_string(max_tg_memory));
  }
}

// Builds the dispatch or throws; touches no stream state. This is the one validation of a
// launch that raises user-facing errors (the layers above only convert: Python's runtime.py
// and the Triton launcher pass sizes and arguments on unchecked): that the device can run the
// pipeline (Device::pipeline_mismatch), the arguments against the kernel's parameters and
// Metal's binding rules, the threadgroup size and threadgroup memory against Metal's, the
// device's and the pipeline's limits. The devices below (the simulator's Scheduler::run,
// metal_device.cpp validate_dispatch) assert what it checks: a violation there is a bug.
Dispatch build_dispatch(const Device& device, const std::shared_ptr<Pipeline>& pipeline, const std::vector<Arg>& args,
                        const LaunchConfig& config) {
  if (!pipeline) throw InvalidArgument("launch: no pipeline");
  if (const std::string why = device.pipeline_mismatch(*pipeline); !why.empty())
    throw InvalidArgument(kernel_of(*pipeline) + ": " + why);
  Dispatch d;
  d.pipeline = pipeline;
  bind_arguments(d, *pipeline, device.info(), args, config);
  check_threads(*pipeline, device.info(), config);
  size_threadgroup_memory(d, *pipeline, device.info(), config);
  d.threadgroups = config.threadgroups;
  d.threads_per_group = config.threads_per_group;
  return d;
}

}  // namespace

Launcher::Launcher(std::shared_ptr<Device> device) : device_(std::move(device)) {
  if (!device_) throw InvalidArgument("Launcher needs a device");
}

Launcher::~Launcher() {
  // Wait so that batches do not outlive the stream; errors nobody asked for are dropped.
  try {
    synchronize();
  } catch (...) {
  }
}

std::shared_ptr<DispatchTiming> Launcher::launch(const std::shared_ptr<Pipeline>& pipeline, const std::vector<Arg>& args,
                                               const LaunchConfig& config, bool timed) {
  Dispatch d = build_dispatch(*device_, pipeline, args, config);
  std::shared_ptr<DispatchTiming> timing = timed ? std::make_shared<DispatchTiming>() : nullptr;

  // An empty grid (e.g. a Triton grid over zero elements) runs nothing, as on CUDA.
  if (d.threadgroups[0] == 0 || d.threadgroups[1] == 0 || d.threadgroups[2] == 0) {
    if (timing) timing->ready = true;
    return timing;
  }

  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) open_ = device_->new_batch();
  open_->encode(d, timing);
  if (open_->size() >= std::max<size_t>(threshold_, 1)) commit_locked();
  return timing;
}

Dispatch Launcher::prepare(const std::shared_ptr<Pipeline>& pipeline, const std::vector<Arg>& args,
                         const LaunchConfig& config) const {
  return build_dispatch(*device_, pipeline, args, config);
}

void Launcher::commit_locked() {
  // Bound the work in flight (Metal queues hold a limited number of command buffers too):
  // past this many committed batches, wait for the oldest before adding another.
  constexpr size_t kMaxInFlight = 32;
  if (!open_ || open_->size() == 0) return;
  std::unique_ptr<Batch> batch = std::move(open_);
  try {
    batch->commit();
  } catch (...) {
    // Reported by the next synchronize(), like any dispatch error.
    if (!deferred_error_) deferred_error_ = std::current_exception();
    return;
  }
  in_flight_.push_back(std::move(batch));
  while (in_flight_.size() > kMaxInFlight) {
    std::unique_ptr<Batch> oldest = std::move(in_flight_.front());
    in_flight_.pop_front();
    try {
      oldest->wait();
    } catch (...) {
      if (!deferred_error_) deferred_error_ = std::current_exception();
    }
  }
}

void Launcher::commit() {
  std::lock_guard<std::mutex> lock(mu_);
  commit_locked();
}

void Launcher::synchronize() {
  std::lock_guard<std::mutex> sync_lock(sync_mu_);
  std::deque<std::unique_ptr<Batch>> batches;
  std::exception_ptr first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    commit_locked();
    batches.swap(in_flight_);
    first = deferred_error_;
    deferred_error_ = nullptr;
  }
  // Wait in submission order, and for every batch even after a failure, so the stream is
  // idle (and usable) when this returns.
  for (auto& batch : batches) {
    try {
      batch->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  batches.clear();  // drops the buffers the dispatches kept alive
  if (first) std::rethrow_exception(first);
}

size_t Launcher::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_ ? open_->size() : 0;
}

void Launcher::set_commit_threshold(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  threshold_ = n;
}

const std::shared_ptr<Device>& Launcher::device() const { return device_; }

}  // namespace tmps
