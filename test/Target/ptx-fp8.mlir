// FP8 outputs in PTX: on sm_90 (and sm_89 from PTX 8.1) each pair of
// outputs is one cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 and a thread's 8
// bytes one store; sm_80, and sm_89 before PTX 8.1, have no such cvt and
// round in integer code. Per-token scales reduce the
// amax with max.f32 over the row's threads and store the scale once a row.
// ptxas accepts every kernel (with its scalar fallback) on each chip, with
// no spills.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefixes=CHECK,CVT
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_89 ptx-version=81" -o %t.sm89.ptx
// RUN: FileCheck %s --input-file=%t.sm89.ptx --check-prefixes=CHECK,CVT
// RUN: %ptxas -arch=sm_89 -v %t.sm89.ptx -o %t.sm89.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_89 ptx-version=80" -o %t.sm89-80.ptx
// RUN: FileCheck %s --input-file=%t.sm89-80.ptx --check-prefixes=CHECK,INT
// RUN: %ptxas -arch=sm_89 -v %t.sm89-80.ptx -o %t.sm89-80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefixes=CHECK,INT
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-5: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: bytes stack frame
// CHECK-NOT: .local

// vLLM's rms_norm_static_fp8_quant after a residual add, Llama's 4096:
// the static scale's reciprocal once, then 8 e4m3 bytes a thread and chunk.
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_f8E4M3FN_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK: ld.global.nc.b32
// CHECK: rcp.rn.f32
// Saturation keeps NaN (min/max.NaN), which cvt turns into FP8's NaN.
// CHECK: min.NaN.f32 {{.*}}0f43E00000
// CHECK: max.NaN.f32 {{.*}}0fC3E00000
// CVT-COUNT-4: cvt.rn.satfinite.e4m3x2.f32
// CVT: st.global.v4.b16
// INT-NOT: cvt.rn.satfinite
// INT: st.global.v2.b32
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_f8E4M3FN_{{[0-9a-f]+}}_v1_t512_w16_r1(
// CVT: cvt.rn.satfinite.e4m3x2.f32
// CVT: st.global.b8
// INT-NOT: cvt.rn.satfinite
func.func @static_scale(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>,
                        %w: tensor<4096xbf16>, %s: tensor<1xf32>)
    -> (tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) output_scale(%s : tensor<1xf32>)
      eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
}

// rms_norm_dynamic_per_token_quant with scale_ub, e5m2, Qwen's 5120: the
// row's sums, then its amax (a max.f32 butterfly), one scale a row.
// CHECK-LABEL: .visible .entry norm_rms_h5120_bf16_f8E5M2_{{[0-9a-f]+}}_v8_t
// CHECK: shfl.sync.bfly.b32
// CHECK: bar.sync
// CHECK: max.NaN.f32
// CHECK: shfl.sync.bfly.b32
// CHECK: bar.sync
// CHECK: min.NaN.f32
// CHECK: div.rn.f32 {{.*}}0f47600000
// CHECK: st.global.b32
// CVT: cvt.rn.satfinite.e5m2x2.f32
// INT-NOT: cvt.rn.satfinite
func.func @per_token(%x: tensor<?x5120xbf16>, %w: tensor<5120xbf16>,
                     %u: tensor<1xf32>)
    -> (tensor<?x5120xf8E5M2>, tensor<?x1xf32>) {
  %y, %s = norm.fused_row <rms> %x weight(%w : tensor<5120xbf16>)
      scale_ub(%u : tensor<1xf32>) eps(1.0e-06)
      : tensor<?x5120xbf16> -> tensor<?x5120xf8E5M2> output_scales(tensor<?x1xf32>)
  return %y, %s : tensor<?x5120xf8E5M2>, tensor<?x1xf32>
}

// Staged rows (bf16 at 40000 elements, beyond 1024 threads' registers,
// within sm_89's 99 KiB of shared memory): the amax pass reads the row back
// from shared memory, as the quantized stores do.
// CHECK-LABEL: .visible .entry norm_layer_h40000_bf16_f8E4M3FN_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// CHECK: st.shared.v4.b32
// CHECK: ld.shared.v4.b32
// CHECK: max.NaN.f32
// CHECK: ld.shared.v4.b32
// CVT: cvt.rn.satfinite.e4m3x2.f32
func.func @staged(%x: tensor<?x40000xbf16>, %w: tensor<40000xbf16>,
                  %b: tensor<40000xbf16>)
    -> (tensor<?x40000xf8E4M3FN>, tensor<?x1xf32>) {
  %y, %s = norm.fused_row <mean_var> %x weight(%w : tensor<40000xbf16>)
      bias(%b : tensor<40000xbf16>) eps(1.0e-05)
      : tensor<?x40000xbf16> -> tensor<?x40000xf8E4M3FN> output_scales(tensor<?x1xf32>)
  return %y, %s : tensor<?x40000xf8E4M3FN>, tensor<?x1xf32>
}
