// SimDevice: see sim_device.h.
#include "sim_device.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>

#include "msl_scanner.h"
#include "msl_to_cpp.h"
#include "simd_collapse.h"
#include "pipeline_cache.h"
#include "sha256.h"
#include "line_tables.h"
#include "memcheck.h"
#include "object_cache.h"
#include "sim_compiler.h"

namespace fs = std::filesystem;

namespace tmps::sim {

// How build_pipeline found or made its libraries (SimBuildStats); shared with pipelines, which
// may rebuild their kernel after the device is gone.
struct BuildCounters {
  std::atomic<uint64_t> compiled{0}, disk_hits{0}, memory_hits{0}, rejected{0}, promoted{0};
};

namespace {

constexpr size_t kBufferAlign = 16384;  // Apple GPU page size
constexpr const char* kLibraryFormat = "tmps-sim-lib-v2";  // bump when the .so layout changes (v2: tmps_sim_key)

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t(8) << 30;
  return uint64_t(pages) * uint64_t(page);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

void append_framed(std::string& out, const std::string& s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
  out += ';';
}

// ---- buffers -------------------------------------------------------------------------------

class SimBuffer : public RawBuffer {
 public:
  SimBuffer(void* p, size_t length, size_t mapped) : p_(p), length_(length), mapped_(mapped) {}
  ~SimBuffer() override {
    if (mapped_) munmap(p_, mapped_);
  }
  void* contents() override { return p_; }
  size_t length() const override { return length_; }
  void* native_handle() override { return p_; }

 private:
  void* p_;
  size_t length_;
  size_t mapped_;  // 0: caller-owned memory (wrap_host_memory)
};

// ---- kernel libraries ------------------------------------------------------------------------

// One dlopen'ed kernel library. Pipelines share it; dlclose when the last one goes.
struct KernelLibrary {
  void* handle = nullptr;
  std::string path;
  const tmps_sim_kernel* kernels = nullptr;
  uint32_t count = 0;
  const tmps_sim_memcheck** memcheck = nullptr;  // memcheck builds: the library's tmps_sim_mc
  double build_ns = 0;                           // how long its build took (0: not recorded)
  std::shared_ptr<LineTables> lines;             // memcheck builds: their line tables (line_tables.h)
  std::mutex dispatch_mu;                        // memcheck builds: one dispatch at a time
  ~KernelLibrary() {
    if (handle) dlclose(handle);
  }
  const tmps_sim_kernel* find(const std::string& name) const {
    for (uint32_t i = 0; i < count; ++i)
      if (kernels[i].name && name == kernels[i].name) return &kernels[i];
    return nullptr;
  }
  std::string names() const {
    std::string s;
    for (uint32_t i = 0; i < count; ++i) s += (i ? ", " : "") + std::string(kernels[i].name ? kernels[i].name : "?");
    return s.empty() ? "none" : s;
  }
};

// What a kernel library is built from, and the cache key naming all of it (library_key).
struct LibraryRecipe {
  std::shared_ptr<const std::string> cpp;  // shared: a -O0 pipeline keeps it for its -O2 rebuild
  CompileOptions options;
  OptLevel level = OptLevel::Full;
  std::string key;
};

// The text compiled for `r`: the library names the key it was built for (checked at every
// load from disk).
std::string library_source(const LibraryRecipe& r) {
  return *r.cpp + "\nextern \"C\" __attribute__((visibility(\"default\"))) extern const char tmps_sim_key[] = \"" + r.key +
         "\";\n";
}

// Libraries loaded in this process, by path: the same file is loaded once.
std::mutex g_libs_mu;
std::map<std::string, std::weak_ptr<KernelLibrary>> g_libs;

std::shared_ptr<KernelLibrary> loaded_library(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_libs_mu);
  auto it = g_libs.find(path);
  return it == g_libs.end() ? nullptr : it->second.lock();
}

std::string library_path(const std::string& dir, const std::string& key) { return (fs::path(dir) / (key + ".so")).string(); }

// A memcheck build's line tables: its twin, built on a report's first need (line_tables.h).
std::shared_ptr<LineTables> line_tables_for(const std::string& path, const LibraryRecipe& r) {
  if (!r.options.memcheck) return nullptr;
  return std::make_shared<LineTables>(path, r.key + ".lines.so", [r](const std::string& out) {
    compile_shared_object(library_source(r), out, r.options, r.level, {}, /*line_tables=*/true);
  });
}

// dlopen + ABI checks; nullptr with `why` set if the file is not a usable kernel library.
// `r.key`: the cache key the library must have been built for (its `tmps_sim_key`), so a
// library swapped in from another entry, or left by another build, is never used.
std::shared_ptr<KernelLibrary> open_library(const std::string& path, const LibraryRecipe& r, std::string& why) {
  const std::string& key = r.key;
  std::lock_guard<std::mutex> lock(g_libs_mu);
  if (auto it = g_libs.find(path); it != g_libs.end())
    if (auto lib = it->second.lock()) return lib;
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    why = e ? e : "dlopen failed";
    return nullptr;
  }
  auto lib = std::make_shared<KernelLibrary>();
  lib->handle = h;
  lib->path = path;
  auto* abi = static_cast<const tmps_u32*>(dlsym(h, "tmps_sim_abi_version"));
  auto* rt = static_cast<const tmps_sim_runtime**>(dlsym(h, "tmps_sim_rt"));
  auto* kernels = static_cast<const tmps_sim_kernel*>(dlsym(h, "tmps_sim_kernels"));
  auto* count = static_cast<const tmps_u32*>(dlsym(h, "tmps_sim_num_kernels"));
  if (!abi || !rt || !kernels || !count) {
    dlclose(h);
    why = std::string("missing exported symbol ") +
          (!abi ? "tmps_sim_abi_version" : !rt ? "tmps_sim_rt" : !kernels ? "tmps_sim_kernels" : "tmps_sim_num_kernels");
    return nullptr;
  }
  if (*abi != TMPS_SIM_ABI_VERSION) {
    why = "kernel ABI version " + std::to_string(*abi) + ", runtime expects " + std::to_string(TMPS_SIM_ABI_VERSION);
    dlclose(h);
    return nullptr;
  }
  auto* built_for = static_cast<const char*>(dlsym(h, "tmps_sim_key"));
  if (!built_for || key != built_for) {
    why = std::string("built for another kernel (key ") + (built_for ? std::string(built_for).substr(0, 12) : "none") +
          "..., expected " + key.substr(0, 12) + "...)";
    dlclose(h);
    return nullptr;
  }
  *rt = runtime();
  lib->memcheck = static_cast<const tmps_sim_memcheck**>(dlsym(h, "tmps_sim_mc"));
  lib->kernels = kernels;
  lib->count = *count;
  lib->lines = line_tables_for(path, r);
  g_libs[path] = lib;
  return lib;
}

}  // namespace

