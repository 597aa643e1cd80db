//===- FakeCudaDriver.cpp - a CUDA driver stand-in for tests --------------===//
//
// See FakeCuda.h. Only what libnormjit calls, with the checks a real driver
// makes where tests depend on them (unknown handles, bad images, block sizes).
//
//===----------------------------------------------------------------------===//

#include "test/Unit/Runtime/FakeCuda.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

using Result = int;
constexpr Result kSuccess = 0;
constexpr Result kInvalidValue = 1;
constexpr Result kNoDevice = 100;
constexpr Result kInvalidDevice = 101;
constexpr Result kInvalidImage = 200;
constexpr Result kInvalidContext = 201;
constexpr Result kInvalidHandle = 400;
constexpr Result kNotFound = 500;

enum Entry {
  Init,
  DriverGetVersion,
  DeviceGetCount,
  DeviceGet,
  DeviceGetAttribute,
  DeviceGetName,
  PrimaryCtxRetain,
  PrimaryCtxRelease,
  CtxGetCurrent,
  CtxPushCurrent,
  CtxPopCurrent,
  ModuleLoadDataEx,
  ModuleUnload,
  ModuleGetFunction,
  FuncGetAttribute,
  FuncSetAttribute,
  LinkCreate,
  LinkAddData,
  LinkComplete,
  LinkDestroy,
  LaunchKernel,
  LaunchKernelEx,
  MemAlloc,
  MemFree,
  MemsetD8,
  MemsetD32Async,
  MemcpyHtoD,
  MemcpyDtoH,
  StreamCreate,
  StreamDestroy,
  StreamSynchronize,
  EventCreate,
  EventRecord,
  EventSynchronize,
  EventElapsedTime,
  EventDestroy,
  TensorMapEncodeTiled,
  NumEntries
};

const char *const kEntryNames[NumEntries] = {"cuInit",
                                             "cuDriverGetVersion",
                                             "cuDeviceGetCount",
                                             "cuDeviceGet",
                                             "cuDeviceGetAttribute",
                                             "cuDeviceGetName",
                                             "cuDevicePrimaryCtxRetain",
                                             "cuDevicePrimaryCtxRelease",
                                             "cuCtxGetCurrent",
                                             "cuCtxPushCurrent",
                                             "cuCtxPopCurrent",
                                             "cuModuleLoadDataEx",
                                             "cuModuleUnload",
                                             "cuModuleGetFunction",
                                             "cuFuncGetAttribute",
                                             "cuFuncSetAttribute",
                                             "cuLinkCreate",
                                             "cuLinkAddData",
                                             "cuLinkComplete",
                                             "cuLinkDestroy",
                                             "cuLaunchKernel",
                                             "cuLaunchKernelEx",
                                             "cuMemAlloc",
                                             "cuMemFree",
                                             "cuMemsetD8",
                                             "cuMemsetD32Async",
                                             "cuMemcpyHtoD",
                                             "cuMemcpyDtoH",
                                             "cuStreamCreate",
                                             "cuStreamDestroy",
                                             "cuStreamSynchronize",
                                             "cuEventCreate",
                                             "cuEventRecord",
                                             "cuEventSynchronize",
                                             "cuEventElapsedTime",
                                             "cuEventDestroy",
                                             "cuTensorMapEncodeTiled"};

struct Function {
  std::string name;
  int numParams = 0;
  double fixedNs = 1000, perCtaNs = 0;
};

struct Module {
  std::vector<Function> functions;
};

struct Stream {
  double clockNs = 0;
};

struct Event {
  double timeNs = -1;
};

struct Link {
  std::string ptx;
  std::string cubin;
};

struct PrimaryContext {
  int unused = 0;
};

constexpr int kMaxLaunches = 4096;
constexpr int kMaxCopies = 256;
constexpr int kMaxMemsets = 4096;
constexpr int kMaxAllocs = 4096;
constexpr char kCubinMagic[] = "FAKECUBIN\n";

