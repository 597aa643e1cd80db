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
 * normjit_context_options_init_sized, NORMJIT_ERROR_OUT_OF_MEMORY), then 3
 * (attention: NORMJIT_OP_ATTENTION, NORMJIT_I32, NORMJIT_OP_QK_RMS,
 * NORMJIT_OP_CAUSAL, NORMJIT_OP_WRITE_LSE, normjit_op_desc.scale, the
 * buffers NORMJIT_V, NORMJIT_CU_SEQLENS and NORMJIT_LSE, so 17 tensors in
 * normjit_launch_args; normjit_op_desc_init_sized and
 * normjit_launch_args_init_sized; normjit_launch_config2 with block_n and
 * stages, normjit_kernel_get_config2, normjit_kernel_create_with_config2,
 * normjit_kernel_get_tuning2 and normjit_tuning_info.block_n/stages;
 * attention's rotary embeddings: normjit_rope, normjit_op_desc.rope,
 * reserved, rotary_dim and rope_theta). The rotary embedding fields joined
 * API 3 before any release of it, so they did not start an API 4; the
 * 96-byte normjit_op_desc that API 3 had on the way stays accepted, as every
 * size from the first layout on is, and means no rotary embeddings. Then 4
 * (decode attention: NORMJIT_OP_ATTENTION_DECODE, the buffers
 * NORMJIT_K_CACHE, NORMJIT_V_CACHE and NORMJIT_CACHE_SEQLENS, so 22 tensors
 * in normjit_launch_args, and its trailing cache_rows). Then 5 (rotary
 * embeddings at explicit positions or from a cos/sin table:
 * NORMJIT_OP_ROPE_POSITIONS, NORMJIT_OP_ROPE_TABLE, the buffers
 * NORMJIT_POSITIONS and NORMJIT_ROPE_TABLE, so 24 tensors in
 * normjit_launch_args, then cache_rows and rope_table_rows; the library
 * still reads API 4's layout, whose cache_rows followed 22 tensors). Then 6
 * (training: NORMJIT_OP_SAVE_STATS, NORMJIT_OP_BACKWARD,
 * NORMJIT_OP_PER_HEAD_WEIGHT, normjit_op_desc_get_backward, the buffers
 * NORMJIT_GRAD_OUTPUT ... NORMJIT_BIAS_GRAD, so 34 tensors in
 * normjit_launch_args, then cache_rows and rope_table_rows; the library
 * still reads API 5's and API 4's layouts). Then 7 (in place:
 * NORMJIT_OP_OUTPUT_OVER_INPUT ... NORMJIT_OP_RESIDUAL_OVER_ADDEND;
 * programmatic dependent launch: NORMJIT_CONTEXT_PDL). Then 8 (FP8
 * outputs: NORMJIT_F8E4M3FN, NORMJIT_F8E5M2, NORMJIT_OP_OUTPUT_SCALE_STATIC,
 * NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN, NORMJIT_OP_SCALE_UB, the buffers
 * NORMJIT_OUTPUT_SCALE, NORMJIT_SCALE_UB and NORMJIT_OUTPUT_SCALES, so 37
 * tensors in normjit_launch_args; the library still reads the layouts of
 * API 4 to 7). Then 9 (NORMJIT_OP_ROPE_FIRST: attention rotating before its
 * QK-Norm, Llama 4; NORMJIT_OP_QK_WEIGHT_PER_HEAD: a QK-Norm weight per
 * head, Command R+; rotary dims of any even size). Then 10 (K-prepare:
 * NORMJIT_OP_K_PREPARE, NORMJIT_OP_COPY_V, the buffers NORMJIT_K_OUT and
 * NORMJIT_V_OUT, so 39 tensors in normjit_launch_args; attention over
 * prepared keys: NORMJIT_OP_PREPARED_K; the library still reads the
 * layouts of API 4 to 9). Then 11 (NORMJIT_OP_WRITE_CACHE: K-prepare
 * writes k and v into a KV cache). Then 12 (paged KV caches:
 * normjit_op_desc.cache_block_size, where reserved was, and the buffer
 * NORMJIT_BLOCK_TABLES; FP8 caches: NORMJIT_OP_FP8_CACHE,
 * NORMJIT_OP_CACHE_SCALE_PER_HEAD, NORMJIT_K_SCALE and NORMJIT_V_SCALE; so
 * 42 tensors in normjit_launch_args; the library still reads the layouts
 * of API 4 to 11). Then 13 (FlashInfer's ragged page tables:
 * NORMJIT_OP_PAGE_INDPTR and the buffer NORMJIT_PAGE_INDPTR, so 43 tensors;
 * the library still reads the layouts of API 4 to 12). */
#define NORMJIT_API_VERSION 13

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
/* ... and in API 3, which grew normjit_op_desc (scale, rotary embeddings),
 * normjit_launch_args (17 tensors) and normjit_tuning_info (block_n,
 * stages). */
#define NORMJIT_OP_DESC_SIZE_V3 120
#define NORMJIT_LAUNCH_ARGS_SIZE_V3 552
#define NORMJIT_TUNING_INFO_SIZE_V3 72
/* ... and in API 4, which grew normjit_launch_args (22 tensors and
 * cache_rows). */
#define NORMJIT_LAUNCH_ARGS_SIZE_V4 720
/* ... and in API 5 (24 tensors, cache_rows, rope_table_rows). */
#define NORMJIT_LAUNCH_ARGS_SIZE_V5 792
/* ... and in API 6 and 7 (34 tensors, cache_rows, rope_table_rows). */
#define NORMJIT_LAUNCH_ARGS_SIZE_V6 1112
/* ... and in API 8 and 9 (37 tensors, cache_rows, rope_table_rows). */
#define NORMJIT_LAUNCH_ARGS_SIZE_V8 1208
/* ... and in API 10 and 11 (39 tensors, cache_rows, rope_table_rows). */
#define NORMJIT_LAUNCH_ARGS_SIZE_V10 1272
/* ... and in API 12 (42 tensors, cache_rows, rope_table_rows). */
#define NORMJIT_LAUNCH_ARGS_SIZE_V12 1368
/* API 13: NORMJIT_PAGE_INDPTR. */
#define NORMJIT_LAUNCH_ARGS_SIZE_V13 1400

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
  NORMJIT_BF16 = 2,
  NORMJIT_I32 = 3, /* API 3: attention's cu_seqlens only; refused elsewhere */
  /* API 8: FP8 outputs of row norms only (output_type and NORMJIT_OUTPUT). */
  NORMJIT_F8E4M3FN = 4, /* OCP e4m3, no infinities, largest finite 448 */
  NORMJIT_F8E5M2 = 5    /* OCP e5m2, largest finite 57344 */
} normjit_dtype;

