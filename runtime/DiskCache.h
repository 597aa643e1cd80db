//===- DiskCache.h - cache entries on disk ----------------------*- C++ -*-===//
//
// Compiled kernels and tuning results survive the process in a cache
// directory, one file per entry. A file is never trusted: it carries a
// magic, a format version, its exact length, a checksum and the full key it
// was written for, and anything that does not match is deleted and rebuilt.
// Writes go to a temporary file that is renamed over the entry, so readers
// (other threads or processes) see the old entry or the new one, never a
// torn one.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_DISKCACHE_H
#define NORM_RUNTIME_DISKCACHE_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace norm::jit {

/// FNV-1a, 64 bits: stable across platforms and releases, no dependencies.
inline uint64_t hashFnv1a64(std::string_view data,
                            uint64_t hash = 0xcbf29ce484222325ull) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// Fixed-width little-endian integers of the entry and bundle formats.
inline void appendLittleEndian(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i, value >>= 8)
    out += static_cast<char>(value & 0xff);
}
inline uint64_t readLittleEndian(std::string_view bytes, size_t offset,
                                 int bytesWide) {
  uint64_t value = 0;
  for (int i = bytesWide - 1; i >= 0; --i)
    value = value << 8 | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

/// 16 lower-case hexadecimal digits.
std::string toHex64(uint64_t value);

/// The largest entry file the format allows (DiskCache.cpp): one kernel's
/// signature, PTX and cubin are kilobytes to a few megabytes. Larger files
/// are refused unread, so a file that never ends (a link to /dev/zero) or a
/// huge one cannot exhaust the host's memory.
constexpr size_t kMaxCacheEntryBytes = size_t(64) << 20;

/// The payload of one entry: named byte strings.
struct CacheEntry {
  std::vector<std::pair<std::string, std::string>> sections;

  void add(std::string name, std::string data) {
    sections.emplace_back(std::move(name), std::move(data));
  }
  /// The first section called `name`, or null.
  const std::string *find(std::string_view name) const;
};

/// The bytes of one entry file (see DiskCache.cpp for the layout).
std::string serializeCacheEntry(std::string_view key, const CacheEntry &entry);
/// Parses an entry written for `key`; false with `why` set for anything
/// truncated, corrupted, of another format version or for another key.
bool parseCacheEntry(std::string_view bytes, std::string_view key,
                     CacheEntry &entry, std::string &why);
/// Parses an entry for any key (bundles list keys and entries together).
bool parseCacheEntry(std::string_view bytes, std::string &key,
                     CacheEntry &entry, std::string &why);

/// Reads a whole regular file of at most `maxBytes` bytes. IoError when it
/// cannot: missing, not a regular file (a FIFO, a device, a directory:
/// refused without blocking), larger, unreadable; `missing`, when given,
/// tells the first case (no such file or directory) apart.
Status readFile(const std::string &path, size_t maxBytes, std::string &bytes,
                bool *missing = nullptr);
/// Writes a whole file atomically: a temporary file in the same directory,
/// renamed over `path`.
Status writeFileAtomically(const std::string &path, std::string_view bytes);
/// mkdir -p.
Status createDirectories(const std::string &path);

/// The default cache directory: $NORMJIT_CACHE_DIR, else
/// $XDG_CACHE_HOME/norm-opt, else $HOME/.cache/norm-opt; empty when none of
/// these is set.
std::string getDefaultCacheDirectory();

class DiskCache {
public:
  explicit DiskCache(std::string directory) : directory(std::move(directory)) {}

  const std::string &getDirectory() const { return directory; }

  /// <directory>/<kind>-<FNV-1a of key>.njc
  std::string getPath(std::string_view kind, std::string_view key) const;

  enum class Lookup { Hit, Miss, Rejected };
  /// Hit fills `entry`. Rejected: something was there but not a readable
  /// entry (corrupt, truncated, of another format or for another key, not a
  /// regular file, larger than kMaxCacheEntryBytes); it is deleted and `why`
  /// says what was wrong.
  Lookup load(std::string_view kind, std::string_view key, CacheEntry &entry,
              std::string &why) const;
  /// Writes the entry atomically (creating the directory); IoError for an
  /// entry larger than kMaxCacheEntryBytes, which could not be read back.
  Status store(std::string_view kind, std::string_view key,
               const CacheEntry &entry) const;
  void remove(std::string_view kind, std::string_view key) const;

private:
  std::string directory;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_DISKCACHE_H