std::shared_ptr<LineTables> line_tables_of(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_libs_mu);
  auto it = g_libs.find(path);
  std::shared_ptr<KernelLibrary> lib = it == g_libs.end() ? nullptr : it->second.lock();
  return lib ? lib->lines : nullptr;
}

namespace {

// ---- building and finding libraries ---------------------------------------------------------

// Tiering (TRITON_MPS_SIM_OPT): most kernels of a test suite run once, on little data, and their
// -O2 build is most of their cost, so a kernel is built at -O0 first (about 40% of the build
// time) and rebuilt at -O2 once its dispatches have taken as long as that rebuild is expected to
// (ski rental: never more than about twice the better choice's cost). The expected rebuild is
// kPromoteBuildFactor times the -O0 build (recorded in the cache entry), and at least
// kPromoteAfterNs. A dispatch of kPromoteThreads threads or more promotes first (a -O0 kernel runs
// several times slower); one of kProbeMinGroups threadgroups or more runs 1/16 of them first and
// counts the rest, projected at that rate, as time already run (so a single large dispatch is
// promoted partway, not run whole at -O0). "auto" (default) does that; "0" keeps -O0; "2" builds
// -O2 at once.
// (Measured: upstream test_dot3d int8, 16,384 FMAs per thread unrolled: -O0 build 2.2 s, -O2
// build 58 s, run 1.2 s; promoting after 50 ms of dispatches made the test 65 s instead of 5 s.)
enum class Tiering { Auto, Quick, Full };
constexpr double kPromoteAfterNs = 50e6;
constexpr double kPromoteBuildFactor = 2.5;
constexpr uint64_t kProbeMinGroups = 64;  // smaller -O0 dispatches run whole (see SimBatch::commit)
constexpr uint64_t kPromoteThreads = uint64_t(1) << 22;  // ~4M threads: seconds at -O0

Tiering tiering() {
  const char* v = std::getenv("TRITON_MPS_SIM_OPT");
  const std::string s = v ? v : "";
  if (s.empty() || s == "auto") return Tiering::Auto;
  if (s == "0") return Tiering::Quick;
  if (s == "2") return Tiering::Full;
  throw InvalidArgument("TRITON_MPS_SIM_OPT must be auto, 0 or 2, got '" + s + "'");
}

// The cache key of a kernel library: everything its bytes depend on.
std::string library_key(const std::string& cpp, const CompileOptions& options, OptLevel level) {
  std::string key_text;
  append_framed(key_text, kLibraryFormat);
  append_framed(key_text, cpp);
  append_framed(key_text, options.key());
  append_framed(key_text, build_fingerprint(options, level));
  append_framed(key_text, find_toolchain().version);
  append_framed(key_text, shim_hash());
  append_framed(key_text, std::to_string(TMPS_SIM_ABI_VERSION));
  return sha256_hex(key_text);
}

LibraryRecipe recipe(std::shared_ptr<const std::string> cpp, const CompileOptions& options, OptLevel level) {
  std::string key = library_key(*cpp, options, level);
  return LibraryRecipe{std::move(cpp), options, level, std::move(key)};
}

// The library at `so` if this process has it or the disk has a verified copy; nullptr if not
// (an unusable entry on disk is counted, reported, and left to be rebuilt).
std::shared_ptr<KernelLibrary> cached_library_at(const std::string& so, const LibraryRecipe& r, const std::string& entry,
                                                 BuildCounters& n) {
  if (std::shared_ptr<KernelLibrary> lib = loaded_library(so)) {
    ++n.memory_hits;
    return lib;
  }
  std::string why;
  double build_ns = 0;
  const EntryState state = verify_entry(so, why, &build_ns);
  if (state == EntryState::Valid) {
    if (std::shared_ptr<KernelLibrary> lib = open_library(so, r, why)) {
      ++n.disk_hits;
      lib->build_ns = build_ns;
      return lib;
    }
  }
  if (state != EntryState::Missing) {  // truncated, corrupted, swapped or stale: rebuild it
    ++n.rejected;
    add_warning("triton-mps simulator cache: the entry " + so + " for kernel '" + entry + "' is unusable (" + why +
                "); it is rebuilt");
  }
  return nullptr;
}

// The library built for `key`: in the writable cache, else in a read-only cache beneath it
// (pipeline_cache.h CacheDirs: a cache baked into an image, a full disk); nullptr if neither.
std::shared_ptr<KernelLibrary> cached_library(const LibraryRecipe& r, const std::string& entry, BuildCounters& n) {
  const CacheDirs dirs = cache_dirs("sim");
  if (std::shared_ptr<KernelLibrary> lib = cached_library_at(library_path(dirs.write, r.key), r, entry, n)) return lib;
  if (!dirs.read_only.empty()) return cached_library_at(library_path(dirs.read_only, r.key), r, entry, n);
  return nullptr;
}

// Compiles, records and loads the library for `key` at `so`.
std::shared_ptr<KernelLibrary> build_library_at(const std::string& so, const LibraryRecipe& r, BuildCounters& n,
                                                const std::function<void()>& settle) {
  const auto t0 = std::chrono::steady_clock::now();
  compile_shared_object(library_source(r), so, r.options, r.level, settle);
  const double build_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  ++n.compiled;
  write_meta(so, build_ns);
  std::string why;
  std::shared_ptr<KernelLibrary> lib = open_library(so, r, why);
  if (!lib) throw CompileError("simulator: cannot load the compiled kernel library " + so + ": " + why);
  lib->build_ns = build_ns;
  return lib;
}

// build_library_at in the writable cache. A disk that refuses the write there (full, over
// quota, read-only) moves this process's builds to the temporary directory (with a warning)
// and the build runs once more there; any other failure, or a refusal there too, is raised.
std::shared_ptr<KernelLibrary> build_library(const LibraryRecipe& r, BuildCounters& n, const std::function<void()>& settle = {}) {
  const std::string so = library_path(usable_cache_dir("sim"), r.key);
  try {
    return build_library_at(so, r, n, settle);
  } catch (const HostError& e) {
    if (!give_up_cache_writes(so, e.os_error, e.what())) throw;
  }
  return build_library_at(library_path(usable_cache_dir("sim"), r.key), r, n, settle);
}

// How much nicer a background build's compiler processes run (CompileOptions::waited_for).
constexpr int kBackgroundNice = 10;

// ---- pipelines -----------------------------------------------------------------------------

ParamInfo to_param_info(const tmps_sim_param& p) {
  ParamInfo info;
  info.name = p.name ? p.name : "";
  info.type = p.type ? p.type : "";
  info.attribute = p.attribute ? p.attribute : "";
  info.kind = p.kind == TMPS_PARAM_THREADGROUP ? ParamInfo::Kind::Threadgroup
              : p.kind == TMPS_PARAM_POSITION  ? ParamInfo::Kind::Position
                                               : ParamInfo::Kind::Buffer;
  switch (p.address_space) {
    case TMPS_SPACE_CONSTANT: info.space = ParamInfo::Space::Constant; break;
    case TMPS_SPACE_THREADGROUP: info.space = ParamInfo::Space::Threadgroup; break;
    case TMPS_SPACE_THREAD: info.space = ParamInfo::Space::Thread; break;
    default: info.space = ParamInfo::Space::Device; break;
  }
  info.index = p.index;
  info.is_pointer = p.is_pointer != 0;
  info.type_size = p.type_size;
  info.line = p.line;
  return info;
}

// One build of a pipeline's kernel; dispatches hold it while they run.
struct KernelVariant {
  std::shared_ptr<KernelLibrary> lib;  // keeps the code of kernel mapped
  const tmps_sim_kernel* kernel;
};

class SimPipeline : public Pipeline {
 public:
  using Build = std::function<std::shared_ptr<KernelLibrary>()>;
  // `full_build`: for a -O0 kernel, rebuilds it at -O2 (see Tiering); empty otherwise.
  // `counting_build`: the build that reports TMPS_FLOPS (made on the first dispatch with the
  // counters on); empty when the source marks no FLOPs.
  SimPipeline(KernelVariant v, const std::string& source, Build full_build, Build counting_build)
      : variant_(std::make_shared<const KernelVariant>(std::move(v))), origins_(source), full_build_(std::move(full_build)),
        counting_build_(std::move(counting_build)) {
    promote_after_ns_ = std::max(kPromoteAfterNs, kPromoteBuildFactor * variant_->lib->build_ns);
    const tmps_sim_kernel* k = variant_->kernel;
    name_ = k->name;
    line_ = k->line;
    max_threads_ = k->max_total_threads_per_threadgroup;
    for (uint32_t i = 0; i < k->num_params; ++i) params_.push_back(to_param_info(k->params[i]));
  }
  const std::string& name() const override { return name_; }
  const std::vector<ParamInfo>& params() const override { return params_; }
  uint32_t max_total_threads_per_threadgroup() const override {
    return max_threads_ && max_threads_ < kMaxThreadsPerThreadgroup ? max_threads_ : kMaxThreadsPerThreadgroup;
  }
  uint32_t thread_execution_width() const override { return TMPS_SIM_SIMD_WIDTH; }
  uint32_t static_threadgroup_memory() const override { return 0; }  // known only while running
  uint32_t source_line() const override { return line_; }
  const SourceOrigins& origins() const { return origins_; }