typedef enum normjit_op_kind {
  NORMJIT_OP_RMS_NORM = 0,
  NORMJIT_OP_LAYER_NORM = 1,
  NORMJIT_OP_L2_NORM = 2,
  NORMJIT_OP_GROUP_NORM = 3,
  NORMJIT_OP_BATCH_NORM_INFERENCE = 4,
  NORMJIT_OP_ELEMENTWISE = 5,     /* residual add and/or cast only */
  NORMJIT_OP_BATCH_NORM_STATS = 6, /* per-column mean and variance */
  NORMJIT_OP_QK_NORM = 7,         /* per-head norm of q and k from packed qkv */
  NORMJIT_OP_ATTENTION = 8,       /* API 3: variable-length attention, below */
  NORMJIT_OP_ATTENTION_DECODE = 9, /* API 4: attention over a KV cache, below */
  NORMJIT_OP_K_PREPARE = 10 /* API 10: k heads normalized and rotated once */
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
/* API 3. */
#define NORMJIT_OP_QK_RMS (1u << 8)     /* QK-Norm with RMSNorm (see below) */
#define NORMJIT_OP_CAUSAL (1u << 9)     /* attention: query i sees keys <= i */
#define NORMJIT_OP_WRITE_LSE (1u << 10) /* attention: also write NORMJIT_LSE */
/* API 5, attention with rope: positions from NORMJIT_POSITIONS, angles
 * from NORMJIT_ROPE_TABLE (see below). */
#define NORMJIT_OP_ROPE_POSITIONS (1u << 11)
#define NORMJIT_OP_ROPE_TABLE (1u << 12)
/* API 6, training (see below). */
#define NORMJIT_OP_SAVE_STATS (1u << 13)      /* also write saved_rstd/mean */
#define NORMJIT_OP_BACKWARD (1u << 14)        /* the gradients of the norm */
#define NORMJIT_OP_PER_HEAD_WEIGHT (1u << 15) /* backward: heads share w */
/* API 7, in place (forward row norms, see below): the launch may pass the
 * same buffer for the output (or residual_out) and that row input. */
#define NORMJIT_OP_OUTPUT_OVER_INPUT (1u << 16)
#define NORMJIT_OP_OUTPUT_OVER_ADDEND (1u << 17)
#define NORMJIT_OP_RESIDUAL_OVER_INPUT (1u << 18)
#define NORMJIT_OP_RESIDUAL_OVER_ADDEND (1u << 19)
/* API 8, FP8 outputs (forward row norms with output_type NORMJIT_F8E4M3FN or
 * NORMJIT_F8E5M2; exactly one of the first two): q = fp8(y / scale), rounded
 * to nearest even and saturated, y the f32 normalized value. STATIC divides
 * by the f32 scalar NORMJIT_OUTPUT_SCALE (vLLM's rms_norm_static_fp8_quant);
 * PER_TOKEN writes each row's scale max(min(amax, *scale_ub) / fp8_max,
 * 1 / (fp8_max * 512)) to NORMJIT_OUTPUT_SCALES (rows x 1 f32,
 * rms_norm_dynamic_per_token_quant), the amax bounded by the f32 scalar
 * NORMJIT_SCALE_UB with SCALE_UB. Per-token scales need groups 1, rows
 * held in registers or shared memory (else NORMJIT_ERROR_UNSUPPORTED), no
 * skip. */
#define NORMJIT_OP_OUTPUT_SCALE_STATIC (1u << 20)
#define NORMJIT_OP_OUTPUT_SCALE_PER_TOKEN (1u << 21)
#define NORMJIT_OP_SCALE_UB (1u << 22)
/* API 9, attention: rotate q and k first, then apply the QK-Norm to the
 * rotated rows (Llama 4's L2 norm after RoPE); needs rope and a QK-Norm. */
#define NORMJIT_OP_ROPE_FIRST (1u << 23)
/* API 9, attention and the QK-Norm prologue (NORMJIT_OP_QK_NORM) with
 * NORMJIT_OP_WEIGHT: a QK-Norm weight row per head (Command R+): q_weight
 * holds num_q_heads rows of the head dim, k_weight num_kv_heads,
 * contiguous; not one row every head shares. */
#define NORMJIT_OP_QK_WEIGHT_PER_HEAD (1u << 24)
/* API 10, prefill attention (NORMJIT_OP_ATTENTION) with a QK-Norm or rope:
 * NORMJIT_K holds keys already normalized and rotated (by
 * NORMJIT_OP_K_PREPARE), so the kernel applies the QK-Norm (q_weight only:
 * no NORMJIT_K_WEIGHT) and the rotation to q alone. */
#define NORMJIT_OP_PREPARED_K (1u << 25)
/* API 10, NORMJIT_OP_K_PREPARE: also copy NORMJIT_V to NORMJIT_V_OUT. */
#define NORMJIT_OP_COPY_V (1u << 26)
/* API 11, NORMJIT_OP_K_PREPARE: write k and v into NORMJIT_K_CACHE and
 * NORMJIT_V_CACHE at the rows after each sequence's cached ones (see
 * K-prepare below), not to NORMJIT_K_OUT and NORMJIT_V_OUT. */
#define NORMJIT_OP_WRITE_CACHE (1u << 27)
/* API 12, decode attention and NORMJIT_OP_K_PREPARE with
 * NORMJIT_OP_WRITE_CACHE: the caches hold e4m3 (NORMJIT_F8E4M3FN) with f32
 * scales NORMJIT_K_SCALE and NORMJIT_V_SCALE (vLLM's k_scale, v_scale; one
 * element each): x is stored as e4m3(x * (1 / scale)), rounded to nearest
 * even and saturated, and every key and value the attention reads (the new
 * tokens' too) is input_type's rounding of e4m3 * scale. With
 * NORMJIT_OP_CACHE_SCALE_PER_HEAD the scales hold one per kv head. */
#define NORMJIT_OP_FP8_CACHE (1u << 28)
#define NORMJIT_OP_CACHE_SCALE_PER_HEAD (1u << 29)
/* API 13, with normjit_op_desc.cache_block_size: the block table is
 * FlashInfer's ragged one (kv_indptr, kv_indices; see below). */
#define NORMJIT_OP_PAGE_INDPTR (1u << 30)

/* normjit_op_desc.rope (API 3): attention's rotary position embeddings. */
typedef enum normjit_rope {
  NORMJIT_ROPE_NONE = 0,
  NORMJIT_ROPE_NEOX = 1, /* pairs (d, d + rotary_dim / 2): NeoX, Llama, Qwen */
  NORMJIT_ROPE_GPTJ = 2  /* pairs (2i, 2i + 1), interleaved: GPT-J */
} normjit_rope;

/* Attention (NORMJIT_OP_ATTENTION, API 3): FlashAttention-2 forward over
 * variable-length sequences packed token-major, with an optional QK-Norm of
 * q and k in its prologue and optional rotary embeddings after it:
 *   out = softmax(scale * rope(norm(q)) rope(norm(k))^T [causal mask]) v
 * per head,
 * grouped-query (num_kv_heads divides num_q_heads), bf16 or f16 q, k, v and
 * output (input_type == output_type). Fields: hidden = head dim (a multiple
 * of 16, 16 to 256), num_q_heads, num_kv_heads, scale (0: 1/sqrt(head dim)).
 * The QK-Norm is the one of NORMJIT_OP_QK_RMS, NORMJIT_OP_QK_L2 or
 * NORMJIT_OP_QK_MEAN_VAR that is set, and none when none is (so an API 2
 * desc of kind NORMJIT_OP_QK_NORM without a statistic flag still means
 * RMS, and NORMJIT_OP_QK_RMS says so explicitly there); it takes eps,
 * NORMJIT_OP_WEIGHT (q_weight and k_weight, param_type, head dim each;
 * API 9: a head dim per head with NORMJIT_OP_QK_WEIGHT_PER_HEAD) and
 * weight_offset. rope (NORMJIT_ROPE_NEOX or _GPTJ) rotates the first
 * rotary_dim elements of each q and k head row (0: the head dim; even,
 * StableLM's 20 of 80 too), pair i by pos * rope_theta^(-2i /
 * rotary_dim) (rope_theta 0: 10000), pos the token's index within its
 * sequence; the other elements stay as they are (API 9: with
 * NORMJIT_OP_ROPE_FIRST the rows are rotated before the QK-Norm, each step
 * rounded to the element type). API 5: with
 * NORMJIT_OP_ROPE_POSITIONS, pos is the token's entry of NORMJIT_POSITIONS
 * (i32, 1-D, cols = rows); with NORMJIT_OP_ROPE_TABLE the angles come from
 * NORMJIT_ROPE_TABLE (f32, rope_table_rows x rotary_dim, any row stride
 * that is a multiple of 4 floats, 16-byte aligned: row p holds cos(p f_i)
 * at column i and sin(p f_i) at rotary_dim / 2 + i, FlashInfer's and
 * vLLM's cos_sin_cache, so any frequency scaling is the table's) and
 * rope_theta must be 0; a position outside the table rotates its row to
 * NaN. Positions move the rotations only: the causal mask stays by index. NORMJIT_OP_CAUSAL masks
 * keys after the query within each sequence; NORMJIT_OP_WRITE_LSE also
 * writes the f32 log-sum-exp of each query's scaled scores. Buffers, rows =
 * total tokens:
 *   NORMJIT_Q       rows x num_q_heads * head_dim (token t, head h at
 *                   column h * head_dim), any row stride
 *   NORMJIT_K, _V   rows x num_kv_heads * head_dim, any row stride (q, k
 *                   and v may be column slices of one packed qkv tensor)
 *   NORMJIT_CU_SEQLENS  i32, 1-D, batch + 1 offsets: cols = batch + 1 >= 2
 *                   (the batch is cols - 1); sequence b is tokens
 *                   [cu[b], cu[b+1]). They must start at 0, not decrease and
 *                   end at rows: the library cannot read device memory, the
 *                   kernel reads them as given.
 *   NORMJIT_OUTPUT  rows x num_q_heads * head_dim, like q
 *   NORMJIT_LSE     f32, rows x num_q_heads (with NORMJIT_OP_WRITE_LSE only)
 *   NORMJIT_Q_WEIGHT, NORMJIT_K_WEIGHT  head_dim each (NORMJIT_OP_WEIGHT)
 * There is no scalar fallback: q, k, v and output pointers and row strides
 * (in bytes) must be multiples of 16 bytes (NORMJIT_ERROR_MISALIGNED
 * otherwise). The output may not overlap any other buffer; q, k and v may
 * overlap each other. One launch runs num_q_heads * (ceil(rows /
 * rows_per_cta) + batch) CTAs. */

/* The QK-Norm prologue (NORMJIT_OP_QK_NORM) takes rope too (API 9): rope,
 * rotary_dim, rope_theta, NORMJIT_OP_ROPE_POSITIONS, NORMJIT_OP_ROPE_TABLE
 * and NORMJIT_OP_ROPE_FIRST as attention does, row t (token) at position t
 * or at its NORMJIT_POSITIONS entry: QK-Norm and RoPE of q and k in one
 * launch. Its backward (and NORMJIT_OP_SAVE_STATS) is the norm's alone, so
 * it refuses them with rope. */

/* K-prepare (NORMJIT_OP_K_PREPARE, API 10): the key side of QK-Norm
 * attention, once per token and kv head: each head row of NORMJIT_K (rows x
 * num_kv_heads * head_dim, any row stride; num_q_heads 0, hidden = head
 * dim) normalized by the QK-Norm flag that is set (none: rope alone) with
 * eps, NORMJIT_OP_WEIGHT (NORMJIT_K_WEIGHT, a head dim, or one per head
 * with NORMJIT_OP_QK_WEIGHT_PER_HEAD) and weight_offset, rounded to
 * output_type, then rotated by rope as attention rotates k (the same rope
 * fields and NORMJIT_POSITIONS / NORMJIT_ROPE_TABLE; without positions a
 * key turns by its index within its sequence of NORMJIT_CU_SEQLENS, which
 * is then required) and rounded again, written to NORMJIT_K_OUT (rows x
 * num_kv_heads * head_dim). With NORMJIT_OP_COPY_V, NORMJIT_V (like k) is
 * copied to NORMJIT_V_OUT in the same launch. API 11: with
 * NORMJIT_OP_WRITE_CACHE the keys and NORMJIT_V go into NORMJIT_K_CACHE and
 * NORMJIT_V_CACHE instead (cache_rows x num_kv_heads * head_dim, in and
 * out), as decode attention appends: NORMJIT_CU_SEQLENS and
 * NORMJIT_CACHE_SEQLENS as for decode, new token i of sequence b at row b
 * * capacity + cache_seqlens[b] + i (capacity = cache_rows / batch, which
 * must divide; rows past the capacity are dropped) and, without
 * positions, at rotary position cache_seqlens[b] + i: QK-Norm, RoPE and
 * the cache write of a prefill step in one launch. Not with
 * NORMJIT_OP_SAVE_STATS. Attention with
 * NORMJIT_OP_PREPARED_K then reads NORMJIT_K_OUT as its keys: together the
 * unfused graph's result, without normalizing each key tile in every query
 * tile's CTA. NORMJIT_OP_SAVE_STATS as for the QK-Norm prologue (k heads
 * only; not with rope). */

/* Decode attention (NORMJIT_OP_ATTENTION_DECODE, API 4): one launch
 * normalizes and rotates the new tokens' q and k as attention does (the same
 * desc fields: hidden, heads, scale, the QK-Norm flags, NORMJIT_OP_WEIGHT,
 * eps, weight_offset, rope), appends their k and v to a KV cache in place,
 * and attends each new token's query to its sequence's cache up to and
 * including its own position (causal by position: NORMJIT_OP_CAUSAL and
 * NORMJIT_OP_WRITE_LSE are refused). The keys are split over several CTAs
 * per query tile and kv head, combined in the kernel in a fixed order.
 * Buffers, rows = new tokens of all sequences:
 *   NORMJIT_Q, _K, _V, NORMJIT_OUTPUT, the weights, NORMJIT_CU_SEQLENS
 *                   as for attention (cu_seqlens: the new tokens' offsets;
 *                   one token per sequence is the usual decode step)
 *   NORMJIT_CACHE_SEQLENS  i32, 1-D, batch entries: cols = batch (the
 *                   batch of cu_seqlens); the cache length of each sequence
 *                   before this launch's tokens
 *   NORMJIT_K_CACHE, _V_CACHE  in and out: cache_rows x num_kv_heads *
 *                   head_dim, any row stride; sequence b owns rows
 *                   [b * capacity, (b + 1) * capacity), capacity =
 *                   cache_rows / batch (which must divide). New token i of
 *                   sequence b goes to row b * capacity + cache_seqlens[b] +
 *                   i; rows past the capacity are dropped.
 * API 12: with normjit_op_desc.cache_block_size = P (a power of two, 1 to
 * 256) the caches are pages of P rows instead (vLLM's [num_blocks,
 * block_size, kv_heads, head_dim], SGLang's P = 1): cache_rows =
 * num_blocks * P, and
 *   NORMJIT_BLOCK_TABLES  i32, 1-D, batch * max_blocks entries (cols), row
 *                   b holding sequence b's pages in order (vLLM's
 *                   block_tables, contiguous): position p of sequence b is
 *                   row block_tables[b * max_blocks + p / P] * P + p % P,
 *                   and the capacity max_blocks * P. An entry outside [0,
 *                   num_blocks) (unset, -1) is never written; a cached
 *                   position on it reads page 0 (never out of bounds).
 * API 13: with NORMJIT_OP_PAGE_INDPTR the table is FlashInfer's ragged
 * form instead:
 *   NORMJIT_BLOCK_TABLES  i32, 1-D, any length: the pages of all sequences,
 *                   one after another (kv_indices)
 *   NORMJIT_PAGE_INDPTR  i32, 1-D, batch + 1 (kv_indptr): sequence b's
 *                   pages are block_tables[page_indptr[b] ..
 *                   page_indptr[b + 1]), its capacity their count * P;
 *                   position p is row block_tables[page_indptr[b] + p / P]
 *                   * P + p % P. FlashInfer's kv_last_page_len gives
 *                   cache_seqlens[b] = (pages - 1) * P + last_page_len[b]
 *                   - the new tokens of b (its table holds them).
 * K-prepare with NORMJIT_OP_WRITE_CACHE takes the same pages.
 * The caches may overlap no other buffer (nor each other). The workspace and
 * semaphores of the split keys are the library's (NORMJIT_WORKSPACE and
 * NORMJIT_SEMAPHORES must stay absent): allocated per context and stream at
 * the first launch on that stream that needs them (or more of them), so the
 * first decode launch of each stream is not capturable in a CUDA graph and
 * later ones of no larger shape are. */

/* Training (API 6). A forward row norm (RMSNorm, LayerNorm, L2 norm; with
 * any of weight, bias, Gemma's offset, a residual add with DeepNorm's
 * alpha, residual_out, Sandwich's skip, but not NORMJIT_OP_F32_RESIDUAL) or
 * the QK-Norm prologue with NORMJIT_OP_SAVE_STATS also writes, in the same
 * pass, what its backward reads: NORMJIT_SAVED_RSTD (f32, rows x groups,
 * or rows x (num_q_heads + num_kv_heads) for QK-Norm: the scale each row,
 * group or head was multiplied by) and for mean-var statistics
 * NORMJIT_SAVED_MEAN (the same shape). Any row stride; 4-byte aligned.
 *
 * The same desc with NORMJIT_OP_BACKWARD instead (and without skip, whose
 * gradient is grad_output itself) is its backward: from v (NORMJIT_INPUT:
 * the row the forward normalized, i.e. its input, or with an addend the
 * residual stream it wrote), NORMJIT_GRAD_OUTPUT (output_type), the saved
 * statistics and the weight, one launch computes
 *   NORMJIT_GRAD_INPUT  (input_type) alpha * dv, where dv is the gradient
 *                   of the norm at v plus NORMJIT_RESIDUAL_GRAD (the
 *                   gradient of residual_out, input_type; with
 *                   NORMJIT_OP_RESIDUAL_OUT only);
 *   NORMJIT_ADDEND_GRAD (addend_type) dv, with an addend and alpha != 1
 *                   (alpha 1: grad_input is the addend's gradient too);
 *   NORMJIT_WEIGHT_GRAD, NORMJIT_BIAS_GRAD (param_type, hidden elements)
 *                   with NORMJIT_OP_WEIGHT / NORMJIT_OP_BIAS: sums over the
 *                   rows, from f32 partial sums per thread group of each
 *                   CTA reduced by a second kernel on the same stream in a
 *                   fixed order: bitwise the same every run of a kernel
 *                   (no atomics). The partials are the library's
 *                   (NORMJIT_WEIGHT_GRAD_PARTIALS and _BIAS_GRAD_PARTIALS
 *                   stay absent), allocated per context and stream as
 *                   decode's workspace is: a stream's first backward launch
 *                   (or one needing more) is not capturable, later ones of
 *                   no more rows are. With rows == 0 a backward launch
 *                   writes zeros to them (sums over no rows) and reads no
 *                   other buffer.
 * Backward rows whose f32 column sums do not fit the registers of one CTA
 * (beyond 16384 elements, or 16384 a group for GroupNorm) or whose v and
 * grad_output rows do not fit its shared memory staged are UNSUPPORTED at
 * kernel creation, with a message. With
 * NORMJIT_OP_PER_HEAD_WEIGHT the groups are heads of head_dim = hidden /
 * groups sharing one weight of head_dim elements: the backward of the
 * QK-Norm prologue, one launch for the q heads (input: q's columns of qkv,
 * saved statistics: its first num_q_heads columns) and one for the k heads.
 * normjit_op_desc_get_backward derives these descs from a forward one. */

/* In place (API 7). A forward row norm (any kind of NORMJIT_OP_RMS_NORM ..
 * NORMJIT_OP_ELEMENTWISE) built with NORMJIT_OP_OUTPUT_OVER_INPUT or
 * _OVER_ADDEND may be launched with its output buffer the same as that row
 * input, and with NORMJIT_OP_RESIDUAL_OVER_INPUT or _OVER_ADDEND its
 * residual_out (vLLM's fused_add_rms_norm(input, residual) updates both:
 * NORMJIT_INPUT = residual, NORMJIT_ADDEND = input, with
 * NORMJIT_OP_RESIDUAL_OVER_INPUT | NORMJIT_OP_OUTPUT_OVER_ADDEND). The
 * output keeps the element type of the input it overwrites, the two
 * outputs overwrite different inputs, and the launch may still pass
 * separate buffers. Such a kernel reads those rows through the coherent
 * cache and writes a row only after all its threads have read it. Rows too
 * long to stage in shared memory (a bf16 residual stream beyond 115712
 * elements on sm_90) store residual_out as they first read the row: RMS
 * and L2 rows may then write it in place (they read it back, each thread
 * its own elements), LayerNorm rows and f32 residual streams may not:
 * UNSUPPORTED at kernel creation, with a message. */

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
  int64_t num_q_heads;  /* QK-Norm, attention */
  int64_t num_kv_heads; /* QK-Norm, attention */
  /* API 3. Attention's softmax scale; 0: 1 / sqrt(head dim). Other kinds:
   * 0 (anything else is refused). */
  double scale;
  /* API 3. Attention's rotary embeddings (above); other kinds take none.
   * Without them (NORMJIT_ROPE_NONE) rotary_dim and rope_theta are 0
   * (anything else is refused). */
  int32_t rope;       /* normjit_rope */
  /* API 12 (before: reserved, 0). Decode attention and K-prepare with
   * NORMJIT_OP_WRITE_CACHE: a paged KV cache's rows per page (below); 0: a
   * cache of contiguous rows per sequence. Other kinds: 0. */
  int32_t cache_block_size;
  int64_t rotary_dim; /* rotated elements per head row; 0: the head dim */
  double rope_theta;  /* the frequency base; 0: 10000 */
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
  /* API 3: attention. */
  NORMJIT_V = 14,
  NORMJIT_CU_SEQLENS = 15,
  NORMJIT_LSE = 16,
  /* API 4: decode attention's KV cache (updated in place) and its lengths;
   * its workspace and semaphores are the runtime's own. */
  NORMJIT_K_CACHE = 17,
  NORMJIT_V_CACHE = 18,
  NORMJIT_CACHE_SEQLENS = 19,
  NORMJIT_WORKSPACE = 20,
  NORMJIT_SEMAPHORES = 21,
  /* API 5: rotary positions and angles (NORMJIT_OP_ROPE_POSITIONS,
   * NORMJIT_OP_ROPE_TABLE). */
  NORMJIT_POSITIONS = 22,
  NORMJIT_ROPE_TABLE = 23,
  /* API 6: training (see above); the gradient partials are the library's. */
  NORMJIT_GRAD_OUTPUT = 24,
  NORMJIT_RESIDUAL_GRAD = 25,
  NORMJIT_SAVED_MEAN = 26,
  NORMJIT_SAVED_RSTD = 27,
  NORMJIT_GRAD_INPUT = 28,
  NORMJIT_ADDEND_GRAD = 29,
  NORMJIT_WEIGHT_GRAD_PARTIALS = 30,
  NORMJIT_BIAS_GRAD_PARTIALS = 31,
  NORMJIT_WEIGHT_GRAD = 32,
  NORMJIT_BIAS_GRAD = 33,
  /* API 8: FP8 outputs' scales (f32; cols 1, stride 0 for the scalars). */
  NORMJIT_OUTPUT_SCALE = 34,
  NORMJIT_SCALE_UB = 35,
  NORMJIT_OUTPUT_SCALES = 36,
  /* API 10: K-prepare's outputs. */
  NORMJIT_K_OUT = 37,
  NORMJIT_V_OUT = 38,
  /* API 12: a paged cache's block table (normjit_op_desc.cache_block_size) */
  NORMJIT_BLOCK_TABLES = 39,
  /* API 12: an FP8 cache's scales (NORMJIT_OP_FP8_CACHE) */
  NORMJIT_K_SCALE = 40,
  NORMJIT_V_SCALE = 41,
  /* API 13: a ragged block table's offsets (NORMJIT_OP_PAGE_INDPTR) */
  NORMJIT_PAGE_INDPTR = 42,
  NORMJIT_NUM_BUFFERS = 43
} normjit_buffer;