struct State {
  std::mutex mutex;
  std::atomic<int> calls[NumEntries];
  int failResult[NumEntries] = {};
  int failCount[NumEntries] = {};
  int devices = 1, major = 9, minor = 0, driverVersion = 13000;
  int maxThreadsPerBlock = 1024;
  int maxSharedBytesOptin = 232448; // 227 KiB, as on sm_90
  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES of kernels whose name ends so.
  std::string spillingSuffix;
  int spillBytes = 0;
  int retains = 0;
  std::set<Module *> modules;
  std::set<Stream *> streams;
  std::map<void *, size_t> allocations; // bytes of each
  size_t liveBytes = 0, peakBytes = 0;
  size_t deviceMemory = 0; // 0: unlimited
  Stream defaultStream;
  PrimaryContext primary;
  fakecuda_launch launches[kMaxLaunches];
  std::atomic<int> launchCount{0};
  fakecuda_copy copies[kMaxCopies];
  int copyCount = 0;
  fakecuda_memset memsets[kMaxMemsets];
  int memsetCount = 0;
  fakecuda_alloc allocs[kMaxAllocs];
  int allocCount = 0;
  std::vector<fakecuda_tensor_map> tensorMaps;
};

State &state() {
  static State *s = new State(); // never destroyed: drivers outlive users
  return *s;
}

/// The current-context stack of each thread.
thread_local std::vector<void *> contextStack;

/// Counts the call; an injected failure's result, or success.
Result enter(Entry entry) {
  State &s = state();
  s.calls[entry]++;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.failCount[entry] > 0) {
    --s.failCount[entry];
    return s.failResult[entry];
  }
  return kSuccess;
}

/// The functions of a PTX text: each ".entry name(" with its ".param"s, and
/// the cost comment.
bool parsePtx(const std::string &ptx, Module &module) {
  double fixedNs = 1000, perCtaNs = 0;
  if (size_t cost = ptx.find("// fake-cost-ns:"); cost != std::string::npos)
    std::sscanf(ptx.c_str() + cost, "// fake-cost-ns: %lf %lf", &fixedNs,
                &perCtaNs);
  for (size_t pos = ptx.find(".entry "); pos != std::string::npos;
       pos = ptx.find(".entry ", pos + 1)) {
    size_t open = ptx.find('(', pos);
    size_t close = ptx.find(')', open);
    if (open == std::string::npos || close == std::string::npos)
      return false;
    Function function;
    function.name = ptx.substr(pos + 7, open - pos - 7);
    for (size_t p = ptx.find(".param", open);
         p != std::string::npos && p < close; p = ptx.find(".param", p + 1))
      ++function.numParams;
    function.fixedNs = fixedNs;
    function.perCtaNs = perCtaNs;
    module.functions.push_back(function);
  }
  return !module.functions.empty();
}

/// The stream of a handle (null: the default stream); null when unknown.
/// Call with the mutex held.
Stream *getStream(void *handle) {
  if (!handle)
    return &state().defaultStream;
  auto *stream = static_cast<Stream *>(handle);
  return state().streams.count(stream) ? stream : nullptr;
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Controls
//===----------------------------------------------------------------------===//

void fakecuda_reset(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tensorMaps.clear();
  for (auto &c : s.calls)
    c = 0;
  for (int i = 0; i < NumEntries; ++i)
    s.failCount[i] = s.failResult[i] = 0;
  s.devices = 1;
  s.major = 9;
  s.minor = 0;
  s.driverVersion = 13000;
  s.maxThreadsPerBlock = 1024;
  s.maxSharedBytesOptin = 232448;
  s.spillingSuffix.clear();
  s.spillBytes = 0;
  s.launchCount = 0;
  s.copyCount = 0;
  s.memsetCount = 0;
  s.allocCount = 0;
  s.peakBytes = s.liveBytes;
  s.deviceMemory = 0;
}

void fakecuda_set_device_count(int count) { state().devices = count; }
void fakecuda_set_compute_capability(int major, int minor) {
  state().major = major;
  state().minor = minor;
}
void fakecuda_set_driver_version(int version) {
  state().driverVersion = version;
}
void fakecuda_set_max_threads_per_block(int threads) {
  state().maxThreadsPerBlock = threads;
}
void fakecuda_set_max_shared_bytes_optin(int bytes) {
  state().maxSharedBytesOptin = bytes;
}
void fakecuda_set_local_bytes(const char *suffix, int bytes) {
  state().spillingSuffix = suffix;
  state().spillBytes = bytes;
}

void fakecuda_fail_next(const char *entry, int result, int count) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (int i = 0; i < NumEntries; ++i)
    if (std::strcmp(kEntryNames[i], entry) == 0) {
      s.failResult[i] = result;
      s.failCount[i] = count;
    }
}

