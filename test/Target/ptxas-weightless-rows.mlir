// Rows without parameters at 1024 threads (64 registers a thread), where
// the register rule once kept 64 bf16/f16 elements a thread in registers
// and ptxas spilled 12 to 196 bytes from 56 (hidden 52224 to 65536: every
// weightless RMSNorm, L2 and LayerNorm of the outside testing): each element
// lives in f32 from its sum to its normalization (getLiveBytesPerVector),
// so 48 stay in registers and one vector more is staged. 24 ops, 48
// kernels with their scalar fallbacks; ptxas must take each for sm_90 and
// sm_80 without a spill.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefix=SM80
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-DAG: .entry norm_rms_h49152_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1(
// CHECK-DAG: .entry norm_layer_h49152_f16_f16_{{[0-9a-f]+}}_v8_t1024_w32_r1(
// CHECK-DAG: .entry norm_rms_h49160_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// CHECK-DAG: .entry norm_l2_h57344_f16_f16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// CHECK-DAG: .entry norm_layer_h65536_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM80-DAG: .entry norm_rms_h49152_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1(
// SM80-DAG: .entry norm_layer_h65536_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-48: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill

func.func @weightless(%x49152_bf16: tensor<?x49152xbf16>, %x49152_f16: tensor<?x49152xf16>, %x49160_bf16: tensor<?x49160xbf16>, %x49160_f16: tensor<?x49160xf16>, %x57344_bf16: tensor<?x57344xbf16>, %x57344_f16: tensor<?x57344xf16>, %x65536_bf16: tensor<?x65536xbf16>, %x65536_f16: tensor<?x65536xf16>) {
  %r0 = norm.fused_row <rms> %x49152_bf16 eps(1.0e-06) : tensor<?x49152xbf16> -> tensor<?x49152xbf16>
  %r1 = norm.fused_row <l2> %x49152_bf16 eps(1.0e-06) : tensor<?x49152xbf16> -> tensor<?x49152xbf16>
  %r2 = norm.fused_row <mean_var> %x49152_bf16 eps(1.0e-05) : tensor<?x49152xbf16> -> tensor<?x49152xbf16>
  %r3 = norm.fused_row <rms> %x49152_f16 eps(1.0e-06) : tensor<?x49152xf16> -> tensor<?x49152xf16>
  %r4 = norm.fused_row <l2> %x49152_f16 eps(1.0e-06) : tensor<?x49152xf16> -> tensor<?x49152xf16>
  %r5 = norm.fused_row <mean_var> %x49152_f16 eps(1.0e-05) : tensor<?x49152xf16> -> tensor<?x49152xf16>
  %r6 = norm.fused_row <rms> %x49160_bf16 eps(1.0e-06) : tensor<?x49160xbf16> -> tensor<?x49160xbf16>
  %r7 = norm.fused_row <l2> %x49160_bf16 eps(1.0e-06) : tensor<?x49160xbf16> -> tensor<?x49160xbf16>
  %r8 = norm.fused_row <mean_var> %x49160_bf16 eps(1.0e-05) : tensor<?x49160xbf16> -> tensor<?x49160xbf16>
  %r9 = norm.fused_row <rms> %x49160_f16 eps(1.0e-06) : tensor<?x49160xf16> -> tensor<?x49160xf16>
  %r10 = norm.fused_row <l2> %x49160_f16 eps(1.0e-06) : tensor<?x49160xf16> -> tensor<?x49160xf16>
  %r11 = norm.fused_row <mean_var> %x49160_f16 eps(1.0e-05) : tensor<?x49160xf16> -> tensor<?x49160xf16>
  %r12 = norm.fused_row <rms> %x57344_bf16 eps(1.0e-06) : tensor<?x57344xbf16> -> tensor<?x57344xbf16>
  %r13 = norm.fused_row <l2> %x57344_bf16 eps(1.0e-06) : tensor<?x57344xbf16> -> tensor<?x57344xbf16>
  %r14 = norm.fused_row <mean_var> %x57344_bf16 eps(1.0e-05) : tensor<?x57344xbf16> -> tensor<?x57344xbf16>
  %r15 = norm.fused_row <rms> %x57344_f16 eps(1.0e-06) : tensor<?x57344xf16> -> tensor<?x57344xf16>
  %r16 = norm.fused_row <l2> %x57344_f16 eps(1.0e-06) : tensor<?x57344xf16> -> tensor<?x57344xf16>
  %r17 = norm.fused_row <mean_var> %x57344_f16 eps(1.0e-05) : tensor<?x57344xf16> -> tensor<?x57344xf16>
  %r18 = norm.fused_row <rms> %x65536_bf16 eps(1.0e-06) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>
  %r19 = norm.fused_row <l2> %x65536_bf16 eps(1.0e-06) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>
  %r20 = norm.fused_row <mean_var> %x65536_bf16 eps(1.0e-05) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>
  %r21 = norm.fused_row <rms> %x65536_f16 eps(1.0e-06) : tensor<?x65536xf16> -> tensor<?x65536xf16>
  %r22 = norm.fused_row <l2> %x65536_f16 eps(1.0e-06) : tensor<?x65536xf16> -> tensor<?x65536xf16>
  %r23 = norm.fused_row <mean_var> %x65536_f16 eps(1.0e-05) : tensor<?x65536xf16> -> tensor<?x65536xf16>
  return
}