/* A device buffer: cols elements per row, row_stride elements between rows
 * (0: cols). 1-D buffers (weights, statistics, cu_seqlens): cols elements,
 * stride 0. */
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
  /* API 1 and 2: 14 tensors (NORMJIT_LAUNCH_ARGS_SIZE_V1), API 3: 17
   * (NORMJIT_LAUNCH_ARGS_SIZE_V3), API 4: 22, API 5: 24, API 6 and 7: 34,
   * API 8 and 9: 37, API 10 and 11: 39, API 12: 42, API 13: 43; the
   * library reads only
   * the tensors within
   * struct_size, the
   * others are absent. */
  normjit_tensor tensors[NORMJIT_NUM_BUFFERS];
  /* API 4. The rows of NORMJIT_K_CACHE and NORMJIT_V_CACHE (decode: batch *
   * cache capacity); 0 for every other operation (anything else is
   * refused; paged: num_blocks * cache_block_size). API 4's layout had 22
   * tensors before it, API 5's 24. */
  int64_t cache_rows;
  /* API 5. The rows (positions) of NORMJIT_ROPE_TABLE; 0 without a table
   * (anything else is refused). */
  int64_t rope_table_rows;
} normjit_launch_args;

/* normjit_context_options.flags; other bits are refused. */
#define NORMJIT_CONTEXT_NO_TUNING (1u << 0)     /* heuristic configurations */
#define NORMJIT_CONTEXT_NO_DISK_CACHE (1u << 1)
/* API 7: programmatic dependent launch (compute capability 9.0 on; else
 * NORMJIT_ERROR_UNSUPPORTED). Every kernel of the context loads its weights,
 * then waits for the kernel before it in the stream (griddepcontrol.wait)
 * and lets the next one start (griddepcontrol.launch_dependents), and is
 * launched with programmatic stream serialization, so that its prologue
 * overlaps the end of the kernel before it, in streams and in captured
 * CUDA graphs alike. Use it only where no kernel just before one of these
 * in its stream writes the weights it reads. Kernel bundles are not used. */
