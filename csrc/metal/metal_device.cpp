// Metal backend: device discovery, buffers, pipelines and batches of dispatches (the pipelines'
// binary-archive disk cache: pipeline_archive.cpp). See metal_device.h for the ownership rules and
// the timing design.
#include "metal/metal_device.h"
#include "metal/fork_check.h"
#include "metal/pipeline_archive.h"

#include <objc/runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "msl_scanner.h"

namespace tmps {
namespace metal {

NS::String* ns_string(const std::string& s) { return NS::String::string(s.c_str(), NS::UTF8StringEncoding); }

std::string to_string(const NS::String* s) { return s ? std::string(s->utf8String()) : std::string(); }

std::string describe(const NS::Error* error) {
  if (!error) return "(Metal gave no error object)";
  return to_string(error->localizedDescription());
}

namespace {

// Untimed and timed dispatches of one batch run in several compute passes: tracked hazards
// let Metal order a pass that reads a buffer after a pass that wrote it.
constexpr MTL::ResourceOptions kSharedOptions = MTL::ResourceStorageModeShared |
                                                MTL::ResourceCPUCacheModeDefaultCache |
                                                MTL::ResourceHazardTrackingModeTracked;
constexpr size_t kMaxSetBytes = limits::kMaxSetBytes;  // Metal's limits: csrc/metal_limits.h
constexpr uint32_t kThreadgroupMemoryGranule = limits::kThreadgroupMemoryGranule;
constexpr uintptr_t kApplePage = 16384;  // VM page size on Apple silicon

// Whether the running OS implements a selector: metal-cpp headers may be newer than the OS
// (sending an unknown selector raises an Objective-C exception, which would abort us).
// The bytes of an immutable NSData (metal-cpp declares only NSMutableData's mutableBytes, which
// an NSData does not answer: an unrecognized selector ends the process).
const void* data_bytes(const NS::Data* data) {
  using Bytes = const void* (*)(const void*, SEL);
  return reinterpret_cast<Bytes>(&objc_msgSend)(data, sel_registerName("bytes"));
}

bool responds_to(const void* object, const char* selector) {
  Class cls = object_getClass(reinterpret_cast<id>(const_cast<void*>(object)));
  return cls && class_respondsToSelector(cls, sel_registerName(selector));
}

// --- compile options that depend on the metal-cpp version ---------------------------------
// setMathMode / setMathFloatingPointFunctions appeared with the macOS 15 SDK. Detecting the
// member (not a version macro) keeps older metal-cpp (a user's METAL_CPP_DIR) compiling.
template <class T, class = void>
struct HasSetMathMode : std::false_type {};
template <class T>
struct HasSetMathMode<T, std::void_t<decltype(&T::setMathMode)>> : std::true_type {};
template <class T, class = void>
struct HasSetMathFunctions : std::false_type {};
template <class T>
struct HasSetMathFunctions<T, std::void_t<decltype(&T::setMathFloatingPointFunctions)>> : std::true_type {};

template <class Method>
struct FirstArg;
template <class C, class R, class A>
struct FirstArg<R (C::*)(A)> {
  using type = A;
};

template <class Options>
void apply_math_mode(Options* opts, MathMode mode) {
  if constexpr (HasSetMathMode<Options>::value) {
    if (responds_to(opts, "setMathMode:")) {
      using Mode = typename FirstArg<decltype(&Options::setMathMode)>::type;
      // MTLMathModeSafe = 0, Relaxed = 1, Fast = 2.
      int value = mode == MathMode::Safe ? 0 : mode == MathMode::Relaxed ? 1 : 2;
      opts->setMathMode(static_cast<Mode>(value));
      if constexpr (HasSetMathFunctions<Options>::value) {
        if (responds_to(opts, "setMathFloatingPointFunctions:")) {
          using Fns = typename FirstArg<decltype(&Options::setMathFloatingPointFunctions)>::type;
          // Precise (1) exp/log/sin... for Safe: Triton's math is not fast-math. Fast (0) otherwise.
          opts->setMathFloatingPointFunctions(static_cast<Fns>(mode == MathMode::Safe ? 1 : 0));
        }
      }
      return;
    }
  }
  // Older OS/SDK: only on/off. Relaxed has no equivalent; it gets the safe setting.
  opts->setFastMathEnabled(mode == MathMode::Fast);
}

// The macOS release that first supports an MSL version (Apple's MSL specification, table 1.1).
std::pair<int, int> macos_for_msl(unsigned major, unsigned minor) {
  if (major >= 4) return {26, 0};
  if (major == 3 && minor >= 2) return {15, 0};
  if (major == 3 && minor == 1) return {14, 0};
  if (major == 3) return {13, 0};
  return {12, 0};
}

std::string os_version();

bool os_at_least(int major, int minor) {
  NS::OperatingSystemVersion want{major, minor, 0};
  return NS::ProcessInfo::processInfo()->isOperatingSystemAtLeastVersion(want);
}

// The newest MSL version this OS compiles.
std::string newest_msl() {
  for (const char* v : {"4.0", "3.2", "3.1", "3.0"}) {
    unsigned major = 0, minor = 0;
    std::sscanf(v, "%u.%u", &major, &minor);
    auto [os_major, os_minor] = macos_for_msl(major, minor);
    if (os_at_least(os_major, os_minor)) return v;
  }
  return "2.4";
}

// "3.1" -> MTLLanguageVersion3_1. The enum is (major << 16) | minor in every SDK, so building the
// value keeps versions newer than the compiled headers usable.
MTL::LanguageVersion parse_language_version(const std::string& text, const std::string& label) {
  unsigned major = 0, minor = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%u.%u%c", &major, &minor, &tail) != 2 || major < 1 || major > 9 || minor > 9)
    throw InvalidArgument("kernel '" + label + "': language_version '" + text + "' is not of the form \"3.1\"");
  // An OS without this MSL version fails with an unclear Metal error: say what is needed.
  auto [os_major, os_minor] = macos_for_msl(major, minor);
  if (!os_at_least(os_major, os_minor))
    throw Unavailable("kernel '" + label + "': Metal Shading Language " + text + " needs macOS " +
                      std::to_string(os_major) + "." + std::to_string(os_minor) + " or later; this is " +
                      os_version());
  return static_cast<MTL::LanguageVersion>((major << 16) | minor);
}

Ref<NS::Dictionary> macro_dictionary(const std::vector<std::pair<std::string, std::string>>& macros) {
  std::vector<const NS::Object*> keys, values;
  for (const auto& [name, value] : macros) {
    keys.push_back(ns_string(name));
    values.push_back(ns_string(value));
  }
  return NS::TransferPtr(NS::Dictionary::alloc()->init(values.data(), keys.data(), keys.size()));
}

std::string function_names(const MTL::Library* library) {
  std::string out;
  const NS::Array* names = library->functionNames();
  for (NS::UInteger i = 0; names && i < names->count(); ++i)
    out += (out.empty() ? "" : ", ") + to_string(names->object<NS::String>(i));
  return out.empty() ? "(none)" : out;
}

// --- device facts --------------------------------------------------------------------------
// Apple GPU family from apple10 (M5) down to apple7 (M1); 0 when below apple7 (Intel/AMD Macs),
// which the backend does not target. Values are MTLGPUFamilyApple<N> = 1000 + N, built
// numerically so headers that predate apple10 still compile.
int apple_family(MTL::Device* device) {
  for (int n = 10; n >= 7; --n)
    if (device->supportsFamily(static_cast<MTL::GPUFamily>(1000 + n))) return n;
  return 0;
}

// The M-series generation: from the name ("Apple M4 Pro" -> 4), since GPU families do not map
// one to one (apple9 is both M3 and M4). Fallback by family for unknown names.
int chip_generation(const std::string& name, int family) {
  for (size_t at = name.find('M'); at != std::string::npos; at = name.find('M', at + 1)) {
    size_t end = at + 1;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    bool word_start = at == 0 || name[at - 1] == ' ';
    if (word_start && end > at + 1 && (end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]))))
      return std::atoi(name.c_str() + at + 1);
  }
  switch (family) {
    case 7: return 1;
    case 8: return 2;
    case 9: return 3;  // or 4: the name did not say
    case 10: return 5;
    default: return 0;
  }
}

