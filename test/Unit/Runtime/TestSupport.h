//===- TestSupport.h - shared pieces of the runtime tests -------*- C++ -*-===//

#ifndef NORM_TEST_RUNTIME_TESTSUPPORT_H
#define NORM_TEST_RUNTIME_TESTSUPPORT_H

#include "runtime/DiskCache.h"
#include "compiler/model/KernelModel.h"
#include "runtime/Runtime.h"
#include "test/Unit/OpSpecs.h"
#include "test/Unit/Runtime/FakeCompiler.h"
#include "test/Unit/Runtime/FakeCuda.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <functional>
#include <optional>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace norm {
// For gtest: readable failures of launch configurations.
inline void PrintTo(const LaunchConfig &launch, std::ostream *os) {
  *os << launch.getMangledSuffix();
}
} // namespace norm

// The fake driver's streams (FakeCudaDriver.cpp exports the driver's
// entry points).
extern "C" int cuStreamCreate(void **stream, unsigned flags);
extern "C" int cuStreamDestroy_v2(void *stream);

namespace norm::jit::test {

/// A fresh directory, removed with its contents at the end of the scope.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/normjit-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()))
      path = buffer.data();
  }
  ~TempDir() { removeTree(path); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &get() const { return path; }
  std::string operator/(const std::string &name) const {
    return path + "/" + name;
  }
  /// The names of the files in the directory (not recursive), sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR *dir = ::opendir(path.c_str())) {
      while (dirent *entry = ::readdir(dir))
        if (entry->d_name[0] != '.')
          names.push_back(entry->d_name);
      ::closedir(dir);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

private:
  static void removeTree(const std::string &root) {
    if (root.empty())
      return;
    if (DIR *dir = ::opendir(root.c_str())) {
      while (dirent *entry = ::readdir(dir)) {
        std::string name = entry->d_name;
        if (name == "." || name == "..")
          continue;
        std::string child = root + "/" + name;
        struct stat info;
        if (::lstat(child.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
          removeTree(child);
        else
          ::unlink(child.c_str());
      }
      ::closedir(dir);
    }
    ::rmdir(root.c_str());
  }

  std::string path;
};

/// Runs `body` on a thread of its own and ends the test process, failing,
/// when it has not returned after `seconds`: for calls that block forever
/// when broken (opening a FIFO for reading waits for a writer). The limit
/// is minutes beyond what the call takes, so load does not decide.
template <typename Body> void runWithWatchdog(int seconds, Body body) {
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
  };
  auto state = std::make_shared<State>();
  std::thread([state, &body] {
    body();
    std::lock_guard<std::mutex> lock(state->mutex);
    state->finished = true;
    state->done.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  if (!state->done.wait_for(lock, std::chrono::seconds(seconds),
                            [&] { return state->finished; })) {
    std::fprintf(stderr, "%s: still blocked after %d s\n",
                 ::testing::UnitTest::GetInstance()
                     ->current_test_info()
                     ->name(),
                 seconds);
    std::_Exit(1);
  }
}

/// Rewrites every entry file of `kind` ("kernel", "tuning") in the cache
/// directory with `edit`, keeping it well formed (its key, a valid
/// checksum): damage only a check of the contents can see. The entries
/// rewritten.
inline int rewriteCacheEntries(const TempDir &cache, const std::string &kind,
                               const std::function<void(CacheEntry &)> &edit) {
  int rewritten = 0;
  for (const std::string &name : cache.list()) {
    if (name.rfind(kind + "-", 0) != 0)
      continue;
    std::string bytes, key, why;
    CacheEntry entry;
    EXPECT_TRUE(readFile(cache / name, kMaxCacheEntryBytes, bytes).ok());
    EXPECT_TRUE(parseCacheEntry(bytes, key, entry, why)) << why;
    edit(entry);
    EXPECT_TRUE(
        writeFileAtomically(cache / name, serializeCacheEntry(key, entry))
            .ok());
    ++rewritten;
  }
  return rewritten;
}

/// Sets the section `name` of `entry` to `data`.
inline void setSection(CacheEntry &entry, const std::string &name,
                       const std::string &data) {
  for (auto &[section, value] : entry.sections)
    if (section == name)
      value = data;
}

/// A kernel entry's signature with `edit` applied.
inline void editSignature(CacheEntry &entry,
                          const std::function<void(KernelSignature &)> &edit) {
  std::string why;
  std::optional<KernelSignature> sig =
      KernelSignature::fromJson(*entry.find("signature"), why);
  ASSERT_TRUE(sig) << why;
  edit(*sig);
  setSection(entry, "signature", sig->toJson());
}

using norm::examples::makeQKNorm;
using norm::examples::makeRmsNorm;

/// Host memory standing in for device buffers (the fake driver's memory is
/// the host's), 256-byte aligned, freed with the object.
class HostBuffers {
public:
  char *get(size_t bytes) {
    void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    owned.emplace_back(static_cast<char *>(memory));
    return owned.back().get();
  }

private:
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<char, Free>> owned;
};

/// Context options on the fake driver with `compiler`, tuning off unless
/// asked, the disk cache in `cache` (empty: off), warnings only.
inline ContextOptions makeFakeOptions(std::shared_ptr<KernelCompiler> compiler,
                                      const std::string &cache = {},
                                      bool tuning = false) {
  ContextOptions options;
  options.driverLibrary = NORM_FAKE_CUDA_LIBRARY;
  options.compiler = std::move(compiler);
  options.tuning = tuning;
  options.diskCache = !cache.empty();
  options.cacheDirectory = cache;
  options.logLevel = 0;
  return options;
}

/// Fake driver state reset before each test.
class FakeDriverTest : public ::testing::Test {
protected:
  void SetUp() override { fakecuda_reset(); }
};

} // namespace norm::jit::test

#endif // NORM_TEST_RUNTIME_TESTSUPPORT_H