#define NORMJIT_CONTEXT_PDL (1u << 2)

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

/* API 3: a whole launch configuration, attention's included. The first four
 * fields are normjit_launch_config's. Attention: vector 8, threads_per_row
 * the head dim / 8 rounded up to a power of two, rows_per_cta 16 * warps. */
typedef struct normjit_launch_config2 {
  int64_t vector;
  int64_t threads_per_row;
  int64_t warps;
  int64_t rows_per_cta;
  int64_t block_n; /* attention: keys per tile of the key loop; else 0 */
  int64_t stages;  /* attention: key/value tiles in flight; else 0 */
} normjit_launch_config2;

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

/* RMSNorm, bf16 everywhere, eps 1e-6, alpha 1, groups 1, no flags, scale 0,
 * NORMJIT_ROPE_NONE with rotary_dim and rope_theta 0, for the first `size`
 * bytes of *desc, struct_size = size (as normjit_context_options_init_sized).
 * API 3. */
void normjit_op_desc_init_sized(normjit_op_desc *desc, size_t size);
/* The API 1 entry point: fills the API 1 layout (NORMJIT_OP_DESC_SIZE_V1
 * bytes). From API 3 on, the macro calls normjit_op_desc_init_sized with this
 * header's size. */
void normjit_op_desc_init(normjit_op_desc *desc);
#define normjit_op_desc_init(desc)                                            \
  normjit_op_desc_init_sized((desc), sizeof(normjit_op_desc))