  std::shared_ptr<const KernelVariant> variant() const {
    std::lock_guard<std::mutex> lock(mu_);
    return variant_;
  }

  // The build a dispatch runs: the counting build while the counters are on (built once, here).
  std::shared_ptr<const KernelVariant> variant_for(bool counting_on) const {
    if (!counting_on) return variant();
    std::lock_guard<std::mutex> lock(counting_mu_);
    if (!counting_variant_) {
      if (!counting_build_) return variant();
      std::shared_ptr<KernelLibrary> lib = counting_build_();
      const tmps_sim_kernel* k = lib->find(name_);
      if (!k) throw CompileError("kernel '" + name_ + "' not found in " + lib->path);
      counting_variant_ = std::make_shared<const KernelVariant>(KernelVariant{std::move(lib), k});
    }
    return counting_variant_;
  }

  // Before a dispatch of `threads` threads: one of kPromoteThreads or more runs long whatever
  // the build, so a -O0 kernel is rebuilt at -O2 first.
  void will_run(uint64_t threads) const {
    if (threads >= kPromoteThreads) promote(0, true);
  }
  // Accounts a dispatch's run time. Once a -O0 kernel has run as long as its -O2 rebuild is
  // expected to take (see Tiering), it is rebuilt (once, here, in the committing thread) and
  // later dispatches run that.
  void ran(double ns) const { promote(ns, false); }
  // Whether this is a -O0 build that may still be promoted.
  bool promotable() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bool(full_build_);
  }
  // Partway through a dispatch that has run `ns` so far, with `remaining_ns` of -O0 work
  // projected: accounts `ns` and promotes now if that work reaches the threshold.
  void ran_part(double ns, double remaining_ns) const { promote(ns, false, remaining_ns); }