int fakecuda_call_count(const char *entry) {
  for (int i = 0; i < NumEntries; ++i)
    if (std::strcmp(kEntryNames[i], entry) == 0)
      return state().calls[i];
  return -1;
}

int fakecuda_launch_count(void) { return state().launchCount; }

int fakecuda_get_launch(int index, fakecuda_launch *launch) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (index < 0 || index >= s.launchCount ||
      index < s.launchCount - kMaxLaunches)
    return 0;
  *launch = s.launches[index % kMaxLaunches];
  return 1;
}

int fakecuda_copy_count(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.copyCount;
}

int fakecuda_get_copy(int index, fakecuda_copy *copy) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (index < 0 || index >= s.copyCount || index < s.copyCount - kMaxCopies)
    return 0;
  *copy = s.copies[index % kMaxCopies];
  return 1;
}

void fakecuda_set_device_memory(size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().deviceMemory = bytes;
}

int fakecuda_memset_d32_count(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.memsetCount;
}

int fakecuda_get_memset_d32(int index, struct fakecuda_memset *memset) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (index < 0 || index >= s.memsetCount ||
      index < s.memsetCount - kMaxMemsets)
    return 0;
  *memset = s.memsets[index % kMaxMemsets];
  return 1;
}

int fakecuda_tensor_map_count(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return static_cast<int>(s.tensorMaps.size());
}

int fakecuda_get_tensor_map(int index, struct fakecuda_tensor_map *map) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (index < 0 || index >= static_cast<int>(s.tensorMaps.size()))
    return 0;
  *map = s.tensorMaps[index];
  return 1;
}

int fakecuda_alloc_count(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.allocCount;
}

int fakecuda_get_alloc(int index, struct fakecuda_alloc *alloc) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (index < 0 || index >= s.allocCount || index < s.allocCount - kMaxAllocs)
    return 0;
  *alloc = s.allocs[index % kMaxAllocs];
  return 1;
}

int fakecuda_last_memset_d32(struct fakecuda_memset *memset) {
  return fakecuda_get_memset_d32(fakecuda_memset_d32_count() - 1, memset);
}

size_t fakecuda_peak_allocated_bytes(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().peakBytes;
}

int fakecuda_live_allocations(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int>(state().allocations.size());
}
int fakecuda_live_modules(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int>(state().modules.size());
}
int fakecuda_live_streams(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int>(state().streams.size());
}
int fakecuda_primary_context_retains(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().retains;
}

//===----------------------------------------------------------------------===//
// Driver API
//===----------------------------------------------------------------------===//

Result cuInit(unsigned) {
  if (Result r = enter(Init))
    return r;
  if (const char *devices = std::getenv("FAKECUDA_DEVICES"))
    state().devices = std::atoi(devices);
  return state().devices > 0 ? kSuccess : kNoDevice;
}

Result cuDriverGetVersion(int *version) {
  if (Result r = enter(DriverGetVersion))
    return r;
  *version = state().driverVersion;
  return kSuccess;
}

