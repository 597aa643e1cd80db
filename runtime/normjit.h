/*===- normjit.h - libnormjit, the C API --------------------------*- C -*-===*\
|*                                                                            *|
|* Normalization kernels built for one operation and hidden size, autotuned  *|
|* on the device, launched on the caller's CUDA stream. For FFI: plain C,    *|
|* fixed-width fields, no CUDA headers, no exceptions. Every call that can   *|
|* fail returns a normjit_status; normjit_last_error() then describes the    *|
|* failure (per thread, until the next failing call on that thread).        *|
|*                                                                            *|
|*   normjit_context_options options;                                         *|
|*   normjit_context_options_init(&options);                                  *|
|*   normjit_context *context;                                                *|
|*   if (normjit_context_create(&options, &context) != NORMJIT_SUCCESS)      *|
|*     fprintf(stderr, "%s\n", normjit_last_error());                         *|
|*   normjit_op_desc desc;                                                    *|
|*   normjit_op_desc_init(&desc);              (RMSNorm, bf16, eps 1e-6)      *|
|*   desc.hidden = 4096; desc.flags = NORMJIT_OP_WEIGHT;                      *|
|*   normjit_kernel *kernel;                                                  *|
|*   normjit_kernel_create(context, &desc, 0, &kernel);                       *|
|*   normjit_launch_args args;                                                *|
|*   normjit_launch_args_init(&args);                                         *|
|*   normjit_launch_args_set(&args, NORMJIT_INPUT, x, NORMJIT_BF16, 4096, 0); *|
|*   normjit_launch_args_set(&args, NORMJIT_WEIGHT, w, NORMJIT_BF16, 4096, 0);*|
|*   normjit_launch_args_set(&args, NORMJIT_OUTPUT, y, NORMJIT_BF16, 4096, 0);*|
|*   normjit_kernel_launch(kernel, &args, rows, stream);                      *|
|*                                                                            *|
|* Compatibility. Structs start with struct_size: their _init function (or    *|
|* the caller) sets it to the struct's sizeof in the header a program is      *|
|* compiled with. The library accepts any size from the struct's first        *|
|* published layout (NORMJIT_*_SIZE_V1) up to its own sizeof, reads no byte   *|
|* past struct_size and gives every field beyond it its default, so programs  *|
|* built against an older header keep working; other sizes are refused.       *|
|* Unknown flag bits and non-zero reserved fields are refused too             *|
|* (NORMJIT_ERROR_INVALID_ARGUMENT), so that later versions can use them.     *|
|* normjit_get_version tells the library's version at run time.               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef NORMJIT_H
#define NORMJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The API this header declares: 1, then 2 (normjit_get_version,
 * normjit_context_options.tuning_scratch_bytes,
 * normjit_context_options_init_sized, NORMJIT_ERROR_OUT_OF_MEMORY). */
#define NORMJIT_API_VERSION 2

/* The library version of this header: major (libnormjit.so.1) changes only
 * when the ABI breaks, minor is the API version. */
#define NORMJIT_VERSION_MAJOR 1
#define NORMJIT_VERSION_MINOR NORMJIT_API_VERSION
#define NORMJIT_VERSION_PATCH 0

/* sizeof each struct in its first published layout (API 1, 64-bit
 * platforms): the smallest struct_size the library accepts. */
#define NORMJIT_OP_DESC_SIZE_V1 88
#define NORMJIT_LAUNCH_ARGS_SIZE_V1 456
#define NORMJIT_CONTEXT_OPTIONS_SIZE_V1 48
#define NORMJIT_TUNING_INFO_SIZE_V1 56