 private:
  // A failed -O2 build keeps the -O0 kernel, which computes the same bits, and says so.
  void promote(double ns, bool now, double expected_ns = 0) const {
    std::function<std::shared_ptr<KernelLibrary>()> build;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!full_build_) return;
      run_ns_ += ns;
      if (!now && run_ns_ + expected_ns < promote_after_ns_) return;
      build = std::move(full_build_);
      full_build_ = nullptr;
    }
    try {
      std::shared_ptr<KernelLibrary> lib = build();
      const tmps_sim_kernel* k = lib->find(name_);
      if (!k) throw CompileError("kernel '" + name_ + "' not found in " + lib->path);
      std::lock_guard<std::mutex> lock(mu_);
      variant_ = std::make_shared<const KernelVariant>(KernelVariant{std::move(lib), k});
    } catch (const Error& e) {
      add_warning("triton-mps simulator: kernel '" + name_ + "' stays at -O0 (same results, slower): its -O2 build failed: " +
                  e.what());
    }
  }

  mutable std::mutex mu_;
  mutable std::shared_ptr<const KernelVariant> variant_;
  SourceOrigins origins_;  // Triton source lines of the MSL, for diagnostics
  mutable std::function<std::shared_ptr<KernelLibrary>()> full_build_;
  mutable double run_ns_ = 0;
  double promote_after_ns_ = kPromoteAfterNs;  // see Tiering
  Build counting_build_;
  mutable std::mutex counting_mu_;  // held while the counting build is made
  mutable std::shared_ptr<const KernelVariant> counting_variant_;
  std::string name_;
  uint32_t line_ = 0;
  uint32_t max_threads_ = 0;
  std::vector<ParamInfo> params_;
};