Ref<MTL::CounterSet> timestamp_counter_set(MTL::Device* device) {
  if (!device->supportsCounterSampling(MTL::CounterSamplingPointAtStageBoundary)) return {};
  const NS::Array* sets = device->counterSets();
  for (NS::UInteger i = 0; sets && i < sets->count(); ++i) {
    auto* set = sets->object<MTL::CounterSet>(i);
    if (set->name()->isEqualToString(MTL::CommonCounterSetTimestamp)) return NS::RetainPtr(set);
  }
  return {};
}

std::string os_version() {
  return to_string(NS::ProcessInfo::processInfo()->operatingSystemVersionString());
}

// TRITON_MPS_METAL_DEBUG=1: per-encoder error reporting in command buffers (names the faulting pass).
bool metal_debug() {
  const char* v = std::getenv("TRITON_MPS_METAL_DEBUG");
  return v && *v && std::strcmp(v, "0") != 0;
}

// TRITON_MPS_METAL_VALIDATION: 1/true/yes/on or 0/false/no/off (unset: off).
bool validation_requested() {
  const char* v = std::getenv("TRITON_MPS_METAL_VALIDATION");
  std::string text = v ? v : "";
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text.empty() || text == "0" || text == "false" || text == "no" || text == "off") return false;
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  throw InvalidArgument("TRITON_MPS_METAL_VALIDATION must be 1/true/yes/on or 0/false/no/off, got '" + std::string(v) + "'");
}

// Metal's own switch, read when the process makes its first device: any value but 0 is on.
bool shader_validation_on() {
  const char* v = std::getenv("MTL_SHADER_VALIDATION");
  return v && *v && std::strcmp(v, "0") != 0;
}