typedef enum normjit_status {
  NORMJIT_SUCCESS = 0,
  NORMJIT_ERROR_INVALID_ARGUMENT = 1, /* null pointers, sizes, mismatches */
  NORMJIT_ERROR_MISALIGNED = 2,       /* a buffer no kernel variant can use */
  NORMJIT_ERROR_UNSUPPORTED = 3,      /* valid, but not on this device/build */
  NORMJIT_ERROR_NO_DRIVER = 4,        /* libcuda.so.1 missing or too old */
  NORMJIT_ERROR_NO_DEVICE = 5,        /* no (such) CUDA device */
  NORMJIT_ERROR_DRIVER = 6,           /* a CUDA driver call failed */
  NORMJIT_ERROR_COMPILE = 7,          /* the kernel compiler failed */
  NORMJIT_ERROR_NOT_FOUND = 8,        /* not in any bundle, no compiler */
  NORMJIT_ERROR_IO = 9,               /* cache or bundle files */
  NORMJIT_ERROR_INTERNAL = 10,
  NORMJIT_ERROR_OUT_OF_MEMORY = 11    /* host memory exhausted (API 2) */
} normjit_status;

typedef enum normjit_dtype {
  NORMJIT_F32 = 0,
  NORMJIT_F16 = 1,
  NORMJIT_BF16 = 2
} normjit_dtype;

typedef enum normjit_op_kind {
  NORMJIT_OP_RMS_NORM = 0,
  NORMJIT_OP_LAYER_NORM = 1,
  NORMJIT_OP_L2_NORM = 2,
  NORMJIT_OP_GROUP_NORM = 3,
  NORMJIT_OP_BATCH_NORM_INFERENCE = 4,
  NORMJIT_OP_ELEMENTWISE = 5,     /* residual add and/or cast only */
  NORMJIT_OP_BATCH_NORM_STATS = 6, /* per-column mean and variance */
  NORMJIT_OP_QK_NORM = 7          /* per-head norm of q and k from packed qkv */
} normjit_op_kind;

/* normjit_op_desc.flags; other bits are refused (INVALID_ARGUMENT). */
#define NORMJIT_OP_WEIGHT (1u << 0)       /* y *= weight (+ weight_offset) */
#define NORMJIT_OP_BIAS (1u << 1)         /* y += bias */
#define NORMJIT_OP_ADDEND (1u << 2)       /* v = alpha * input + addend */
#define NORMJIT_OP_RESIDUAL_OUT (1u << 3) /* also store v (needs ADDEND) */
#define NORMJIT_OP_F32_RESIDUAL (1u << 4) /* normalize the unrounded sum */
#define NORMJIT_OP_SKIP (1u << 5)         /* y = skip + norm(v) (Sandwich) */
#define NORMJIT_OP_QK_L2 (1u << 6)        /* QK-Norm with L2 instead of RMS */
#define NORMJIT_OP_QK_MEAN_VAR (1u << 7)  /* QK-Norm with LayerNorm (no bias) */

/* One operation. Initialize with normjit_op_desc_init, then set fields. */
typedef struct normjit_op_desc {
  uint32_t struct_size; /* sizeof(normjit_op_desc) */
  int32_t kind;         /* normjit_op_kind */
  int64_t hidden;       /* row length; the head dim for QK-Norm */
  int32_t input_type;   /* normjit_dtype of input (and residual_out, qkv) */
  int32_t output_type;  /* of output (q and k for QK-Norm) */
  int32_t param_type;   /* of weight, bias, mean, variance */
  int32_t addend_type;
  int32_t skip_type;
  uint32_t flags;       /* NORMJIT_OP_* */
  double eps;
  double alpha;         /* scales input when there is an addend (DeepNorm) */
  double weight_offset; /* 1.0: Gemma's (1 + weight), also for QK-Norm */
  int64_t groups;       /* GroupNorm */
  int64_t num_q_heads;  /* QK-Norm */
  int64_t num_kv_heads; /* QK-Norm */
} normjit_op_desc;

/* The buffers of a launch. */
typedef enum normjit_buffer {
  NORMJIT_INPUT = 0,
  NORMJIT_ADDEND = 1,
  NORMJIT_SKIP = 2,
  NORMJIT_WEIGHT = 3,
  NORMJIT_BIAS = 4,
  NORMJIT_MEAN = 5,
  NORMJIT_VARIANCE = 6,
  NORMJIT_OUTPUT = 7,
  NORMJIT_RESIDUAL_OUT = 8,
  NORMJIT_QKV = 9,
  NORMJIT_Q_WEIGHT = 10,
  NORMJIT_K_WEIGHT = 11,
  NORMJIT_Q = 12,
  NORMJIT_K = 13,
  NORMJIT_NUM_BUFFERS = 14
} normjit_buffer;

