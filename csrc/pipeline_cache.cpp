// Pipeline cache: in-memory map from pipeline_key() to the built pipeline, with one build per
// key even when many threads ask at once (single flight). A failed build is not cached: every
// caller waiting on it gets the same error, and the next request tries again.
#include "pipeline_cache.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <system_error>

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
