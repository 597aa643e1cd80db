//===- Bundle.cpp - kernel bundles: tuned kernels in one file -------------===//

#include "runtime/Bundle.h"

using namespace norm;
using namespace norm::jit;

static constexpr char kBundleMagic[8] = {'N', 'O', 'R', 'M',
                                         'J', 'I', 'T', 'B'};
static constexpr uint32_t kBundleVersion = 1;
static constexpr const char *kInfoKey = "bundle";

Status BundleWriter::write(const std::string &path) const {
  CacheEntry header;
  header.add("compiler_version", info.compilerVersion);
  header.add("chip", info.chip);
  header.add("device", info.device);
  std::string out(kBundleMagic, sizeof(kBundleMagic));
  appendLittleEndian(out, kBundleVersion, 4);
  appendLittleEndian(out, entries.size() + 1, 4);
  auto append = [&](std::string_view key, const CacheEntry &entry) {
    std::string bytes = serializeCacheEntry(key, entry);
    appendLittleEndian(out, bytes.size(), 8);
    out += bytes;
  };
  append(kInfoKey, header);
  for (const auto &[key, entry] : entries)
    append(key, entry);
  if (out.size() > kMaxBundleBytes)
    return Status::error(ErrorCode::IoError,
                         "kernel bundle '" + path + "' would have " +
                             std::to_string(out.size()) +
                             " bytes, more than the " +
                             std::to_string(kMaxBundleBytes) +
                             " the format allows");
  return writeFileAtomically(path, out);
}

Status Bundle::read(const std::string &path,
                    std::shared_ptr<const Bundle> &result) {
  std::string bytes;
  if (Status status = readFile(path, kMaxBundleBytes, bytes); !status)
    return status.withContext("kernel bundle");
  auto damaged = [&](size_t offset, const std::string &what) {
    return Status::error(ErrorCode::IoError,
                         "kernel bundle '" + path + "' is damaged at offset " +
                             std::to_string(offset) + ": " + what);
  };
  if (bytes.size() < 16 ||
      std::string_view(bytes).substr(0, 8) !=
          std::string_view(kBundleMagic, sizeof(kBundleMagic)))
    return damaged(0, "not a libnormjit kernel bundle");
  if (uint64_t version = readLittleEndian(bytes, 8, 4);
      version != kBundleVersion)
    return damaged(8, "format version " + std::to_string(version) +
                          ", expected " + std::to_string(kBundleVersion));
  uint64_t count = readLittleEndian(bytes, 12, 4);
  auto bundle = std::make_shared<Bundle>();
  bundle->path = path;
  size_t pos = 16;
  for (uint64_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < 8)
      return damaged(pos, "truncated entry length");
    uint64_t length = readLittleEndian(bytes, pos, 8);
    pos += 8;
    if (bytes.size() - pos < length)
      return damaged(pos, "truncated entry");
    std::string key, why;
    CacheEntry entry;
    if (!parseCacheEntry(std::string_view(bytes).substr(pos, length), key,
                         entry, why))
      return damaged(pos, why);
    pos += length;
    if (i == 0) {
      const std::string *compiler = entry.find("compiler_version");
      const std::string *chip = entry.find("chip");
      const std::string *device = entry.find("device");
      if (key != kInfoKey || !compiler || !chip || !device)
        return damaged(16, "missing bundle header");
      bundle->info = {*compiler, *chip, *device};
      continue;
    }
    bundle->entries.emplace(std::move(key), std::move(entry));
  }
  if (pos != bytes.size())
    return damaged(pos, "trailing bytes");
  if (count == 0)
    return damaged(16, "missing bundle header");
  result = std::move(bundle);
  return Status::success();
}

const CacheEntry *Bundle::find(std::string_view key) const {
  auto it = entries.find(key);
  return it == entries.end() ? nullptr : &it->second;
}