// ---- batches -------------------------------------------------------------------------------

// The counters a launch result carries (Timing.counters): the totals; per-buffer detail stays
// with triton_mps.last_dispatch_stats().
std::vector<std::pair<std::string, double>> counter_list(const DispatchCounters& c) {
  const auto n = [](uint64_t v) { return static_cast<double>(v); };
  return {{"memory_counted", c.memory_counted ? 1.0 : 0.0},
          {"device_bytes_read", n(c.device_bytes_read)},
          {"device_bytes_written", n(c.device_bytes_written)},
          {"device_distinct_bytes_read", n(c.device_distinct_read)},
          {"device_distinct_bytes_written", n(c.device_distinct_written)},
          {"device_loads", n(c.device_loads)},
          {"device_stores", n(c.device_stores)},
          {"threadgroup_bytes_read", n(c.threadgroup_bytes_read)},
          {"threadgroup_bytes_written", n(c.threadgroup_bytes_written)},
          {"barriers", n(c.barriers)},
          {"simd_collectives", n(c.simd_collectives)},
          {"simdgroup_barriers", n(c.simdgroup_barriers)},
          {"simdgroup_matrix_ops", n(c.simdgroup_matrix_ops)},
          {"simdgroup_matrix_flops", n(c.simdgroup_matrix_flops)},
          {"simdgroup_matrix_exchanges", n(c.simdgroup_matrix_exchanges)},
          {"scalar_flops", n(c.scalar_flops)}};
}

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The scheduler's view of a dispatch: [[buffer(n)]] and [[threadgroup(n)]] parameters resolved.
LaunchSpec resolve(const Dispatch& d, const SimPipeline& p, const KernelVariant& v) {
  LaunchSpec spec;
  spec.kernel = v.kernel;
  spec.memcheck_slot = v.lib->memcheck;
  spec.origins = &p.origins();
  spec.threadgroups = d.threadgroups;
  spec.threads_per_group = d.threads_per_group;
  const std::string kernel = "kernel '" + p.name() + "'";
  for (const ParamInfo& param : p.params()) {
    const std::string what = kernel + " parameter '" + param.name + "' [[" + param.attribute + "]]";
    if (param.kind == ParamInfo::Kind::Buffer) {
      if (param.index >= TMPS_SIM_MAX_BUFFERS) throw InvalidArgument(what + ": binding index over Metal's limit of 31");
      const Binding* b = nullptr;
      for (const auto& x : d.bindings)
        if (x.index == param.index) b = &x;
      if (!b) throw InvalidArgument(what + " is not bound");
      void* ptr = nullptr;
      const void* start = nullptr;
      uint64_t size = 0;
      if (b->kind == Binding::Kind::Buffer) {
        if (!b->buffer) throw InvalidArgument(what + " is bound to a null buffer");
        const uint64_t len = b->buffer->length();
        if (b->offset > len)
          throw InvalidArgument(what + ": offset " + std::to_string(b->offset) + " is past the end of a " +
                                std::to_string(len) + "-byte buffer");
        start = b->buffer->contents();
        ptr = static_cast<char*>(b->buffer->contents()) + b->offset;
        size = len - b->offset;
      } else {
        ptr = const_cast<uint8_t*>(b->bytes.data());
        size = b->bytes.size();
      }
      if (!param.is_pointer && param.type_size && size < param.type_size)
        throw InvalidArgument(what + " needs " + std::to_string(param.type_size) + " bytes (" + param.type +
                              ") but only " + std::to_string(size) + " are bound");
      spec.buffers[param.index] = ptr;
      spec.buffer_sizes[param.index] = size;
      spec.buffer_starts[param.index] = start;
    } else if (param.kind == ParamInfo::Kind::Threadgroup) {
      if (param.index >= TMPS_SIM_MAX_THREADGROUP_BINDINGS)
        throw InvalidArgument(what + ": binding index over Metal's limit of 31");
      bool found = false;
      for (const auto& [index, bytes] : d.threadgroup_memory)
        if (index == param.index) {
          spec.threadgroup_lengths[index] = bytes;
          found = true;
        }
      if (!found) throw InvalidArgument(what + " has no threadgroup memory length set");
    }
  }
  return spec;
}