/* API 6: the backward descs of the forward operation *forward, in launch
 * order (a row norm: one; the QK-Norm prologue: the q heads', then the k
 * heads', NORMJIT_OP_PER_HEAD_WEIGHT), each of forward->struct_size bytes.
 * Writes at most `capacity` and sets *count to how many there are;
 * INVALID_ARGUMENT when the operation has no backward (the message says
 * why). */
normjit_status normjit_op_desc_get_backward(const normjit_op_desc *forward,
                                            normjit_op_desc *backward,
                                            size_t capacity, size_t *count);

/* Builds, tunes and loads the kernel of desc at the first request;
 * thread-safe. Release with normjit_kernel_destroy. */
normjit_status normjit_kernel_create(normjit_context *context,
                                     const normjit_op_desc *desc,
                                     uint32_t flags, normjit_kernel **kernel);
void normjit_kernel_destroy(normjit_kernel *kernel);

/* No buffers, for the first `size` bytes of *args, struct_size = size.
 * API 3. */
void normjit_launch_args_init_sized(normjit_launch_args *args, size_t size);
/* The API 1 entry point: fills the API 1 layout (14 tensors,
 * NORMJIT_LAUNCH_ARGS_SIZE_V1 bytes); the macro calls the sized one. */
void normjit_launch_args_init(normjit_launch_args *args);
#define normjit_launch_args_init(args)                                        \
  normjit_launch_args_init_sized((args), sizeof(normjit_launch_args))
