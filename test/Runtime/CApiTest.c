/*===- CApiTest.c - the C API, called from C ------------------------------===*\
|*                                                                            *|
|* Compiled as C: proves normjit.h is a C header, and checks every entry     *|
|* point's error paths and one full launch on the fake driver, with the      *|
|* kernel served from a bundle. Usage: normjit-capi-test <fake libcuda>      *|
|* <bundle> [--attention] (the bundle also holds normjit-write-test-bundle's *|
|* attention operations: test them too). Prints one line per check for      *|
|* FileCheck; exits 1 on failure.                                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "runtime/normjit.h"
#include "test/Unit/Runtime/FakeCuda.h"

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,         \
              #condition);                                                     \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Prints "<what>: <status name>: <message>" and checks the status. */
static void expect(const char *what, normjit_status got, normjit_status want) {
  printf("%s: %s: %s\n", what, normjit_status_name(got),
         got == NORMJIT_SUCCESS ? "" : normjit_last_error());
  if (got != want) {
    fprintf(stderr, "%s: got %s, expected %s\n", what, normjit_status_name(got),
            normjit_status_name(want));
    ++failures;
  }
}

enum { kHidden = 4096, kRows = 4 };
static alignas(256) char input[kRows * kHidden * 2];
static alignas(256) char weight[kHidden * 2];
static alignas(256) char output[kRows * kHidden * 2];

static void testStatusNames(void) {
  CHECK(strcmp(normjit_status_name(NORMJIT_SUCCESS), "success") == 0);
  CHECK(strcmp(normjit_status_name(NORMJIT_ERROR_NO_DRIVER),
               "no CUDA driver") == 0);
  CHECK(strcmp(normjit_status_name((normjit_status)99), "unknown status") == 0);
  CHECK(strcmp(normjit_last_error(), "") == 0);
}

