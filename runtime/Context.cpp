//===- Context.cpp - creating contexts, device memory ---------------------===//
//
// Context::create probes the driver and the device and sets up the kernel
// store (bundles, disk cache, compiler); the device memory calls are for
// tools, tests and examples. What getKernel does is in ContextImpl.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/ContextImpl.h"

#include "runtime/Exceptions.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

using namespace norm;
using namespace norm::jit;

std::string DeviceInfo::getTuningIdentity() const {
  return name + " cc " + std::to_string(computeMajor) + "." +
         std::to_string(computeMinor) + " " + std::to_string(multiprocessors) +
         " SMs";
}

/// The PTX target for a compute capability: PTX for sm_90 also runs on newer
/// chips (the driver compiles it for them).
static std::string getChipFor(int major, int minor) {
  if (major >= 9)
    return "sm_90";
  if (major == 8 && minor >= 9)
    return "sm_89";
  return "sm_80";
}

ContextImpl::ContextImpl(const ContextOptions &options,
                         std::shared_ptr<DeviceState> device, LogLevel level)
    : options(options), log(level, options.logSink), device(std::move(device)) {
  streamScratch = std::make_shared<StreamScratch>(this->device);
}

Status ContextImpl::init() {
  KernelStoreOptions storeOptions;
  storeOptions.compiler =
      options.compiler ? options.compiler : createDefaultCompiler();
  storeOptions.target.chip =
      options.chip.empty() ? device->info.chip : options.chip;
  // NORMJIT_CHIP=sm_90a on a compute capability 9.0 device: its
  // architecture-specific kernels (the sm_90a attention family), where the
  // options leave the chip to the device.
  if (const char *chipEnv = std::getenv("NORMJIT_CHIP");
      chipEnv && *chipEnv && options.chip.empty()) {
    std::string asked = chipEnv;
    bool fits = asked == device->info.chip ||
                (asked == "sm_90a" && device->info.computeMajor == 9 &&
                 device->info.computeMinor == 0);
    if (!fits)
      return Status::error(ErrorCode::InvalidArgument,
                           "NORMJIT_CHIP=" + asked + " does not run on " +
                               device->info.getTuningIdentity() +
                               " (its chip: " + device->info.chip +
                               "; sm_90a needs compute capability 9.0)");
    storeOptions.target.chip = asked;
  }
  storeOptions.target.ptxVersion = options.ptxVersion;
  // Long rows are staged in the shared memory this device lets a CTA have
  // (an sm_86 device runs sm_80 PTX with 99 KiB, not 163), and in no more
  // than the chip's, so that kernels for an older chip, as in bundles, stay
  // the same on a newer device.
  const ChipInfo *chip = findChip(storeOptions.target.chip);
  int64_t chipShared = chip ? chip->maxSharedBytesPerCta : 0;
  int64_t deviceShared = device->info.maxSharedBytesOptin;
  storeOptions.target.maxSharedBytes =
      deviceShared > 0 && chipShared > 0 ? std::min(deviceShared, chipShared)
                                         : deviceShared;
  storeOptions.target.pdl = options.pdl;
  if (options.pdl)
    if (Status status = storeOptions.target.verify(); !status)
      return Status::error(ErrorCode::Unsupported,
                           "programmatic dependent launch on " +
                               device->info.name + ": " + status.message());
  if (options.diskCache) {
    storeOptions.cacheDirectory = options.cacheDirectory.empty()
                                      ? getDefaultCacheDirectory()
                                      : options.cacheDirectory;
    if (storeOptions.cacheDirectory.empty())
      log.log(LogLevel::Warning, "no cache directory (set NORMJIT_CACHE_DIR "
                                 "or HOME): the disk cache is off");
  }
  for (const std::string &path : options.bundles) {
    std::shared_ptr<const Bundle> bundle;
    if (Status status = Bundle::read(path, bundle); !status)
      return status;
    if (options.pdl) {
      log.log(LogLevel::Warning,
              "kernel bundle '" + path + "' holds kernels without "
              "programmatic dependent launch, which this context uses: it "
              "will not be used");
      continue;
    }
    if (bundle->getInfo().chip != storeOptions.target.chip)
      log.log(LogLevel::Warning,
              "kernel bundle '" + path + "' holds kernels for " +
                  bundle->getInfo().chip + ", this device uses " +
                  storeOptions.target.chip + ": it will not be used");
    storeOptions.bundles.push_back(std::move(bundle));
  }
  const char *tuneEnv = std::getenv("NORMJIT_TUNE");
  bool tuneAllowed = !(tuneEnv && std::string_view(tuneEnv) == "0");
  tuning = options.tuning && tuneAllowed && storeOptions.compiler;
  store = std::make_unique<KernelStore>(std::move(storeOptions), log);
  if (options.compileThreads <= 0) {
    unsigned hardware = std::thread::hardware_concurrency();
    options.compileThreads =
        static_cast<int>(std::clamp<unsigned>(hardware, 1, 8));
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Context
//===----------------------------------------------------------------------===//

Context::Context(std::shared_ptr<ContextImpl> impl) : impl(std::move(impl)) {}
Context::~Context() = default;

/// Loads the driver, opens the device and sets up the kernel store.
static Status createImpl(const ContextOptions &options,
                         std::shared_ptr<ContextImpl> &result) {
  LogLevel level = options.logLevel >= 0
                       ? static_cast<LogLevel>(std::min(options.logLevel, 3))
                       : Logger::getLevelFromEnvironment(LogLevel::Warning);
  auto device = std::make_shared<DeviceState>();
  if (Status status = CudaDriver::load(options.driverLibrary, device->driver);
      !status)
    return status;
  const CudaDriver &driver = *device->driver;
  int count = 0;
  if (Status status =
          driver.check(driver.deviceGetCount(&count), "cuDeviceGetCount");
      !status)
    return status;
  if (count == 0)
    return Status::error(ErrorCode::NoDevice,
                         "no CUDA device: the driver sees none");
  if (options.device < 0 || options.device >= count)
    return Status::error(ErrorCode::NoDevice,
                         "no CUDA device " + std::to_string(options.device) +
                             ": the driver sees " + std::to_string(count));
  DeviceInfo &info = device->info;
  info.ordinal = options.device;
  info.driverVersion = driver.version;
  char name[256] = {0};
  int optin = 0;
  Status status = driver.check(
      driver.deviceGet(&device->device, options.device), "cuDeviceGet");
  auto attribute = [&](int which, int &value) {
    if (status.ok())
      status =
          driver.check(driver.deviceGetAttribute(&value, which, device->device),
                       "cuDeviceGetAttribute");
  };
  attribute(cu::kDeviceComputeCapabilityMajor, info.computeMajor);
  attribute(cu::kDeviceComputeCapabilityMinor, info.computeMinor);
  attribute(cu::kDeviceMultiprocessorCount, info.multiprocessors);
  attribute(cu::kDeviceMaxSharedMemoryPerBlockOptin, optin);
  if (status.ok())
    status = driver.check(
        driver.deviceGetName(name, sizeof(name) - 1, device->device),
        "cuDeviceGetName");
  if (!status)
    return status;
  info.name = name;
  info.maxSharedBytesOptin = optin;
  if (info.computeMajor < 8)
    return Status::error(ErrorCode::Unsupported,
                         "device " + info.name + " has compute capability " +
                             std::to_string(info.computeMajor) + "." +
                             std::to_string(info.computeMinor) +
                             "; libnormjit needs 8.0 or newer");
  info.chip = getChipFor(info.computeMajor, info.computeMinor);
  device->cubinTag = "driver=" + std::to_string(info.driverVersion) +
                     " cc=" + std::to_string(info.computeMajor) + "." +
                     std::to_string(info.computeMinor);
  if (Status status = driver.check(
          driver.devicePrimaryCtxRetain(&device->context, device->device),
          "cuDevicePrimaryCtxRetain");
      !status) {
    device->context = nullptr;
    return status;
  }

  auto impl = std::make_shared<ContextImpl>(options, std::move(device), level);
  if (Status status = impl->init(); !status)
    return status;
  result = std::move(impl);
  return Status::success();
}

// The public entry points: no exception crosses them (Exceptions.h).

Status Context::create(const ContextOptions &options,
                       std::unique_ptr<Context> &context) {
  return catchExceptions("Context::create", [&] {
    std::shared_ptr<ContextImpl> impl;
    if (Status status = createImpl(options, impl); !status)
      return status;
    context.reset(new Context(std::move(impl)));
    return Status::success();
  });
}

Status Context::getKernel(const OpSpec &spec, const KernelOptions &options,
                          std::shared_ptr<const Kernel> &kernel) {
  return catchExceptions("Context::getKernel", [&] {
    return impl->getKernel(spec, options, kernel);
  });
}

Status Context::writeBundle(const std::vector<OpSpec> &specs,
                            const std::string &path) {
  return catchExceptions("Context::writeBundle",
                         [&] { return impl->writeBundle(specs, path); });
}

const DeviceInfo &Context::getDeviceInfo() const { return impl->device->info; }

bool Context::isTuning() const { return impl->tuning; }

/// Runs one driver call with the context's device current.
template <typename Call>
static Status callOnDevice(const DeviceState &device, const char *name,
                           Call &&call) {
  return catchExceptions(name, [&] {
    ScopedContext scope(*device.driver, device.context);
    if (!scope.status().ok())
      return scope.status();
    return device.driver->check(call(*device.driver), name);
  });
}

Status Context::allocate(size_t bytes, void *&pointer) {
  cu::DevicePtr address = 0;
  Status status =
      callOnDevice(*impl->device, "cuMemAlloc", [&](const CudaDriver &d) {
        return d.memAlloc(&address, std::max<size_t>(bytes, 1));
      });
  if (status.ok())
    pointer = reinterpret_cast<void *>(address);
  return status;
}

Status Context::release(void *pointer) {
  return callOnDevice(*impl->device, "cuMemFree", [&](const CudaDriver &d) {
    return d.memFree(reinterpret_cast<cu::DevicePtr>(pointer));
  });
}

Status Context::copyToDevice(void *destination, const void *source,
                             size_t bytes) {
  return callOnDevice(*impl->device, "cuMemcpyHtoD", [&](const CudaDriver &d) {
    return d.memcpyHtoD(reinterpret_cast<cu::DevicePtr>(destination), source,
                        bytes);
  });
}

Status Context::copyToHost(void *destination, const void *source,
                           size_t bytes) {
  return callOnDevice(*impl->device, "cuMemcpyDtoH", [&](const CudaDriver &d) {
    return d.memcpyDtoH(destination, reinterpret_cast<cu::DevicePtr>(source),
                        bytes);
  });
}

Status Context::synchronize(void *stream) {
  return callOnDevice(
      *impl->device, "cuStreamSynchronize", [&](const CudaDriver &d) {
        return d.streamSynchronize(static_cast<cu::Stream>(stream));
      });
}
