// Forced configurations that do not fit: located errors, no kernel.
// RUN: not norm-opt %s --norm-assign-launch-config="vector=3" 2>&1 | FileCheck %s --check-prefix=VECTOR
// RUN: not norm-opt %s --norm-assign-launch-config="threads-per-row=48" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not norm-opt %s --norm-assign-launch-config="threads-per-row=256 warps=4" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not norm-opt %s --norm-assign-launch-config="threads-per-row=1024" 2>&1 | FileCheck %s --check-prefix=IDLE
// RUN: not norm-opt %s --norm-assign-launch-config="threads-per-row=32 warps=4 rows-per-cta=6" 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not norm-opt %s --split-input-file --norm-assign-launch-config 2>&1 | FileCheck %s --check-prefix=HUGE

// VECTOR: :[[@LINE+6]]:8: error: 'norm.fused_row' op cannot use the launch configuration v3_t256_w8_r1: vector width must be 1, 2, 4 or 8, got 3
// THREADS: :[[@LINE+5]]:8: error: 'norm.fused_row' op cannot use the launch configuration v8_t48_w8_r5: threads_per_row must be 1, 2, 4, 8, 16 or a multiple of 32 up to 1024, got 48
// WARPS: error: 'norm.fused_row' op cannot use the launch configuration v8_t256_w4_r1: threads_per_row (256) must divide the 128 threads of a CTA of 4 warps
// IDLE: error: 'norm.fused_row' op cannot use the launch configuration v8_t1024_w32_r1: launch configuration leaves threads without work: 1024 threads x vector 8 for rows of 2048 elements
// ROWS: error: 'norm.fused_row' op cannot use the launch configuration v8_t32_w4_r6: rows_per_cta (6) must be a positive multiple of the 4 rows a CTA works on at once
func.func @f(%x: tensor<?x2048xbf16>) -> tensor<?x2048xbf16> {
  %0 = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x2048xbf16> -> tensor<?x2048xbf16>
  return %0 : tensor<?x2048xbf16>
}

// -----

// HUGE: :[[@LINE+2]]:12: error: 'norm.qk_norm_prologue' op cannot use the launch configuration v1_t1024_w32_r1: rows of 65537 elements do not fit in the registers of one CTA (at most 32768), where this kernel keeps them; such rows are not supported
func.func @huge_heads(%qkv: tensor<?x196611xbf16>) -> (tensor<?x65537xbf16>, tensor<?x65537xbf16>) {
  %q, %k = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 65537 : i64} : tensor<?x196611xbf16> -> tensor<?x65537xbf16>, tensor<?x65537xbf16>
  return %q, %k : tensor<?x65537xbf16>, tensor<?x65537xbf16>
}
