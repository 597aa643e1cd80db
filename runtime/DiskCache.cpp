//===- DiskCache.cpp - cache entries on disk ------------------------------===//
//
// Entry file layout, all integers little endian:
//
//   offset  size  field
//        0     8  magic "NORMJITC"
//        8     4  format version (kFormatVersion)
//       12     4  number of sections
//       16     8  key length K
//       24     8  body length B
//       32     8  FNV-1a 64 of the K + B bytes that follow
//       40     K  key (the full text the file name hashes)
//     40+K     B  sections: u32 name length, name, u64 data length, data
//
// The file is exactly 40 + K + B bytes long, at most kMaxCacheEntryBytes
// (DiskCache.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/DiskCache.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace norm;
using namespace norm::jit;

static constexpr char kMagic[8] = {'N', 'O', 'R', 'M', 'J', 'I', 'T', 'C'};
static constexpr uint32_t kFormatVersion = 1;
static constexpr size_t kHeaderBytes = 40;

std::string norm::jit::toHex64(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string hex(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    hex[i] = digits[value & 15];
  return hex;
}

const std::string *CacheEntry::find(std::string_view name) const {
  for (const auto &[sectionName, data] : sections)
    if (sectionName == name)
      return &data;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Serialization
//===----------------------------------------------------------------------===//

std::string norm::jit::serializeCacheEntry(std::string_view key,
                                           const CacheEntry &entry) {
  std::string body;
  for (const auto &[name, data] : entry.sections) {
    appendLittleEndian(body, name.size(), 4);
    body += name;
    appendLittleEndian(body, data.size(), 8);
    body += data;
  }
  std::string out(kMagic, sizeof(kMagic));
  appendLittleEndian(out, kFormatVersion, 4);
  appendLittleEndian(out, entry.sections.size(), 4);
  appendLittleEndian(out, key.size(), 8);
  appendLittleEndian(out, body.size(), 8);
  appendLittleEndian(out, hashFnv1a64(body, hashFnv1a64(key)), 8);
  out += key;
  out += body;
  return out;
}

bool norm::jit::parseCacheEntry(std::string_view bytes, std::string &key,
                                CacheEntry &entry, std::string &why) {
  if (bytes.size() < kHeaderBytes) {
    why = "truncated header (" + std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  if (bytes.substr(0, sizeof(kMagic)) !=
      std::string_view(kMagic, sizeof(kMagic))) {
    why = "not a libnormjit cache entry (bad magic)";
    return false;
  }
  uint64_t version = readLittleEndian(bytes, 8, 4);
  if (version != kFormatVersion) {
    why = "format version " + std::to_string(version) + ", expected " +
          std::to_string(kFormatVersion);
    return false;
  }
  uint64_t count = readLittleEndian(bytes, 12, 4);
  uint64_t keyBytes = readLittleEndian(bytes, 16, 8);
  uint64_t bodyBytes = readLittleEndian(bytes, 24, 8);
  uint64_t checksum = readLittleEndian(bytes, 32, 8);
  uint64_t available = bytes.size() - kHeaderBytes;
  if (keyBytes > available || bodyBytes != available - keyBytes) {
    why = "length mismatch: header says " + std::to_string(keyBytes) + " + " +
          std::to_string(bodyBytes) + " bytes, file has " +
          std::to_string(available);
    return false;
  }
  std::string_view keyText = bytes.substr(kHeaderBytes, keyBytes);
  std::string_view body = bytes.substr(kHeaderBytes + keyBytes);
  if (hashFnv1a64(body, hashFnv1a64(keyText)) != checksum) {
    why = "checksum mismatch";
    return false;
  }
  CacheEntry parsed;
  size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (body.size() - pos < 4)
      break;
    uint64_t nameBytes = readLittleEndian(body, pos, 4);
    pos += 4;
    if (body.size() - pos < nameBytes + 8)
      break;
    std::string name(body.substr(pos, nameBytes));
    pos += nameBytes;
    uint64_t dataBytes = readLittleEndian(body, pos, 8);
    pos += 8;
    if (body.size() - pos < dataBytes)
      break;
    parsed.add(std::move(name), std::string(body.substr(pos, dataBytes)));
    pos += dataBytes;
  }
  if (parsed.sections.size() != count || pos != body.size()) {
    why = "malformed sections";
    return false;
  }
  key = std::string(keyText);
  entry = std::move(parsed);
  return true;
}

bool norm::jit::parseCacheEntry(std::string_view bytes, std::string_view key,
                                CacheEntry &entry, std::string &why) {
  std::string storedKey;
  CacheEntry parsed;
  if (!parseCacheEntry(bytes, storedKey, parsed, why))
    return false;
  if (storedKey != key) {
    // A hash collision, or an entry of another compiler or driver.
    why = "written for another key";
    return false;
  }
  entry = std::move(parsed);
  return true;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

static std::string describeErrno(const std::string &what,
                                 const std::string &path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

namespace {
/// Closes a descriptor at the end of its scope.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() { ::close(fd); }
};
} // namespace

Status norm::jit::readFile(const std::string &path, size_t maxBytes,
                           std::string &bytes, bool *missing) {
  if (missing)
    *missing = false;
  // Non-blocking: opening a FIFO for reading would otherwise wait for a
  // writer, forever. Regular files read the same either way.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (missing)
      *missing = errno == ENOENT || errno == ENOTDIR;
    return Status::error(ErrorCode::IoError,
                         describeErrno("cannot open", path));
  }
  FileDescriptor file{fd};
  // The opened file, not the path: a link may point anywhere.
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return Status::error(ErrorCode::IoError,
                         describeErrno("cannot stat", path));
  if (!S_ISREG(info.st_mode))
    return Status::error(ErrorCode::IoError,
                         "'" + path + "' is not a regular file");
  auto tooLarge = [&](const std::string &size) {
    return Status::error(ErrorCode::IoError,
                         "'" + path + "' has " + size + " bytes, more than the " +
                             std::to_string(maxBytes) + " its format allows");
  };
  if (static_cast<uint64_t>(info.st_size) > maxBytes)
    return tooLarge(std::to_string(info.st_size));
  std::string data;
  data.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(ErrorCode::IoError,
                           describeErrno("cannot read", path));
    if (n == 0)
      break;
    // A file growing while it is read is bounded too.
    if (static_cast<size_t>(n) > maxBytes - data.size())
      return tooLarge("at least " + std::to_string(data.size() + n));
    data.append(buffer, n);
  }
  bytes = std::move(data);
  return Status::success();
}

Status norm::jit::createDirectories(const std::string &path) {
  if (path.empty())
    return Status::error(ErrorCode::IoError, "empty directory name");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/')
      continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error(ErrorCode::IoError,
                           describeErrno("cannot create directory", prefix));
  }
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return Status::error(ErrorCode::IoError,
                         "'" + path + "' is not a directory");
  return Status::success();
}

