// Emulated Metal objects: see metal_objects.h, and RULES.md for the validation rules enforced.
#include "metal_emu/metal_objects.h"

#include <Metal/Metal.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "device.h"
#include "metal_emu/blocks.h"
#include "metal_emu/foundation.h"
#include "msl_scanner.h"
#include "scalar_types.h"
#include "sha256.h"

namespace tmps::emu {
namespace {

constexpr size_t kPage = 16384;               // Apple silicon VM page
constexpr uint64_t kMaxThreadgroupMemory = 32768;
constexpr uint32_t kMaxThreads = 1024;
constexpr unsigned long kMaxBufferIndex = 31;
constexpr size_t kMaxSetBytes = 4096;
constexpr size_t kMaxCommandBufferCount = 64;  // MTLCommandQueue's default maxCommandBufferCount
constexpr auto kCommandBufferBlockLimit = std::chrono::seconds(10);  // a wait this long is a deadlock

// Never destroyed: a queue thread may still finish a command buffer while statics are torn down.
std::mutex& g_mu = *new std::mutex;
EmuCounters g_counters;
uint32_t g_unhinted_limit = kMaxThreads;
uint32_t g_hinted_limit = kMaxThreads;
bool g_fail_timestamps = false;
bool g_hold = false;
std::condition_variable& g_hold_cv = *new std::condition_variable;

void count(long EmuCounters::*field) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++(g_counters.*field);
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
uint64_t now_ns() { return static_cast<uint64_t>(now_seconds() * 1e9); }

template <class T>
EmuObject* alloc_plain(EmuClass* cls) {
  return new T(cls);
}

template <class T>
T* as_required(const void* object, const char* what) {
  T* t = as<T>(object);
  if (!t) violation(std::string(what) + " must not be nil");
  return t;
}

// --- buffers ----------------------------------------------------------------------------------

class EmuBuffer : public EmuObject {
 public:
  EmuBuffer(id device, void* memory, size_t length, unsigned long options, bool owned, const void* deallocator)
      : EmuObject(emu_class_named("MTLEmuBuffer")), device_(device), memory_(memory), length_(length), options_(options),
        owned_(owned), deallocator_(deallocator ? Block1(deallocator) : Block1()) {}
  void* contents() { return storage_mode() == MTL::StorageModePrivate ? nullptr : memory_; }
  unsigned long length() { return length_; }
  unsigned long storage_mode() { return (options_ >> 4) & 0xf;  // MTLResourceStorageModeShift = 4
  ; }
  void* memory() const { return memory_; }  // the emulation's own access, also for private buffers
  id device() { return device_; }

 protected:
  void dealloc() override {
    if (owned_) std::free(memory_);
    memory_ = nullptr;
  }

 private:
  id device_;  // not retained (a buffer does not keep its device alive in this emulation)
  void* memory_;
  size_t length_;
  unsigned long options_;
  bool owned_;
  Block1 deallocator_;  // Metal calls it when the no-copy buffer goes; we never need to
};

// --- compile options, library, function -------------------------------------------------------

class EmuCompileOptions : public EmuObject {
 public:
  using EmuObject::EmuObject;
  void set_math_mode(long m) { math_mode = m; }
  void set_math_functions(long) {}
  void set_fast_math(bool on) { math_mode = on ? 2 : 0; }
  void set_language_version(unsigned long v) { language_version = v; }
  void set_macros(const void* dict) {}  // the simulator gets macros through the source
  long math_mode = 2;  // Metal's default is fast math
  unsigned long language_version = 0;
};

std::string version_text(unsigned long v) { return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff); }

class EmuLibrary;

class EmuFunction : public EmuObject {
 public:
  EmuFunction(EmuLibrary* lib, std::string name);
  unsigned long function_type() { return MTL::FunctionTypeKernel; }
  id name_string() { return make_string(name_); }
  EmuLibrary* library() const { return library_.get(); }
  const std::string& name() const { return name_; }

 private:
  Strong<EmuLibrary> library_;
  std::string name_;
};

class EmuLibrary : public EmuObject {
 public:
  EmuLibrary(std::string source, CompileOptions options, std::vector<std::string> names)
      : EmuObject(emu_class_named("MTLEmuLibrary")), source(std::move(source)), options(std::move(options)),
        names_(std::move(names)) {}
  id new_function(const void* name) {
    std::string n = string_of(name);
    if (std::find(names_.begin(), names_.end(), n) == names_.end()) return nullptr;
    return (new EmuFunction(this, n))->self_id();
  }
  id function_names() {
    std::vector<EmuObject*> items;
    for (const auto& n : names_) items.push_back(from_id(make_string(n)));
    return (new NSArrayEmu(std::move(items)))->autorelease()->self_id();
  }
  const std::string source;
  const CompileOptions options;

 private:
  std::vector<std::string> names_;
};

EmuFunction::EmuFunction(EmuLibrary* lib, std::string name)
    : EmuObject(emu_class_named("MTLEmuFunction")), library_(lib), name_(std::move(name)) {}

// --- pipelines and the binary archive ---------------------------------------------------------

class EmuPipelineDescriptor : public EmuObject {
 public:
  using EmuObject::EmuObject;
  void set_function(const void* f) { function = Strong<EmuFunction>(as<EmuFunction>(f)); }
  void set_label(const void* s) { label = string_of(s); }
  void set_archives(const void* array) { archives = Strong<NSArrayEmu>(as<NSArrayEmu>(array)); }
  void set_max_threads(unsigned long n) { max_threads = n; }
  unsigned long get_max_threads() { return max_threads; }
  // What identifies the compiled GPU binary (the archive's key).
  std::string key() const {
    EmuLibrary* lib = function.get()->library();
    return sha256_hex(lib->source + "\n" + lib->options.key() + "\n" + function->name() + "\n" +
                      std::to_string(max_threads));
  }
  Strong<EmuFunction> function;
  Strong<NSArrayEmu> archives;
  std::string label;
  unsigned long max_threads = 0;
};

class EmuPipelineState : public EmuObject {
 public:
  EmuPipelineState(id device, Strong<EmuFunction> function, std::shared_ptr<Pipeline> sim, uint32_t max_threads)
      : EmuObject(emu_class_named("MTLEmuComputePipelineState")), device_(device), function_(std::move(function)),
        sim_(std::move(sim)), max_threads_(max_threads) {}
  unsigned long max_total_threads() { return max_threads_; }
  unsigned long execution_width() { return 32; }
  unsigned long static_tg_memory() { return sim_->static_threadgroup_memory(); }
  id device() { return device_; }
  const std::shared_ptr<Pipeline>& sim() const { return sim_; }
  EmuFunction* function() const { return function_.get(); }