class SimBatch : public Batch {
 public:
  explicit SimBatch(std::shared_ptr<Scheduler> s) : scheduler_(std::move(s)) {}

  void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) override {
    if (committed_) throw InvalidArgument("simulator: encode() on a batch that was already committed");
    if (!d.pipeline || !dynamic_cast<const SimPipeline*>(d.pipeline.get()))
      throw InvalidArgument("simulator: dispatch of a pipeline that was not built by the simulator device");
    items_.push_back({d, std::move(timing)});
  }

  size_t size() const override { return items_.size(); }

  // Executes here, in order. Errors are kept for wait(); a failed dispatch skips the rest.
  void commit() override {
    if (committed_) return;
    committed_ = true;
    std::string message;
    for (auto& item : items_) {
      if (error_) break;
      const double start = now_ns();
      try {
        const auto& p = static_cast<const SimPipeline&>(*item.dispatch.pipeline);
        const auto& g = item.dispatch.threadgroups;
        const auto& t = item.dispatch.threads_per_group;
        const uint64_t groups = uint64_t(g[0]) * g[1] * g[2];
        p.will_run(groups * t[0] * t[1] * t[2]);
        const bool counting_on = counting();
        // Runs threadgroups [begin, end) with the pipeline's current build; its run time.
        const auto run_part = [&](uint64_t begin, uint64_t end) {
          const std::shared_ptr<const KernelVariant> v = p.variant_for(counting_on);
          LaunchSpec spec = resolve(item.dispatch, p, *v);
          spec.group_begin = begin;
          spec.group_end = end;
          std::unique_lock<std::mutex> one_at_a_time(v->lib->dispatch_mu, std::defer_lock);
          if (spec.memcheck_slot) one_at_a_time.lock();  // the library's tmps_sim_mc is per dispatch
          const double t0 = now_ns();
          const DispatchCounters counted = scheduler_->run(spec);
          if (item.timing && counted.valid) item.timing->counters = counter_list(counted);
          return now_ns() - t0;
        };
        // A -O0 kernel's large dispatch first runs a probe of 1/16 of its threadgroups; if the
        // rest, projected at that rate, makes the -O2 rebuild worth it (see Tiering), the rest
        // runs on the -O2 build. Threadgroups are independent, so either build may run any of
        // them (same bits). Not with the counters on: they are totals of one run.
        if (!counting_on && groups >= kProbeMinGroups && p.promotable()) {
          const uint64_t probe = groups / 16;
          const double probe_ns = run_part(0, probe);
          p.ran_part(probe_ns, probe_ns * double(groups - probe) / double(probe));
          p.ran(run_part(probe, groups));
        } else {
          p.ran(run_part(0, groups));
        }
      } catch (const Error& e) {
        error_ = std::current_exception();
        message = e.what();
      } catch (const std::exception& e) {
        error_ = std::make_exception_ptr(DispatchError(std::string("simulator: ") + e.what()));
        message = e.what();
      }
      if (item.timing) {
        item.timing->start_ns = start;
        item.timing->end_ns = now_ns();
      }
    }
    for (auto& item : items_) {
      if (!item.timing) continue;
      item.timing->error = message;
      item.timing->ready = true;
    }
    items_.clear();  // release buffers and pipelines now, as Metal does on completion
  }

  void wait() override {
    if (!committed_) commit();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Item {
    Dispatch dispatch;
    std::shared_ptr<DispatchTiming> timing;
  };
  std::shared_ptr<Scheduler> scheduler_;
  std::vector<Item> items_;
  bool committed_ = false;
  std::exception_ptr error_;
};

}  // namespace