// One shader validation log entry: "kernel 'k': Metal shader validation (...): <Metal's text>,
// MSL line 46 (kernel.py:12)". The Triton line comes from the `// @ file.py:line` marks our compiler
// writes into the MSL (the same map the simulator's memcheck uses).
std::string describe_log(MTL::FunctionLog* log, const std::vector<std::shared_ptr<Pipeline>>& pipelines) {
  MTL::FunctionLogDebugLocation* where = log->debugLocation();
  std::string kernel = where ? to_string(where->functionName()) : std::string();
  if (kernel.empty() && log->function()) kernel = to_string(log->function()->name());
  if (kernel.empty()) kernel = to_string(log->encoderLabel());
  std::string text =
      "kernel '" + kernel + "': Metal shader validation (TRITON_MPS_METAL_VALIDATION): " + to_string(log->description());
  if (where && where->line()) {
    const uint32_t line = static_cast<uint32_t>(where->line());
    text += ", MSL line " + std::to_string(line);
    for (const auto& p : pipelines) {
      auto* mp = dynamic_cast<const MetalPipeline*>(p.get());
      if (!mp || mp->name() != kernel || !mp->origins()) continue;
      const std::string origin = mp->origins()->at(line);
      if (!origin.empty()) text += " (" + origin + ")";
      break;
    }
  }
  return text;
}

std::string command_buffer_error(MTL::CommandBuffer* cb) {
  std::string text = "Metal command buffer failed: " + describe(cb->error());
  const NS::Error* error = cb->error();
  const NS::Dictionary* info = error ? error->userInfo() : nullptr;
  const NS::Array* encoders = info ? info->object<NS::Array>(MTL::CommandBufferEncoderInfoErrorKey) : nullptr;
  for (NS::UInteger i = 0; encoders && i < encoders->count(); ++i) {
    auto* e = encoders->object<MTL::CommandBufferEncoderInfo>(i);
    if (e->errorState() == MTL::CommandEncoderErrorStateFaulted)
      text += "; faulted in pass '" + to_string(e->label()) + "'";
  }
  return text;
}

}  // namespace

// --- small owners --------------------------------------------------------------------------

AutoreleasePool::AutoreleasePool() : pool_(NS::TransferPtr(NS::AutoreleasePool::alloc()->init())) {}

MetalBuffer::MetalBuffer(Ref<MTL::Buffer> buffer) : buffer_(std::move(buffer)), length_(buffer_->length()) {}
MetalBuffer::MetalBuffer(Ref<MTL::Buffer> buffer, size_t base, size_t length)
    : buffer_(std::move(buffer)), base_(base), length_(length) {}
MetalBuffer::MetalBuffer(std::shared_ptr<const Ref<MTL::Buffer>> wrap, size_t base, size_t length)
    : buffer_(*wrap), wrap_(std::move(wrap)), base_(base), length_(length) {}
void* MetalBuffer::contents() {
  void* p = buffer_->contents();
  return p ? static_cast<char*>(p) + base_ : nullptr;
}
size_t MetalBuffer::length() const { return length_; }
void* MetalBuffer::native_handle() { return buffer_.get(); }

MetalPipeline::MetalPipeline(std::string name, std::vector<ParamInfo> params, uint32_t line,
                             Ref<MTL::ComputePipelineState> state, std::shared_ptr<const sim::SourceOrigins> origins)
    : name_(std::move(name)),
      params_(std::move(params)),
      line_(line),
      state_(std::move(state)),
      max_threads_(static_cast<uint32_t>(state_->maxTotalThreadsPerThreadgroup())),
      execution_width_(static_cast<uint32_t>(state_->threadExecutionWidth())),
      static_threadgroup_memory_(static_cast<uint32_t>(state_->staticThreadgroupMemoryLength())),
      origins_(std::move(origins)) {}

// --- counter sample buffers ----------------------------------------------------------------

SampleBufferPool::SampleBufferPool(Ref<MTL::Device> device, Ref<MTL::CounterSet> set)
    : device_(std::move(device)), set_(std::move(set)) {}

Ref<MTL::CounterSampleBuffer> SampleBufferPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      Ref<MTL::CounterSampleBuffer> b = std::move(free_.back());
      free_.pop_back();
      return b;
    }
  }
  AutoreleasePool pool;
  auto desc = NS::TransferPtr(MTL::CounterSampleBufferDescriptor::alloc()->init());
  desc->setCounterSet(set_.get());
  desc->setSampleCount(kSamplesPerBuffer);
  desc->setStorageMode(MTL::StorageModeShared);
  NS::Error* error = nullptr;
  return NS::TransferPtr(device_->newCounterSampleBuffer(desc.get(), &error));
}

void SampleBufferPool::give_back(std::vector<Ref<MTL::CounterSampleBuffer>> buffers) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : buffers) free_.push_back(std::move(b));
}

// --- device --------------------------------------------------------------------------------