 private:
  id device_;  // not retained: a pipeline never outlives its device in Metal's model either
  Strong<EmuFunction> function_;
  std::shared_ptr<Pipeline> sim_;
  uint32_t max_threads_;
};

class EmuArchiveDescriptor : public EmuObject {
 public:
  using EmuObject::EmuObject;
  void set_url(const void* url) { path = url_path(url); }
  std::string path;
};

// TRITON_MPS_EMU_COMPILE_MS (read at every compile, default 0): how long a compile takes, a
// stand-in for Metal's compiler, so tests can tell compiles that overlap from ones that queue.
void compile_delay() {
  const char* v = std::getenv("TRITON_MPS_EMU_COMPILE_MS");
  const long ms = v && *v ? std::strtol(v, nullptr, 10) : 0;
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

class EmuArchive : public EmuObject {
 public:
  explicit EmuArchive(std::set<std::string> keys)
      : EmuObject(emu_class_named("MTLEmuBinaryArchive")), keys_(std::move(keys)) {}
  bool add_functions(const void* desc, void* error) {
    auto* d = as_required<EmuPipelineDescriptor>(desc, "addComputePipelineFunctionsWithDescriptor: descriptor");
    Use use(*this, true, "addComputePipelineFunctionsWithDescriptor:");
    count(&EmuCounters::archive_compiles);  // Metal compiles the function into the archive
    compile_delay();
    std::lock_guard<std::mutex> lock(mu_);
    keys_.insert(d->key());
    return true;
  }
  bool serialize(const void* url, void* error) {
    Use use(*this, true, "serializeToURL:");
    count(&EmuCounters::archive_serializations);
    std::ofstream out(url_path(url), std::ios::trunc);
    out << "tmps-emu-archive-v1\n";
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys_) out << k << "\n";
    out.flush();
    if (!out) {
      set_error(error, "could not write the archive");
      return false;
    }
    return true;
  }
  // A pipeline lookup reading the archive (newComputePipelineStateWithDescriptor: with it in
  // binaryArchives).
  bool contains(const std::string& key) {
    Use use(*this, false, "newComputePipelineStateWithDescriptor: (binaryArchives)");
    std::lock_guard<std::mutex> lock(mu_);
    return keys_.count(key) != 0;
  }

 private:
  // MTLBinaryArchive is not documented thread-safe (RULES.md): an addition or a serialization
  // while another thread uses the same archive is a violation; lookups may overlap each other.
  class Use {
   public:
    Use(EmuArchive& a, bool writes, const char* call) : a_(a), writes_(writes) {
      const int writers = writes ? a.writers_.fetch_add(1) : a.writers_.load();
      const int readers = writes ? a.readers_.load() : a.readers_.fetch_add(1);
      if (writers || (writes && readers)) {
        release();
        violation(std::string("MTLBinaryArchive ") + call + " while another thread " +
                  (writers ? "adds to or serializes" : "looks pipelines up in") +
                  " the same archive (MTLBinaryArchive is not documented thread-safe)");
      }
    }
    ~Use() { release(); }

   private:
    void release() {
      if (done_) return;
      done_ = true;
      (writes_ ? a_.writers_ : a_.readers_).fetch_sub(1);
    }
    EmuArchive& a_;
    bool writes_;
    bool done_ = false;
  };

  std::mutex mu_;
  std::set<std::string> keys_;
  std::atomic<int> writers_{0};
  std::atomic<int> readers_{0};
};

// --- counters ---------------------------------------------------------------------------------

class EmuCounterSet : public EmuObject {
 public:
  EmuCounterSet() : EmuObject(emu_class_named("MTLEmuCounterSet")), name_(new NSStringEmu("timestamp"), true) {}
  id name() { return name_->self_id(); }

 private:
  Strong<NSStringEmu> name_;
};

class EmuCounterSampleBufferDescriptor : public EmuObject {
 public:
  using EmuObject::EmuObject;
  void set_counter_set(const void* s) { counter_set = Strong<EmuCounterSet>(as<EmuCounterSet>(s)); }
  void set_sample_count(unsigned long n) { samples = n; }
  void set_storage_mode(unsigned long) {}
  Strong<EmuCounterSet> counter_set;
  unsigned long samples = 0;
};

class EmuCounterSampleBuffer : public EmuObject {
 public:
  explicit EmuCounterSampleBuffer(unsigned long n)
      : EmuObject(emu_class_named("MTLEmuCounterSampleBuffer")), samples_(n, MTL::CounterErrorValue) {}
  id resolve(NS::Range range) {
    std::lock_guard<std::mutex> lock(mu_);
    if (range.location + range.length > samples_.size()) violation("resolveCounterRange: range past the sample count");
    std::vector<unsigned char> bytes(range.length * sizeof(uint64_t));
    std::memcpy(bytes.data(), samples_.data() + range.location, bytes.size());
    return (new NSDataEmu(std::move(bytes)))->autorelease()->self_id();
  }
  void write(unsigned long index, uint64_t value) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (g_fail_timestamps) value = MTL::CounterErrorValue;  // as when the GPU could not sample
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (index < samples_.size()) samples_[index] = value;
  }
  unsigned long size() const { return samples_.size(); }

 private:
  std::mutex mu_;
  std::vector<uint64_t> samples_;
};

class EmuAttachment : public EmuObject {
 public:
  EmuAttachment() : EmuObject(emu_class_named("MTLEmuComputePassSampleBufferAttachmentDescriptor")) {}
  void set_buffer(const void* b) { buffer = Strong<EmuCounterSampleBuffer>(as<EmuCounterSampleBuffer>(b)); }
  void set_start(unsigned long i) { start = i; }
  void set_end(unsigned long i) { end = i; }
  Strong<EmuCounterSampleBuffer> buffer;
  unsigned long start = MTL::CounterDontSample, end = MTL::CounterDontSample;
};

class EmuAttachmentArray : public EmuObject {
 public:
  EmuAttachmentArray() : EmuObject(emu_class_named("MTLEmuComputePassSampleBufferAttachmentDescriptorArray")) {}
  id at(unsigned long i) {
    if (i >= 4) violation("sampleBufferAttachments index " + std::to_string(i) + " out of range (4 attachments)");
    while (items_.size() <= i) items_.emplace_back(new EmuAttachment, true);
    return items_[i]->self_id();
  }
  EmuAttachment* first() { return items_.empty() ? nullptr : items_[0].get(); }

 private:
  std::vector<Strong<EmuAttachment>> items_;
};

class EmuPassDescriptor : public EmuObject {
 public:
  explicit EmuPassDescriptor(EmuClass* cls) : EmuObject(cls), attachments_(new EmuAttachmentArray, true) {}
  id attachments() { return attachments_->self_id(); }
  EmuAttachment* attachment() { return attachments_->first(); }

 private:
  Strong<EmuAttachmentArray> attachments_;
};

// --- shader validation logs (MTLLogContainer of MTLFunctionLog) --------------------------------

class EmuDebugLocation : public EmuObject {
 public:
  EmuDebugLocation(std::string function, unsigned long line, unsigned long column)
      : EmuObject(emu_class_named("MTLEmuFunctionLogDebugLocation")), function_(std::move(function)), line_(line),
        column_(column) {}
  id function_name() { return make_string(function_); }
  unsigned long line() { return line_; }
  unsigned long column() { return column_; }
  id url() { return nullptr; }  // libraries compiled from a string have no source file