Result cuGetErrorName(Result error, const char **name) {
  switch (error) {
  case kSuccess:
    *name = "CUDA_SUCCESS";
    return kSuccess;
  case kInvalidValue:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return kSuccess;
  case 2:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return kSuccess;
  case kNoDevice:
    *name = "CUDA_ERROR_NO_DEVICE";
    return kSuccess;
  case kInvalidImage:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    return kSuccess;
  case 218:
    *name = "CUDA_ERROR_INVALID_PTX";
    return kSuccess;
  case kInvalidHandle:
    *name = "CUDA_ERROR_INVALID_HANDLE";
    return kSuccess;
  case kNotFound:
    *name = "CUDA_ERROR_NOT_FOUND";
    return kSuccess;
  default:
    *name = nullptr;
    return kInvalidValue;
  }
}

Result cuGetErrorString(Result error, const char **text) {
  const char *name = nullptr;
  if (cuGetErrorName(error, &name) != kSuccess)
    return kInvalidValue;
  *text = "fake driver error";
  return kSuccess;
}

Result cuDeviceGetCount(int *count) {
  if (Result r = enter(DeviceGetCount))
    return r;
  *count = state().devices;
  return kSuccess;
}

Result cuDeviceGet(int *device, int ordinal) {
  if (Result r = enter(DeviceGet))
    return r;
  if (ordinal < 0 || ordinal >= state().devices)
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

Result cuDeviceGetAttribute(int *value, int attribute, int) {
  if (Result r = enter(DeviceGetAttribute))
    return r;
  switch (attribute) {
  case 75:
    *value = state().major;
    return kSuccess;
  case 76:
    *value = state().minor;
    return kSuccess;
  case 16:
    *value = 132;
    return kSuccess;
  case 97:
    *value = state().maxSharedBytesOptin;
    return kSuccess;
  default:
    return kInvalidValue;
  }
}

Result cuDeviceGetName(char *name, int length, int) {
  if (Result r = enter(DeviceGetName))
    return r;
  std::snprintf(name, length, "Fake GPU");
  return kSuccess;
}

Result cuDevicePrimaryCtxRetain(void **context, int) {
  if (Result r = enter(PrimaryCtxRetain))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().retains;
  *context = &state().primary;
  return kSuccess;
}

Result cuDevicePrimaryCtxRelease_v2(int) {
  if (Result r = enter(PrimaryCtxRelease))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().retains;
  return kSuccess;
}

Result cuCtxGetCurrent(void **context) {
  if (Result r = enter(CtxGetCurrent))
    return r;
  *context = contextStack.empty() ? nullptr : contextStack.back();
  return kSuccess;
}

Result cuCtxPushCurrent_v2(void *context) {
  if (Result r = enter(CtxPushCurrent))
    return r;
  contextStack.push_back(context);
  return kSuccess;
}

Result cuCtxPopCurrent_v2(void **context) {
  if (Result r = enter(CtxPopCurrent))
    return r;
  if (contextStack.empty())
    return kInvalidContext;
  if (context)
    *context = contextStack.back();
  contextStack.pop_back();
  return kSuccess;
}

static bool hasContext() { return !contextStack.empty(); }

Result cuModuleLoadDataEx(void **module, const void *image, unsigned, int *,
                          void **) {
  if (Result r = enter(ModuleLoadDataEx))
    return r;
  if (!hasContext())
    return kInvalidContext;
  const char *text = static_cast<const char *>(image);
  size_t magic = sizeof(kCubinMagic) - 1;
  if (std::strncmp(text, kCubinMagic, magic) == 0)
    text += magic;
  else if (!std::strstr(text, ".version"))
    return kInvalidImage;
  auto *loaded = new Module();
  if (!parsePtx(text, *loaded)) {
    delete loaded;
    return kInvalidImage;
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  state().modules.insert(loaded);
  *module = loaded;
  return kSuccess;
}

Result cuModuleUnload(void *module) {
  if (Result r = enter(ModuleUnload))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().modules.erase(static_cast<Module *>(module)))
    return kInvalidHandle;
  delete static_cast<Module *>(module);
  return kSuccess;
}

Result cuModuleGetFunction(void **function, void *module, const char *name) {
  if (Result r = enter(ModuleGetFunction))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  auto *m = static_cast<Module *>(module);
  if (!state().modules.count(m))
    return kInvalidHandle;
  for (Function &f : m->functions)
    if (f.name == name) {
      *function = &f;
      return kSuccess;
    }
  return kNotFound;
}

Result cuFuncGetAttribute(int *value, int attribute, void *function) {
  if (Result r = enter(FuncGetAttribute))
    return r;
  if (attribute == 0) {
    *value = state().maxThreadsPerBlock;
    return kSuccess;
  }
  if (attribute == 3) { // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
    const std::string &name = static_cast<Function *>(function)->name;
    const std::string &suffix = state().spillingSuffix;
    bool spills = !suffix.empty() && name.size() >= suffix.size() &&
                  name.compare(name.size() - suffix.size(), suffix.size(),
                               suffix) == 0;
    *value = spills ? state().spillBytes : 0;
    return kSuccess;
  }
  *value = 32;
  return kSuccess;
}

Result cuFuncSetAttribute(void *, int, int) { return enter(FuncSetAttribute); }

Result cuLinkCreate_v2(unsigned, int *, void **, void **state) {
  if (Result r = enter(LinkCreate))
    return r;
  *state = new Link();
  return kSuccess;
}

Result cuLinkAddData_v2(void *state, int type, void *data, size_t size,
                        const char *, unsigned, int *, void **) {
  if (Result r = enter(LinkAddData))
    return r;
  if (type != 1 || !data)
    return kInvalidValue;
  std::string ptx(static_cast<const char *>(data), size);
  if (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  Module probe;
  if (!parsePtx(ptx, probe))
    return 218; // CUDA_ERROR_INVALID_PTX
  static_cast<Link *>(state)->ptx += ptx;
  return kSuccess;
}

Result cuLinkComplete(void *state, void **cubin, size_t *size) {
  if (Result r = enter(LinkComplete))
    return r;
  auto *link = static_cast<Link *>(state);
  link->cubin = kCubinMagic + link->ptx;
  *cubin = link->cubin.data();
  *size = link->cubin.size() + 1; // with the terminating NUL
  return kSuccess;
}

Result cuLinkDestroy(void *state) {
  if (Result r = enter(LinkDestroy))
    return r;
  delete static_cast<Link *>(state);
  return kSuccess;
}

/// A recorded launch; `programmatic`: its programmatic stream
/// serialization (cuLaunchKernelEx).
static Result recordLaunch(void *function, unsigned gridX, unsigned gridY,
                           unsigned gridZ, unsigned blockX, unsigned blockY,
                           unsigned blockZ, unsigned shared, void *stream,
                           void **params, int programmatic) {
  State &s = state();
  auto *f = static_cast<Function *>(function);
  if (!f || !hasContext() || gridX == 0 || gridY == 0 || gridZ == 0 ||
      blockX * blockY * blockZ > static_cast<unsigned>(s.maxThreadsPerBlock) ||
      shared > static_cast<unsigned>(s.maxSharedBytesOptin))
    return kInvalidValue;
  std::lock_guard<std::mutex> lock(s.mutex);
  Stream *clock = getStream(stream);
  if (!clock)
    return kInvalidHandle;
  int index = s.launchCount++;
  {
    fakecuda_launch &launch = s.launches[index % kMaxLaunches];
    std::snprintf(launch.kernel, sizeof(launch.kernel), "%s", f->name.c_str());
    launch.grid[0] = gridX;
    launch.grid[1] = gridY;
    launch.grid[2] = gridZ;
    launch.block[0] = blockX;
    launch.block[1] = blockY;
    launch.block[2] = blockZ;
    launch.shared_bytes = shared;
    launch.stream = stream;
    launch.num_params = f->numParams;
    for (int i = 0; i < f->numParams && i < 32; ++i)
      std::memcpy(&launch.params[i], params[i], sizeof(uint64_t));
    launch.programmatic = programmatic;
  }
  clock->clockNs += f->fixedNs + f->perCtaNs * gridX;
  return kSuccess;
}

Result cuLaunchKernel(void *function, unsigned gridX, unsigned gridY,
                      unsigned gridZ, unsigned blockX, unsigned blockY,
                      unsigned blockZ, unsigned shared, void *stream,
                      void **params, void **) {
  if (Result r = enter(LaunchKernel))
    return r;
  return recordLaunch(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                      shared, stream, params, 0);
}

/// CUlaunchConfig and CUlaunchAttribute, as cuda.h lays them out.
struct FakeLaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic;
  } value;
};
struct FakeLaunchConfig {
  unsigned gridX, gridY, gridZ, blockX, blockY, blockZ, shared;
  void *stream;
  FakeLaunchAttribute *attrs;
  unsigned numAttrs;
};