Status norm::jit::writeFileAtomically(const std::string &path,
                                      std::string_view bytes) {
  // Unique among threads (counter) and processes (pid); O_EXCL guards the
  // rest. The file is renamed only once complete, so a crash leaves a stray
  // temporary file, never a torn entry.
  // The target is replaced by a rename: refuse anything but a regular file
  // there (a FIFO, device node or symlink would be replaced, not written).
  struct stat target;
  if (::lstat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode))
    return Status::error(ErrorCode::IoError,
                         "'" + path +
                             "' exists and is not a regular file (a "
                             "directory, symbolic link, FIFO or device): "
                             "refusing to replace it");
  // A write past RLIMIT_FSIZE raises SIGXFSZ, which kills the host: refuse
  // a file the limit cannot hold before writing any of it.
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 &&
      limit.rlim_cur != RLIM_INFINITY && bytes.size() > limit.rlim_cur)
    return Status::error(ErrorCode::IoError,
                         "cannot write '" + path + "': its " +
                             std::to_string(bytes.size()) +
                             " bytes exceed the file size limit (" +
                             std::to_string(limit.rlim_cur) +
                             " bytes, ulimit -f)");
  static std::atomic<uint64_t> counter{0};
  std::string temporary = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter++);
  int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error(ErrorCode::IoError,
                         describeErrno("cannot create", temporary));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      Status status = Status::error(ErrorCode::IoError,
                                    describeErrno("cannot write", temporary));
      ::close(fd);
      ::unlink(temporary.c_str());
      return status;
    }
    written += n;
  }
  if (::close(fd) != 0) {
    Status status = Status::error(ErrorCode::IoError,
                                  describeErrno("cannot write", temporary));
    ::unlink(temporary.c_str());
    return status;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    Status status = Status::error(ErrorCode::IoError,
                                  describeErrno("cannot rename", temporary));
    ::unlink(temporary.c_str());
    return status;
  }
  return Status::success();
}

std::string norm::jit::getDefaultCacheDirectory() {
  auto nonEmpty = [](const char *value) { return value && *value; };
  if (const char *dir = std::getenv("NORMJIT_CACHE_DIR"); nonEmpty(dir))
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); nonEmpty(xdg))
    return std::string(xdg) + "/norm-opt";
  if (const char *home = std::getenv("HOME"); nonEmpty(home))
    return std::string(home) + "/.cache/norm-opt";
  return {};
}

//===----------------------------------------------------------------------===//
// DiskCache
//===----------------------------------------------------------------------===//

std::string DiskCache::getPath(std::string_view kind,
                               std::string_view key) const {
  return directory + "/" + std::string(kind) + "-" + toHex64(hashFnv1a64(key)) +
         ".njc";
}

DiskCache::Lookup DiskCache::load(std::string_view kind, std::string_view key,
                                  CacheEntry &entry, std::string &why) const {
  std::string path = getPath(kind, key);
  std::string bytes;
  bool missing = false;
  if (Status status = readFile(path, kMaxCacheEntryBytes, bytes, &missing);
      !status) {
    if (missing)
      return Lookup::Miss;
    // A FIFO, a link to a device, a huge file: not an entry of ours, and
    // the name is. The next store replaces it.
    ::unlink(path.c_str());
    why = status.message();
    return Lookup::Rejected;
  }
  if (parseCacheEntry(bytes, key, entry, why))
    return Lookup::Hit;
  ::unlink(path.c_str());
  why = path + ": " + why;
  return Lookup::Rejected;
}

Status DiskCache::store(std::string_view kind, std::string_view key,
                        const CacheEntry &entry) const {
  std::string bytes = serializeCacheEntry(key, entry);
  if (bytes.size() > kMaxCacheEntryBytes)
    return Status::error(ErrorCode::IoError,
                         "a cache entry of " + std::to_string(bytes.size()) +
                             " bytes is larger than the " +
                             std::to_string(kMaxCacheEntryBytes) +
                             " the format allows");
  if (Status status = createDirectories(directory); !status)
    return status;
  return writeFileAtomically(getPath(kind, key), bytes);
}

void DiskCache::remove(std::string_view kind, std::string_view key) const {
  ::unlink(getPath(kind, key).c_str());
}