 private:
  std::string function_;
  unsigned long line_, column_;
};

class EmuFunctionLog : public EmuObject {
 public:
  EmuFunctionLog(std::string text, std::string encoder_label, EmuFunction* function, EmuDebugLocation* location)
      : EmuObject(emu_class_named("MTLEmuFunctionLog")), text_(std::move(text)), label_(std::move(encoder_label)),
        function_(function), location_(location, /*adopt=*/true) {}
  id description() { return make_string(text_); }
  id encoder_label() { return label_.empty() ? nullptr : make_string(label_); }
  id function() { return function_ ? function_->self_id() : nullptr; }
  id debug_location() { return location_ ? location_->self_id() : nullptr; }
  unsigned long type() { return MTL::FunctionLogTypeValidation; }

 private:
  std::string text_, label_;
  Strong<EmuFunction> function_;
  Strong<EmuDebugLocation> location_;
};

// NSFastEnumeration: every log goes out in the first batch.
class EmuLogContainer : public EmuObject {
 public:
  explicit EmuLogContainer(std::vector<Strong<EmuFunctionLog>> logs)
      : EmuObject(emu_class_named("MTLEmuLogContainer")), logs_(std::move(logs)) {
    for (auto& l : logs_) ids_.push_back(l->self_id());
  }
  unsigned long count_by_enumerating(NS::FastEnumerationState* state, void* buffer, unsigned long length) {
    if (state->state != 0 || ids_.empty()) return 0;
    state->state = 1;
    state->itemsPtr = reinterpret_cast<NS::Object**>(ids_.data());
    state->mutationsPtr = &mutations_;
    return ids_.size();
  }

 private:
  std::vector<Strong<EmuFunctionLog>> logs_;
  std::vector<id> ids_;
  unsigned long mutations_ = 0;
};

// Thrown out of a pass when shader validation stopped a dispatch: the log Metal records.
struct ValidationFault {
  Strong<EmuFunctionLog> log;
};

// The simulator's memcheck report of an invalid device access ("out-of-bounds store of 4 bytes
// past the end of buffer(1) ... at byte offset 400 ... at line 46", from report_out_of_bounds in
// csrc/sim/runtime_services.cpp) as the log Metal's shader validation writes; null for other failures.
Strong<EmuFunctionLog> validation_log(const std::string& report, EmuPipelineState* pipeline, const std::string& label,
                                      size_t dispatch) {
  static const std::regex access(R"(out-of-bounds (load|store) of \d+ bytes?)");
  static const std::regex offset(R"(at byte offset (-?\d+))");
  static const std::regex line(R"( at line (\d+))");
  std::smatch m;
  if (!std::regex_search(report, m, access)) return {};
  const std::string kind = m[1];
  const std::string function = pipeline->function() ? pipeline->function()->name() : pipeline->sim()->name();
  std::string text = "Invalid device " + kind + " executing kernel function \"" + function + "\" encoder: \"" +
                     (label.empty() ? std::string("0") : label) + "\", dispatch: " + std::to_string(dispatch);
  if (std::regex_search(report, m, offset)) text += ", at offset " + m[1].str();
  EmuDebugLocation* where = nullptr;
  if (std::regex_search(report, m, line)) where = new EmuDebugLocation(function, std::stoul(m[1].str()), 0);
  return Strong<EmuFunctionLog>(new EmuFunctionLog(text, label, pipeline->function(), where), /*adopt=*/true);
}

// --- command buffers and encoders -------------------------------------------------------------

struct Command {
  Strong<EmuPipelineState> pipeline;
  struct Bound {
    EmuBuffer* buffer = nullptr;  // retained only when the command buffer retains references
    unsigned long offset = 0;
    std::vector<uint8_t> bytes;
    bool is_bytes = false;
  };
  std::map<unsigned long, Bound> buffers;
  std::map<unsigned long, unsigned long> threadgroup_memory;
  MTL::Size groups, threads;
};

struct Pass {
  std::vector<Command> commands;
  std::string label;  // the encoder's label (setLabel:), named by shader validation reports
  Strong<EmuCounterSampleBuffer> samples;
  unsigned long start_index = MTL::CounterDontSample, end_index = MTL::CounterDontSample;
};

class EmuCommandBuffer;

class EmuEncoder : public EmuObject {
 public:
  EmuEncoder(EmuCommandBuffer* cb, Pass pass) : EmuObject(emu_class_named("MTLEmuComputeCommandEncoder")), cb_(cb), pass_(std::move(pass)) {}
  void set_pipeline(const void* p);
  void set_buffer(const void* buffer, unsigned long offset, unsigned long index);
  void set_bytes(const void* bytes, unsigned long length, unsigned long index);
  void set_tg_memory(unsigned long length, unsigned long index);
  void dispatch(MTL::Size groups, MTL::Size threads);
  void end_encoding();
  void set_label(const void* label) {
    check_open("setLabel:");
    pass_.label = string_of(label);
  }

 private:
  void check_open(const char* what) {
    if (ended_) violation(std::string("-[MTLComputeCommandEncoder ") + what + "] after endEncoding");
  }
  EmuCommandBuffer* cb_;  // the command buffer outlives its encoder's encoding phase
  Pass pass_;
  Command current_;
  bool ended_ = false;
};

class EmuQueue;

// A queue's uncompleted command buffers: `commandBuffer` blocks while maxCommandBufferCount of
// them exist (made and not yet completed, committed or not).
struct QueueSlots {
  std::mutex mu;
  std::condition_variable cv;
  size_t used = 0;
  void take() {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kCommandBufferBlockLimit, [&] { return used < kMaxCommandBufferCount; }))
      violation("commandBuffer blocked: the queue has " + std::to_string(kMaxCommandBufferCount) +
                " uncompleted command buffers (maxCommandBufferCount) and none completed for 10 s");
    ++used;
  }
  void give() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --used;
    }
    cv.notify_all();
  }
};