/// cuLaunchKernel with programmatic stream serialization (attribute 6, the
/// only one accepted) recorded.
Result cuLaunchKernelEx(const FakeLaunchConfig *config, void *function,
                        void **params, void **) {
  if (Result r = enter(LaunchKernelEx))
    return r;
  if (!config || (config->numAttrs && !config->attrs))
    return kInvalidValue;
  int programmatic = 0;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id != 6)
      return kInvalidValue;
    programmatic = config->attrs[i].value.programmatic;
  }
  return recordLaunch(function, config->gridX, config->gridY, config->gridZ,
                      config->blockX, config->blockY, config->blockZ,
                      config->shared, config->stream, params, programmatic);
}

Result cuMemAlloc_v2(unsigned long long *pointer, size_t bytes) {
  if (Result r = enter(MemAlloc))
    return r;
  if (!hasContext())
    return kInvalidContext;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.deviceMemory && bytes > s.deviceMemory - s.liveBytes)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return 2;
  s.allocations.emplace(memory, bytes);
  s.liveBytes += bytes;
  s.peakBytes = std::max(s.peakBytes, s.liveBytes);
  *pointer = reinterpret_cast<uintptr_t>(memory);
  s.allocs[s.allocCount++ % kMaxAllocs] = {*pointer, bytes,
                                          s.launchCount.load()};
  return kSuccess;
}

