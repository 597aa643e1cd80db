//===- Bundle.h - kernel bundles: tuned kernels in one file -----*- C++ -*-===//
//
// A bundle carries, for a list of operations, the launch plan per row
// bucket and every kernel those plans use (signature, PTX, and the cubin
// the tuning machine's driver linked). norm-tune writes bundles; a
// runtime-only libnormjit, which has no compiler, serves from them.
//
// File layout (little endian): magic "NORMJITB", u32 format version, u32
// entry count, then per entry a u64 length and a cache entry
// (DiskCache.h: key, checksum, sections). The first entry, key "bundle",
// describes the bundle: compiler version, chip, device and driver. A bundle
// is at most kMaxBundleBytes long.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_BUNDLE_H
#define NORM_RUNTIME_BUNDLE_H

#include "runtime/DiskCache.h"

#include <map>
#include <memory>
#include <string>

namespace norm::jit {

/// The largest bundle file the format allows: plans and kernels (PTX and
/// cubin, a few megabytes at most each) for a model's operations. Larger
/// files are refused unread, as are files that are not regular files.
constexpr size_t kMaxBundleBytes = size_t(1) << 30;

struct BundleInfo {
  std::string compilerVersion; // of the compiler that built the kernels
  std::string chip;            // "sm_90": the PTX target
  std::string device;          // where it was tuned ("" when not tuned)
};

class Bundle {
public:
  /// Reads and checks a whole bundle; any damage fails the read (IoError
  /// with the offset and what was wrong), so nothing of it is trusted, and
  /// so does a path that is no regular file or one larger than
  /// kMaxBundleBytes.
  static Status read(const std::string &path,
                     std::shared_ptr<const Bundle> &bundle);

  const BundleInfo &getInfo() const { return info; }
  const std::string &getPath() const { return path; }
  const CacheEntry *find(std::string_view key) const;
  const std::map<std::string, CacheEntry, std::less<>> &getEntries() const {
    return entries;
  }

private:
  std::string path;
  BundleInfo info;
  std::map<std::string, CacheEntry, std::less<>> entries;
};

class BundleWriter {
public:
  explicit BundleWriter(BundleInfo info) : info(std::move(info)) {}
  /// Adds an entry; a second entry with the same key replaces the first.
  void add(const std::string &key, CacheEntry entry) {
    entries[key] = std::move(entry);
  }
  size_t size() const { return entries.size(); }
  /// Writes the bundle atomically; IoError when it would be larger than
  /// kMaxBundleBytes.
  Status write(const std::string &path) const;

private:
  BundleInfo info;
  std::map<std::string, CacheEntry> entries;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_BUNDLE_H
