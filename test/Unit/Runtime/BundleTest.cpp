//===- BundleTest.cpp - kernel bundle files -------------------------------===//

#include "runtime/Bundle.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <fcntl.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace norm;
using namespace norm::jit;
using norm::jit::test::runWithWatchdog;
using norm::jit::test::TempDir;

namespace {

BundleWriter makeWriter() {
  BundleWriter writer({"compiler-7", "sm_90", "Fake GPU"});
  CacheEntry a;
  a.add("ptx", ".version 8.0");
  writer.add("kernel a", a);
  CacheEntry b;
  b.add("winner", "v8_t128_w4_r1");
  writer.add("plan b", b);
  return writer;
}

TEST(Bundle, RoundTrip) {
  TempDir dir;
  ASSERT_TRUE(makeWriter().write(dir / "b.njb").ok());
  std::shared_ptr<const Bundle> bundle;
  ASSERT_TRUE(Bundle::read(dir / "b.njb", bundle).ok());
  EXPECT_EQ(bundle->getInfo().compilerVersion, "compiler-7");
  EXPECT_EQ(bundle->getInfo().chip, "sm_90");
  EXPECT_EQ(bundle->getInfo().device, "Fake GPU");
  EXPECT_EQ(bundle->getEntries().size(), 2u);
  ASSERT_NE(bundle->find("kernel a"), nullptr);
  EXPECT_EQ(*bundle->find("kernel a")->find("ptx"), ".version 8.0");
  EXPECT_EQ(bundle->find("kernel c"), nullptr);
}

TEST(Bundle, AnyDamageFailsTheRead) {
  TempDir dir;
  ASSERT_TRUE(makeWriter().write(dir / "b.njb").ok());
  std::string bytes;
  ASSERT_TRUE(readFile(dir / "b.njb", kMaxBundleBytes, bytes).ok());
  auto readBack = [&](const std::string &data) {
    std::ofstream(dir / "d.njb", std::ios::binary | std::ios::trunc) << data;
    std::shared_ptr<const Bundle> bundle;
    return Bundle::read(dir / "d.njb", bundle);
  };
  for (size_t n = 0; n < bytes.size(); n += 7) {
    Status status = readBack(bytes.substr(0, n));
    EXPECT_EQ(status.code(), ErrorCode::IoError) << n;
  }
  for (size_t i = 0; i < bytes.size(); i += 3) {
    std::string damaged = bytes;
    damaged[i] ^= 0x40;
    Status status = readBack(damaged);
    EXPECT_FALSE(status.ok()) << "byte " << i;
    EXPECT_NE(status.message().find("damaged"), std::string::npos);
  }
  EXPECT_FALSE(readBack(bytes + "junk").ok());
  std::shared_ptr<const Bundle> bundle;
  Status missing = Bundle::read(dir / "missing.njb", bundle);
  EXPECT_EQ(missing.code(), ErrorCode::IoError);
  EXPECT_NE(missing.message().find("missing.njb"), std::string::npos);
}

TEST(Bundle, OnlyRegularFilesOfBoundedSizeAreRead) {
  TempDir dir;
  auto refused = [&](const std::string &path) {
    std::shared_ptr<const Bundle> bundle;
    Status status;
    runWithWatchdog(60, [&] { status = Bundle::read(path, bundle); });
    EXPECT_EQ(status.code(), ErrorCode::IoError) << path;
    EXPECT_EQ(bundle, nullptr);
    return status.message();
  };
  ASSERT_EQ(::mkfifo((dir / "fifo.njb").c_str(), 0644), 0);
  EXPECT_NE(refused(dir / "fifo.njb").find("is not a regular file"),
            std::string::npos);
  EXPECT_NE(refused("/dev/zero").find("'/dev/zero' is not a regular file"),
            std::string::npos);
  ASSERT_EQ(::symlink("/dev/zero", (dir / "zero.njb").c_str()), 0);
  EXPECT_NE(refused(dir / "zero.njb").find("is not a regular file"),
            std::string::npos);
  EXPECT_NE(refused(dir.get()).find("is not a regular file"),
            std::string::npos);
  // Sparse: no disk space, and refused unread.
  int fd = ::open((dir / "huge.njb").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, kMaxBundleBytes + 1), 0);
  ::close(fd);
  EXPECT_NE(refused(dir / "huge.njb")
                .find("more than the " + std::to_string(kMaxBundleBytes)),
            std::string::npos);
}

} // namespace