// ---- SimDevice -----------------------------------------------------------------------------

SimDevice::SimDevice() : scheduler_(std::make_shared<Scheduler>()), counters_(std::make_shared<BuildCounters>()) {
  info_.name = "triton-mps simulator";
  info_.registry_id = 0;
  info_.gpu_family = "apple9";
  info_.generation = 3;
  info_.max_threads_per_threadgroup = kMaxThreadsPerThreadgroup;
  info_.max_threadgroup_memory = static_cast<uint32_t>(kMaxThreadgroupMemory);
  info_.recommended_working_set = physical_memory() / 2;
  info_.unified_memory = true;
  info_.simd_width = TMPS_SIM_SIMD_WIDTH;
  info_.max_buffer_bindings = TMPS_SIM_MAX_BUFFERS;
  info_.max_buffer_length = info_.recommended_working_set;
  info_.is_simulator = true;
  info_.cpu_threads = scheduler_->workers();
}

SimDevice::~SimDevice() = default;

std::unique_ptr<RawBuffer> SimDevice::new_buffer(size_t bytes) {
  if (bytes > info_.max_buffer_length)
    throw OutOfMemory("simulator: a buffer of " + std::to_string(bytes) + " bytes exceeds the maximum of " +
                      std::to_string(info_.max_buffer_length));
  // mmap: zero-filled; aligned to 16 KiB like Apple GPU pages by mapping one extra 16 KiB
  // and returning the unaligned head and the tail to the system.
  const size_t mapped = round_up(bytes ? bytes : 1, kBufferAlign);
  const size_t total = mapped + kBufferAlign;
  void* raw = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw OutOfMemory("simulator: cannot allocate a buffer of " + std::to_string(bytes) + " bytes");
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kBufferAlign);
  if (aligned > start) munmap(raw, aligned - start);
  const size_t tail = start + total - (aligned + mapped);
  if (tail) munmap(reinterpret_cast<void*>(aligned + mapped), tail);
  void* p = reinterpret_cast<void*>(aligned);
  if (env_flag("TRITON_MPS_SIM_POISON")) std::memset(p, 0xFF, mapped);  // uninitialised reads show as NaN / -1
  return std::make_unique<SimBuffer>(p, bytes, mapped);
}

std::unique_ptr<RawBuffer> SimDevice::wrap_host_memory(void* ptr, size_t bytes) {
  if (!ptr && bytes) throw InvalidArgument("simulator: wrap_host_memory of a null pointer");
  return std::make_unique<SimBuffer>(ptr, bytes, 0);
}