/* Sets one tensor; INVALID_ARGUMENT for a buffer past args->struct_size. */
normjit_status normjit_launch_args_set(normjit_launch_args *args,
                                       int32_t buffer, const void *data,
                                       int32_t dtype, int64_t cols,
                                       int64_t row_stride);

/* Checks the buffers against the operation and enqueues one kernel on
 * stream (a CUstream; NULL: the legacy default stream). Asynchronous, no
 * allocation, capturable in CUDA graphs (backward and decode launches: see
 * above). rows == 0: nothing, success (a backward launch zeroes its
 * gradients).
 * Buffers must not alias: an output (output, residual_out, q, k, ...) that
 * shares a byte with any other buffer is refused with
 * NORMJIT_ERROR_INVALID_ARGUMENT, except the row input a kernel built with
 * NORMJIT_OP_*_OVER_* writes it over, which is either exactly that buffer
 * (same data pointer and row stride) or shares no byte with it. Inputs may
 * share memory. */
normjit_status normjit_kernel_launch(const normjit_kernel *kernel,
                                     const normjit_launch_args *args,
                                     int64_t rows, void *stream);

/* The configuration launches of `rows` rows (aligned buffers) run (for
 * attention without block_n and stages: see normjit_kernel_get_config2). */
normjit_status normjit_kernel_get_config(const normjit_kernel *kernel,
                                         int64_t rows,
                                         normjit_launch_config *config);