class EmuCommandBuffer : public EmuObject {
 public:
  EmuCommandBuffer(EmuQueue* queue, std::shared_ptr<QueueSlots> slots, bool retained, unsigned long error_options,
                   bool validation)
      : EmuObject(emu_class_named("MTLEmuCommandBuffer")), queue_(queue), slots_(std::move(slots)),
        retained_(retained), error_options_(error_options), validation_(validation),
        logs_(new EmuLogContainer({}), /*adopt=*/true) {
    if (error_options_) count(&EmuCounters::command_buffers_with_error_options);
  }
  id compute_encoder() { return open_encoder(Pass{}); }
  id compute_encoder_with(const void* desc) {
    auto* d = as_required<EmuPassDescriptor>(desc, "computeCommandEncoderWithDescriptor: descriptor");
    Pass pass;
    if (EmuAttachment* a = d->attachment(); a && a->buffer) {
      pass.samples = a->buffer;
      pass.start_index = a->start;
      pass.end_index = a->end;
      for (unsigned long i : {a->start, a->end})
        if (i != MTL::CounterDontSample && i >= a->buffer->size())
          violation("sample index " + std::to_string(i) + " past the counter sample buffer's " +
                    std::to_string(a->buffer->size()) + " samples");
    }
    return open_encoder(std::move(pass));
  }
  void add_completed_handler(const void* block) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_ >= MTL::CommandBufferStatusCommitted)
      violation("addCompletedHandler: called after commit");
    handlers_.emplace_back(block);
  }
  void commit();
  // Returns once every completed handler returned (Metal: a handler that blocks keeps the
  // wait from returning).
  void wait_until_completed() {
    std::unique_lock<std::mutex> lock(mu_);
    if (status_ < MTL::CommandBufferStatusCommitted) violation("waitUntilCompleted on a command buffer that was never committed");
    cv_.wait(lock, [&] { return handlers_done_; });
  }
  unsigned long status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  id error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_ ? error_->self_id() : nullptr;
  }
  id logs() {  // valid once the command buffer completed (empty before)
    std::lock_guard<std::mutex> lock(mu_);
    return logs_->self_id();
  }
  double gpu_start() { return gpu_start_; }
  double gpu_end() { return gpu_end_; }
  void set_label(const void*) {}

  // Encoder protocol.
  void encoder_ended(Pass pass) {
    passes_.push_back(std::move(pass));
    encoder_open_ = false;
  }
  bool retains() const { return retained_; }
  void execute();   // on the queue's thread: runs the passes, sets the status
  void complete();  // on the queue's completion thread: the completed handlers, then waiters

 protected:
  void dealloc() override;

 private:
  id open_encoder(Pass pass) {
    if (status() >= MTL::CommandBufferStatusCommitted) violation("encoder created on a committed command buffer");
    if (encoder_open_) violation("a new encoder was created while another encoder of the command buffer is still encoding");
    encoder_open_ = true;
    return (new EmuEncoder(this, std::move(pass)))->autorelease()->self_id();
  }
  void run_pass(Pass& pass);

  EmuQueue* queue_;
  std::shared_ptr<QueueSlots> slots_;  // given back once completed (or deallocated uncommitted)
  bool slot_given_ = false;
  bool retained_;
  const unsigned long error_options_;
  const bool validation_;  // shader validation (MTL_SHADER_VALIDATION=1 when the device was made)
  Strong<EmuLogContainer> logs_;
  bool encoder_open_ = false;
  std::vector<Pass> passes_;
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned long status_ = MTL::CommandBufferStatusNotEnqueued;
  Strong<NSErrorEmu> error_;
  std::vector<Block1> handlers_;
  bool handlers_done_ = false;
  double gpu_start_ = 0, gpu_end_ = 0;
};

class EmuCommandBufferDescriptor : public EmuObject {
 public:
  using EmuObject::EmuObject;
  void set_retained(bool r) { retained = r; }
  void set_error_options(unsigned long o) { error_options = o; }
  bool retained = true;
  unsigned long error_options = 0;
};

// The queue executes committed command buffers in commit order on its own thread, and runs
// their completed handlers on another (Metal's completion thread), in the same order.
class EmuQueue : public EmuObject {
 public:
  explicit EmuQueue(bool validation)
      : EmuObject(emu_class_named("MTLEmuCommandQueue")), validation_(validation), state_(std::make_shared<State>()),
        slots_(std::make_shared<QueueSlots>()) {
    std::thread([s = state_] { run(s); }).detach();
    std::thread([s = state_] { run_completions(s); }).detach();
  }
  id command_buffer_with(const void* desc) {
    auto* d = as_required<EmuCommandBufferDescriptor>(desc, "commandBufferWithDescriptor: descriptor");
    slots_->take();
    return (new EmuCommandBuffer(this, slots_, d->retained, d->error_options, validation_))->autorelease()->self_id();
  }
  id command_buffer() {
    slots_->take();
    return (new EmuCommandBuffer(this, slots_, true, 0, validation_))->autorelease()->self_id();
  }
  void enqueue(EmuCommandBuffer* cb) {
    cb->retain();  // Metal keeps a committed command buffer alive until it completed
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->pending.push_back(cb);
    state_->cv.notify_all();
  }

 protected:
  void dealloc() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<EmuCommandBuffer*> pending;    // committed, to execute (+1 each)
    std::deque<EmuCommandBuffer*> completed;  // executed, handlers to run (+1 each)
    bool stop = false;
    bool executor_done = false;
  };
  static void run(std::shared_ptr<State> s) {
    for (;;) {
      EmuCommandBuffer* cb = nullptr;
      {
        std::unique_lock<std::mutex> lock(s->mu);
        s->cv.wait(lock, [&] { return s->stop || !s->pending.empty(); });
        if (s->pending.empty()) {
          s->executor_done = true;
          s->cv.notify_all();
          return;
        }
        cb = s->pending.front();
        s->pending.pop_front();
      }
      {
        std::unique_lock<std::mutex> lock(g_mu);
        g_hold_cv.wait(lock, [] { return !g_hold; });
      }
      push_autorelease_pool(nullptr);
      cb->execute();
      pop_autorelease_pool(nullptr);
      std::lock_guard<std::mutex> lock(s->mu);
      s->completed.push_back(cb);
      s->cv.notify_all();
    }
  }
  // A handler that blocks delays the handlers after it, not the GPU (the executor goes on).
  static void run_completions(std::shared_ptr<State> s) {
    for (;;) {
      EmuCommandBuffer* cb = nullptr;
      {
        std::unique_lock<std::mutex> lock(s->mu);
        s->cv.wait(lock, [&] { return s->executor_done || !s->completed.empty(); });
        if (s->completed.empty()) return;
        cb = s->completed.front();
        s->completed.pop_front();
      }
      push_autorelease_pool(nullptr);
      cb->complete();
      cb->release();
      pop_autorelease_pool(nullptr);
    }
  }
  const bool validation_;
  std::shared_ptr<State> state_;
  std::shared_ptr<QueueSlots> slots_;
};

// --- encoder ----------------------------------------------------------------------------------

void EmuEncoder::set_pipeline(const void* p) {
  check_open("setComputePipelineState:");
  current_.pipeline = Strong<EmuPipelineState>(as_required<EmuPipelineState>(p, "setComputePipelineState: state"));
}

void EmuEncoder::set_buffer(const void* buffer, unsigned long offset, unsigned long index) {
  check_open("setBuffer:offset:atIndex:");
  if (index >= kMaxBufferIndex) violation("setBuffer: index " + std::to_string(index) + " >= 31");
  Command::Bound b;
  if (buffer) {
    b.buffer = as<EmuBuffer>(buffer);
    if (offset >= b.buffer->length())
      violation("setBuffer:offset:atIndex: offset " + std::to_string(offset) + " must be < the buffer's length (" +
                std::to_string(b.buffer->length()) + ") at index " + std::to_string(index));
    if (cb_->retains()) b.buffer->retain();
  }
  b.offset = offset;
  auto it = current_.buffers.find(index);
  if (it != current_.buffers.end() && it->second.buffer && cb_->retains()) it->second.buffer->release();
  current_.buffers[index] = b;
}