static void testContextErrors(const char *fake) {
  normjit_context_options options;
  normjit_context *context = (normjit_context *)&options;
  expect("null options", normjit_context_create(NULL, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(context == NULL);
  normjit_context_options_init(&options);
  expect("null output", normjit_context_create(&options, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  options.struct_size = 8;
  expect("struct size", normjit_context_create(&options, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_context_options_init(&options);
  options.flags = NORMJIT_CONTEXT_NO_DISK_CACHE | (1u << 9);
  expect("unknown context flag", normjit_context_create(&options, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_context_options_init(&options);
  options.num_bundles = 2;
  expect("bundles", normjit_context_create(&options, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_context_options_init(&options);
  options.driver_library = "/nonexistent/libcuda.so.1";
  expect("no driver", normjit_context_create(&options, &context),
         NORMJIT_ERROR_NO_DRIVER);
  options.driver_library = fake;
  fakecuda_set_device_count(0);
  expect("no device", normjit_context_create(&options, &context),
         NORMJIT_ERROR_NO_DEVICE);
  fakecuda_set_device_count(1);
  options.device = 3;
  expect("device 3", normjit_context_create(&options, &context),
         NORMJIT_ERROR_NO_DEVICE);
  CHECK(context == NULL);
  normjit_context_destroy(NULL);
  /* Programmatic dependent launch (API 7): compute capability 9.0 on. */
  options.device = 0;
  options.flags = NORMJIT_CONTEXT_PDL | NORMJIT_CONTEXT_NO_DISK_CACHE;
  expect("pdl context", normjit_context_create(&options, &context),
         NORMJIT_SUCCESS);
  normjit_context_destroy(context);
  context = NULL;
  fakecuda_set_compute_capability(8, 0);
  expect("pdl on sm_80", normjit_context_create(&options, &context),
         NORMJIT_ERROR_UNSUPPORTED);
  CHECK(context == NULL);
  fakecuda_set_compute_capability(9, 0);
}

static void testVersion(void) {
  uint32_t major = 0, minor = 0, patch = 99, api = 0;
  normjit_get_version(&major, &minor, &patch, &api);
  CHECK(major == NORMJIT_VERSION_MAJOR && minor == NORMJIT_VERSION_MINOR &&
        patch == NORMJIT_VERSION_PATCH && api == NORMJIT_API_VERSION);
  CHECK(api == 13);
  normjit_get_version(NULL, NULL, NULL, NULL);
  normjit_get_version(NULL, NULL, NULL, &api);
  printf("version: %u.%u.%u api %u\n", major, minor, patch, api);
}

/* Programs built against an older header pass their smaller struct: the
 * library reads nothing past struct_size. */
static void testOlderCallers(const char *fake, const char *bundle) {
  union {
    normjit_context_options options;
    unsigned char bytes[sizeof(normjit_context_options) + 8];
  } old;
  /* Garbage past the API 1 layout: refused if it were read (a scratch
   * budget beyond INT64_MAX). */
  memset(&old, 0xff, sizeof(old));
  normjit_context_options_init_sized(&old.options,
                                     NORMJIT_CONTEXT_OPTIONS_SIZE_V1);
  CHECK(old.options.struct_size == NORMJIT_CONTEXT_OPTIONS_SIZE_V1);
  for (size_t i = NORMJIT_CONTEXT_OPTIONS_SIZE_V1; i < sizeof(old.bytes); ++i)
    CHECK(old.bytes[i] == 0xff); /* not written either */
  const char *bundles[] = {bundle};
  old.options.driver_library = fake;
  old.options.bundles = bundles;
  old.options.num_bundles = 1;
  old.options.flags = NORMJIT_CONTEXT_NO_DISK_CACHE;
  normjit_context *context = NULL;
  expect("API 1 options", normjit_context_create(&old.options, &context),
         NORMJIT_SUCCESS);
  normjit_context_destroy(context);
  /* The same bytes within struct_size are read, and refused. */
  old.options.struct_size = sizeof(normjit_context_options);
  expect("garbage scratch budget",
         normjit_context_create(&old.options, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  old.options.struct_size = NORMJIT_CONTEXT_OPTIONS_SIZE_V1 - 4;
  expect("options too small", normjit_context_create(&old.options, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(context == NULL);

  /* The API 1 entry point (the name without the macro) fills the API 1
   * layout only. */
  memset(&old, 0xff, sizeof(old));
  (normjit_context_options_init)(&old.options);
  CHECK(old.options.struct_size == NORMJIT_CONTEXT_OPTIONS_SIZE_V1);
  CHECK(old.options.log_level == -1 && old.options.flags == 0 &&
        old.options.bundles == NULL);
  for (size_t i = NORMJIT_CONTEXT_OPTIONS_SIZE_V1; i < sizeof(old.bytes); ++i)
    CHECK(old.bytes[i] == 0xff);

  /* This header's size: every field, the budget's default 0. */
  normjit_context_options_init(&old.options);
  CHECK(old.options.struct_size == sizeof(normjit_context_options));
  CHECK(old.options.tuning_scratch_bytes == 0);
  old.options.driver_library = fake;
  old.options.tuning_scratch_bytes = 1u << 20;
  expect("scratch budget", normjit_context_create(&old.options, &context),
         NORMJIT_SUCCESS);
  normjit_context_destroy(context);
  /* A newer header's larger struct: refused, not partly ignored. */
  normjit_context_options_init_sized(&old.options, sizeof(old.bytes));
  CHECK(old.options.struct_size == sizeof(old.bytes));
  old.options.driver_library = fake;
  expect("options too large", normjit_context_create(&old.options, &context),
         NORMJIT_ERROR_INVALID_ARGUMENT);
}

/* API 1 and 2 programs: 88-byte descs and 14-tensor launch arguments (and
 * the API 1 init entry points) keep working with row kernels; nothing past
 * their struct_size is read or written. */
static void testOlderStructs(normjit_context *context) {
  union {
    normjit_op_desc desc;
    unsigned char bytes[sizeof(normjit_op_desc) + 8];
  } oldDesc;
  union {
    normjit_launch_args args;
    unsigned char bytes[sizeof(normjit_launch_args) + 8];
  } oldArgs;
  /* Garbage past the API 1 layouts: a NaN scale, buffers with reserved
   * bits set, both refused if they were read. */
  memset(&oldDesc, 0xff, sizeof(oldDesc));
  memset(&oldArgs, 0xff, sizeof(oldArgs));
  (normjit_op_desc_init)(&oldDesc.desc);
  CHECK(oldDesc.desc.struct_size == NORMJIT_OP_DESC_SIZE_V1);
  CHECK(oldDesc.desc.kind == NORMJIT_OP_RMS_NORM && oldDesc.desc.eps == 1e-6);
  for (size_t i = NORMJIT_OP_DESC_SIZE_V1; i < sizeof(oldDesc.bytes); ++i)
    CHECK(oldDesc.bytes[i] == 0xff);
  (normjit_launch_args_init)(&oldArgs.args);
  CHECK(oldArgs.args.struct_size == NORMJIT_LAUNCH_ARGS_SIZE_V1);
  for (size_t i = NORMJIT_LAUNCH_ARGS_SIZE_V1; i < sizeof(oldArgs.bytes); ++i)
    CHECK(oldArgs.bytes[i] == 0xff);
  oldDesc.desc.hidden = kHidden;
  oldDesc.desc.flags = NORMJIT_OP_WEIGHT;
  normjit_kernel *kernel = NULL;
  expect("API 2 desc", normjit_kernel_create(context, &oldDesc.desc, 0, &kernel),
         NORMJIT_SUCCESS);
  if (!kernel)
    return;
  normjit_launch_args_set(&oldArgs.args, NORMJIT_INPUT, input, NORMJIT_BF16,
                          kHidden, 0);
  normjit_launch_args_set(&oldArgs.args, NORMJIT_WEIGHT, weight, NORMJIT_BF16,
                          kHidden, 0);
  normjit_launch_args_set(&oldArgs.args, NORMJIT_OUTPUT, output, NORMJIT_BF16,
                          kHidden, 0);
  expect("API 2 buffer past the struct",
         normjit_launch_args_set(&oldArgs.args, NORMJIT_V, input, NORMJIT_BF16,
                                 kHidden, 0),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  int before = fakecuda_launch_count();
  expect("API 2 launch args",
         normjit_kernel_launch(kernel, &oldArgs.args, kRows, NULL),
         NORMJIT_SUCCESS);
  CHECK(fakecuda_launch_count() == before + 1);
  for (size_t i = NORMJIT_LAUNCH_ARGS_SIZE_V1; i < sizeof(oldArgs.bytes); ++i)
    CHECK(oldArgs.bytes[i] == 0xff);
  /* The same garbage inside struct_size is read, and refused. */
  oldArgs.args.struct_size = sizeof(normjit_launch_args);
  expect("garbage tensors",
         normjit_kernel_launch(kernel, &oldArgs.args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  oldDesc.desc.struct_size = sizeof(normjit_op_desc);
  normjit_kernel *refused = NULL;
  expect("garbage scale",
         normjit_kernel_create(context, &oldDesc.desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  /* A bundle of API 2 descs: the array steps by their struct_size. */
  normjit_op_desc descs[2];
  normjit_op_desc_init(&descs[0]);
  descs[0].hidden = kHidden;
  descs[1] = descs[0];
  descs[1].struct_size = NORMJIT_OP_DESC_SIZE_V1;
  expect("bundle of mixed descs",
         normjit_context_write_bundle(context, descs, 2, "/dev/null"),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_kernel_destroy(kernel);
}

static void testKernelErrors(normjit_context *context) {
  normjit_op_desc desc;
  normjit_kernel *kernel = NULL;
  normjit_op_desc_init(&desc);
  desc.hidden = kHidden;
  desc.flags = NORMJIT_OP_WEIGHT;
  expect("null context", normjit_kernel_create(NULL, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("null desc", normjit_kernel_create(context, NULL, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("null kernel output", normjit_kernel_create(context, &desc, 0, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("unknown kernel flag",
         normjit_kernel_create(context, &desc, 1u << 7, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.kind = 11;
  expect("unknown kind", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.kind = NORMJIT_OP_RMS_NORM;
  desc.output_type = 7;
  expect("unknown dtype", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.output_type = NORMJIT_I32;
  expect("i32 output", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.output_type = NORMJIT_BF16;
  desc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_CAUSAL;
  expect("causal rms_norm", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.flags = NORMJIT_OP_WEIGHT;
  desc.scale = 0.5;
  expect("scaled rms_norm", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.scale = 0;
  desc.rope = NORMJIT_ROPE_NEOX;
  expect("rope rms_norm", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.rope = NORMJIT_ROPE_NONE;
  desc.flags = 1u << 31;
  expect("unknown op flag", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.flags = NORMJIT_OP_WEIGHT;
  desc.hidden = 0;
  expect("hidden 0", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.hidden = kHidden;
  desc.flags = NORMJIT_OP_RESIDUAL_OUT;
  expect("residual without addend",
         normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.flags = NORMJIT_OP_WEIGHT;
  desc.struct_size = 4;
  expect("desc struct size", normjit_kernel_create(context, &desc, 0, &kernel),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(kernel == NULL);
}

static void testLaunch(normjit_context *context) {
  normjit_op_desc desc;
  normjit_op_desc_init(&desc);
  desc.hidden = kHidden;
  desc.flags = NORMJIT_OP_WEIGHT;
  normjit_kernel *kernel = NULL;
  expect("kernel from bundle",
         normjit_kernel_create(context, &desc, 0, &kernel), NORMJIT_SUCCESS);
  if (!kernel)
    return;

  normjit_launch_args args;
  normjit_launch_args_init(&args);
  expect("set input",
         normjit_launch_args_set(&args, NORMJIT_INPUT, input, NORMJIT_BF16,
                                 kHidden, 0),
         NORMJIT_SUCCESS);
  normjit_launch_args_set(&args, NORMJIT_OUTPUT, output, NORMJIT_BF16, kHidden,
                          0);
  expect("unknown buffer",
         normjit_launch_args_set(&args, NORMJIT_NUM_BUFFERS, weight,
                                 NORMJIT_BF16, kHidden, 0),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("unknown dtype",
         normjit_launch_args_set(&args, NORMJIT_WEIGHT, weight, 6, kHidden, 0),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_launch_args_set(&args, NORMJIT_WEIGHT, weight, NORMJIT_I32, kHidden,
                          0);
  expect("i32 weight", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  memset(&args.tensors[NORMJIT_WEIGHT], 0, sizeof(normjit_tensor));
  expect("missing weight", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_launch_args_set(&args, NORMJIT_WEIGHT, weight, NORMJIT_BF16, kHidden,
                          0);
  expect("null kernel", normjit_kernel_launch(NULL, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("null args", normjit_kernel_launch(kernel, NULL, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("negative rows", normjit_kernel_launch(kernel, &args, -1, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(fakecuda_launch_count() == 0);
  expect("zero rows", normjit_kernel_launch(kernel, &args, 0, NULL),
         NORMJIT_SUCCESS);
  CHECK(fakecuda_launch_count() == 0);

  expect("launch", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_SUCCESS);
  struct fakecuda_launch launch;
  CHECK(fakecuda_get_launch(0, &launch));
  CHECK(launch.num_params == 6); /* input, weight, output, rows, 2 strides */
  CHECK(launch.params[0] == (uint64_t)(uintptr_t)input);
  CHECK(launch.params[1] == (uint64_t)(uintptr_t)weight);
  CHECK(launch.params[2] == (uint64_t)(uintptr_t)output);
  CHECK(launch.params[3] == kRows);
  CHECK(launch.params[4] == kHidden && launch.params[5] == kHidden);
  printf("kernel: %s\n", launch.kernel);

  normjit_launch_config config;
  expect("config", normjit_kernel_get_config(kernel, kRows, &config),
         NORMJIT_SUCCESS);
  CHECK(config.vector == 8 && config.threads_per_row > 0 &&
        config.warps > 0 && config.rows_per_cta > 0);
  expect("config rows 0", normjit_kernel_get_config(kernel, 0, &config),
         NORMJIT_ERROR_INVALID_ARGUMENT);

  /* Normalizing in place: the output must not alias the input. */
  normjit_launch_args_set(&args, NORMJIT_OUTPUT, input, NORMJIT_BF16, kHidden,
                          0);
  expect("in place", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(fakecuda_launch_count() == 1);
  /* A kernel built for it (API 7) takes exactly the input, nothing else. */
  desc.flags = NORMJIT_OP_WEIGHT | NORMJIT_OP_OUTPUT_OVER_INPUT;
  normjit_kernel *inPlace = NULL;
  expect("in-place kernel", normjit_kernel_create(context, &desc, 0, &inPlace),
         NORMJIT_SUCCESS);
  if (inPlace) {
    /* A context that tunes has launched candidates by now. */
    int before = fakecuda_launch_count();
    expect("launch in place", normjit_kernel_launch(inPlace, &args, kRows, NULL),
           NORMJIT_SUCCESS);
    CHECK(fakecuda_get_launch(before, &launch));
    CHECK(launch.params[2] == (uint64_t)(uintptr_t)input &&
          launch.params[0] == launch.params[2]);
    normjit_launch_args_set(&args, NORMJIT_OUTPUT, input + 2 * kHidden,
                            NORMJIT_BF16, kHidden, 0);
    expect("one row off", normjit_kernel_launch(inPlace, &args, kRows, NULL),
           NORMJIT_ERROR_INVALID_ARGUMENT);
    CHECK(fakecuda_launch_count() == before + 1);
    normjit_kernel_destroy(inPlace);
  }
  int launches = fakecuda_launch_count();
  desc.flags = NORMJIT_OP_WEIGHT;
  normjit_launch_args_set(&args, NORMJIT_OUTPUT, output, NORMJIT_BF16, kHidden,
                          0);

  /* One element off: the scalar variant; one byte off: refused. */
  normjit_launch_args_set(&args, NORMJIT_INPUT, input + 2, NORMJIT_BF16,
                          kHidden, 0);
  expect("shifted input", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_SUCCESS);
  CHECK(fakecuda_get_launch(fakecuda_launch_count() - 1, &launch));
  printf("scalar kernel: %s\n", launch.kernel);
  normjit_launch_args_set(&args, NORMJIT_INPUT, input + 1, NORMJIT_BF16,
                          kHidden, 0);
  expect("odd input", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_MISALIGNED);
  normjit_launch_args_set(&args, NORMJIT_INPUT, input, NORMJIT_BF16, kHidden,
                          0);
  args.reserved = 1;
  expect("args reserved", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  args.reserved = 0;
  args.tensors[NORMJIT_WEIGHT].reserved = -1;
  expect("tensor reserved", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  args.tensors[NORMJIT_WEIGHT].reserved = 0;
  args.struct_size = 0;
  expect("args struct size", normjit_kernel_launch(kernel, &args, kRows, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(fakecuda_launch_count() == launches + 1);
  normjit_kernel_destroy(kernel);
  normjit_kernel_destroy(NULL);

  expect("bundle without path",
         normjit_context_write_bundle(context, &desc, 1, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  /* More descriptions than a vector can hold: an exception inside (C++
   * std::length_error), a status here. */
  expect("bundle of SIZE_MAX descs",
         normjit_context_write_bundle(context, &desc, SIZE_MAX, "/dev/null"),
         NORMJIT_ERROR_INTERNAL);
}

/* A fixed configuration, and what get_tuning says about each kind of plan. */
static void testFixedConfig(normjit_context *context) {
  normjit_op_desc desc;
  normjit_op_desc_init(&desc);
  desc.hidden = kHidden;
  desc.flags = NORMJIT_OP_WEIGHT;
  normjit_kernel *planned = NULL, *fixed = NULL;
  if (normjit_kernel_create(context, &desc, 0, &planned) != NORMJIT_SUCCESS)
    return;
  normjit_tuning_info info;
  memset(&info, 0, sizeof(info));
  expect("tuning info size", normjit_kernel_get_tuning(planned, 1, &info, NULL, 0),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  info.struct_size = sizeof(info);
  expect("tuning info", normjit_kernel_get_tuning(planned, kRows, &info, NULL, 0),
         NORMJIT_SUCCESS);
  CHECK(info.source == NORMJIT_PLAN_BUNDLE && info.num_candidates == 0);
  normjit_candidate candidate;
  expect("tuning null candidates",
         normjit_kernel_get_tuning(planned, kRows, &info, NULL, 1),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("tuning rows 0",
         normjit_kernel_get_tuning(planned, 0, &info, &candidate, 1),
         NORMJIT_ERROR_INVALID_ARGUMENT);

  /* The bundle's configuration of the largest bucket, now for every row. */
  normjit_launch_config config, got;
  normjit_kernel_get_config(planned, 100000, &config);
  expect("fixed null config",
         normjit_kernel_create_with_config(context, &desc, NULL, 0, &fixed),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  expect("fixed config", normjit_kernel_create_with_config(
                             context, &desc, &config,
                             NORMJIT_KERNEL_REFUSE_MISALIGNED, &fixed),
         NORMJIT_SUCCESS);
  if (fixed) {
    normjit_kernel_get_config(fixed, 1, &got);
    CHECK(memcmp(&got, &config, sizeof(got)) == 0);
    CHECK(normjit_kernel_get_tuning(fixed, 1, &info, NULL, 0) ==
              NORMJIT_SUCCESS &&
          info.source == NORMJIT_PLAN_FIXED &&
          memcmp(&info.config, &config, sizeof(config)) == 0);
    normjit_kernel_destroy(fixed);
  }
  fixed = NULL;
  config.threads_per_row = 1024; /* 1023 of its threads would have no work */
  config.warps = 32;
  config.rows_per_cta = 1;
  expect("fixed config too wide",
         normjit_kernel_create_with_config(context, &desc, &config, 0, &fixed),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(fixed == NULL);
  normjit_kernel_destroy(planned);
}

/* Attention (API 3), served from the bundle: the causal GQA operation of
 * normjit-write-test-bundle (head dim 128, 4 query and 2 key/value heads)
 * on a packed qkv, and the QK-Norm one (head dim 64, 4 and 1 heads, rms
 * with 1 + w weights, lse) on separate tensors. */
enum {
  kHeadDim = 128,
  kQHeads = 4,
  kKvHeads = 2,
  kTokens = 100,
  kBatch = 3,
  kQCols = kQHeads * kHeadDim,
  kKvCols = kKvHeads * kHeadDim,
  kQkvCols = kQCols + 2 * kKvCols
};
static alignas(256) char qkv[kTokens * kQkvCols * 2];
static alignas(256) char attnOut[kTokens * kQCols * 2];
static alignas(256) int32_t cuSeqlens[kBatch + 1] = {0, 40, 41, kTokens};
static alignas(256) float lse[kTokens * kQHeads];
static alignas(256) char qWeight[64 * 2], kWeight[64 * 2];

static normjit_op_desc attentionDesc(int64_t headDim, int64_t kvHeads,
                                     uint32_t flags) {
  normjit_op_desc desc;
  normjit_op_desc_init(&desc);
  desc.kind = NORMJIT_OP_ATTENTION;
  desc.hidden = headDim;
  desc.num_q_heads = kQHeads;
  desc.num_kv_heads = kvHeads;
  desc.flags = flags;
  return desc;
}

/* q, k and v as column slices of qkv; the output after it. */
static void setPackedAttention(normjit_launch_args *args) {
  normjit_launch_args_init(args);
  normjit_launch_args_set(args, NORMJIT_Q, qkv, NORMJIT_BF16, kQCols,
                          kQkvCols);
  normjit_launch_args_set(args, NORMJIT_K, qkv + kQCols * 2, NORMJIT_BF16,
                          kKvCols, kQkvCols);
  normjit_launch_args_set(args, NORMJIT_V, qkv + (kQCols + kKvCols) * 2,
                          NORMJIT_BF16, kKvCols, kQkvCols);
  normjit_launch_args_set(args, NORMJIT_CU_SEQLENS, cuSeqlens, NORMJIT_I32,
                          kBatch + 1, 0);
  normjit_launch_args_set(args, NORMJIT_OUTPUT, attnOut, NORMJIT_BF16, kQCols,
                          0);
}

static void testAttention(normjit_context *context) {
  normjit_op_desc desc = attentionDesc(kHeadDim, kKvHeads, NORMJIT_OP_CAUSAL);
  normjit_kernel *kernel = NULL;
  expect("attention from bundle",
         normjit_kernel_create(context, &desc, 0, &kernel), NORMJIT_SUCCESS);
  if (!kernel)
    return;
  {
    /* API 3's first layout ended before rope: the bytes past it are not
     * read (no rotary embeddings), the same bytes within it are refused. */
    union {
      normjit_op_desc desc;
      unsigned char bytes[sizeof(normjit_op_desc)];
    } early;
    size_t end = offsetof(normjit_op_desc, rope);
    early.desc = desc;
    memset(early.bytes + end, 0xff, sizeof(early) - end);
    early.desc.struct_size = (uint32_t)end;
    normjit_kernel *same = NULL;
    expect("desc before rope",
           normjit_kernel_create(context, &early.desc, 0, &same),
           NORMJIT_SUCCESS);
    normjit_kernel_destroy(same);
    early.desc.struct_size = sizeof(normjit_op_desc);
    same = NULL;
    expect("garbage rope",
           normjit_kernel_create(context, &early.desc, 0, &same),
           NORMJIT_ERROR_INVALID_ARGUMENT);
    CHECK(same == NULL);
  }
  normjit_launch_config2 config;
  expect("attention config",
         normjit_kernel_get_config2(kernel, kTokens, &config),
         NORMJIT_SUCCESS);
  CHECK(config.vector == 8 && config.threads_per_row == 16 &&
        config.rows_per_cta == 16 * config.warps && config.block_n > 0 &&
        config.stages > 0);

  normjit_launch_args args;
  setPackedAttention(&args);
  int before = fakecuda_launch_count();
  expect("attention launch",
         normjit_kernel_launch(kernel, &args, kTokens, NULL), NORMJIT_SUCCESS);
  struct fakecuda_launch launch;
  CHECK(fakecuda_launch_count() == before + 1);
  CHECK(fakecuda_get_launch(before, &launch));
  printf("attention kernel: %s\n", launch.kernel);
  /* q, k, v, cu_seqlens, output, rows, batch, 4 strides. */
  CHECK(launch.num_params == 11);
  CHECK(launch.params[0] == (uint64_t)(uintptr_t)qkv);
  CHECK(launch.params[1] == (uint64_t)(uintptr_t)(qkv + kQCols * 2));
  CHECK(launch.params[2] ==
        (uint64_t)(uintptr_t)(qkv + (kQCols + kKvCols) * 2));
  CHECK(launch.params[3] == (uint64_t)(uintptr_t)cuSeqlens);
  CHECK(launch.params[4] == (uint64_t)(uintptr_t)attnOut);
  CHECK(launch.params[5] == kTokens && launch.params[6] == kBatch);
  CHECK(launch.params[7] == kQkvCols && launch.params[8] == kQkvCols &&
        launch.params[9] == kQkvCols && launch.params[10] == kQCols);
  int64_t tiles = (kTokens + config.rows_per_cta - 1) / config.rows_per_cta;
  CHECK(launch.grid[0] == kQHeads * (tiles + kBatch));
  CHECK(launch.grid[1] == 1 && launch.grid[2] == 1);
  CHECK(launch.block[0] == 32 * config.warps);
  printf("attention grid: %u = %d * (ceil(%d / %lld) + %d), block %u\n",
         launch.grid[0], kQHeads, kTokens, (long long)config.rows_per_cta,
         kBatch, launch.block[0]);

  /* Every refusal; nothing is launched. */
  before = fakecuda_launch_count();
  normjit_launch_args_set(&args, NORMJIT_CU_SEQLENS, NULL, NORMJIT_I32, 0, 0);
  expect("no cu_seqlens", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_launch_args_set(&args, NORMJIT_CU_SEQLENS, cuSeqlens, NORMJIT_I32, 1,
                          0);
  expect("one offset", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_launch_args_set(&args, NORMJIT_CU_SEQLENS, cuSeqlens, NORMJIT_F32,
                          kBatch + 1, 0);
  expect("f32 offsets", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  setPackedAttention(&args);
  normjit_launch_args_set(&args, NORMJIT_Q, qkv, NORMJIT_I32, kQCols, kQkvCols);
  expect("i32 q", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_launch_args_set(&args, NORMJIT_Q, qkv + 2, NORMJIT_BF16, kQCols,
                          kQkvCols);
  expect("misaligned q", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_MISALIGNED);
  setPackedAttention(&args);
  normjit_launch_args_set(&args, NORMJIT_V, qkv + (kQCols + kKvCols) * 2,
                          NORMJIT_BF16, kKvCols, kQkvCols + 1);
  expect("misaligned v stride",
         normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_MISALIGNED);
  setPackedAttention(&args);
  normjit_launch_args_set(&args, NORMJIT_OUTPUT, qkv + kQCols * 2,
                          NORMJIT_BF16, kQCols, kQkvCols);
  expect("output over k", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  setPackedAttention(&args);
  normjit_launch_args_set(&args, NORMJIT_Q, qkv, NORMJIT_BF16, kQCols - 8,
                          kQkvCols);
  expect("q cols", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  setPackedAttention(&args);
  normjit_launch_args_set(&args, NORMJIT_LSE, lse, NORMJIT_F32, kQHeads, 0);
  expect("lse without the flag",
         normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(fakecuda_launch_count() == before);
  /* 14 tensors: v, cu_seqlens and lse are past the struct, so absent. */
  setPackedAttention(&args);
  args.struct_size = NORMJIT_LAUNCH_ARGS_SIZE_V1;
  expect("API 2 attention args",
         normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);

  /* The old configuration calls see the first four fields; the fixed
   * configuration needs the whole one. */
  normjit_launch_config old;
  expect("attention config v1", normjit_kernel_get_config(kernel, 1, &old),
         NORMJIT_SUCCESS);
  normjit_kernel *fixed = NULL;
  expect("attention fixed v1",
         normjit_kernel_create_with_config(context, &desc, &old, 0, &fixed),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_kernel_get_config2(kernel, 1, &config);
  expect("attention fixed",
         normjit_kernel_create_with_config2(context, &desc, &config, 0, &fixed),
         NORMJIT_SUCCESS);
  if (fixed) {
    normjit_tuning_info info;
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    CHECK(normjit_kernel_get_tuning2(fixed, 5000, &info, NULL, 0) ==
          NORMJIT_SUCCESS);
    CHECK(info.source == NORMJIT_PLAN_FIXED &&
          info.block_n == config.block_n && info.stages == config.stages);
    /* An API 2 tuning info: block_n and stages are not written. */
    union {
      normjit_tuning_info info;
      unsigned char bytes[sizeof(normjit_tuning_info)];
    } small;
    memset(&small, 0xff, sizeof(small));
    small.info.struct_size = NORMJIT_TUNING_INFO_SIZE_V1;
    CHECK(normjit_kernel_get_tuning(fixed, 5000, &small.info, NULL, 0) ==
          NORMJIT_SUCCESS);
    for (size_t i = NORMJIT_TUNING_INFO_SIZE_V1; i < sizeof(small.bytes); ++i)
      CHECK(small.bytes[i] == 0xff);
    normjit_kernel_destroy(fixed);
  }
  normjit_kernel_destroy(kernel);

  /* Operations the rules refuse. */
  normjit_kernel *refused = NULL;
  desc = attentionDesc(kHeadDim, 3, 0);
  expect("3 kv heads", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(kHeadDim, 0, 0);
  expect("0 kv heads", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(100, kKvHeads, 0);
  expect("head dim 100", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(kHeadDim, kKvHeads, NORMJIT_OP_WEIGHT);
  expect("weights without QK-Norm",
         normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(kHeadDim, kKvHeads, NORMJIT_OP_QK_RMS | NORMJIT_OP_QK_L2);
  expect("two QK-Norms", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(kHeadDim, kKvHeads, 0);
  desc.scale = -1.0;
  expect("negative scale", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(kHeadDim, kKvHeads, 0);
  desc.input_type = desc.output_type = NORMJIT_F32;
  expect("f32 attention", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc = attentionDesc(kHeadDim, kKvHeads, 0);
  desc.rope = NORMJIT_ROPE_NEOX;
  desc.rotary_dim = 25;
  expect("rotary dim 25", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.rope = 3;
  expect("unknown rope", normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  desc.rope = NORMJIT_ROPE_NONE;
  expect("rotary dim without rope",
         normjit_kernel_create(context, &desc, 0, &refused),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  CHECK(refused == NULL);

  /* The QK-Norm operation: weights and lse, every buffer separate. */
  desc = attentionDesc(64, 1, NORMJIT_OP_QK_RMS | NORMJIT_OP_WEIGHT |
                                  NORMJIT_OP_WRITE_LSE);
  desc.weight_offset = 1.0;
  expect("QK-Norm attention from bundle",
         normjit_kernel_create(context, &desc, 0, &kernel), NORMJIT_SUCCESS);
  if (!kernel)
    return;
  enum { kQ = kQHeads * 64, kKv = 64 };
  normjit_launch_args_init(&args);
  normjit_launch_args_set(&args, NORMJIT_Q, qkv, NORMJIT_BF16, kQ, 0);
  normjit_launch_args_set(&args, NORMJIT_K, qkv + kTokens * kQ * 2,
                          NORMJIT_BF16, kKv, 0);
  normjit_launch_args_set(&args, NORMJIT_V, qkv + kTokens * (kQ + kKv) * 2,
                          NORMJIT_BF16, kKv, 0);
  normjit_launch_args_set(&args, NORMJIT_Q_WEIGHT, qWeight, NORMJIT_BF16, 64, 0);
  normjit_launch_args_set(&args, NORMJIT_K_WEIGHT, kWeight, NORMJIT_BF16, 64, 0);
  normjit_launch_args_set(&args, NORMJIT_CU_SEQLENS, cuSeqlens, NORMJIT_I32,
                          kBatch + 1, 0);
  normjit_launch_args_set(&args, NORMJIT_OUTPUT, attnOut, NORMJIT_BF16, kQ, 0);
  normjit_launch_args_set(&args, NORMJIT_LSE, lse, NORMJIT_F32, kQHeads, 0);
  before = fakecuda_launch_count();
  expect("QK-Norm attention launch",
         normjit_kernel_launch(kernel, &args, kTokens, NULL), NORMJIT_SUCCESS);
  CHECK(fakecuda_get_launch(before, &launch));
  /* q, k, v, q_weight, k_weight, cu_seqlens, output, lse, rows, batch, then
   * the strides of q, k, v, output and lse. */
  CHECK(launch.num_params == 15);
  CHECK(launch.params[3] == (uint64_t)(uintptr_t)qWeight);
  CHECK(launch.params[4] == (uint64_t)(uintptr_t)kWeight);
  CHECK(launch.params[5] == (uint64_t)(uintptr_t)cuSeqlens);
  CHECK(launch.params[7] == (uint64_t)(uintptr_t)lse);
  CHECK(launch.params[8] == kTokens && launch.params[9] == kBatch);
  CHECK(launch.params[10] == kQ && launch.params[11] == kKv &&
        launch.params[12] == kKv && launch.params[13] == kQ &&
        launch.params[14] == kQHeads);
  /* lse overlapping the output is an output over another buffer. */
  normjit_launch_args_set(&args, NORMJIT_LSE, attnOut, NORMJIT_F32, kQHeads, 0);
  expect("lse over output", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_launch_args_set(&args, NORMJIT_LSE, NULL, NORMJIT_F32, 0, 0);
  expect("no lse", normjit_kernel_launch(kernel, &args, kTokens, NULL),
         NORMJIT_ERROR_INVALID_ARGUMENT);
  normjit_kernel_destroy(kernel);
}

int main(int argc, char **argv) {
  int attention = argc == 4 && strcmp(argv[3], "--attention") == 0;
  if (argc != 3 && !attention) {
    fprintf(stderr, "usage: %s <fake libcuda> <bundle> [--attention]\n",
            argv[0]);
    return 2;
  }
  fakecuda_reset();
  testStatusNames();
  testVersion();
  testContextErrors(argv[1]);
  testOlderCallers(argv[1], argv[2]);

  normjit_context_options options;
  normjit_context_options_init(&options);
  const char *bundles[] = {argv[2]};
  options.driver_library = argv[1];
  options.bundles = bundles;
  options.num_bundles = 1;
  options.flags = NORMJIT_CONTEXT_NO_DISK_CACHE;
  normjit_context *context = NULL;
  expect("context", normjit_context_create(&options, &context),
         NORMJIT_SUCCESS);
  if (context) {
    testKernelErrors(context);
    testLaunch(context);
    testFixedConfig(context);
    testOlderStructs(context);
    if (attention)
      testAttention(context);
    normjit_context_destroy(context);
  }
  CHECK(fakecuda_live_modules() == 0);
  CHECK(fakecuda_primary_context_retains() == 0);
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