MetalDevice::MetalDevice(Ref<MTL::Device> device) : device_(std::move(device)) {
  note_metal_process();
  AutoreleasePool pool;
  queue_ = NS::TransferPtr(device_->newCommandQueue());
  if (!queue_) throw Unavailable("Metal: could not create a command queue on " + to_string(device_->name()));
  int family = apple_family(device_.get());
  info_.name = to_string(device_->name());
  info_.registry_id = device_->registryID();
  info_.gpu_family = family ? "apple" + std::to_string(family) : "unknown";
  info_.generation = chip_generation(info_.name, family);
  info_.msl_version = newest_msl();
  info_.max_threads_per_threadgroup = static_cast<uint32_t>(device_->maxThreadsPerThreadgroup().width);
  info_.max_threadgroup_memory = static_cast<uint32_t>(device_->maxThreadgroupMemoryLength());
  info_.recommended_working_set = device_->recommendedMaxWorkingSetSize();
  info_.unified_memory = device_->hasUnifiedMemory();
  info_.simd_width = limits::kSimdWidth;
  info_.max_buffer_bindings = limits::kMaxBufferBindings;
  info_.max_buffer_length = device_->maxBufferLength();
  info_.is_simulator = false;
  validation_ = shader_validation_on();
#ifdef TMPS_METAL_EMULATED
  info_.is_emulated = true;
#endif
  identity_ = "metal:" + std::to_string(info_.registry_id) + ":" + os_version();
  timer_.timestamps = timestamp_counter_set(device_.get());
  if (timer_.timestamps) timer_.samples = std::make_shared<SampleBufferPool>(device_, timer_.timestamps);
  archive_ = std::make_unique<PipelineArchive>(device_, info_.registry_id);
}

MetalDevice::~MetalDevice() = default;

std::unique_ptr<RawBuffer> MetalDevice::new_buffer(size_t bytes) {
  require_metal_process("a Metal buffer");
  if (bytes > info_.max_buffer_length)
    throw OutOfMemory("Metal: buffer of " + std::to_string(bytes) + " bytes exceeds maxBufferLength (" +
                      std::to_string(info_.max_buffer_length) + ") of " + info_.name);
  // Metal rejects zero-length buffers; a 1-byte buffer keeps empty tensors bindable.
  auto buffer = NS::TransferPtr(device_->newBuffer(std::max<size_t>(bytes, 1), kSharedOptions));
  if (!buffer) throw OutOfMemory("Metal: could not allocate " + std::to_string(bytes) + " bytes on " + info_.name);
  return std::make_unique<MetalBuffer>(std::move(buffer));
}

std::unique_ptr<RawBuffer> MetalDevice::wrap_host_memory(void* ptr, size_t bytes) {
  require_metal_process("wrapping host memory");
  if (!ptr || bytes == 0) throw InvalidArgument("Metal: wrap_host_memory of a null pointer or of 0 bytes");
  // newBufferWithBytesNoCopy needs a page-aligned pointer and a page-multiple length (16 KiB
  // pages on Apple silicon). numpy and torch CPU memory is only 16-64 byte aligned: wrap the
  // whole pages around it, as PyTorch does for its CPU<->MPS copies, and remember where the
  // caller's byte 0 lies. The extra bytes belong to the same mapped pages; kernels never see them.
  const uintptr_t page = std::max<uintptr_t>(static_cast<uintptr_t>(::getpagesize()), kApplePage);
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t base = start / page * page;
  const uintptr_t end = (start + bytes + page - 1) / page * page;
  std::lock_guard<std::mutex> lock(wraps_mu_);
  std::weak_ptr<const Ref<MTL::Buffer>>& slot = host_wraps_[{base, end}];
  std::shared_ptr<const Ref<MTL::Buffer>> wrap = slot.lock();
  if (!wrap) {
    // No deallocator: the caller owns the memory and must keep it alive longer than the buffer
    // (a live wrap's owner is alive, so its pages cannot have been reused meanwhile).
    auto buffer = NS::TransferPtr(device_->newBuffer(reinterpret_cast<void*>(base), end - base, kSharedOptions, nullptr));
    if (!buffer) throw OutOfMemory("Metal: could not wrap " + std::to_string(bytes) + " bytes of host memory");
    wrap = std::make_shared<const Ref<MTL::Buffer>>(std::move(buffer));
    slot = wrap;
    for (auto it = host_wraps_.begin(); it != host_wraps_.end();)  // forget wraps no longer in use
      it = it->second.expired() ? host_wraps_.erase(it) : std::next(it);
  }
  return std::make_unique<MetalBuffer>(std::move(wrap), start - base, bytes);
}

std::unique_ptr<RawBuffer> MetalDevice::wrap_native_buffer(void* handle) {
  require_metal_process("wrapping an MTLBuffer");
  // A torch `mps` tensor's storage pointer is its id<MTLBuffer>.
  if (!handle) throw InvalidArgument("Metal: wrap_native_buffer of a null MTLBuffer");
  auto* buffer = static_cast<MTL::Buffer*>(handle);
  if (buffer->device() != device_.get())
    throw InvalidArgument("Metal: the MTLBuffer belongs to another Metal device than '" + info_.name + "'");
  return std::make_unique<MetalBuffer>(NS::RetainPtr(buffer));
}