void EmuEncoder::set_bytes(const void* bytes, unsigned long length, unsigned long index) {
  check_open("setBytes:length:atIndex:");
  if (index >= kMaxBufferIndex) violation("setBytes: index " + std::to_string(index) + " >= 31");
  if (length > kMaxSetBytes) violation("setBytes: length " + std::to_string(length) + " over 4 KiB; use a buffer");
  Command::Bound b;
  b.is_bytes = true;
  b.bytes.assign(static_cast<const uint8_t*>(bytes), static_cast<const uint8_t*>(bytes) + length);
  current_.buffers[index] = std::move(b);
}

void EmuEncoder::set_tg_memory(unsigned long length, unsigned long index) {
  check_open("setThreadgroupMemoryLength:atIndex:");
  if (length % 16 != 0) violation("setThreadgroupMemoryLength: " + std::to_string(length) + " is not a multiple of 16");
  if (length > kMaxThreadgroupMemory)
    violation("setThreadgroupMemoryLength: " + std::to_string(length) + " exceeds maxThreadgroupMemoryLength (32768)");
  current_.threadgroup_memory[index] = length;
}

void EmuEncoder::dispatch(MTL::Size groups, MTL::Size threads) {
  check_open("dispatchThreadgroups:threadsPerThreadgroup:");
  if (!current_.pipeline) violation("dispatch without a compute pipeline state");
  EmuPipelineState* p = current_.pipeline.get();
  const unsigned long total = threads.width * threads.height * threads.depth;
  if (total == 0) violation("threadsPerThreadgroup has a zero dimension");
  if (total > p->max_total_threads())
    violation("threadsPerThreadgroup " + std::to_string(total) + " exceeds the pipeline's maxTotalThreadsPerThreadgroup (" +
              std::to_string(p->max_total_threads()) + ")");
  unsigned long tg = p->static_tg_memory();
  for (auto& [index, len] : current_.threadgroup_memory) tg += len;
  if (tg > kMaxThreadgroupMemory)
    violation("threadgroup memory " + std::to_string(tg) + " exceeds maxThreadgroupMemoryLength (32768)");
  for (const ParamInfo& q : p->sim()->params()) {
    if (q.kind != ParamInfo::Kind::Buffer) continue;
    auto bound = current_.buffers.find(q.index);
    if (bound == current_.buffers.end())
      violation("kernel '" + p->sim()->name() + "': no buffer bound at index " + std::to_string(q.index) + " ('" + q.name + "')");
    const size_t align = msl_type_alignment(q.type);
    if (bound->second.buffer && align > 1 && bound->second.offset % align != 0)
      violation("kernel '" + p->sim()->name() + "': setBuffer offset " + std::to_string(bound->second.offset) +
                " at index " + std::to_string(q.index) + " ('" + q.type + "* " + q.name + "') is not a multiple of " +
                std::to_string(align) + " (the alignment of " + q.type + ")");
  }
  Command c = current_;
  if (cb_->retains())
    for (auto& [i, b] : c.buffers)
      if (b.buffer) b.buffer->retain();
  c.groups = groups;
  c.threads = threads;
  pass_.commands.push_back(std::move(c));
  count(&EmuCounters::dispatches);
}

void EmuEncoder::end_encoding() {
  check_open("endEncoding");
  ended_ = true;
  if (cb_->retains())
    for (auto& [i, b] : current_.buffers)
      if (b.buffer) b.buffer->release();
  current_.buffers.clear();
  cb_->encoder_ended(std::move(pass_));
}

// --- command buffer ---------------------------------------------------------------------------

void EmuCommandBuffer::commit() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_ >= MTL::CommandBufferStatusCommitted) violation("commit called twice on a command buffer");
    if (encoder_open_) violation("command buffer committed while an encoder is still encoding (missing endEncoding)");
    status_ = MTL::CommandBufferStatusCommitted;
  }
  count(&EmuCounters::command_buffers_committed);
  queue_->enqueue(this);
}

void EmuCommandBuffer::run_pass(Pass& pass) {
  std::shared_ptr<Device> sim = simulator_device();
  if (pass.samples && pass.start_index != MTL::CounterDontSample) pass.samples->write(pass.start_index, now_ns());
  std::unique_ptr<Batch> batch = sim->new_batch();
  for (size_t n = 0; n < pass.commands.size(); ++n) {
    Command& c = pass.commands[n];
    Dispatch d;
    d.pipeline = c.pipeline->sim();
    for (auto& [index, b] : c.buffers) {
      Binding bind;
      bind.index = static_cast<uint32_t>(index);
      if (b.is_bytes) {
        bind.kind = Binding::Kind::Bytes;
        bind.bytes = b.bytes;
      } else if (b.buffer) {
        if (b.buffer->is_zombie())
          throw std::runtime_error("buffer at index " + std::to_string(index) +
                                   " was deallocated before the command buffer completed (the command buffer does "
                                   "not retain its resources: retainedReferences = NO)");
        bind.buffer = sim->wrap_host_memory(b.buffer->memory(), b.buffer->length());
        bind.offset = b.offset;
      }
      d.bindings.push_back(std::move(bind));
    }
    for (auto& [index, len] : c.threadgroup_memory) d.threadgroup_memory.emplace_back(uint32_t(index), uint32_t(len));
    d.threadgroups = {uint32_t(c.groups.width), uint32_t(c.groups.height), uint32_t(c.groups.depth)};
    d.threads_per_group = {uint32_t(c.threads.width), uint32_t(c.threads.height), uint32_t(c.threads.depth)};
    if (!validation_) {
      batch->encode(d, nullptr);
      continue;
    }
    // Shader validation: one dispatch at a time, so that a report names its dispatch.
    std::unique_ptr<Batch> one = sim->new_batch();
    one->encode(d, nullptr);
    try {
      one->commit();
      one->wait();
    } catch (const std::exception& e) {
      if (Strong<EmuFunctionLog> log = validation_log(e.what(), c.pipeline.get(), pass.label, n)) throw ValidationFault{log};
      throw;
    }
  }
  batch->commit();
  batch->wait();
  if (pass.samples && pass.end_index != MTL::CounterDontSample) pass.samples->write(pass.end_index, now_ns());
}

void EmuCommandBuffer::execute() {
  gpu_start_ = now_seconds();
  std::string failure;
  Strong<EmuFunctionLog> invalid_access;
  for (Pass& pass : passes_) {
    try {
      run_pass(pass);
    } catch (const ValidationFault& f) {
      invalid_access = f.log;
      break;
    } catch (const std::exception& e) {
      failure = e.what();
      break;
    }
  }
  gpu_end_ = now_seconds();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (invalid_access) {
      // What Metal reports when shader validation stopped an access (the wording of the
      // description follows the IOGPU error names Metal uses).
      error_ = Strong<NSErrorEmu>(new NSErrorEmu("Invalid Resource (00000009:kIOGPUCommandBufferCallbackErrorInvalidResource)",
                                                 "MTLCommandBufferErrorDomain", MTL::CommandBufferErrorInvalidResource),
                                  true);
      logs_ = Strong<EmuLogContainer>(new EmuLogContainer({invalid_access}), true);
      status_ = MTL::CommandBufferStatusError;
    } else if (!failure.empty()) {
      error_ = Strong<NSErrorEmu>(
          new NSErrorEmu("emulated GPU fault: " + failure, "MTLCommandBufferErrorDomain", MTL::CommandBufferErrorInternal),
          true);
      status_ = MTL::CommandBufferStatusError;
    } else {
      status_ = MTL::CommandBufferStatusCompleted;
    }
  }
}

