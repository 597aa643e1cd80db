//===- DiskCacheTest.cpp - entry format, corruption, atomic writes --------===//

#include "runtime/DiskCache.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace norm;
using namespace norm::jit;
using norm::jit::test::runWithWatchdog;
using norm::jit::test::TempDir;

namespace {

CacheEntry makeEntry() {
  CacheEntry entry;
  entry.add("signature", "{\"name\": \"k\"}");
  // Binary data: an embedded NUL.
  static const char ptx[] = "// ptx\n.version 8.0\n\0binary";
  entry.add("ptx", std::string(ptx, sizeof(ptx) - 1));
  entry.add("empty", "");
  return entry;
}

std::string readAll(const std::string &path) {
  std::string bytes;
  EXPECT_TRUE(readFile(path, kMaxCacheEntryBytes, bytes).ok());
  return bytes;
}

void writeAll(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST(Hash, Fnv1a64KnownValues) {
  // Reference values of the FNV-1a 64-bit specification.
  EXPECT_EQ(hashFnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(hashFnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(hashFnv1a64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(toHex64(0x85944171f73967e8ull), "85944171f73967e8");
  EXPECT_EQ(toHex64(1), "0000000000000001");
}

TEST(CacheEntryFormat, RoundTrip) {
  CacheEntry entry = makeEntry();
  std::string bytes = serializeCacheEntry("the key", entry);
  CacheEntry back;
  std::string why;
  ASSERT_TRUE(parseCacheEntry(bytes, std::string_view("the key"), back, why))
      << why;
  ASSERT_EQ(back.sections.size(), 3u);
  EXPECT_EQ(*back.find("ptx"), *entry.find("ptx"));
  EXPECT_EQ(back.find("ptx")->size(), 27u);
  EXPECT_EQ(*back.find("empty"), "");
  EXPECT_EQ(back.find("missing"), nullptr);
}

TEST(CacheEntryFormat, RejectsEveryTruncation) {
  std::string bytes = serializeCacheEntry("key", makeEntry());
  for (size_t n = 0; n < bytes.size(); ++n) {
    CacheEntry entry;
    std::string why;
    EXPECT_FALSE(parseCacheEntry(bytes.substr(0, n), std::string_view("key"),
                                 entry, why))
        << n;
    EXPECT_FALSE(why.empty());
  }
  CacheEntry entry;
  std::string why;
  EXPECT_FALSE(
      parseCacheEntry(bytes + "x", std::string_view("key"), entry, why));
  EXPECT_NE(why.find("length mismatch"), std::string::npos) << why;
}

TEST(CacheEntryFormat, RejectsEveryFlippedByte) {
  std::string bytes = serializeCacheEntry("key", makeEntry());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x20;
    CacheEntry entry;
    std::string why;
    EXPECT_FALSE(parseCacheEntry(damaged, std::string_view("key"), entry, why))
        << "byte " << i;
  }
}

TEST(CacheEntryFormat, RejectsOtherKeysAndVersions) {
  std::string bytes = serializeCacheEntry("key A", makeEntry());
  CacheEntry entry;
  std::string why;
  EXPECT_FALSE(parseCacheEntry(bytes, std::string_view("key B"), entry, why));
  EXPECT_EQ(why, "written for another key");
  std::string other = bytes;
  other[8] = 2; // format version 2
  EXPECT_FALSE(parseCacheEntry(other, std::string_view("key A"), entry, why));
  EXPECT_NE(why.find("format version 2"), std::string::npos) << why;
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_FALSE(parseCacheEntry(magic, std::string_view("key A"), entry, why));
  EXPECT_NE(why.find("bad magic"), std::string::npos) << why;
}

TEST(DiskCache, StoreLoadAndMiss) {
  TempDir dir;
  DiskCache cache(dir / "nested/cache"); // created on the first store
  CacheEntry entry;
  std::string why;
  EXPECT_EQ(cache.load("kernel", "k1", entry, why), DiskCache::Lookup::Miss);
  ASSERT_TRUE(cache.store("kernel", "k1", makeEntry()).ok());
  ASSERT_EQ(cache.load("kernel", "k1", entry, why), DiskCache::Lookup::Hit);
  EXPECT_EQ(*entry.find("signature"), "{\"name\": \"k\"}");
  EXPECT_EQ(cache.load("tuning", "k1", entry, why), DiskCache::Lookup::Miss);
  // File names hash the key; no temporary files stay behind.
  std::string expected = "kernel-" + toHex64(hashFnv1a64("k1")) + ".njc";
  EXPECT_EQ(cache.getPath("kernel", "k1"), dir / "nested/cache/" + expected);
  std::ifstream file(cache.getPath("kernel", "k1"));
  EXPECT_TRUE(file.good());
}

TEST(DiskCache, CorruptEntriesAreDeletedNotTrusted) {
  TempDir dir;
  DiskCache cache(dir.get());
  ASSERT_TRUE(cache.store("kernel", "k", makeEntry()).ok());
  std::string path = cache.getPath("kernel", "k");
  std::string bytes = readAll(path);

  // Truncated.
  writeAll(path, bytes.substr(0, bytes.size() / 2));
  CacheEntry entry;
  std::string why;
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Rejected);
  EXPECT_NE(why.find(path), std::string::npos);
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Miss)
      << "the bad file must be gone";

  // Corrupted payload.
  std::string corrupt = bytes;
  corrupt[corrupt.size() - 3] ^= 1;
  writeAll(path, corrupt);
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Rejected);
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;

  // An entry for another key under this key's name (a collision, or a stale
  // file of another compiler).
  writeAll(path, serializeCacheEntry("other key", makeEntry()));
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Rejected);

