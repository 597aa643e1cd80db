// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" | FileCheck %s --check-prefix=SM90
// RUN: norm-opt %s --norm-set-target="chip=sm_80" --norm-generate-kernels="scalar-fallback=false" | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --norm-set-target="chip=sm_89" --norm-generate-kernels="scalar-fallback=false" | FileCheck %s --check-prefix=SM89
// RUN: norm-opt %s --norm-set-target="chip=sm_90 max-shared-bytes=33792" --norm-generate-kernels="scalar-fallback=false" | FileCheck %s --check-prefix=LIMIT
// RUN: not norm-opt %s --norm-set-target="chip=sm_75" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not norm-opt %s --norm-set-target="chip=sm_75 max-shared-bytes=50000" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not norm-opt %s --norm-set-target="max-shared-bytes=-2" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not norm-opt %s --norm-set-target="chip=sm_89 max-shared-bytes=200000" 2>&1 | FileCheck %s --check-prefix=TOOMUCH
// RUN: norm-opt %s --norm-set-target="chip=sm_80" --norm-set-target="ptx-version=78" | FileCheck %s --check-prefix=KEEP

// The shared memory of a CTA, less 1 KiB for the reduction, decides: 8 rows
// of 4100 bf16 values at a time (8208 bytes each, 65664 in all) fit every
// chip; one row of 65600 bf16 values (131200 bytes) fits sm_90 (227 KiB)
// and sm_80 (163 KiB) but not sm_89 (99 KiB); max-shared-bytes overrides
// the chip's.

// SM90: gpu.func @norm_rms_add_h4100_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w8_r8_smem(
// SM90: gpu.dynamic_shared_memory
// SM90: gpu.func @norm_rms_h65600_bf16_bf16_{{[0-9a-f]+}}_v8_t256_w8_r1_smem(
// SM90: gpu.dynamic_shared_memory

// SM80: module attributes {gpu.container_module, norm.target = #norm.target<chip = "sm_80", ptx_version = 80, max_shared_bytes = 0>}
// SM80: gpu.func @norm_rms_add_h4100_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w8_r8_smem(
// SM80: gpu.func @norm_rms_h65600_bf16_bf16_{{[0-9a-f]+}}_v8_t256_w8_r1_smem(

// SM89: gpu.func @norm_rms_add_h4100_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w8_r8_smem(
// SM89: gpu.dynamic_shared_memory
// SM89: gpu.func @norm_rms_h65600_bf16_bf16_{{[0-9a-f]+}}_v8_t256_w8_r1_stream(
// SM89-NOT: gpu.dynamic_shared_memory

// LIMIT-NOT: gpu.dynamic_shared_memory
// LIMIT: gpu.func @norm_rms_add_h4100_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w8_r8_stream(
// LIMIT: gpu.func @norm_rms_h65600_bf16_bf16_{{[0-9a-f]+}}_v8_t256_w8_r1_stream(
// LIMIT-NOT: gpu.dynamic_shared_memory

// The target is IR data: later runs keep what they do not set.
// KEEP: module attributes {norm.target = #norm.target<chip = "sm_80", ptx_version = 78, max_shared_bytes = 0>}

// CHIP: error: norm-set-target: unsupported chip 'sm_75' (expected sm_80, sm_89, sm_90 or sm_90a)
// NEGATIVE: error: norm-set-target: max-shared-bytes (-2) is negative
// TOOMUCH: error: norm-set-target: max-shared-bytes (200000) exceeds what a CTA may use on sm_89 (101376)

func.func @rows(%x: tensor<?x4100xbf16>, %a: tensor<?x4100xbf16>,
                %w: tensor<4100xbf16>, %x2: tensor<?x65600xbf16>)
    -> (tensor<?x4100xbf16>, tensor<?x4100xbf16>, tensor<?x65600xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x4100xbf16>) weight(%w : tensor<4100xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 8, rows_per_cta = 8>} : tensor<?x4100xbf16> -> tensor<?x4100xbf16>, tensor<?x4100xbf16>
  %z = norm.fused_row <rms> %x2 eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x65600xbf16> -> tensor<?x65600xbf16>
  return %y, %h, %z : tensor<?x4100xbf16>, tensor<?x4100xbf16>, tensor<?x65600xbf16>
}
