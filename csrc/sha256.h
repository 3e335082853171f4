// SHA-256 for cache keys and integrity checks of on-disk cache entries.
#pragma once

#include <cstddef>
#include <string>

namespace tmps {
std::string sha256_hex(const void* data, size_t size);
inline std::string sha256_hex(const std::string& s) { return sha256_hex(s.data(), s.size()); }
// Hash of a file's contents; throws Error if unreadable.
std::string sha256_file_hex(const std::string& path);
}  // namespace tmps
