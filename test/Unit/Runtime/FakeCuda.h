//===- FakeCuda.h - a CUDA driver stand-in for tests without a GPU -*- C
//-*-===//
//
// libnormjit-fake-cuda.so exports the driver entry points libnormjit loads,
// backed by host memory and a virtual clock, plus these controls. It lets
// the tests without a GPU run the whole device path: module loading from
// PTX (".entry name(.param ...)") and from "cubins" it links itself,
// launches (recorded with their parameter values), events whose elapsed time
// follows a cost the PTX states ("// fake-cost-ns: <fixed> <per CTA>"), and
// memory. The launch path allocates nothing, so tests can count allocations.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TEST_FAKECUDA_H
#define NORM_TEST_FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fakecuda_launch {
  char kernel[128];
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void *stream;
  int num_params;
  uint64_t params[32];
  /// cuLaunchKernelEx's programmatic stream serialization (0: none, and
  /// for cuLaunchKernel).
  int programmatic;
};

/// Forgets launches, counters and injected failures; restores one device of
/// compute capability 9.0, driver 13000, 1024 threads and 227 KiB of shared
/// memory (opt-in) per block.
/// FAKECUDA_DEVICES in the environment, when set, overrides the device count at
/// cuInit.
void fakecuda_reset(void);
void fakecuda_set_device_count(int count);
void fakecuda_set_compute_capability(int major, int minor);
void fakecuda_set_driver_version(int version);
void fakecuda_set_max_threads_per_block(int threads);
/// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN; launches asking
/// for more dynamic shared memory fail.
void fakecuda_set_max_shared_bytes_optin(int bytes);
/// CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES of the kernels whose names end in
/// `suffix` (a spilling kernel; the others: 0).
void fakecuda_set_local_bytes(const char *suffix, int bytes);
/// The next `count` calls of `entry` ("cuModuleLoadDataEx", ...) fail with
/// `result`.
void fakecuda_fail_next(const char *entry, int result, int count);

int fakecuda_call_count(const char *entry);
int fakecuda_launch_count(void);
/// Launch `index` (0 = first since reset); 0 when there is no such launch
/// or it is older than the last 4096.
int fakecuda_get_launch(int index, struct fakecuda_launch *launch);
/// One cuMemcpyHtoD: where, how many bytes, the first of them, and how many
/// launches had been made before it.
struct fakecuda_copy {
  uint64_t destination;
  size_t bytes;
  unsigned char data[64];
  int launches_before;
};

/// Copies to the device since the last reset (the last 256 are kept).
int fakecuda_copy_count(void);
/// Copy `index` (0 = first since reset); 0 when there is none.
int fakecuda_get_copy(int index, struct fakecuda_copy *copy);
/// One cuMemsetD32Async: where, the value, how many 32-bit words, on which
/// stream, and how many launches had been made before it.
struct fakecuda_memset {
  uint64_t pointer;
  unsigned value;
  size_t count;
  void *stream;
  int launches_before;
};
/// The successful cuMemsetD32Async calls since the last reset (the last 4096
/// are kept).
int fakecuda_memset_d32_count(void);
/// Call `index` (0 = first since reset); 0 when there is none.
int fakecuda_get_memset_d32(int index, struct fakecuda_memset *memset);
/// The last cuMemsetD32Async since the reset; 0 when there was none.
int fakecuda_last_memset_d32(struct fakecuda_memset *memset);

/// One successful cuMemAlloc: where, how many bytes, and how many launches
/// had been made before it.
struct fakecuda_alloc {
  uint64_t pointer;
  size_t bytes;
  int launches_before;
};
/// Allocations since the last reset (the last 4096 are kept).
int fakecuda_alloc_count(void);
/// Allocation `index` (0 = first since reset); 0 when there is none.
int fakecuda_get_alloc(int index, struct fakecuda_alloc *alloc);

/// One cuTensorMapEncodeTiled request (the fake writes its index, from 0,
/// into the map's first 8 bytes).
struct fakecuda_tensor_map {
  int data_type;
  unsigned rank;
  uint64_t address;
  unsigned long long dims[5], strides[4];
  unsigned box[5], element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
};
/// Requests since the last reset.
int fakecuda_tensor_map_count(void);
/// Request `index` (0 = first since reset); 0 when there is none.
int fakecuda_get_tensor_map(int index, struct fakecuda_tensor_map *map);

/// Device memory: cuMemAlloc fails with CUDA_ERROR_OUT_OF_MEMORY beyond
/// `bytes` live at once (0, after reset: unlimited).
void fakecuda_set_device_memory(size_t bytes);
/// The most bytes allocated at once since the last reset.
size_t fakecuda_peak_allocated_bytes(void);
int fakecuda_live_allocations(void);
int fakecuda_live_modules(void);
int fakecuda_live_streams(void);
int fakecuda_primary_context_retains(void);

#ifdef __cplusplus
}
#endif

#endif // NORM_TEST_FAKECUDA_H
