//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -----------===//

#include "runtime/CudaDriver.h"

#include <dlfcn.h>
#include <initializer_list>
#include <mutex>
#include <sys/stat.h>

using namespace norm;
using namespace norm::jit;

namespace {

/// Resolves `entry` from the first of `names` the library exports. cuda.h
/// maps several names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2);
/// those come first, the unversioned symbol of older drivers second.
template <typename Fn>
bool resolve(void *handle, Fn &entry, std::initializer_list<const char *> names,
             std::string &missing) {
  for (const char *name : names) {
    if (void *symbol = dlsym(handle, name)) {
      entry = reinterpret_cast<Fn>(symbol);
      return true;
    }
  }
  if (missing.empty())
    missing = *names.begin();
  return false;
}

std::string formatVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

} // namespace

std::string CudaDriver::describe(const char *call, cu::Result result) const {
  const char *name = nullptr;
  const char *text = nullptr;
  if (getErrorName(result, &name) != cu::kSuccess || !name)
    name = "unknown CUDA error";
  if (getErrorString(result, &text) != cu::kSuccess || !text)
    text = "no description";
  return std::string(call) + " failed: " + name + " (" + text + "), code " +
         std::to_string(result);
}

Status CudaDriver::load(const std::string &library,
                        std::shared_ptr<const CudaDriver> &result) {
  std::string path = library.empty() ? "libcuda.so.1" : library;
  // dlopen opens like any reader: a FIFO would block it forever. A path
  // (not a name the loader searches) must be a regular file or a link to
  // one.
  struct stat info;
  if (path.find('/') != std::string::npos &&
      ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    return Status::error(ErrorCode::NoDriver,
                         "cannot load the CUDA driver '" + path +
                             "': not a regular file");
  // dlerror() is process-global state: keep dlopen/dlerror pairs together.
  static std::mutex dlMutex;
  void *handle;
  {
    std::lock_guard<std::mutex> lock(dlMutex);
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      return Status::error(
          ErrorCode::NoDriver,
          "cannot load the CUDA driver '" + path +
              "': " + (why ? why : "dlopen failed") +
              " (libnormjit needs the NVIDIA driver and a CUDA device)");
    }
  }

  auto driver = std::make_shared<CudaDriver>();
  driver->library = path;
  std::string missing;
  bool ok = true;
  auto need = [&](auto &entry, std::initializer_list<const char *> names) {
    ok &= resolve(handle, entry, names, missing);
  };
  need(driver->init, {"cuInit"});
  need(driver->driverGetVersion, {"cuDriverGetVersion"});
  need(driver->getErrorName, {"cuGetErrorName"});
  need(driver->getErrorString, {"cuGetErrorString"});
  need(driver->deviceGetCount, {"cuDeviceGetCount"});
  need(driver->deviceGet, {"cuDeviceGet"});
  need(driver->deviceGetAttribute, {"cuDeviceGetAttribute"});
  need(driver->deviceGetName, {"cuDeviceGetName"});
  need(driver->devicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  need(driver->devicePrimaryCtxRelease,
       {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  need(driver->ctxGetCurrent, {"cuCtxGetCurrent"});
  need(driver->ctxPushCurrent, {"cuCtxPushCurrent_v2", "cuCtxPushCurrent"});
  need(driver->ctxPopCurrent, {"cuCtxPopCurrent_v2", "cuCtxPopCurrent"});
  need(driver->moduleLoadDataEx, {"cuModuleLoadDataEx"});
  need(driver->moduleUnload, {"cuModuleUnload"});
  need(driver->moduleGetFunction, {"cuModuleGetFunction"});
  need(driver->funcGetAttribute, {"cuFuncGetAttribute"});
  need(driver->funcSetAttribute, {"cuFuncSetAttribute"});
  need(driver->linkCreate, {"cuLinkCreate_v2", "cuLinkCreate"});
  need(driver->linkAddData, {"cuLinkAddData_v2", "cuLinkAddData"});
  need(driver->linkComplete, {"cuLinkComplete"});
  need(driver->linkDestroy, {"cuLinkDestroy"});
  need(driver->launchKernel, {"cuLaunchKernel"});
  need(driver->launchKernelEx, {"cuLaunchKernelEx"});
  need(driver->memAlloc, {"cuMemAlloc_v2"});
  need(driver->memFree, {"cuMemFree_v2"});
  need(driver->memsetD8, {"cuMemsetD8_v2"});
  need(driver->memsetD32Async, {"cuMemsetD32Async"});
  need(driver->memcpyHtoD, {"cuMemcpyHtoD_v2"});
  need(driver->memcpyDtoH, {"cuMemcpyDtoH_v2"});
  need(driver->streamCreate, {"cuStreamCreate"});
  need(driver->streamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"});
  need(driver->streamSynchronize, {"cuStreamSynchronize"});
  need(driver->eventCreate, {"cuEventCreate"});
  need(driver->eventRecord, {"cuEventRecord"});
  need(driver->eventSynchronize, {"cuEventSynchronize"});
  need(driver->eventElapsedTime,
       {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  need(driver->eventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  need(driver->tensorMapEncodeTiled, {"cuTensorMapEncodeTiled"});
  if (!ok)
    return Status::error(ErrorCode::NoDriver,
                         "the CUDA driver '" + path + "' has no entry point '" +
                             missing + "' (driver too old?)");

  cu::Result initResult = driver->init(0);
  if (initResult == cu::kErrorNoDevice)
    return Status::error(ErrorCode::NoDevice,
                         "the CUDA driver finds no device: " +
                             driver->describe("cuInit", initResult));
  if (initResult == cu::kErrorStubLibrary)
    return Status::error(ErrorCode::NoDriver,
                         "'" + path +
                             "' is the CUDA toolkit's stub library, "
                             "not a driver: " +
                             driver->describe("cuInit", initResult));
  if (initResult != cu::kSuccess)
    return Status::error(ErrorCode::DriverError,
                         driver->describe("cuInit", initResult));
  if (Status status = driver->check(driver->driverGetVersion(&driver->version),
                                    "cuDriverGetVersion");
      !status)
    return status;
  if (driver->version < kMinimumVersion)
    return Status::error(ErrorCode::NoDriver,
                         "the CUDA driver supports CUDA " +
                             formatVersion(driver->version) +
                             "; libnormjit needs " +
                             formatVersion(kMinimumVersion) + " or newer");
  result = std::move(driver);
  return Status::success();
}

ScopedContext::ScopedContext(const CudaDriver &driver, cu::Context context)
    : driver(driver) {
  cu::Context current = nullptr;
  if (driver.ctxGetCurrent(&current) == cu::kSuccess && current == context)
    return;
  result = driver.check(driver.ctxPushCurrent(context), "cuCtxPushCurrent");
  pushed = result.ok();
}

ScopedContext::~ScopedContext() {
  if (!pushed)
    return;
  cu::Context previous;
  (void)driver.ctxPopCurrent(&previous);
}
