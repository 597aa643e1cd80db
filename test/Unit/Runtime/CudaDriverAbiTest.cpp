//===- CudaDriverAbiTest.cpp - runtime/CudaDriver.h against cuda.h --------===//
//
// libnormjit declares the driver API it uses itself (no CUDA headers needed
// to build it). Where the toolkit is installed, this checks those
// declarations against cuda.h: constants, handle types, and the versioned
// symbols cuda.h maps each function to.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include "runtime/CudaDriver.h"

#include <gtest/gtest.h>
#include <cstddef>
#include <type_traits>

using namespace norm;
using namespace norm::jit;

// Constants.
static_assert(cu::kSuccess == CUDA_SUCCESS);
static_assert(cu::kErrorInvalidValue == CUDA_ERROR_INVALID_VALUE);
static_assert(cu::kErrorOutOfMemory == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(cu::kErrorStubLibrary == CUDA_ERROR_STUB_LIBRARY);
static_assert(cu::kErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(cu::kErrorInvalidImage == CUDA_ERROR_INVALID_IMAGE);
static_assert(cu::kErrorNoBinaryForGpu == CUDA_ERROR_NO_BINARY_FOR_GPU);
static_assert(cu::kErrorInvalidPtx == CUDA_ERROR_INVALID_PTX);
static_assert(cu::kErrorUnsupportedPtxVersion ==
              CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
static_assert(cu::kDeviceMultiprocessorCount ==
              CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(cu::kDeviceComputeCapabilityMajor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(cu::kDeviceComputeCapabilityMinor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(cu::kDeviceMaxSharedMemoryPerBlockOptin ==
              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
static_assert(cu::kFuncMaxThreadsPerBlock ==
              CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(cu::kFuncNumRegs == CU_FUNC_ATTRIBUTE_NUM_REGS);
static_assert(cu::kFuncMaxDynamicSharedSizeBytes ==
              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(cu::kJitErrorLogBuffer == CU_JIT_ERROR_LOG_BUFFER);
static_assert(cu::kJitErrorLogBufferSizeBytes ==
              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
static_assert(cu::kJitInputPtx == CU_JIT_INPUT_PTX);
static_assert(cu::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(cu::kEventDefault == CU_EVENT_DEFAULT);

// Handle and scalar types.
static_assert(std::is_same_v<cu::Context, CUcontext>);
static_assert(std::is_same_v<cu::Module, CUmodule>);
static_assert(std::is_same_v<cu::Function, CUfunction>);
static_assert(std::is_same_v<cu::Stream, CUstream>);
static_assert(std::is_same_v<cu::Event, CUevent>);
static_assert(std::is_same_v<cu::LinkState, CUlinkState>);
static_assert(std::is_same_v<cu::DevicePtr, CUdeviceptr>);
static_assert(std::is_same_v<cu::Device, CUdevice>);
static_assert(sizeof(cu::Result) == sizeof(CUresult));

// The launch attributes of cuLaunchKernelEx (programmatic dependent launch).
static_assert(cu::kLaunchAttributeProgrammaticStreamSerialization ==
              CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
static_assert(sizeof(cu::LaunchAttribute) == sizeof(CUlaunchAttribute) &&
              offsetof(cu::LaunchAttribute, value) ==
                  offsetof(CUlaunchAttribute, value) &&
              offsetof(cu::LaunchAttribute, value.
                       programmaticStreamSerializationAllowed) ==
                  offsetof(CUlaunchAttribute,
                           value.programmaticStreamSerializationAllowed));
static_assert(sizeof(cu::LaunchConfig) == sizeof(CUlaunchConfig) &&
              offsetof(cu::LaunchConfig, sharedMemBytes) ==
                  offsetof(CUlaunchConfig, sharedMemBytes) &&
              offsetof(cu::LaunchConfig, hStream) ==
                  offsetof(CUlaunchConfig, hStream) &&
              offsetof(cu::LaunchConfig, attrs) ==
                  offsetof(CUlaunchConfig, attrs) &&
              offsetof(cu::LaunchConfig, numAttrs) ==
                  offsetof(CUlaunchConfig, numAttrs));
// Tensor maps (cuTensorMapEncodeTiled).
static_assert(cu::kTensorMapDataTypeUint8 == CU_TENSOR_MAP_DATA_TYPE_UINT8);
static_assert(cu::kTensorMapDataTypeFloat16 == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
static_assert(cu::kTensorMapDataTypeFloat32 == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
static_assert(cu::kTensorMapDataTypeBfloat16 ==
              CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(cu::kTensorMapInterleaveNone == CU_TENSOR_MAP_INTERLEAVE_NONE);
static_assert(cu::kTensorMapSwizzleNone == CU_TENSOR_MAP_SWIZZLE_NONE);
static_assert(cu::kTensorMapSwizzle32B == CU_TENSOR_MAP_SWIZZLE_32B);
static_assert(cu::kTensorMapSwizzle64B == CU_TENSOR_MAP_SWIZZLE_64B);
static_assert(cu::kTensorMapSwizzle128B == CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(cu::kTensorMapL2Promotion128B ==
              CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
static_assert(cu::kTensorMapFloatOobFillNone ==
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
static_assert(sizeof(cu::TensorMap) == sizeof(CUtensorMap) &&
              alignof(cu::TensorMap) == alignof(CUtensorMap));
static_assert(sizeof(int) == sizeof(CUtensorMapDataType) &&
              sizeof(int) == sizeof(CUtensorMapSwizzle));

static_assert(sizeof(int) == sizeof(CUdevice_attribute) &&
              sizeof(int) == sizeof(CUjit_option) &&
              sizeof(int) == sizeof(CUfunction_attribute));

// Signatures: every parameter of the table's entry points has the size and
// kind (pointer, integer, float) of cuda.h's; enums are read as int.
template <typename A, typename B> constexpr bool isSameKind() {
  return sizeof(A) == sizeof(B) &&
         std::is_pointer_v<A> == std::is_pointer_v<B> &&
         std::is_floating_point_v<A> == std::is_floating_point_v<B>;
}
template <typename R1, typename... A1, typename R2, typename... A2>
constexpr bool isCompatible(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2))
    return false;
  else
    return isSameKind<R1, R2>() && (isSameKind<A1, A2>() && ...);
}
#define CHECK_ENTRY(member, function)                                          \
  static_assert(                                                               \
      isCompatible(decltype(CudaDriver::member){}, decltype(&function){}),     \
      #function " does not match CudaDriver::" #member)

CHECK_ENTRY(init, cuInit);
CHECK_ENTRY(driverGetVersion, cuDriverGetVersion);
CHECK_ENTRY(getErrorName, cuGetErrorName);
CHECK_ENTRY(getErrorString, cuGetErrorString);
CHECK_ENTRY(deviceGetCount, cuDeviceGetCount);
CHECK_ENTRY(deviceGet, cuDeviceGet);
CHECK_ENTRY(deviceGetAttribute, cuDeviceGetAttribute);
CHECK_ENTRY(deviceGetName, cuDeviceGetName);
CHECK_ENTRY(devicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
CHECK_ENTRY(devicePrimaryCtxRelease, cuDevicePrimaryCtxRelease);
CHECK_ENTRY(ctxGetCurrent, cuCtxGetCurrent);
CHECK_ENTRY(ctxPushCurrent, cuCtxPushCurrent);
CHECK_ENTRY(ctxPopCurrent, cuCtxPopCurrent);
CHECK_ENTRY(moduleLoadDataEx, cuModuleLoadDataEx);
CHECK_ENTRY(moduleUnload, cuModuleUnload);
CHECK_ENTRY(moduleGetFunction, cuModuleGetFunction);
CHECK_ENTRY(funcGetAttribute, cuFuncGetAttribute);
CHECK_ENTRY(funcSetAttribute, cuFuncSetAttribute);
CHECK_ENTRY(linkCreate, cuLinkCreate);
CHECK_ENTRY(linkAddData, cuLinkAddData);
CHECK_ENTRY(linkComplete, cuLinkComplete);
CHECK_ENTRY(linkDestroy, cuLinkDestroy);
CHECK_ENTRY(launchKernel, cuLaunchKernel);
CHECK_ENTRY(launchKernelEx, cuLaunchKernelEx);
CHECK_ENTRY(memAlloc, cuMemAlloc);
CHECK_ENTRY(memFree, cuMemFree);
CHECK_ENTRY(memsetD8, cuMemsetD8);
CHECK_ENTRY(memsetD32Async, cuMemsetD32Async);
CHECK_ENTRY(memcpyHtoD, cuMemcpyHtoD);
CHECK_ENTRY(memcpyDtoH, cuMemcpyDtoH);
CHECK_ENTRY(streamCreate, cuStreamCreate);
CHECK_ENTRY(streamDestroy, cuStreamDestroy);
CHECK_ENTRY(streamSynchronize, cuStreamSynchronize);
CHECK_ENTRY(eventCreate, cuEventCreate);
CHECK_ENTRY(eventRecord, cuEventRecord);
CHECK_ENTRY(eventSynchronize, cuEventSynchronize);
CHECK_ENTRY(eventElapsedTime, cuEventElapsedTime);
CHECK_ENTRY(eventDestroy, cuEventDestroy);
CHECK_ENTRY(tensorMapEncodeTiled, cuTensorMapEncodeTiled);

#define STRINGIFY_EXPANDED(name) STRINGIFY(name)
#define STRINGIFY(name) #name

namespace {

/// The symbol CudaDriver.cpp resolves first must be the one cuda.h maps the
/// function to (e.g. cuMemAlloc -> cuMemAlloc_v2).
TEST(CudaDriverAbi, VersionedSymbols) {
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuMemAlloc), "cuMemAlloc_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuMemFree), "cuMemFree_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuMemsetD8), "cuMemsetD8_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuMemcpyHtoD), "cuMemcpyHtoD_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuMemcpyDtoH), "cuMemcpyDtoH_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuCtxPushCurrent), "cuCtxPushCurrent_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuCtxPopCurrent), "cuCtxPopCurrent_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuDevicePrimaryCtxRelease),
               "cuDevicePrimaryCtxRelease_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuLinkCreate), "cuLinkCreate_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuLinkAddData), "cuLinkAddData_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuStreamDestroy), "cuStreamDestroy_v2");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuEventDestroy), "cuEventDestroy_v2");
  // Unversioned in cuda.h (the fallbacks CudaDriver.cpp also tries).
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuLaunchKernel), "cuLaunchKernel");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuLaunchKernelEx), "cuLaunchKernelEx");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuModuleLoadDataEx), "cuModuleLoadDataEx");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuLinkComplete), "cuLinkComplete");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuDevicePrimaryCtxRetain),
               "cuDevicePrimaryCtxRetain");
  EXPECT_STREQ(STRINGIFY_EXPANDED(cuTensorMapEncodeTiled),
               "cuTensorMapEncodeTiled");
}

} // namespace
