// Pipeline cache: in-memory map from pipeline_key() to the built pipeline, with one build per
// key even when many threads ask at once (single flight). A failed build is not cached: every
// caller waiting on it gets the same error, and the next request tries again.
#include "pipeline_cache.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include "sha256.h"

namespace tmps {

namespace {

// "<length>:<text>" so that no two field lists produce the same text.
void append_framed(std::string& out, const std::string& text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

const char* math_mode_name(MathMode m) {
  switch (m) {
    case MathMode::Safe: return "safe";
    case MathMode::Relaxed: return "relaxed";
    case MathMode::Fast: return "fast";
  }
  return "unknown";
}

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  // No $HOME (daemons, some CI runners): ask the password database.
  struct passwd pw;
  struct passwd* found = nullptr;
  std::string buf(16384, '\0');
  if (getpwuid_r(getuid(), &pw, &buf[0], buf.size(), &found) == 0 && found && found->pw_dir) return found->pw_dir;
  return "";
}

}  // namespace

// Every field takes part: two option sets that could compile differently never share a key.
// The label is included too, since it appears in the pipeline's diagnostics.
std::string CompileOptions::key() const {
  std::string k = "tmps-compile-options-v1;math=";
  k += math_mode_name(math_mode);
  k += ";msl=";
  append_framed(k, language_version);
  k += ";strict=";
  k += strict_check ? "1" : "0";
  k += ";memcheck=";
  k += memcheck ? "1" : "0";
  k += ";macros=";
  k += std::to_string(macros.size());
  for (const auto& [name, value] : macros) {
    k += '[';
    append_framed(k, name);
    k += '=';
    append_framed(k, value);
    k += ']';
  }
  k += ";label=";
  append_framed(k, label);
  if (max_total_threads) k += ";threads=" + std::to_string(max_total_threads);
  return k;
}

std::string pipeline_key(const std::string& source, const std::string& entry, const CompileOptions& options,
                         const Device& device) {
  std::string text = "tmps-pipeline-key-v1\n";
  append_framed(text, source);
  append_framed(text, entry);
  append_framed(text, options.key());
  append_framed(text, device.cache_identity());
  return sha256_hex(text);
}

std::string cache_dir() {
  std::filesystem::path dir;
  if (const char* d = std::getenv("TRITON_MPS_CACHE_DIR"); d && *d) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::filesystem::path(x) / "triton_mps";
  } else {
    std::string home = home_dir();
    if (home.empty()) {
      throw Error("cannot find a cache directory: set TRITON_MPS_CACHE_DIR (no $HOME and no home directory for this user)");
    }
    dir = std::filesystem::path(home) / ".cache" / "triton_mps";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error("cannot create the triton-mps cache directory '" + dir.string() + "': " +
                (ec ? ec.message() : std::string("not a directory")) + " (set TRITON_MPS_CACHE_DIR to another place)");
  }
  return dir.string();
}

namespace {

std::mutex g_warnings_mu;
std::vector<std::string> g_warnings;

// Empty if a file can be created in `dir` (as root, permission bits alone do not tell).
std::string write_problem(const std::filesystem::path& dir) {
  const std::string probe = (dir / (".tmps-write-probe-" + std::to_string(getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

// The per-process stand-in for an unusable cache directory; removed when the process exits
// (kernel libraries loaded from it stay mapped).
struct FallbackDir {
  std::string path;
  ~FallbackDir() {
    if (path.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

void add_warning(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_warnings_mu);
  g_warnings.push_back(message);
}

std::vector<std::string> take_warnings() {
  std::lock_guard<std::mutex> lock(g_warnings_mu);
  std::vector<std::string> out;
  out.swap(g_warnings);
  return out;
}

std::string usable_cache_dir(const std::string& sub) {
  std::string why;
  std::filesystem::path wanted;
  try {
    wanted = std::filesystem::path(cache_dir()) / sub;
    std::error_code ec;
    std::filesystem::create_directories(wanted, ec);
    if (ec || !std::filesystem::is_directory(wanted)) {
      why = "cannot create '" + wanted.string() + "': " + (ec ? ec.message() : std::string("not a directory"));
    } else if (std::string problem = write_problem(wanted); !problem.empty()) {
      why = "cannot write to '" + wanted.string() + "': " + problem;
    } else {
      return wanted.string();
    }
  } catch (const Error& e) {
    why = e.what();
  }
  static std::mutex mu;
  static FallbackDir fallback;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (fallback.path.empty()) {
    const char* t = std::getenv("TMPDIR");
    std::string templ = std::string(t && *t ? t : "/tmp") + "/triton_mps-cache-XXXXXX";
    if (!mkdtemp(&templ[0])) throw Error("the triton-mps cache directory is unusable (" + why +
                                         ") and no temporary directory can be made: set TRITON_MPS_CACHE_DIR");
    fallback.path = templ;
  }
  if (warned.insert(wanted.string() + "|" + why).second) {
    add_warning("triton-mps: the kernel cache is unusable (" + why + "); this process builds in the temporary "
                "directory '" + fallback.path + "' and caches nothing across processes: set TRITON_MPS_CACHE_DIR "
                "to a writable directory (or repair or delete the cache)");
  }
  const std::filesystem::path dir = std::filesystem::path(fallback.path) / sub;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create the temporary cache directory '" + dir.string() + "': " + ec.message());
  return dir.string();
}

PipelineCache::PipelineCache(std::shared_ptr<Device> device) : device_(std::move(device)) {
  if (!device_) throw InvalidArgument("PipelineCache needs a device");
}

std::shared_ptr<Pipeline> PipelineCache::get(const std::string& source, const std::string& entry,
                                             const CompileOptions& options) {
  const std::string key = pipeline_key(source, entry, options, *device_);
  std::promise<std::shared_ptr<Pipeline>> promise;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      stats_.hits += 1;
      return it->second;
    }
    if (auto it = building_.find(key); it != building_.end()) {
      // Someone else is building this key: wait for their result (or their error).
      stats_.hits += 1;
      std::shared_future<std::shared_ptr<Pipeline>> pending = it->second;
      lock.unlock();
      return pending.get();
    }
    stats_.misses += 1;
    building_.emplace(key, promise.get_future().share());
  }

  // Build without holding the lock: other keys proceed in parallel.
  std::shared_ptr<Pipeline> pipeline;
  try {
    pipeline = device_->build_pipeline(source, entry, options);
    if (!pipeline) throw CompileError("building kernel '" + entry + "' returned no pipeline");
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    {
      std::lock_guard<std::mutex> lock(mu_);
      building_.erase(key);
    }
    promise.set_exception(error);
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[key] = pipeline;
    stats_.entries = entries_.size();
    building_.erase(key);
  }
  promise.set_value(pipeline);
  return pipeline;
}

PipelineCacheStats PipelineCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  PipelineCacheStats s = stats_;
  s.entries = entries_.size();
  return s;
}

void PipelineCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  stats_.entries = 0;
}

}  // namespace tmps
