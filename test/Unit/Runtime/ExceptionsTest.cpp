//===- ExceptionsTest.cpp - no exception crosses the API ------------------===//
//
// The standard library throws (std::bad_alloc, std::system_error when a
// thread cannot start) and so may an injected compiler: each becomes a
// Status at the API, no waiting thread is left waiting, and a thread that
// cannot start only means compiling on fewer threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exceptions.h"
#include "runtime/OnceMap.h"
#include "runtime/Runtime.h"
#include "runtime/Threads.h"

#include "test/Unit/Runtime/TestSupport.h"

#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>

using namespace norm;
using namespace norm::jit;
using namespace norm::jit::test;

namespace {

TEST(Exceptions, BecomeStatuses) {
  Status status = catchExceptions("here", []() -> Status {
    throw std::bad_alloc();
  });
  EXPECT_EQ(status.code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(status.message(), "here: out of host memory");
  status = catchExceptions("here", []() -> Status {
    throw std::runtime_error("boom");
  });
  EXPECT_EQ(status.code(), ErrorCode::Internal);
  EXPECT_EQ(status.message(), "here: unexpected exception: boom");
  status = catchExceptions("here", []() -> Status { throw 42; });
  EXPECT_EQ(status.code(), ErrorCode::Internal);
  EXPECT_EQ(status.message(), "here: unexpected exception");
  EXPECT_TRUE(catchExceptions("here", [] { return Status::success(); }).ok());
}

TEST(Exceptions, AThrowingBuildFailsItsWaitersAndIsRetried) {
  OnceMap<std::shared_ptr<int>> map;
  std::shared_ptr<int> value;
  Status status = map.getOrBuild(
      "key",
      [](std::shared_ptr<int> &) -> Status { throw std::bad_alloc(); }, value);
  EXPECT_EQ(status.code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(map.size(), 0u) << "a failed build is not kept";
  // Not left half built: the next request builds.
  status = map.getOrBuild(
      "key",
      [](std::shared_ptr<int> &built) {
        built = std::make_shared<int>(7);
        return Status::success();
      },
      value);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*value, 7);
}

/// Makes thread starts fail for the scope.
struct RefuseThreads {
  RefuseThreads() { setThreadStartsFailForTesting(true); }
  ~RefuseThreads() { setThreadStartsFailForTesting(false); }
};

TEST(Threads, ARefusedThreadIsReported) {
  std::vector<std::thread> pool;
  auto work = [] {};
  {
    RefuseThreads refuse;
    EXPECT_FALSE(tryStartThread(pool, work));
    EXPECT_TRUE(pool.empty());
  }
  EXPECT_TRUE(tryStartThread(pool, work));
  for (std::thread &thread : pool)
    thread.join();
}

using ExceptionsTest = FakeDriverTest;

/// A tuning context whose candidates compile on several threads.
std::unique_ptr<Context> makeTuningContext(std::shared_ptr<FakeCompiler> compiler,
                                           Logger::Sink sink = {}) {
  ContextOptions options = makeFakeOptions(compiler, {}, /*tuning=*/true);
  options.compileThreads = 4;
  if (sink) {
    options.logLevel = static_cast<int>(LogLevel::Warning);
    options.logSink = std::move(sink);
  }
  std::unique_ptr<Context> context;
  EXPECT_TRUE(Context::create(options, context).ok());
  return context;
}

TEST_F(ExceptionsTest, ACompilerThatThrowsFailsTheRequestOnly) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::atomic<bool> throwing{true};
  compiler->onCompile = [&](const LaunchConfig &) {
    if (throwing)
      throw std::bad_alloc();
  };
  std::unique_ptr<Context> context = makeTuningContext(compiler);
  ASSERT_TRUE(context);
  std::shared_ptr<const Kernel> kernel;
  Status status = context->getKernel(makeRmsNorm(), {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::OutOfMemory) << status.message();
  EXPECT_NE(status.message().find("out of host memory"), std::string::npos)
      << status.message();
  EXPECT_EQ(kernel, nullptr);

  compiler->onCompile = [](const LaunchConfig &) {
    throw std::runtime_error("compiler bug");
  };
  status = context->getKernel(makeRmsNorm(2048), {}, kernel);
  EXPECT_EQ(status.code(), ErrorCode::Internal) << status.message();
  EXPECT_NE(status.message().find("unexpected exception: compiler bug"),
            std::string::npos)
      << status.message();

  // Nothing was left half built.
  throwing = false;
  compiler->onCompile = nullptr;
  ASSERT_TRUE(context->getKernel(makeRmsNorm(), {}, kernel).ok());
  ASSERT_TRUE(context->getKernel(makeRmsNorm(2048), {}, kernel).ok());
}

TEST_F(ExceptionsTest, RefusedThreadsCompileOnTheCallingThread) {
  auto compiler = std::make_shared<FakeCompiler>();
  std::mutex mutex;
  std::set<std::thread::id> compilingThreads;
  compiler->onCompile = [&](const LaunchConfig &) {
    std::lock_guard<std::mutex> lock(mutex);
    compilingThreads.insert(std::this_thread::get_id());
  };
  std::vector<std::string> warnings;
  std::unique_ptr<Context> context =
      makeTuningContext(compiler, [&](LogLevel, std::string_view line) {
        std::lock_guard<std::mutex> lock(mutex);
        warnings.emplace_back(line);
      });
  ASSERT_TRUE(context);
  std::shared_ptr<const Kernel> kernel;
  {
    RefuseThreads refuse;
    Status status = context->getKernel(makeRmsNorm(), {}, kernel);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  EXPECT_GT(compiler->compiles, 4) << "tuning compiles many candidates";
  EXPECT_EQ(compilingThreads, std::set{std::this_thread::get_id()});
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("the system refused a compile thread: compiled "
                             "on 1 of 4 threads"),
            std::string::npos)
      << warnings[0];
  for (RowBucket bucket : kAllRowBuckets)
    EXPECT_EQ(kernel->getReport(bucket).source, BucketReport::Source::Tuned);
}

} // namespace