/* API 3: the whole configuration (block_n and stages 0 for row kernels). */
normjit_status normjit_kernel_get_config2(const normjit_kernel *kernel,
                                          int64_t rows,
                                          normjit_launch_config2 *config);

/* Like normjit_kernel_create, but launches of every row count run `config`
 * instead of a planned configuration: for benchmarks that time each tuning
 * candidate at their own row counts. INVALID_ARGUMENT when the configuration
 * does not fit the operation's rows. */
normjit_status normjit_kernel_create_with_config(
    normjit_context *context, const normjit_op_desc *desc,
    const normjit_launch_config *config, uint32_t flags,
    normjit_kernel **kernel);
/* API 3: the same with a whole configuration (attention needs block_n and
 * stages; row kernels take 0 for both). */
normjit_status normjit_kernel_create_with_config2(
    normjit_context *context, const normjit_op_desc *desc,
    const normjit_launch_config2 *config, uint32_t flags,
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
  /* API 3: the rest of the winner (attention; 0 for row kernels). */
  int64_t block_n;
  int64_t stages;
} normjit_tuning_info;

typedef struct normjit_candidate {
  normjit_launch_config config;
  double microseconds; /* the tuner's time per launch; < 0: it failed */
} normjit_candidate;

/* API 3: a candidate with its whole configuration. */
typedef struct normjit_candidate2 {
  normjit_launch_config2 config;
  double microseconds;
} normjit_candidate2;

/* How launches of `rows` rows were planned, and the tuning candidates of
 * their row bucket timed in this process (none when the plan came from a
 * cache, a bundle, the heuristic or a fixed configuration). Writes at most
 * `capacity` candidates (candidates may be NULL when capacity is 0). */
normjit_status normjit_kernel_get_tuning(const normjit_kernel *kernel,
                                         int64_t rows,
                                         normjit_tuning_info *info,
                                         normjit_candidate *candidates,
                                         size_t capacity);
/* API 3: the same with whole configurations (attention's candidates differ
 * in block_n and stages). */
normjit_status normjit_kernel_get_tuning2(const normjit_kernel *kernel,
                                          int64_t rows,
                                          normjit_tuning_info *info,
                                          normjit_candidate2 *candidates,
                                          size_t capacity);

/* Writes a kernel bundle for the operations (tuning them first). descs is
 * an array of `count` descriptions of descs[0].struct_size bytes each (every
 * one must have that struct_size). */
normjit_status normjit_context_write_bundle(normjit_context *context,
                                            const normjit_op_desc *descs,
                                            size_t count, const char *path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NORMJIT_H */
