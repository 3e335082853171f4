// Pipeline cache: in-memory map from pipeline_key() to the built pipeline, with one build per
// key even when many threads ask at once (single flight). A failed build is not cached: every
// caller waiting on it gets the same error, and the next request tries again.
#include "pipeline_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
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

// Empty if real bytes can be written to a new file in `dir`: an empty file fits on a full disk,
// a page of data does not (as root, permission bits alone do not tell either). `err` gets errno.
std::string write_problem(const std::filesystem::path& dir, int& err) {
  const std::string probe = (dir / (".tmps-write-probe-" + std::to_string(getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    err = errno;
    return std::strerror(err);
  }
  static const std::string page(4096, 'x');
  ssize_t wrote = ::write(fd, page.data(), page.size());
  err = wrote < 0 ? errno : wrote != static_cast<ssize_t>(page.size()) ? ENOSPC : 0;
  if (::close(fd) != 0 && err == 0) err = errno;
  ::unlink(probe.c_str());
  return err ? std::strerror(err) : "";
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

namespace {

std::mutex g_dirs_mu;
FallbackDir g_fallback;                          // made on first need
std::map<std::string, std::string> g_given_up;  // cache root -> why this process stopped writing there
std::set<std::string> g_warned;

// The temporary directory that stands in for the cache, made on first use (g_dirs_mu held).
const std::string& fallback_locked(const std::string& why) {
  if (g_fallback.path.empty()) {
    const char* t = std::getenv("TMPDIR");
    const std::string base = t && *t ? t : "/tmp";
    std::string templ = base + "/triton_mps-cache-XXXXXX";
    if (!mkdtemp(&templ[0])) {
      const int err = errno;
      throw HostError("the triton-mps cache directory is unusable (" + why + ") and no temporary directory can be made in '" +
                          base + "' (" + std::strerror(err) + "): set TRITON_MPS_CACHE_DIR to a writable directory",
                      err);
    }
    g_fallback.path = templ;
  }
  return g_fallback.path;
}

// Once per `key` (the cache and the OS's reason, not the subfolder: one full disk, one warning).
void warn_locked(const std::string& key, const std::string& why, bool readable) {
  if (!g_warned.insert(key).second) return;
  add_warning("triton-mps: the kernel cache is unusable (" + why + "); this process builds in the temporary directory '" +
              g_fallback.path + "' and caches nothing across processes" +
              (readable ? std::string(" (kernels already in the cache are still read from it)") : std::string()) +
              ": set TRITON_MPS_CACHE_DIR to a writable directory (or free space, or repair or delete the cache)");
}

}  // namespace

const std::vector<int>& disk_refusals() {
  static const std::vector<int> errors = {ENOSPC, EROFS,
#ifdef EDQUOT
                                          EDQUOT
#endif
  };
  return errors;
}

bool is_disk_refusal(int os_error) {
  const std::vector<int>& errors = disk_refusals();
  return std::find(errors.begin(), errors.end(), os_error) != errors.end();
}

CacheDirs cache_dirs(const std::string& sub) {
  std::string why, reason;  // the sentence, and the OS's reason alone (one warning per cache and reason)
  std::filesystem::path root, wanted;
  bool readable = false;
  try {
    root = cache_dir();
    wanted = root / sub;
    std::error_code ec;
    std::filesystem::create_directories(wanted, ec);
    int err = 0;
    if (ec || !std::filesystem::is_directory(wanted)) {
      reason = ec ? ec.message() : std::string("not a directory");
      why = "cannot create '" + wanted.string() + "': " + reason;
    } else if (std::string problem = write_problem(wanted, err); !problem.empty()) {
      reason = problem;
      why = "cannot write to '" + wanted.string() + "': " + problem;
    } else {
      std::lock_guard<std::mutex> lock(g_dirs_mu);
      auto it = g_given_up.find(root.string());
      if (it == g_given_up.end()) return {wanted.string(), ""};
      why = reason = it->second;
    }
    readable = std::filesystem::is_directory(wanted, ec) && ::access(wanted.c_str(), R_OK | X_OK) == 0;
  } catch (const Error& e) {
    why = reason = e.what();
  }
  std::lock_guard<std::mutex> lock(g_dirs_mu);
  const std::filesystem::path dir = std::filesystem::path(fallback_locked(why)) / sub;
  warn_locked(root.string() + "|" + reason, why, readable);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw HostError("cannot create the temporary cache directory '" + dir.string() + "': " + ec.message(), ec.value());
  return {dir.string(), readable ? wanted.string() : ""};
}

std::string usable_cache_dir(const std::string& sub) { return cache_dirs(sub).write; }

bool give_up_cache_writes(const std::string& path, int os_error, const std::string& what) {
  if (!is_disk_refusal(os_error)) return false;
  std::string root;
  try {
    root = cache_dir();
  } catch (const Error&) {
    return false;
  }
  if (path.compare(0, root.size() + 1, root + "/") != 0) return false;  // already outside the cache
  std::lock_guard<std::mutex> lock(g_dirs_mu);
  const std::string reason = std::strerror(os_error);
  g_given_up.emplace(root, what.find(reason) != std::string::npos ? what : what + ": " + reason);
  return true;
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