Result cuMemFree_v2(unsigned long long pointer) {
  if (Result r = enter(MemFree))
    return r;
  void *memory = reinterpret_cast<void *>(pointer);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(memory);
  if (it == s.allocations.end())
    return kInvalidValue;
  s.liveBytes -= it->second;
  s.allocations.erase(it);
  std::free(memory);
  return kSuccess;
}

Result cuMemsetD32Async(unsigned long long pointer, unsigned value,
                        size_t count, void *stream) {
  if (Result r = enter(MemsetD32Async))
    return r;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!getStream(stream))
    return kInvalidHandle;
  // Within one allocation, as the real driver checks.
  auto *start = reinterpret_cast<unsigned char *>(pointer);
  bool inside = false;
  for (const auto &[memory, bytes] : s.allocations) {
    auto *base = static_cast<unsigned char *>(memory);
    if (start >= base && start + count * 4 <= base + bytes)
      inside = true;
  }
  if (!inside || pointer % 4 != 0)
    return kInvalidValue;
  auto *words = reinterpret_cast<uint32_t *>(pointer);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  s.memsets[s.memsetCount++ % kMaxMemsets] = {pointer, value, count, stream,
                                              s.launchCount.load()};
  return kSuccess;
}

Result cuMemsetD8_v2(unsigned long long pointer, unsigned char value,
                     size_t count) {
  if (Result r = enter(MemsetD8))
    return r;
  // No fake kernel reads memory: leave large (tuning) buffers untouched, so
  // they cost address space only.
  if (count <= (1 << 20))
    std::memset(reinterpret_cast<void *>(pointer), value, count);
  return kSuccess;
}