void EmuCommandBuffer::complete() {
  std::vector<Block1> handlers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handlers.swap(handlers_);  // each handler runs exactly once
  }
  for (Block1& h : handlers) h(self_id());
  {
    std::lock_guard<std::mutex> lock(mu_);
    handlers_done_ = true;
    slot_given_ = true;
  }
  slots_->give();
  cv_.notify_all();
}

void EmuCommandBuffer::dealloc() {
  if (status() == MTL::CommandBufferStatusCommitted)
    note_violation("a committed command buffer was deallocated before it completed");
  if (!slot_given_) slots_->give();  // never committed (or never completed)
  if (retained_)
    for (Pass& p : passes_)
      for (Command& c : p.commands)
        for (auto& [i, b] : c.buffers)
          if (b.buffer) b.buffer->release();
  passes_.clear();
  handlers_.clear();
  error_ = {};
  logs_ = {};
}

// --- device -----------------------------------------------------------------------------------

// Metal reads MTL_SHADER_VALIDATION once, when the process makes its first device; any value
// but 0 turns it on (MetalValidation(1)).
bool shader_validation_requested() {
  static const bool on = [] {
    const char* v = std::getenv("MTL_SHADER_VALIDATION");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// MTLGPUFamilyApple<n> of a chip name: M1 7, M2 8, M3 and M4 9, M5 10 (Metal feature set tables).
int family_of(const std::string& name) {
  static const std::pair<const char*, int> table[] = {{"M5", 10}, {"M4", 9}, {"M3", 9}, {"M2", 8}, {"M1", 7}};
  for (const auto& [chip, family] : table)
    if (name.find(chip) != std::string::npos) return family;
  return 9;
}

class EmuDevice : public EmuObject {
 public:
  EmuDevice(std::string name, uint64_t registry_id)
      : EmuObject(emu_class_named("MTLEmuDevice")), name_(std::move(name)), registry_id_(registry_id),
        family_(family_of(name_)), validation_(shader_validation_requested()) {
    std::vector<EmuObject*> sets{new EmuCounterSet};
    counter_sets_ = Strong<NSArrayEmu>(new NSArrayEmu(sets), true);
    sets[0]->release();
  }
  id name() { return make_string(name_); }
  uint64_t registry_id() { return registry_id_; }
  bool supports_family(long f) { return f >= 1001 && f <= 1000 + family_; }
  MTL::Size max_threads_per_threadgroup() { return MTL::Size(kMaxThreads, kMaxThreads, kMaxThreads); }
  unsigned long max_tg_memory() { return kMaxThreadgroupMemory; }
  uint64_t working_set() { return uint64_t(8) << 30; }
  bool unified() { return true; }
  unsigned long max_buffer_length() { return uint64_t(4) << 30; }
  bool supports_counter_sampling(unsigned long point) { return point == MTL::CounterSamplingPointAtStageBoundary; }
  id counter_sets() { return counter_sets_->self_id(); }
  id new_queue() { return (new EmuQueue(validation_))->self_id(); }

  id new_buffer(unsigned long length, unsigned long options) {
    if (length == 0) violation("newBufferWithLength: length must be > 0");
    void* p = std::aligned_alloc(kPage, (length + kPage - 1) / kPage * kPage);
    if (!p) return nullptr;
    std::memset(p, 0, length);
    return (new EmuBuffer(self_id(), p, length, options, true, nullptr))->self_id();
  }
  id new_buffer_with_bytes(const void* bytes, unsigned long length, unsigned long options) {
    id b = new_buffer(length, options);
    std::memcpy(as<EmuBuffer>(b)->memory(), bytes, length);
    return b;
  }
  id new_buffer_no_copy(void* pointer, unsigned long length, unsigned long options, const void* deallocator) {
    count(&EmuCounters::no_copy_buffers);
    if (reinterpret_cast<uintptr_t>(pointer) % kPage != 0)
      violation("newBufferWithBytesNoCopy: pointer " + std::to_string(reinterpret_cast<uintptr_t>(pointer)) +
                " is not page-aligned (16384-byte pages)");
    if (length == 0 || length % kPage != 0)
      violation("newBufferWithBytesNoCopy: length " + std::to_string(length) + " is not a non-zero multiple of the page size (16384)");
    return (new EmuBuffer(self_id(), pointer, length, options, false, deallocator))->self_id();
  }

  id new_library(const void* source, const void* options, void* error) {
    std::string src = string_of(source);
    CompileOptions opts;
    MathMode asked = MathMode::Fast;  // Metal's default when no options are given
    if (auto* o = as<EmuCompileOptions>(options)) {
      opts.math_mode = asked = o->math_mode == 0 ? MathMode::Safe : o->math_mode == 1 ? MathMode::Relaxed : MathMode::Fast;
      if (o->language_version) opts.language_version = version_text(o->language_version);
    }
    // Shader validation instruments every load and store: the simulator's memcheck build.
    if (validation_) opts.memcheck = true;
    // Recorded as Metal would apply it (nil options: fast); the simulator still builds nil-option
    // libraries in its safe mode, as before.
    count(asked == MathMode::Safe      ? &EmuCounters::libraries_safe_math
          : asked == MathMode::Relaxed ? &EmuCounters::libraries_relaxed_math
                                       : &EmuCounters::libraries_fast_math);
    std::vector<std::string> names;
    try {
      for (const KernelDecl& k : parse_kernels(src, "emulated.metal")) names.push_back(k.name);
      // Compile now, as Metal does, so errors surface here (the simulator caches the result).
      if (!names.empty()) simulator_device()->build_pipeline(src, names.front(), opts);
    } catch (const std::exception& e) {
      set_error(error, e.what());
      return nullptr;
    }
    return (new EmuLibrary(std::move(src), std::move(opts), std::move(names)))->self_id();
  }

  id new_pipeline(const void* desc, unsigned long options, void* reflection, void* error) {
    auto* d = as_required<EmuPipelineDescriptor>(desc, "newComputePipelineStateWithDescriptor: descriptor");
    if (!d->function) violation("compute pipeline descriptor without a compute function");
    const std::string key = d->key();
    bool in_archive = false;
    if (d->archives)
      for (unsigned long i = 0; i < d->archives->count(); ++i)
        if (auto* a = dynamic_cast<EmuArchive*>(d->archives->at(i)); a && a->contains(key)) in_archive = true;
    if ((options & MTL::PipelineOptionFailOnBinaryArchiveMiss) && !in_archive) return nullptr;
    if (d->max_threads > kMaxThreads) {
      set_error(error, "maxTotalThreadsPerThreadgroup " + std::to_string(d->max_threads) + " exceeds 1024");
      return nullptr;
    }
    if (!in_archive) compile_delay();  // Metal compiles; a pipeline from an archive is loaded
    std::shared_ptr<Pipeline> sim;
    try {
      EmuLibrary* lib = d->function->library();
      sim = simulator_device()->build_pipeline(lib->source, d->function->name(), lib->options);
    } catch (const std::exception& e) {
      set_error(error, e.what());
      return nullptr;
    }
    count(in_archive ? &EmuCounters::pipelines_from_archive : &EmuCounters::pipelines_built);
    uint32_t limit;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      limit = d->max_threads ? std::min(uint32_t(d->max_threads), g_hinted_limit) : g_unhinted_limit;
    }
    return (new EmuPipelineState(self_id(), d->function, std::move(sim), limit))->self_id();
  }

  id new_archive(const void* desc, void* error) {
    auto* d = as_required<EmuArchiveDescriptor>(desc, "newBinaryArchiveWithDescriptor: descriptor");
    std::set<std::string> keys;
    if (!d->path.empty()) {
      std::ifstream in(d->path);
      std::string line;
      if (!in || !std::getline(in, line) || line != "tmps-emu-archive-v1") {
        set_error(error, "not a binary archive: " + d->path);
        return nullptr;
      }
      while (std::getline(in, line))
        if (!line.empty()) keys.insert(line);
    }
    return (new EmuArchive(std::move(keys)))->self_id();
  }

  id new_counter_sample_buffer(const void* desc, void* error) {
    auto* d = as_required<EmuCounterSampleBufferDescriptor>(desc, "newCounterSampleBufferWithDescriptor: descriptor");
    if (!d->counter_set) violation("counter sample buffer descriptor without a counter set");
    if (d->samples == 0 || d->samples * 8 > 32768) violation("counter sample buffer of " + std::to_string(d->samples) + " samples");
    count(&EmuCounters::counter_sample_buffers);
    return (new EmuCounterSampleBuffer(d->samples))->self_id();
  }

  void sample_timestamps(uint64_t* cpu, uint64_t* gpu) {
    uint64_t t = now_ns();
    if (cpu) *cpu = t;
    if (gpu) *gpu = t;
  }

 private:
  std::string name_;
  uint64_t registry_id_;
  int family_;
  const bool validation_;  // MTL_SHADER_VALIDATION at creation, as Metal reads it
  Strong<NSArrayEmu> counter_sets_;
};

id pass_descriptor(objc_object*, SEL) {
  return (new EmuPassDescriptor(emu_class_named("MTLComputePassDescriptor")))->autorelease()->self_id();
}

}  // namespace