/* A device buffer: cols elements per row, row_stride elements between rows
 * (0: cols). 1-D buffers (weights, statistics): cols elements, stride 0. */
typedef struct normjit_tensor {
  const void *data; /* device pointer; NULL: absent */
  int32_t dtype;    /* normjit_dtype */
  int32_t reserved; /* 0 (anything else is refused) */
  int64_t cols;
  int64_t row_stride;
} normjit_tensor;

typedef struct normjit_launch_args {
  uint32_t struct_size; /* sizeof(normjit_launch_args) */
  uint32_t reserved;    /* 0 (anything else is refused) */
  normjit_tensor tensors[NORMJIT_NUM_BUFFERS];
} normjit_launch_args;

/* normjit_context_options.flags; other bits are refused. */
#define NORMJIT_CONTEXT_NO_TUNING (1u << 0)     /* heuristic configurations */
#define NORMJIT_CONTEXT_NO_DISK_CACHE (1u << 1)

typedef struct normjit_context_options {
  uint32_t struct_size;        /* NORMJIT_CONTEXT_OPTIONS_SIZE_V1 ..
                                  sizeof(normjit_context_options) */
  int32_t device;              /* CUDA device ordinal */
  const char *driver_library;  /* NULL: libcuda.so.1 */
  const char *cache_dir;       /* NULL: $NORMJIT_CACHE_DIR, $XDG_CACHE_HOME/
                                  norm-opt or ~/.cache/norm-opt */
  const char *const *bundles;  /* kernel bundles written by norm-tune */
  size_t num_bundles;
  uint32_t flags;              /* NORMJIT_CONTEXT_* */
  int32_t log_level;           /* -1: $NORMJIT_LOG; 0 quiet .. 3 debug */
  /* API 2. Device memory a tuning run may take for scratch buffers; 0:
   * 512 MiB; at most INT64_MAX. A row bucket whose scratch would take more,
   * or that the device cannot allocate, is tuned at fewer rows, else runs
   * the heuristic's configuration (NORMJIT_PLAN_HEURISTIC). */
  uint64_t tuning_scratch_bytes;
} normjit_context_options;

/* normjit_kernel_create flags; other bits are refused. */
#define NORMJIT_KERNEL_NO_TUNING (1u << 0)
#define NORMJIT_KERNEL_REFUSE_MISALIGNED (1u << 1) /* no scalar fallback */

typedef struct normjit_launch_config {
  int64_t vector;
  int64_t threads_per_row;
  int64_t warps;
  int64_t rows_per_cta;
} normjit_launch_config;

typedef struct normjit_context normjit_context;
typedef struct normjit_kernel normjit_kernel;

/* "invalid argument", ...; never NULL. */
const char *normjit_status_name(normjit_status status);
/* The message of the last failure on this thread; "" if none. */
const char *normjit_last_error(void);

/* The library's version and the API version it implements, to compare with
 * the NORMJIT_VERSION_* and NORMJIT_API_VERSION of the header a program was
 * compiled with. Any pointer may be NULL. */
void normjit_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch,
                         uint32_t *api_version);

/* Defaults (device 0, tuning, disk cache, log level -1) for the first `size`
 * bytes of *options, struct_size = size: a program passes the sizeof of its
 * header's struct, so the library never writes past it. */
void normjit_context_options_init_sized(normjit_context_options *options,
                                        size_t size);
/* The API 1 entry point, for programs built against the API 1 header: it
 * fills the API 1 layout only (NORMJIT_CONTEXT_OPTIONS_SIZE_V1 bytes). From
 * API 2 on, the macro below calls normjit_context_options_init_sized with
 * this header's size; FFI bindings call that function themselves. */
void normjit_context_options_init(normjit_context_options *options);
#define normjit_context_options_init(options)                                 \
  normjit_context_options_init_sized((options), sizeof(normjit_context_options))
