// The simulator's on-disk cache of kernel libraries: see object_cache.h.
#include "object_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <tuple>

#include "errors.h"
#include "sha256.h"

namespace fs = std::filesystem;

namespace tmps::sim {

namespace {

std::string meta_path(const std::string& so) { return so + ".meta"; }

std::string meta_text(const std::string& so) {
  return std::string("tmps-sim-meta-v1\nsize ") + std::to_string(fs::file_size(so)) + "\nsha256 " +
         sha256_file_hex(so) + "\n";
}

// What identifies one version of a file on disk: size, modification time, inode.
using Stamp = std::tuple<long long, long long, long long, unsigned long long>;

bool stamp_of(const std::string& path, Stamp& out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
#if defined(__APPLE__)
  const struct timespec& t = st.st_mtimespec;
#else
  const struct timespec& t = st.st_mtim;
#endif
  out = Stamp(st.st_size, t.tv_sec, t.tv_nsec, st.st_ino);
  return true;
}

}  // namespace

// Whether `so` exists and matches its sidecar (size and SHA-256): catches truncated or
// corrupted entries before dlopen sees them. A library without its sidecar is Missing, not
// Invalid: another process may be between writing the two.
EntryState verify_entry(const std::string& so, std::string& why, double* build_ns) {
  std::error_code ec;
  if (!fs::is_regular_file(so, ec) || !fs::is_regular_file(meta_path(so), ec)) return EntryState::Missing;
  std::ifstream in(meta_path(so), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    const std::string text = ss.str(), expected = meta_text(so);
    if (text.compare(0, expected.size(), expected) == 0) {
      // An optional "build_ns N" line follows the checked part.
      if (build_ns) {
        *build_ns = 0;
        const std::string rest = text.substr(expected.size());
        if (rest.rfind("build_ns ", 0) == 0) *build_ns = std::strtod(rest.c_str() + 9, nullptr);
      }
      return EntryState::Valid;
    }
    why = "its size or SHA-256 does not match its .meta file (truncated or corrupted)";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return EntryState::Invalid;
}

void write_whole_file(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = fd < 0 ? errno : 0;
  for (size_t done = 0; !err && done < bytes.size();) {
    const ssize_t k = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) err = k < 0 ? errno : ENOSPC;
    else done += static_cast<size_t>(k);
  }
  if (fd >= 0 && ::close(fd) != 0 && !err) err = errno;  // delayed allocation reports a full disk here
  if (err) {
    if (fd >= 0) ::unlink(path.c_str());
    throw HostError("simulator: cannot write " + path + ": " + std::strerror(err), err);
  }
}

// Write the sidecar atomically (temp file + rename) so readers never see half of it.
void write_meta(const std::string& so, double build_ns) {
  std::random_device rd;
  const std::string tmp = meta_path(so) + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rd());
  write_whole_file(tmp, meta_text(so) + "build_ns " + std::to_string(static_cast<uint64_t>(build_ns)) + "\n");
  std::error_code ec;
  fs::rename(tmp, meta_path(so), ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw HostError("simulator: cannot write cache entry " + meta_path(so) + ": " + ec.message(), ec.value());
  }
}

bool artifact_intact(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, Stamp> verified;  // path -> the version that matched its sidecar
  Stamp before;
  if (!stamp_of(path, before)) return false;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = verified.find(path);
    if (it != verified.end() && it->second == before) return true;
  }
  std::string why;
  if (verify_entry(path, why) != EntryState::Valid) return false;
  Stamp after;
  if (!stamp_of(path, after) || after != before) return false;  // replaced while hashed: check again next time
  std::lock_guard<std::mutex> lock(mu);
  verified[path] = after;
  return true;
}

void publish_artifact(const std::string& built, const std::string& path) {
  std::error_code ec;
  fs::rename(built, path, ec);
  if (ec) throw HostError("simulator: cannot move " + built + " to " + path + ": " + ec.message(), ec.value());
  write_meta(path, 0);
}

}  // namespace tmps::sim
