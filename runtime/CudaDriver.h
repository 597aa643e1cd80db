//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// libnormjit never links libcuda: it loads the driver with dlopen and
// resolves the part of the driver API it uses into a table of function
// pointers, so that one binary runs everywhere and reports a clear error where
// there is no driver or no device. The declarations mirror cuda.h for that
// part; CudaDriverAbiTest checks the constants against cuda.h where the
// toolkit is installed.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_CUDADRIVER_H
#define NORM_RUNTIME_CUDADRIVER_H

#include "runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

// The handle types of cuda.h (same tags, so both headers may meet).
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUlinkState_st;

namespace norm::jit::cu {

using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Context = CUctx_st *;
using Module = CUmod_st *;
using Function = CUfunc_st *;
using Stream = CUstream_st *;
using Event = CUevent_st *;
using LinkState = CUlinkState_st *;

constexpr Result kSuccess = 0;
constexpr Result kErrorInvalidValue = 1;
constexpr Result kErrorOutOfMemory = 2;
constexpr Result kErrorStubLibrary = 34;
constexpr Result kErrorNoDevice = 100;
constexpr Result kErrorInvalidImage = 200;
constexpr Result kErrorNoBinaryForGpu = 209;
constexpr Result kErrorInvalidPtx = 218;
constexpr Result kErrorUnsupportedPtxVersion = 222;

// CUdevice_attribute
constexpr int kDeviceMultiprocessorCount = 16;
constexpr int kDeviceComputeCapabilityMajor = 75;
constexpr int kDeviceComputeCapabilityMinor = 76;
constexpr int kDeviceMaxSharedMemoryPerBlockOptin = 97;
// CUfunction_attribute
constexpr int kFuncMaxThreadsPerBlock = 0;
constexpr int kFuncLocalSizeBytes = 3;
constexpr int kFuncNumRegs = 4;
constexpr int kFuncMaxDynamicSharedSizeBytes = 8;
// CUjit_option
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;
// CUjitInputType
constexpr int kJitInputPtx = 1;
// Stream and event flags
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDefault = 0;

// CUlaunchAttributeID
constexpr int kLaunchAttributeProgrammaticStreamSerialization = 6;

// CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle,
// CUtensorMapL2promotion, CUtensorMapFloatOOBfill
constexpr int kTensorMapDataTypeUint8 = 0;
constexpr int kTensorMapDataTypeFloat16 = 6;
constexpr int kTensorMapDataTypeFloat32 = 7;
constexpr int kTensorMapDataTypeBfloat16 = 9;
constexpr int kTensorMapInterleaveNone = 0;
constexpr int kTensorMapSwizzleNone = 0;
constexpr int kTensorMapSwizzle32B = 1;
constexpr int kTensorMapSwizzle64B = 2;
constexpr int kTensorMapSwizzle128B = 3;
constexpr int kTensorMapL2Promotion128B = 2;
constexpr int kTensorMapFloatOobFillNone = 0;

/// CUtensorMap: 128 opaque bytes, 128-byte aligned as cuda.h declares it
/// (the driver needs 64); a kernel takes it by value as a grid-constant
/// parameter.
struct alignas(128) TensorMap {
  unsigned long long opaque[16] = {};
};

/// CUlaunchAttribute: an id, then a 64-byte union of values.
struct LaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value = {};
};

/// CUlaunchConfig.
struct LaunchConfig {
  unsigned gridDimX = 1, gridDimY = 1, gridDimZ = 1;
  unsigned blockDimX = 1, blockDimY = 1, blockDimZ = 1;
  unsigned sharedMemBytes = 0;
  Stream hStream = nullptr;
  LaunchAttribute *attrs = nullptr;
  unsigned numAttrs = 0;
};

} // namespace norm::jit::cu

namespace norm::jit {

/// The loaded driver: one table of entry points, shared by every context that
/// uses the same library. The library is never unloaded (modules and streams
/// of other users may outlive us).
struct CudaDriver {
  /// The oldest driver libnormjit accepts: CUDA 12.0 (PTX ISA 8.0).
  static constexpr int kMinimumVersion = 12000;

  /// Loads `library` (default: libcuda.so.1), resolves the entry points and
  /// initializes the driver. NoDriver when the library or an entry point is
  /// missing, NoDevice when the driver finds no device, Unsupported when it is
  /// older than kMinimumVersion.
  static Status load(const std::string &library,
                     std::shared_ptr<const CudaDriver> &driver);

  /// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
  std::string describe(const char *call, cu::Result result) const;
  /// Success, or DriverError (OutOfMemory: DriverError too) with describe().
  Status check(cu::Result result, const char *call) const {
    if (result == cu::kSuccess)
      return Status::success();
    return Status::error(ErrorCode::DriverError, describe(call, result));
  }

  std::string library; // the path given to dlopen
  int version = 0;     // cuDriverGetVersion: 1000 * major + 10 * minor