id new_emulated_device(const std::string& name, uint64_t registry_id) {
  register_metal();
  return (new EmuDevice(name, registry_id))->self_id();
}

int emulated_gpu_family(const std::string& chip) { return family_of(chip); }

EmuCounters emu_counters() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_counters;
}

void set_unhinted_thread_limit(uint32_t limit) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_unhinted_limit = std::max<uint32_t>(1, std::min(limit, kMaxThreads));
}

void set_hinted_thread_limit(uint32_t limit) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_hinted_limit = std::max<uint32_t>(1, std::min(limit, kMaxThreads));
}

void fail_timestamps(bool fail) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_fail_timestamps = fail;
}

void* emu_buffer_memory(const void* buffer) { return as_required<EmuBuffer>(buffer, "buffer")->memory(); }

void hold_queues(bool hold) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_hold = hold;
  }
  g_hold_cv.notify_all();
}

void register_metal() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string dev = "MTLEmuDevice";
    add_method(dev, "name", imp<&EmuDevice::name>());
    add_method(dev, "registryID", imp<&EmuDevice::registry_id>());
    add_method(dev, "supportsFamily:", imp<&EmuDevice::supports_family>());
    add_method(dev, "maxThreadsPerThreadgroup", imp<&EmuDevice::max_threads_per_threadgroup>());
    add_method(dev, "maxThreadgroupMemoryLength", imp<&EmuDevice::max_tg_memory>());
    add_method(dev, "recommendedMaxWorkingSetSize", imp<&EmuDevice::working_set>());
    add_method(dev, "hasUnifiedMemory", imp<&EmuDevice::unified>());
    add_method(dev, "maxBufferLength", imp<&EmuDevice::max_buffer_length>());
    add_method(dev, "supportsCounterSampling:", imp<&EmuDevice::supports_counter_sampling>());
    add_method(dev, "counterSets", imp<&EmuDevice::counter_sets>());
    add_method(dev, "newCommandQueue", imp<&EmuDevice::new_queue>());
    add_method(dev, "newBufferWithLength:options:", imp<&EmuDevice::new_buffer>());
    add_method(dev, "newBufferWithBytes:length:options:", imp<&EmuDevice::new_buffer_with_bytes>());
    add_method(dev, "newBufferWithBytesNoCopy:length:options:deallocator:", imp<&EmuDevice::new_buffer_no_copy>());
    add_method(dev, "newLibraryWithSource:options:error:", imp<&EmuDevice::new_library>());
    add_method(dev, "newComputePipelineStateWithDescriptor:options:reflection:error:", imp<&EmuDevice::new_pipeline>());
    add_method(dev, "newBinaryArchiveWithDescriptor:error:", imp<&EmuDevice::new_archive>());
    add_method(dev, "newCounterSampleBufferWithDescriptor:error:", imp<&EmuDevice::new_counter_sample_buffer>());
    add_method(dev, "sampleTimestamps:gpuTimestamp:", imp<&EmuDevice::sample_timestamps>());

    add_method("MTLEmuBuffer", "contents", imp<&EmuBuffer::contents>());
    add_method("MTLEmuBuffer", "length", imp<&EmuBuffer::length>());
    add_method("MTLEmuBuffer", "storageMode", imp<&EmuBuffer::storage_mode>());
    add_method("MTLEmuBuffer", "device", imp<&EmuBuffer::device>());

    emu_class_named("MTLCompileOptions")->factory = &alloc_plain<EmuCompileOptions>;
    add_method("MTLCompileOptions", "setMathMode:", imp<&EmuCompileOptions::set_math_mode>());
    add_method("MTLCompileOptions", "setMathFloatingPointFunctions:", imp<&EmuCompileOptions::set_math_functions>());
    add_method("MTLCompileOptions", "setFastMathEnabled:", imp<&EmuCompileOptions::set_fast_math>());
    add_method("MTLCompileOptions", "setLanguageVersion:", imp<&EmuCompileOptions::set_language_version>());
    add_method("MTLCompileOptions", "setPreprocessorMacros:", imp<&EmuCompileOptions::set_macros>());

    add_method("MTLEmuLibrary", "newFunctionWithName:", imp<&EmuLibrary::new_function>());
    add_method("MTLEmuLibrary", "functionNames", imp<&EmuLibrary::function_names>());
    add_method("MTLEmuFunction", "functionType", imp<&EmuFunction::function_type>());
    add_method("MTLEmuFunction", "name", imp<&EmuFunction::name_string>());

    const std::string pd = "MTLComputePipelineDescriptor";
    emu_class_named(pd)->factory = &alloc_plain<EmuPipelineDescriptor>;
    add_method(pd, "setComputeFunction:", imp<&EmuPipelineDescriptor::set_function>());
    add_method(pd, "setLabel:", imp<&EmuPipelineDescriptor::set_label>());
    add_method(pd, "setBinaryArchives:", imp<&EmuPipelineDescriptor::set_archives>());
    add_method(pd, "setMaxTotalThreadsPerThreadgroup:", imp<&EmuPipelineDescriptor::set_max_threads>());
    add_method(pd, "maxTotalThreadsPerThreadgroup", imp<&EmuPipelineDescriptor::get_max_threads>());

    const std::string ps = "MTLEmuComputePipelineState";
    add_method(ps, "maxTotalThreadsPerThreadgroup", imp<&EmuPipelineState::max_total_threads>());
    add_method(ps, "threadExecutionWidth", imp<&EmuPipelineState::execution_width>());
    add_method(ps, "staticThreadgroupMemoryLength", imp<&EmuPipelineState::static_tg_memory>());
    add_method(ps, "device", imp<&EmuPipelineState::device>());

    emu_class_named("MTLBinaryArchiveDescriptor")->factory = &alloc_plain<EmuArchiveDescriptor>;
    add_method("MTLBinaryArchiveDescriptor", "setUrl:", imp<&EmuArchiveDescriptor::set_url>());
    add_method("MTLEmuBinaryArchive", "addComputePipelineFunctionsWithDescriptor:error:", imp<&EmuArchive::add_functions>());
    add_method("MTLEmuBinaryArchive", "serializeToURL:error:", imp<&EmuArchive::serialize>());

    add_method("MTLEmuCounterSet", "name", imp<&EmuCounterSet::name>());
    const std::string sd = "MTLCounterSampleBufferDescriptor";
    emu_class_named(sd)->factory = &alloc_plain<EmuCounterSampleBufferDescriptor>;
    add_method(sd, "setCounterSet:", imp<&EmuCounterSampleBufferDescriptor::set_counter_set>());
    add_method(sd, "setSampleCount:", imp<&EmuCounterSampleBufferDescriptor::set_sample_count>());
    add_method(sd, "setStorageMode:", imp<&EmuCounterSampleBufferDescriptor::set_storage_mode>());
    add_method("MTLEmuCounterSampleBuffer", "resolveCounterRange:", imp<&EmuCounterSampleBuffer::resolve>());

    add_class_method("MTLComputePassDescriptor", "computePassDescriptor", reinterpret_cast<IMP>(&pass_descriptor));
    add_method("MTLComputePassDescriptor", "sampleBufferAttachments", imp<&EmuPassDescriptor::attachments>());
    const std::string aa = "MTLEmuComputePassSampleBufferAttachmentDescriptorArray";
    add_method(aa, "objectAtIndexedSubscript:", imp<&EmuAttachmentArray::at>());
    const std::string at = "MTLEmuComputePassSampleBufferAttachmentDescriptor";
    add_method(at, "setSampleBuffer:", imp<&EmuAttachment::set_buffer>());
    add_method(at, "setStartOfEncoderSampleIndex:", imp<&EmuAttachment::set_start>());
    add_method(at, "setEndOfEncoderSampleIndex:", imp<&EmuAttachment::set_end>());

    const std::string cbd = "MTLCommandBufferDescriptor";
    emu_class_named(cbd)->factory = &alloc_plain<EmuCommandBufferDescriptor>;
    add_method(cbd, "setRetainedReferences:", imp<&EmuCommandBufferDescriptor::set_retained>());
    add_method(cbd, "setErrorOptions:", imp<&EmuCommandBufferDescriptor::set_error_options>());

    add_method("MTLEmuCommandQueue", "commandBufferWithDescriptor:", imp<&EmuQueue::command_buffer_with>());
    add_method("MTLEmuCommandQueue", "commandBuffer", imp<&EmuQueue::command_buffer>());

    const std::string cb = "MTLEmuCommandBuffer";
    add_method(cb, "computeCommandEncoder", imp<&EmuCommandBuffer::compute_encoder>());
    add_method(cb, "computeCommandEncoderWithDescriptor:", imp<&EmuCommandBuffer::compute_encoder_with>());
    add_method(cb, "addCompletedHandler:", imp<&EmuCommandBuffer::add_completed_handler>());
    add_method(cb, "commit", imp<&EmuCommandBuffer::commit>());
    add_method(cb, "waitUntilCompleted", imp<&EmuCommandBuffer::wait_until_completed>());
    add_method(cb, "status", imp<&EmuCommandBuffer::status>());
    add_method(cb, "error", imp<&EmuCommandBuffer::error>());
    add_method(cb, "GPUStartTime", imp<&EmuCommandBuffer::gpu_start>());
    add_method(cb, "GPUEndTime", imp<&EmuCommandBuffer::gpu_end>());
    add_method(cb, "setLabel:", imp<&EmuCommandBuffer::set_label>());
    add_method(cb, "logs", imp<&EmuCommandBuffer::logs>());

    add_method("MTLEmuLogContainer", "countByEnumeratingWithState:objects:count:",
               imp<&EmuLogContainer::count_by_enumerating>());
    const std::string fl = "MTLEmuFunctionLog";
    add_method(fl, "description", imp<&EmuFunctionLog::description>());
    add_method(fl, "encoderLabel", imp<&EmuFunctionLog::encoder_label>());
    add_method(fl, "function", imp<&EmuFunctionLog::function>());
    add_method(fl, "debugLocation", imp<&EmuFunctionLog::debug_location>());
    add_method(fl, "type", imp<&EmuFunctionLog::type>());
    const std::string dl = "MTLEmuFunctionLogDebugLocation";
    add_method(dl, "functionName", imp<&EmuDebugLocation::function_name>());
    add_method(dl, "line", imp<&EmuDebugLocation::line>());
    add_method(dl, "column", imp<&EmuDebugLocation::column>());
    add_method(dl, "URL", imp<&EmuDebugLocation::url>());

    const std::string enc = "MTLEmuComputeCommandEncoder";
    add_method(enc, "setComputePipelineState:", imp<&EmuEncoder::set_pipeline>());
    add_method(enc, "setBuffer:offset:atIndex:", imp<&EmuEncoder::set_buffer>());
    add_method(enc, "setBytes:length:atIndex:", imp<&EmuEncoder::set_bytes>());
    add_method(enc, "setThreadgroupMemoryLength:atIndex:", imp<&EmuEncoder::set_tg_memory>());
    add_method(enc, "dispatchThreadgroups:threadsPerThreadgroup:", imp<&EmuEncoder::dispatch>());
    add_method(enc, "endEncoding", imp<&EmuEncoder::end_encoding>());
    add_method(enc, "setLabel:", imp<&EmuEncoder::set_label>());
  });
}

}  // namespace tmps::emu