std::shared_ptr<Pipeline> SimDevice::build_pipeline(const std::string& source, const std::string& entry,
                                                    const CompileOptions& options) {
  const std::string filename = options.label.empty() ? "kernel.metal" : options.label + ".metal";
  TranslatedSource tr = translate_for_simulator(source, filename);
  {
    bool found = false;
    std::string names;
    for (size_t i = 0; i < tr.kernels.size(); ++i) {
      const auto& k = tr.kernels[i];
      if (k.name == entry && !found) count_collapse(tr.collapse[i]);
      found = found || k.name == entry;
      names += (names.empty() ? "" : ", ") + k.name;
    }
    if (!found)
      throw CompileError("kernel '" + entry + "' not found in " + filename + "; kernels found: " +
                         (names.empty() ? "none" : names));
  }
  // A -O2 build of this kernel is used whenever there is one (see Tiering). The baseline x86-64
  // target (no F16C) is built -O2 only: there, -O0 half arithmetic propagates other NaN payloads
  // than -O2 (measured: tests/sim/test_sim_target.py); every other target gives the same bits.
  const Tiering tier = sim_target().name == "x86_64" ? Tiering::Full : tiering();
  // The C++ with the collapsed SIMD-group functions, unless they fail to compile.
  LibraryRecipe full = recipe(std::make_shared<const std::string>(tr.cpp), options, OptLevel::Full);
  std::shared_ptr<KernelLibrary> lib = cached_library(full, entry, *counters_);
  std::function<std::shared_ptr<KernelLibrary>()> full_build;
  if (!lib) {
    const OptLevel level = tier == Tiering::Full ? OptLevel::Full : OptLevel::Quick;
    LibraryRecipe r = level == OptLevel::Full ? full : recipe(full.cpp, options, level);
    if (level == OptLevel::Quick) lib = cached_library(r, entry, *counters_);
    if (!lib) {
      // Only on a real build: options.key() (part of the key) holds strict_check, so a cached
      // library already passed the check when it was made.
      // The strict check runs beside the compile (another compiler process: a wait for the build
      // is the longer of the two, not their sum). A background build's compilers run nicer than
      // us, so they take idle cores but yield to the thread compiling the next kernel. The
      // strict verdict is taken before the library is published and before a compile error is
      // thrown, so its error comes first, and a rejected kernel never reaches the cache.
      const int nice = options.waited_for ? 0 : kBackgroundNice;
      std::future<void> strict;
      std::function<void()> settle;
      if (options.strict_check) {
        try {
          check_metal_rules(source, filename);
        } catch (const CompileError& e) {
          throw CompileError(std::string("Metal would reject this kernel:\n") + e.what());
        }
        strict = std::async(std::launch::async, [cpp = tr.cpp_plain, options, nice] {
          ChildNice nicer(nice);
          strict_check(cpp, options);
        });
        settle = [&strict] {
          if (strict.valid()) strict.get();
        };
      }
      ChildNice nicer(nice);
      try {
        lib = build_library(r, *counters_, settle);
      } catch (const CompileError&) {
        if (strict.valid()) strict.get();  // failed before settling: the strict verdict still comes first
        if (*full.cpp == tr.cpp_plain) throw;
        // The collapse's C++ did not compile (a construct it misread): the kernel as it was,
        // counted, so it shows (sim_collapse_counts). A real error comes from this build.
        count_collapse("refused after the build: the collapsed C++ did not compile");
        full = recipe(std::make_shared<const std::string>(tr.cpp_plain), options, OptLevel::Full);
        r = level == OptLevel::Full ? full : recipe(full.cpp, options, level);
        lib = cached_library(r, entry, *counters_);
        if (!lib) lib = build_library(r, *counters_);
      } catch (...) {
        if (strict.valid()) strict.get();
        throw;
      }
    }
    if (level == OptLevel::Quick && tier == Tiering::Auto) {
      full_build = [full, entry, counters = counters_]() {
        std::shared_ptr<KernelLibrary> built = cached_library(full, entry, *counters);
        if (!built) built = build_library(full, *counters);
        ++counters->promoted;
        return built;
      };
    }
  }
  const tmps_sim_kernel* k = lib->find(entry);
  if (!k) throw CompileError("kernel '" + entry + "' not found in " + lib->path + "; kernels found: " + lib->names());
  std::function<std::shared_ptr<KernelLibrary>()> counting_build;
  if (source.find("TMPS_FLOPS") != std::string::npos) {
    // The same C++ with TMPS_FLOPS live: another cache key, the same bits otherwise.
    // (#undef first: a precompiled shim, included before this text, defined it empty.)
    counting_build = [cpp = "#undef TMPS_FLOPS\n#define TMPS_FLOPS(n) (tmps_sim_rt->count_flops((tmps_u32)(n)))\n" + tr.cpp_plain,
                      options, entry, counters = counters_]() {
      const LibraryRecipe r = recipe(std::make_shared<const std::string>(cpp), options, OptLevel::Full);
      std::shared_ptr<KernelLibrary> built = cached_library(r, entry, *counters);
      return built ? built : build_library(r, *counters);
    };
  }
  return std::make_shared<SimPipeline>(KernelVariant{std::move(lib), k}, source, std::move(full_build),
                                       std::move(counting_build));
}

std::unique_ptr<Batch> SimDevice::new_batch() { return std::make_unique<SimBatch>(scheduler_); }

std::string SimDevice::cache_identity() const {
  std::string version;
  try {
    version = find_toolchain().version;
  } catch (const Error&) {
    version = "no-toolchain";
  }
  return "sim:" + std::to_string(TMPS_SIM_ABI_VERSION) + ":" + version;
}

SimBuildStats SimDevice::build_stats() const {
  SimBuildStats s;
  s.compiled = counters_->compiled;
  s.disk_hits = counters_->disk_hits;
  s.memory_hits = counters_->memory_hits;
  s.rejected_entries = counters_->rejected;
  s.promoted = counters_->promoted;
  return s;
}

}  // namespace tmps::sim

namespace tmps {
std::shared_ptr<Device> make_sim_device() { return std::make_shared<sim::SimDevice>(); }
}  // namespace tmps