Result cuMemcpyHtoD_v2(unsigned long long destination, const void *source,
                       size_t bytes) {
  if (Result r = enter(MemcpyHtoD))
    return r;
  std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  fakecuda_copy &copy = s.copies[s.copyCount++ % kMaxCopies];
  copy.destination = destination;
  copy.bytes = bytes;
  std::memset(copy.data, 0, sizeof(copy.data));
  std::memcpy(copy.data, source, std::min(bytes, sizeof(copy.data)));
  copy.launches_before = s.launchCount.load();
  return kSuccess;
}

Result cuMemcpyDtoH_v2(void *destination, unsigned long long source,
                       size_t bytes) {
  if (Result r = enter(MemcpyDtoH))
    return r;
  std::memcpy(destination, reinterpret_cast<const void *>(source), bytes);
  return kSuccess;
}

Result cuStreamCreate(void **stream, unsigned) {
  if (Result r = enter(StreamCreate))
    return r;
  auto *created = new Stream();
  std::lock_guard<std::mutex> lock(state().mutex);
  state().streams.insert(created);
  *stream = created;
  return kSuccess;
}

Result cuStreamDestroy_v2(void *stream) {
  if (Result r = enter(StreamDestroy))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().streams.erase(static_cast<Stream *>(stream)))
    return kInvalidHandle;
  delete static_cast<Stream *>(stream);
  return kSuccess;
}

Result cuStreamSynchronize(void *) { return enter(StreamSynchronize); }

Result cuEventCreate(void **event, unsigned) {
  if (Result r = enter(EventCreate))
    return r;
  *event = new Event();
  return kSuccess;
}

Result cuEventRecord(void *event, void *stream) {
  if (Result r = enter(EventRecord))
    return r;
  std::lock_guard<std::mutex> lock(state().mutex);
  Stream *clock = getStream(stream);
  if (!clock)
    return kInvalidHandle;
  static_cast<Event *>(event)->timeNs = clock->clockNs;
  return kSuccess;
}

Result cuEventSynchronize(void *) { return enter(EventSynchronize); }

Result cuEventElapsedTime_v2(float *milliseconds, void *start, void *stop) {
  if (Result r = enter(EventElapsedTime))
    return r;
  auto *a = static_cast<Event *>(start);
  auto *b = static_cast<Event *>(stop);
  if (a->timeNs < 0 || b->timeNs < 0)
    return kInvalidHandle;
  *milliseconds = static_cast<float>((b->timeNs - a->timeNs) / 1e6);
  return kSuccess;
}

Result cuEventDestroy_v2(void *event) {
  if (Result r = enter(EventDestroy))
    return r;
  delete static_cast<Event *>(event);
  return kSuccess;
}

/// Records the request and writes its index into the map's first 8 bytes
/// (the real encoding is the driver's own).
Result cuTensorMapEncodeTiled(void *map, int dataType, unsigned rank,
                              void *address, const unsigned long long *dims,
                              const unsigned long long *strides,
                              const unsigned *box,
                              const unsigned *elementStrides, int interleave,
                              int swizzle, int l2Promotion, int oobFill) {
  if (Result r = enter(TensorMapEncodeTiled))
    return r;
  if (!map || rank < 1 || rank > 5 || !dims || !box || !elementStrides ||
      (rank > 1 && !strides) || reinterpret_cast<uintptr_t>(map) % 64 != 0)
    return kInvalidValue;
  fakecuda_tensor_map record = {};
  record.data_type = dataType;
  record.rank = rank;
  record.address = reinterpret_cast<uint64_t>(address);
  for (unsigned i = 0; i < rank; ++i) {
    record.dims[i] = dims[i];
    record.box[i] = box[i];
    record.element_strides[i] = elementStrides[i];
    if (i + 1 < rank)
      record.strides[i] = strides[i];
  }
  record.interleave = interleave;
  record.swizzle = swizzle;
  record.l2_promotion = l2Promotion;
  record.oob_fill = oobFill;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  uint64_t index = s.tensorMaps.size();
  std::memcpy(map, &index, sizeof index);
  s.tensorMaps.push_back(record);
  return kSuccess;
}

} // extern "C"