std::shared_ptr<Pipeline> MetalDevice::build_pipeline(const std::string& source, const std::string& entry,
                                                      const CompileOptions& options) {
  require_metal_process("building a pipeline");
  AutoreleasePool pool;
  const std::string label = options.label.empty() ? entry : options.label;
  auto opts = NS::TransferPtr(MTL::CompileOptions::alloc()->init());
  apply_math_mode(opts.get(), options.math_mode);
  opts->setLanguageVersion(parse_language_version(options.language_version, label));
  Ref<NS::Dictionary> macros;
  if (!options.macros.empty()) {
    macros = macro_dictionary(options.macros);
    opts->setPreprocessorMacros(macros.get());
  }

  NS::Error* error = nullptr;
  auto library = NS::TransferPtr(device_->newLibrary(ns_string(source), opts.get(), &error));
  if (!library) throw CompileError("kernel '" + label + "': Metal compile failed:\n" + describe(error));
  auto function = NS::TransferPtr(library->newFunction(ns_string(entry)));
  if (!function)
    throw CompileError("kernel '" + label + "': no function '" + entry + "' in the compiled library; it has: " +
                       function_names(library.get()));
  if (function->functionType() != MTL::FunctionTypeKernel)
    throw CompileError("kernel '" + label + "': '" + entry + "' is not a `kernel` function");

  // Bindings come from our own MSL frontend (the same parse the simulator uses), so launch
  // arguments are checked the same way on both backends.
  const std::vector<KernelDecl> decls = parse_kernels(source, label + ".metal");
  auto decl = std::find_if(decls.begin(), decls.end(), [&](const KernelDecl& k) { return k.name == entry; });
  if (decl == decls.end())
    throw CompileError("kernel '" + label + "': Metal compiled '" + entry +
                       "' but its signature could not be read from the source (kernels made by macros are not supported)");

  Ref<MTL::ComputePipelineState> state = archive_->build(function.get(), label, options.max_total_threads);
  if (options.max_total_threads && state->maxTotalThreadsPerThreadgroup() < options.max_total_threads)
    throw LimitExceeded("kernel '" + label + "': Metal can run at most " +
                        std::to_string(state->maxTotalThreadsPerThreadgroup()) + " threads per threadgroup of it, " +
                        "it needs " + std::to_string(options.max_total_threads) + " (use fewer warps)",
                        state->maxTotalThreadsPerThreadgroup());
  std::shared_ptr<const sim::SourceOrigins> origins;
  if (validation_) origins = std::make_shared<const sim::SourceOrigins>(source);  // for validation reports
  return std::make_shared<MetalPipeline>(entry, decl->params, decl->line, std::move(state), std::move(origins));
}

std::string MetalDevice::pipeline_mismatch(const Pipeline& pipeline) const {
  auto* p = dynamic_cast<const MetalPipeline*>(&pipeline);
  if (!p) return "pipeline was not built by a Metal device";
  if (p->state()->device() != device_.get()) return "pipeline was built for another Metal device";
  return "";
}

std::unique_ptr<Batch> MetalDevice::new_batch() {
  require_metal_process("a launch");
  return std::make_unique<MetalBatch>(device_, queue_, timer_, info_, validation_);
}

// --- batch ---------------------------------------------------------------------------------

MetalBatch::MetalBatch(Ref<MTL::Device> device, Ref<MTL::CommandQueue> queue, TimerSupport timer,
                       const DeviceInfo& info, bool validation)
    : device_(std::move(device)),
      queue_(std::move(queue)),
      timer_(std::move(timer)),
      info_(info),
      state_(std::make_shared<BatchState>()),
      validation_(validation) {
  state_->device = device_;
  state_->validation = validation;
  state_->sample_pool = timer_.samples;
}

MetalBatch::~MetalBatch() {
  // An encoder released without endEncoding is a Metal API violation, even uncommitted.
  if (!committed_) {
    AutoreleasePool pool;
    end_encoder();
  }
}

// Launcher::build_dispatch is the validation that raises user-facing errors (the pipeline is
// this device's, threads, bindings and Metal's offset rule, threadgroup memory against Metal's
// and the device's limits). What it checks is asserted here only: a violation is a bug (Metal
// would reject the command buffer or fault).
void validate_dispatch(MTL::Device* device, const DeviceInfo& info, const Dispatch& d) {
  std::string kernel;
  const auto bug = [&](const std::string& what) {
    return LimitExceeded(kernel + "internal error: a dispatch with " + what +
                         " reached the Metal device (Launcher::build_dispatch refuses such launches; a bug)");
  };
  auto* pipeline = dynamic_cast<MetalPipeline*>(d.pipeline.get());
  if (!pipeline) throw bug("a pipeline no Metal device built");
  kernel = "kernel '" + pipeline->name() + "': ";
  if (pipeline->state()->device() != device) throw bug("a pipeline built for another Metal device");
  uint64_t threads = 1;
  for (uint32_t t : d.threads_per_group) threads *= t;
  if (threads == 0 || threads > pipeline->max_total_threads_per_threadgroup())
    throw bug("a threadgroup of " + std::to_string(threads) + " threads (the pipeline's maxTotalThreadsPerThreadgroup "
              "is " + std::to_string(pipeline->max_total_threads_per_threadgroup()) + ")");
  for (const Binding& b : d.bindings) {
    if (b.index >= info.max_buffer_bindings)
      throw bug("buffer(" + std::to_string(b.index) + "), over Metal's " + std::to_string(info.max_buffer_bindings) +
                " buffer bindings");
    if (b.kind == Binding::Kind::Bytes) {
      if (b.bytes.empty()) throw bug("no inline bytes at buffer(" + std::to_string(b.index) + ")");
      continue;
    }
    if (!b.buffer || !b.buffer->native_handle()) throw bug("no Metal buffer at buffer(" + std::to_string(b.index) + ")");
    // Metal's validation: the offset must be < the buffer's length (an offset equal to it is rejected too).
    if (b.offset >= b.buffer->length())
      throw bug("buffer(" + std::to_string(b.index) + ") at offset " + std::to_string(b.offset) + ", not inside its " +
                std::to_string(b.buffer->length()) + " bytes");
  }
  uint64_t shared = pipeline->static_threadgroup_memory();
  for (const auto& [index, bytes] : d.threadgroup_memory) {
    if (index >= info.max_buffer_bindings) throw bug("threadgroup(" + std::to_string(index) + "), an index out of range");
    shared += (uint64_t(bytes) + kThreadgroupMemoryGranule - 1) / kThreadgroupMemoryGranule * kThreadgroupMemoryGranule;
  }
  if (shared > info.max_threadgroup_memory)
    throw bug(std::to_string(shared) + " bytes of threadgroup memory (the device has " +
              std::to_string(info.max_threadgroup_memory) + ")");
}