  // Entry points (the names of cuda.h without the `cu` prefix).
  cu::Result (*init)(unsigned flags) = nullptr;
  cu::Result (*driverGetVersion)(int *version) = nullptr;
  cu::Result (*getErrorName)(cu::Result error, const char **name) = nullptr;
  cu::Result (*getErrorString)(cu::Result error, const char **text) = nullptr;
  cu::Result (*deviceGetCount)(int *count) = nullptr;
  cu::Result (*deviceGet)(cu::Device *device, int ordinal) = nullptr;
  cu::Result (*deviceGetAttribute)(int *value, int attribute,
                                   cu::Device device) = nullptr;
  cu::Result (*deviceGetName)(char *name, int length,
                              cu::Device device) = nullptr;
  cu::Result (*devicePrimaryCtxRetain)(cu::Context *context,
                                       cu::Device device) = nullptr;
  cu::Result (*devicePrimaryCtxRelease)(cu::Device device) = nullptr;
  cu::Result (*ctxGetCurrent)(cu::Context *context) = nullptr;
  cu::Result (*ctxPushCurrent)(cu::Context context) = nullptr;
  cu::Result (*ctxPopCurrent)(cu::Context *context) = nullptr;
  cu::Result (*moduleLoadDataEx)(cu::Module *module, const void *image,
                                 unsigned numOptions, int *options,
                                 void **optionValues) = nullptr;
  cu::Result (*moduleUnload)(cu::Module module) = nullptr;
  cu::Result (*moduleGetFunction)(cu::Function *function, cu::Module module,
                                  const char *name) = nullptr;
  cu::Result (*funcGetAttribute)(int *value, int attribute,
                                 cu::Function function) = nullptr;
  cu::Result (*funcSetAttribute)(cu::Function function, int attribute,
                                 int value) = nullptr;
  cu::Result (*linkCreate)(unsigned numOptions, int *options,
                           void **optionValues, cu::LinkState *state) = nullptr;
  cu::Result (*linkAddData)(cu::LinkState state, int type, void *data,
                            size_t size, const char *name, unsigned numOptions,
                            int *options, void **optionValues) = nullptr;
  cu::Result (*linkComplete)(cu::LinkState state, void **cubin,
                             size_t *size) = nullptr;
  cu::Result (*linkDestroy)(cu::LinkState state) = nullptr;
  cu::Result (*launchKernel)(cu::Function function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, cu::Stream stream,
                             void **params, void **extra) = nullptr;
  cu::Result (*launchKernelEx)(const cu::LaunchConfig *config,
                               cu::Function function, void **params,
                               void **extra) = nullptr;
  cu::Result (*memAlloc)(cu::DevicePtr *pointer, size_t bytes) = nullptr;
  cu::Result (*memFree)(cu::DevicePtr pointer) = nullptr;
  cu::Result (*memsetD8)(cu::DevicePtr pointer, unsigned char value,
                         size_t count) = nullptr;
  cu::Result (*memsetD32Async)(cu::DevicePtr pointer, unsigned value,
                              size_t count, cu::Stream stream) = nullptr;
  cu::Result (*memcpyHtoD)(cu::DevicePtr destination, const void *source,
                           size_t bytes) = nullptr;
  cu::Result (*memcpyDtoH)(void *destination, cu::DevicePtr source,
                           size_t bytes) = nullptr;
  cu::Result (*streamCreate)(cu::Stream *stream, unsigned flags) = nullptr;
  cu::Result (*streamDestroy)(cu::Stream stream) = nullptr;
  cu::Result (*streamSynchronize)(cu::Stream stream) = nullptr;
  cu::Result (*eventCreate)(cu::Event *event, unsigned flags) = nullptr;
  cu::Result (*eventRecord)(cu::Event event, cu::Stream stream) = nullptr;
  cu::Result (*eventSynchronize)(cu::Event event) = nullptr;
  cu::Result (*eventElapsedTime)(float *milliseconds, cu::Event start,
                                 cu::Event end) = nullptr;
  cu::Result (*eventDestroy)(cu::Event event) = nullptr;
  cu::Result (*tensorMapEncodeTiled)(cu::TensorMap *map, int dataType,
                                     unsigned rank, void *globalAddress,
                                     const unsigned long long *globalDim,
                                     const unsigned long long *globalStrides,
                                     const unsigned *boxDim,
                                     const unsigned *elementStrides,
                                     int interleave, int swizzle,
                                     int l2Promotion, int oobFill) = nullptr;
};

/// Makes a context current on this thread for a scope, and restores the
/// previous one; a no-op when it already is current (the common case on the
/// launch path, where it costs one cuCtxGetCurrent).
class ScopedContext {
public:
  ScopedContext(const CudaDriver &driver, cu::Context context);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;
  /// Success unless making the context current failed.
  const Status &status() const { return result; }

private:
  const CudaDriver &driver;
  bool pushed = false;
  Status result;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_CUDADRIVER_H