  // Empty file.
  writeAll(path, "");
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Rejected);

  // Rebuilt: a new store is trusted again.
  ASSERT_TRUE(cache.store("kernel", "k", makeEntry()).ok());
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Hit);
}

// What a hostile or broken cache directory may hold under an entry's name:
// each is refused without blocking or reading it, deleted and rebuilt.
TEST(DiskCache, OnlyRegularFilesOfBoundedSizeAreRead) {
  TempDir dir;
  DiskCache cache(dir.get());
  std::string path = cache.getPath("kernel", "k");
  auto expectRejected = [&](const std::string &what) -> std::string {
    CacheEntry entry;
    std::string why;
    DiskCache::Lookup lookup = DiskCache::Lookup::Hit;
    runWithWatchdog(60, [&] { lookup = cache.load("kernel", "k", entry, why); });
    EXPECT_EQ(lookup, DiskCache::Lookup::Rejected) << what;
    EXPECT_NE(why.find(path), std::string::npos) << why;
    struct stat info;
    EXPECT_NE(::lstat(path.c_str(), &info), 0) << what << " was not deleted";
    std::string rejection = why;
    EXPECT_TRUE(cache.store("kernel", "k", makeEntry()).ok());
    EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Hit);
    ::unlink(path.c_str());
    return rejection;
  };

  // A FIFO without a writer: a blocking open would wait forever.
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  EXPECT_NE(expectRejected("a FIFO").find("is not a regular file"),
            std::string::npos);
  // A link to a device that never ends.
  ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
  EXPECT_NE(expectRejected("a link to /dev/zero").find("is not a regular file"),
            std::string::npos);
  // A sparse file one byte beyond the bound: refused without reading it.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, kMaxCacheEntryBytes + 1), 0);
  ::close(fd);
  EXPECT_NE(expectRejected("a huge file")
                .find(std::to_string(kMaxCacheEntryBytes + 1) +
                      " bytes, more than the " +
                      std::to_string(kMaxCacheEntryBytes)),
            std::string::npos);
  // A link to a regular file is read as that file.
  ASSERT_TRUE(cache.store("kernel", "k", makeEntry()).ok());
  ASSERT_EQ(::rename(path.c_str(), (dir / "real").c_str()), 0);
  ASSERT_EQ(::symlink((dir / "real").c_str(), path.c_str()), 0);
  CacheEntry entry;
  std::string why;
  EXPECT_EQ(cache.load("kernel", "k", entry, why), DiskCache::Lookup::Hit)
      << why;
}

TEST(DiskCache, ReadFileTellsMissingFromRefused) {
  TempDir dir;
  std::string bytes;
  bool missing = false;
  EXPECT_EQ(readFile(dir / "none", 10, bytes, &missing).code(),
            ErrorCode::IoError);
  EXPECT_TRUE(missing);
  Status status = readFile(dir.get(), 10, bytes, &missing);
  EXPECT_EQ(status.code(), ErrorCode::IoError);
  EXPECT_FALSE(missing);
  EXPECT_NE(status.message().find("is not a regular file"), std::string::npos)
      << status.message();
  writeAll(dir / "ten", "0123456789");
  ASSERT_TRUE(readFile(dir / "ten", 10, bytes).ok());
  EXPECT_EQ(bytes, "0123456789");
  status = readFile(dir / "ten", 9, bytes, &missing);
  EXPECT_FALSE(missing);
  EXPECT_NE(status.message().find("has 10 bytes, more than the 9"),
            std::string::npos)
      << status.message();
}