void MetalBatch::validate(const Dispatch& d) const { validate_dispatch(device_.get(), info_, d); }

MTL::CommandBuffer* MetalBatch::current_command_buffer() {
  if (!command_buffer_open_) {
    auto desc = NS::TransferPtr(MTL::CommandBufferDescriptor::alloc()->init());
    desc->setRetainedReferences(false);  // BatchState retains everything the GPU touches
    // Which pass faulted: costs GPU time on every command buffer, so only when debugging (or
    // validating: shader validation reports name their encoder).
    if (metal_debug() || validation_) desc->setErrorOptions(MTL::CommandBufferErrorOptionEncoderExecutionStatus);
    MTL::CommandBuffer* cb = queue_->commandBuffer(desc.get());
    if (!cb) throw DispatchError("Metal: could not create a command buffer");
    command_buffers_.push_back(NS::RetainPtr(cb));
    command_buffer_open_ = true;
  }
  return command_buffers_.back().get();
}

void MetalBatch::end_encoder() {
  if (encoder_) {
    encoder_->endEncoding();
    encoder_.reset();
  }
}

void MetalBatch::close_command_buffer() {
  end_encoder();
  command_buffer_open_ = false;
}

bool MetalBatch::reserve_samples(Ref<MTL::CounterSampleBuffer>& buffer, NS::UInteger& index) {
  if (!samples_ || samples_used_ + 2 > SampleBufferPool::kSamplesPerBuffer) {
    samples_ = timer_.samples->acquire();
    samples_used_ = 0;
    if (!samples_) return false;
    state_->sample_buffers.push_back(samples_);  // back to the pool once the timings were read
  }
  buffer = samples_;
  index = samples_used_;
  samples_used_ += 2;
  return true;
}

void encode_dispatch(MTL::Device* device, MTL::ComputeCommandEncoder* enc, const Dispatch& d,
                     std::vector<Ref<MTL::Buffer>>& scratch_buffers) {
  auto* pipeline = static_cast<MetalPipeline*>(d.pipeline.get());
  enc->setComputePipelineState(pipeline->state());
  for (const Binding& b : d.bindings) {
    if (b.kind == Binding::Kind::Buffer) {
      enc->setBuffer(static_cast<MTL::Buffer*>(b.buffer->native_handle()), b.buffer->native_offset() + b.offset,
                     b.index);
    } else if (b.bytes.size() <= kMaxSetBytes) {
      enc->setBytes(b.bytes.data(), b.bytes.size(), b.index);  // Metal copies the bytes now
    } else {
      auto scratch = NS::TransferPtr(device->newBuffer(b.bytes.data(), b.bytes.size(), kSharedOptions));
      if (!scratch) throw OutOfMemory("kernel '" + pipeline->name() + "': could not allocate inline argument bytes");
      enc->setBuffer(scratch.get(), 0, b.index);
      scratch_buffers.push_back(std::move(scratch));
    }
  }
  for (const auto& [index, bytes] : d.threadgroup_memory) {
    NS::UInteger rounded = (NS::UInteger(bytes) + kThreadgroupMemoryGranule - 1) / kThreadgroupMemoryGranule *
                           kThreadgroupMemoryGranule;
    enc->setThreadgroupMemoryLength(rounded, index);
  }
  enc->dispatchThreadgroups(MTL::Size(d.threadgroups[0], d.threadgroups[1], d.threadgroups[2]),
                            MTL::Size(d.threads_per_group[0], d.threads_per_group[1], d.threads_per_group[2]));
}

void MetalBatch::encode_into(MTL::ComputeCommandEncoder* enc, const Dispatch& d) {
  encode_dispatch(device_.get(), enc, d, state_->scratch);
}