/* Loads the driver and opens the device: NO_DRIVER or NO_DEVICE without. */
normjit_status normjit_context_create(const normjit_context_options *options,
                                      normjit_context **context);
/* Kernels created from the context stay valid. NULL is ignored. */
void normjit_context_destroy(normjit_context *context);

/* RMSNorm, bf16 everywhere, eps 1e-6, alpha 1, groups 1, no flags. */
void normjit_op_desc_init(normjit_op_desc *desc);

/* Builds, tunes and loads the kernel of desc at the first request;
 * thread-safe. Release with normjit_kernel_destroy. */
normjit_status normjit_kernel_create(normjit_context *context,
                                     const normjit_op_desc *desc,
                                     uint32_t flags, normjit_kernel **kernel);
void normjit_kernel_destroy(normjit_kernel *kernel);

void normjit_launch_args_init(normjit_launch_args *args);
normjit_status normjit_launch_args_set(normjit_launch_args *args,
                                       int32_t buffer, const void *data,
                                       int32_t dtype, int64_t cols,
                                       int64_t row_stride);

/* Checks the buffers against the operation and enqueues one kernel on
 * stream (a CUstream; NULL: the legacy default stream). Asynchronous, no
 * allocation, capturable in CUDA graphs. rows == 0: nothing, success.
 * Buffers must not alias: an output (output, residual_out, q, k, ...) that
 * shares a byte with any other buffer is refused with
 * NORMJIT_ERROR_INVALID_ARGUMENT, so in-place updates (residual_out ==
 * input) need a separate output buffer. Inputs may share memory. */
normjit_status normjit_kernel_launch(const normjit_kernel *kernel,
                                     const normjit_launch_args *args,
                                     int64_t rows, void *stream);

/* The configuration launches of `rows` rows (aligned buffers) run. */
normjit_status normjit_kernel_get_config(const normjit_kernel *kernel,
                                         int64_t rows,
                                         normjit_launch_config *config);

/* Like normjit_kernel_create, but launches of every row count run `config`
 * instead of a planned configuration: for benchmarks that time each tuning
 * candidate at their own row counts. INVALID_ARGUMENT when the configuration
 * does not fit the operation's rows. */
normjit_status normjit_kernel_create_with_config(
    normjit_context *context, const normjit_op_desc *desc,
    const normjit_launch_config *config, uint32_t flags,
    normjit_kernel **kernel);

/* normjit_tuning_info.source: where a row bucket's configuration came from. */
typedef enum normjit_plan_source {
  NORMJIT_PLAN_TUNED = 0,        /* timed in this process */
  NORMJIT_PLAN_TUNING_CACHE = 1, /* a tuning result on disk */
  NORMJIT_PLAN_BUNDLE = 2,
  NORMJIT_PLAN_HEURISTIC = 3,
  NORMJIT_PLAN_FIXED = 4         /* normjit_kernel_create_with_config */
} normjit_plan_source;

typedef struct normjit_tuning_info {
  uint32_t struct_size;  /* sizeof(normjit_tuning_info) */
  int32_t source;        /* normjit_plan_source */
  int64_t tuned_rows;    /* rows the bucket was tuned at (0: not tuned) */
  size_t num_candidates; /* candidates timed in this process */
  normjit_launch_config config; /* the winner: what launches run */
} normjit_tuning_info;

typedef struct normjit_candidate {
  normjit_launch_config config;
  double microseconds; /* the tuner's time per launch; < 0: it failed */
} normjit_candidate;

/* How launches of `rows` rows were planned, and the tuning candidates of
 * their row bucket timed in this process (none when the plan came from a
 * cache, a bundle, the heuristic or a fixed configuration). Writes at most
 * `capacity` candidates (candidates may be NULL when capacity is 0). */
normjit_status normjit_kernel_get_tuning(const normjit_kernel *kernel,
                                         int64_t rows,
                                         normjit_tuning_info *info,
                                         normjit_candidate *candidates,
                                         size_t capacity);

/* Writes a kernel bundle for the operations (tuning them first). */
normjit_status normjit_context_write_bundle(normjit_context *context,
                                            const normjit_op_desc *descs,
                                            size_t count, const char *path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NORMJIT_H */