TEST(DiskCache, EntriesTooLargeToReadBackAreNotWritten) {
  TempDir dir;
  DiskCache cache(dir.get());
  CacheEntry huge;
  huge.add("ptx", std::string(kMaxCacheEntryBytes, 'x'));
  Status status = cache.store("kernel", "k", huge);
  EXPECT_EQ(status.code(), ErrorCode::IoError);
  EXPECT_NE(status.message().find("larger than"), std::string::npos)
      << status.message();
  EXPECT_TRUE(dir.list().empty());
}

TEST(DiskCache, ConcurrentWritersLeaveAWholeEntry) {
  TempDir dir;
  DiskCache cache(dir.get());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        CacheEntry entry;
        entry.add("data", std::string(1000 + t * 100 + i, char('a' + t)));
        EXPECT_TRUE(cache.store("kernel", "shared", entry).ok());
        CacheEntry read;
        std::string why;
        EXPECT_EQ(cache.load("kernel", "shared", read, why),
                  DiskCache::Lookup::Hit)
            << why;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(dir.list().size(), 1u) << "temporary files left behind";
}

TEST(DiskCache, StoreReportsUnwritableDirectories) {
  TempDir dir;
  writeAll(dir / "file", "x");
  DiskCache cache(dir / "file/sub");
  Status status = cache.store("kernel", "k", makeEntry());
  EXPECT_EQ(status.code(), ErrorCode::IoError);
  EXPECT_NE(status.message().find("file/sub"), std::string::npos)
      << status.message();
}

// Bundles and cache entries are renamed over their target: a FIFO, device
// node, directory or symbolic link there must stay as it is.
TEST(DiskCache, AtomicWritesReplaceOnlyRegularFiles) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  ASSERT_EQ(::mkdir((dir / "sub").c_str(), 0755), 0);
  writeAll(dir / "real", "kept");
  ASSERT_EQ(::symlink((dir / "real").c_str(), (dir / "link").c_str()), 0);
  for (const char *name : {"fifo", "sub", "link"}) {
    Status status = writeFileAtomically(dir / name, "bundle bytes");
    EXPECT_EQ(status.code(), ErrorCode::IoError) << name;
    EXPECT_NE(status.message().find("not a regular file"), std::string::npos)
        << status.message();
  }
  struct stat info;
  ASSERT_EQ(::lstat((dir / "fifo").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  ASSERT_EQ(::lstat((dir / "link").c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
  EXPECT_EQ(readAll(dir / "real"), "kept");
  // A regular file is replaced; no temporary file is left.
  EXPECT_TRUE(writeFileAtomically(dir / "real", "new").ok());
  EXPECT_EQ(readAll(dir / "real"), "new");
  EXPECT_EQ(dir.list(),
            (std::vector<std::string>{"fifo", "link", "real", "sub"}));
}

// Under a file-size limit (ulimit -f) a write past it raised SIGXFSZ and
// killed the host: now an IoError, nothing written, no temporary file left.
// In a child process, whose limit the test lowers.
TEST(DiskCache, FileSizeLimitIsAnErrorNotASignal) {
  TempDir dir;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit limit = {1024, 1024};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      ::_exit(3);
    Status big = writeFileAtomically(dir / "big", std::string(4096, 'x'));
    Status small = writeFileAtomically(dir / "small", std::string(512, 'x'));
    bool ok = big.code() == ErrorCode::IoError &&
              big.message().find("file size limit") != std::string::npos &&
              small.ok();
    ::_exit(ok ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"small"});
}

TEST(DiskCache, DefaultDirectory) {
  auto save = [](const char *name) {
    const char *value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  auto restore = [](const char *name, const std::optional<std::string> &value) {
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  };
  auto dirVar = save("NORMJIT_CACHE_DIR"), xdg = save("XDG_CACHE_HOME"),
       home = save("HOME");
  ::unsetenv("NORMJIT_CACHE_DIR");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(getDefaultCacheDirectory(), "/home/someone/.cache/norm-opt");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(getDefaultCacheDirectory(), "/xdg/norm-opt");
  ::setenv("NORMJIT_CACHE_DIR", "/explicit", 1);
  EXPECT_EQ(getDefaultCacheDirectory(), "/explicit");
  ::unsetenv("NORMJIT_CACHE_DIR");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  EXPECT_EQ(getDefaultCacheDirectory(), "");
  restore("NORMJIT_CACHE_DIR", dirVar);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

} // namespace