void MetalBatch::encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) {
  if (committed_) throw InvalidArgument("Metal batch: encode after commit");
  validate(d);
  ++size_;
  if (d.threadgroups[0] == 0 || d.threadgroups[1] == 0 || d.threadgroups[2] == 0) {
    if (timing) timing->ready = true;  // an empty grid runs nothing and takes no time
    return;
  }
  AutoreleasePool pool;
  state_->pipelines.push_back(d.pipeline);
  for (const Binding& b : d.bindings)
    if (b.kind == Binding::Kind::Buffer) state_->buffers.push_back(b.buffer);
  const std::string& name = d.pipeline->name();

  if (!timing) {
    // Shader validation: one pass per dispatch, labelled with the kernel, so that a report
    // (encoder label, dispatch index) points at one kernel.
    if (validation_) end_encoder();
    if (!encoder_) {
      encoder_ = NS::RetainPtr(current_command_buffer()->computeCommandEncoder());
      if (validation_) encoder_->setLabel(ns_string(name));
    }
    encode_into(encoder_.get(), d);
    return;
  }

  BatchState::Timed timed;
  timed.timing = std::move(timing);
  end_encoder();
  if (timer_.timestamps && reserve_samples(timed.samples, timed.index)) {
    // The pass samples the GPU clock when it starts and when it ends.
    MTL::ComputePassDescriptor* pass = MTL::ComputePassDescriptor::computePassDescriptor();
    MTL::ComputePassSampleBufferAttachmentDescriptor* attachment = pass->sampleBufferAttachments()->object(0);
    attachment->setSampleBuffer(timed.samples.get());
    attachment->setStartOfEncoderSampleIndex(timed.index);
    attachment->setEndOfEncoderSampleIndex(timed.index + 1);
    MTL::ComputeCommandEncoder* enc = current_command_buffer()->computeCommandEncoder(pass);
    enc->setLabel(ns_string(name));
    encode_into(enc, d);
    enc->endEncoding();
  } else {
    // Fallback: the dispatch alone in its own command buffer, timed by GPUStartTime/GPUEndTime.
    close_command_buffer();
    MTL::ComputeCommandEncoder* enc = current_command_buffer()->computeCommandEncoder();
    timed.command_buffer = command_buffers_.size() - 1;
    enc->setLabel(ns_string(name));
    encode_into(enc, d);
    enc->endEncoding();
    close_command_buffer();
  }
  state_->timed.push_back(std::move(timed));
}

void MetalBatch::commit() {
  if (committed_) return;
  require_metal_process("committing a command buffer");
  committed_ = true;
  AutoreleasePool pool;
  end_encoder();
  std::shared_ptr<BatchState> state = state_;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->pending = command_buffers_.size();
    state->gpu_times.resize(command_buffers_.size());
    if (command_buffers_.empty()) {
      state->done = true;
      return;
    }
  }
  if (!state->timed.empty()) device_->sampleTimestamps(&state->cpu0, &state->gpu0);
  for (size_t i = 0; i < command_buffers_.size(); ++i) {
    // Runs on a Metal thread; the lambda's copy of `state` keeps it alive until then.
    command_buffers_[i]->addCompletedHandler([state, i](MTL::CommandBuffer* cb) { state->on_completed(i, cb); });
    command_buffers_[i]->commit();
  }
}

void MetalBatch::wait() {
  if (!committed_) commit();
  for (auto& cb : command_buffers_) cb->waitUntilCompleted();
  // waitUntilCompleted can return before the completion handlers ran: wait for ours.
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  if (!state_->error.empty()) throw DispatchError(state_->error);
}

// --- completion ----------------------------------------------------------------------------

void BatchState::on_completed(size_t index, MTL::CommandBuffer* cb) {
  AutoreleasePool pool;
  // Resources are released after the lock (a buffer's deleter may return it to the pool) but
  // before `done`: wait() must not return while this thread may still drop Python owners
  // (numpy arrays, tensors), or an exiting interpreter is finalized under our feet.
  std::vector<std::shared_ptr<RawBuffer>> release_buffers;
  std::vector<std::shared_ptr<Pipeline>> release_pipelines;
  std::vector<Ref<MTL::Buffer>> release_scratch;
  std::vector<Ref<MTL::CounterSampleBuffer>> reusable_samples;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (error.empty()) {
      // Shader validation may log an invalid access without failing the command buffer.
      const std::string report = validation ? validation_report(cb, pipelines) : std::string();
      if (cb->status() == MTL::CommandBufferStatusError)
        error = report.empty() ? command_buffer_error(cb) : report + "; " + command_buffer_error(cb);
      else if (!report.empty())
        error = report;
    }
    gpu_times[index] = {cb->GPUStartTime(), cb->GPUEndTime()};
    if (--pending != 0) return;
    finish();
    release_buffers.swap(buffers);
    release_pipelines.swap(pipelines);
    release_scratch.swap(scratch);
    reusable_samples.swap(sample_buffers);  // finish() read them
  }
  if (sample_pool && !reusable_samples.empty()) sample_pool->give_back(std::move(reusable_samples));
  release_buffers.clear();
  release_pipelines.clear();
  release_scratch.clear();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  done_cv.notify_all();
}

void BatchState::finish() {
  // Linear map from GPU ticks to CPU nanoseconds through the two clock samples (commit, now).
  MTL::Timestamp cpu1 = 0, gpu1 = 0;
  if (!timed.empty()) device->sampleTimestamps(&cpu1, &gpu1);
  const double scale = (gpu1 > gpu0 && cpu1 > cpu0) ? double(cpu1 - cpu0) / double(gpu1 - gpu0) : 1.0;
  auto to_ns = [&](uint64_t gpu) { return double(cpu0) + (double(gpu) - double(gpu0)) * scale; };

  for (Timed& t : timed) {
    DispatchTiming& out = *t.timing;
    if (!error.empty()) {
      out.error = error;
    } else if (t.samples) {
      NS::Data* data = t.samples->resolveCounterRange(NS::Range(t.index, 2));
      const auto* ts = data && data->length() >= 2 * sizeof(MTL::CounterResultTimestamp)
                           ? static_cast<const MTL::CounterResultTimestamp*>(data_bytes(data))
                           : nullptr;
      if (!ts || ts[0].timestamp == MTL::CounterErrorValue || ts[1].timestamp == MTL::CounterErrorValue ||
          ts[1].timestamp < ts[0].timestamp) {
        out.error = "Metal: no GPU timestamp was recorded for this dispatch";
      } else {
        out.start_ns = to_ns(ts[0].timestamp);
        out.end_ns = to_ns(ts[1].timestamp);
      }
    } else {
      out.start_ns = gpu_times[t.command_buffer].start_s * 1e9;  // host (mach) time in seconds
      out.end_ns = gpu_times[t.command_buffer].end_s * 1e9;
    }
    out.ready = true;
  }
  timed.clear();
}

bool enable_shader_validation() {
  if (validation_requested()) {
    ::setenv("MTL_SHADER_VALIDATION", "1", /*overwrite=*/0);
    ::setenv("MTL_DEBUG_LAYER", "1", /*overwrite=*/0);
  }
  return shader_validation_on();
}

std::string validation_report(MTL::CommandBuffer* cb, const std::vector<std::shared_ptr<Pipeline>>& pipelines) {
  if (!responds_to(cb, "logs")) return "";
  MTL::LogContainer* logs = cb->logs();
  if (!logs) return "";
  constexpr size_t kShown = 8;  // a bad index in every thread may log many entries
  std::string out;
  size_t count = 0;
  NS::FastEnumerationState state{};
  NS::Object* items[16];
  for (NS::UInteger n; (n = logs->countByEnumerating(&state, items, 16)) != 0;) {
    for (NS::UInteger i = 0; i < n; ++i) {
      auto* log = static_cast<MTL::FunctionLog*>(state.itemsPtr[i]);
      if (log && count++ < kShown) out += (out.empty() ? "" : "\n") + describe_log(log, pipelines);
    }
  }
  if (count > kShown) out += "\n(" + std::to_string(count - kShown) + " more shader validation messages)";
  return out;
}

namespace {

// Discovery in a child forked from a process that used Metal (fork_check.h), where Metal must
// not be touched: one device that stands for the Metal GPU and raises the fork error on every
// use, so that the default device's first launch says why (the simulator still works).
class ForkedMetalDevice final : public Device {
 public:
  ForkedMetalDevice() {
    info_.name = "Metal device (unavailable in a forked process)";
    info_.gpu_family = "unknown";
#ifdef TMPS_METAL_EMULATED
    info_.is_emulated = true;
#endif
  }
  const DeviceInfo& info() const override { return info_; }
  std::unique_ptr<RawBuffer> new_buffer(size_t) override { refuse("a Metal buffer"); }
  std::unique_ptr<RawBuffer> wrap_host_memory(void*, size_t) override { refuse("wrapping host memory"); }
  std::unique_ptr<RawBuffer> wrap_native_buffer(void*) override { refuse("wrapping an MTLBuffer"); }
  std::shared_ptr<Pipeline> build_pipeline(const std::string&, const std::string&, const CompileOptions&) override {
    refuse("building a pipeline");
  }
  std::unique_ptr<Batch> new_batch() override { refuse("a launch"); }
  std::string cache_identity() const override { return "metal:forked"; }

 private:
  [[noreturn]] static void refuse(const char* what) {
    require_metal_process(what);
    throw Unavailable(std::string("Metal cannot be used in this forked process (") + what + ")");
  }
  DeviceInfo info_;
};

}  // namespace
}  // namespace metal

std::vector<std::shared_ptr<Device>> enumerate_metal_devices() {
  if (!metal_fork_refusal("finding Metal devices").empty()) return {std::make_shared<metal::ForkedMetalDevice>()};
  // Before the first Metal device of the process exists: Metal reads its validation switches then.
  metal::enable_shader_validation();
  metal::AutoreleasePool pool;
  std::vector<metal::Ref<MTL::Device>> found;
  // The system default device first, then any others (eGPU-era Macs; one GPU on Apple silicon).
  if (auto preferred = NS::TransferPtr(MTL::CreateSystemDefaultDevice())) found.push_back(preferred);
  if (auto all = NS::TransferPtr(MTL::CopyAllDevices())) {
    for (NS::UInteger i = 0; i < all->count(); ++i) {
      auto* d = all->object<MTL::Device>(i);
      bool seen = std::any_of(found.begin(), found.end(),
                              [&](const metal::Ref<MTL::Device>& f) { return f->registryID() == d->registryID(); });
      if (!seen) found.push_back(NS::RetainPtr(d));
    }
  }
  std::vector<std::shared_ptr<Device>> devices;
  for (auto& d : found)
    if (metal::apple_family(d.get()) != 0) devices.push_back(std::make_shared<metal::MetalDevice>(std::move(d)));
  return devices;
}

}  // namespace tmps
