// The row-storage regimes at their boundaries, where the register rule
// (compiler/model/Launch.h) decides: rows just inside and just past what
// 1024 threads hold in registers, staged in shared memory, at and past the
// staging limit of sm_90 (227 KiB) and sm_80 (163 KiB), streamed; odd
// hidden sizes, whose scalar kernels hold half as many elements (a lone
// bf16 takes a whole register); the tuning candidates at 512 and 256
// threads; f32-residual streams; and QK-Norm heads of 64, 96, 128 and 256
// (RMSNorm, and LayerNorm with Gemma's offset). 96 ops, 184 kernels with
// their scalar fallbacks. ptxas must accept every one for sm_90 and sm_80
// with no register spills: a kernel the rule keeps in registers that
// spilled would be a wrong prediction.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefixes=STORAGE,SM90
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefixes=STORAGE,SM80
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-NOT: .local
// CHECK-COUNT-184: .visible .entry
// CHECK-NOT: .visible .entry
// CHECK-NOT: .local

// bf16 RMSNorm at 1024 threads: 32 elements a thread in registers, one
// vector more is staged, rows past the shared memory of the chip streamed.
// SM90-DAG: .entry norm_rms_h32768_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1(
// SM90-DAG: .entry norm_rms_h32776_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_rms_h115712_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_rms_h115720_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// SM80-DAG: .entry norm_rms_h32768_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1(
// SM80-DAG: .entry norm_rms_h65536_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM80-DAG: .entry norm_rms_h115712_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// SM80-DAG: .entry norm_rms_h100000_f16_f16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// Their scalar fallbacks hold 16 elements a thread at 1024 threads.
// SM90-DAG: .entry norm_rms_h32768_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_rms_h16385_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_rms_h12289_bf16_bf16_{{[0-9a-f]+}}_v1_t800_w25_r1(
// The fallback of a 256-thread candidate takes more threads instead.
// SM90-DAG: .entry norm_rms_h16384_bf16_bf16_{{[0-9a-f]+}}_v8_t256_w8_r1(
// SM90-DAG: .entry norm_rms_h16384_bf16_bf16_{{[0-9a-f]+}}_v1_t448_w14_r1(
// A bias costs registers: bf16 LayerNorm holds 16 elements a thread.
// SM90-DAG: .entry norm_layer_h21504_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_rms_add_h21504_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1(
// f32 rows: 16 elements at 1024 and 512 threads (the budget of 128
// registers), LayerNorm 8.
// SM90-DAG: .entry norm_rms_h16384_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1(
// SM90-DAG: .entry norm_rms_h16384_f32_f32_{{[0-9a-f]+}}_v4_t512_w16_r1(
// SM90-DAG: .entry norm_rms_h16384_f32_f32_{{[0-9a-f]+}}_v4_t256_w8_r1_smem(
// SM90-DAG: .entry norm_rms_h16388_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_layer_h8192_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1(
// SM90-DAG: .entry norm_layer_h16384_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1_smem(
// SM90-DAG: .entry norm_rms_h57600_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1_smem(
// SM80-DAG: .entry norm_rms_h57600_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1_stream(
// QK-Norm heads stay in registers.
// STORAGE-DAG: .entry norm_qk_rms_d256_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r4(
// STORAGE-DAG: .entry norm_qk_mean_var_d96_bf16_bf16_{{[0-9a-f]+}}_v8_t8_w4_r16(

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-184: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-NOT: error

func.func @regimes(%x12289_bf16: tensor<?x12289xbf16>, %w12289_bf16: tensor<12289xbf16>, %x16385_bf16: tensor<?x16385xbf16>, %w16385_bf16: tensor<16385xbf16>, %x21504_bf16: tensor<?x21504xbf16>, %w21504_bf16: tensor<21504xbf16>, %x21512_bf16: tensor<?x21512xbf16>, %w21512_bf16: tensor<21512xbf16>, %x32768_bf16: tensor<?x32768xbf16>, %w32768_bf16: tensor<32768xbf16>, %x32776_bf16: tensor<?x32776xbf16>, %w32776_bf16: tensor<32776xbf16>, %x65536_bf16: tensor<?x65536xbf16>, %w65536_bf16: tensor<65536xbf16>, %x115712_bf16: tensor<?x115712xbf16>, %w115712_bf16: tensor<115712xbf16>, %x115720_bf16: tensor<?x115720xbf16>, %w115720_bf16: tensor<115720xbf16>, %x262144_bf16: tensor<?x262144xbf16>, %w262144_bf16: tensor<262144xbf16>, %x32768_f16: tensor<?x32768xf16>, %w32768_f16: tensor<32768xf16>, %x32776_f16: tensor<?x32776xf16>, %w32776_f16: tensor<32776xf16>, %x100000_f16: tensor<?x100000xf16>, %w100000_f16: tensor<100000xf16>, %x115712_f16: tensor<?x115712xf16>, %w115712_f16: tensor<115712xf16>, %x115720_f16: tensor<?x115720xf16>, %w115720_f16: tensor<115720xf16>, %x8192_f32: tensor<?x8192xf32>, %w8192_f32: tensor<8192xf32>, %x8196_f32: tensor<?x8196xf32>, %w8196_f32: tensor<8196xf32>, %x16384_f32: tensor<?x16384xf32>, %w16384_f32: tensor<16384xf32>, %x16388_f32: tensor<?x16388xf32>, %w16388_f32: tensor<16388xf32>, %x57600_f32: tensor<?x57600xf32>, %w57600_f32: tensor<57600xf32>, %x57604_f32: tensor<?x57604xf32>, %w57604_f32: tensor<57604xf32>, %x131072_f32: tensor<?x131072xf32>, %w131072_f32: tensor<131072xf32>, %x16384_bf16: tensor<?x16384xbf16>, %w16384_bf16: tensor<16384xbf16>, %qkv64_bf16: tensor<?x384xbf16>, %wq64_bf16: tensor<64xbf16>, %qkv96_bf16: tensor<?x576xbf16>, %wq96_bf16: tensor<96xbf16>, %qkv128_bf16: tensor<?x768xbf16>, %wq128_bf16: tensor<128xbf16>, %qkv256_bf16: tensor<?x1536xbf16>, %wq256_bf16: tensor<256xbf16>, %qkv64_f32: tensor<?x384xf32>, %wq64_f32: tensor<64xf32>, %qkv96_f32: tensor<?x576xf32>, %wq96_f32: tensor<96xf32>, %qkv128_f32: tensor<?x768xf32>, %wq128_f32: tensor<128xf32>, %qkv256_f32: tensor<?x1536xf32>, %wq256_f32: tensor<256xf32>) {
  %r0:1 = norm.fused_row <rms> %x12289_bf16 weight(%w12289_bf16 : tensor<12289xbf16>) eps(1.0e-06) : tensor<?x12289xbf16> -> tensor<?x12289xbf16>
  %r1:2 = norm.fused_row <rms> %x12289_bf16 addend(%x12289_bf16 : tensor<?x12289xbf16>) weight(%w12289_bf16 : tensor<12289xbf16>) eps(1.0e-06) : tensor<?x12289xbf16> -> tensor<?x12289xbf16>, tensor<?x12289xbf16>
  %r2:1 = norm.fused_row <mean_var> %x12289_bf16 weight(%w12289_bf16 : tensor<12289xbf16>) bias(%w12289_bf16 : tensor<12289xbf16>) eps(1.0e-05) : tensor<?x12289xbf16> -> tensor<?x12289xbf16>
  %r3:1 = norm.fused_row <rms> %x16385_bf16 weight(%w16385_bf16 : tensor<16385xbf16>) eps(1.0e-06) : tensor<?x16385xbf16> -> tensor<?x16385xbf16>
  %r4:2 = norm.fused_row <rms> %x16385_bf16 addend(%x16385_bf16 : tensor<?x16385xbf16>) weight(%w16385_bf16 : tensor<16385xbf16>) eps(1.0e-06) : tensor<?x16385xbf16> -> tensor<?x16385xbf16>, tensor<?x16385xbf16>
  %r5:1 = norm.fused_row <mean_var> %x16385_bf16 weight(%w16385_bf16 : tensor<16385xbf16>) bias(%w16385_bf16 : tensor<16385xbf16>) eps(1.0e-05) : tensor<?x16385xbf16> -> tensor<?x16385xbf16>
  %r6:1 = norm.fused_row <rms> %x21504_bf16 weight(%w21504_bf16 : tensor<21504xbf16>) eps(1.0e-06) : tensor<?x21504xbf16> -> tensor<?x21504xbf16>
  %r7:2 = norm.fused_row <rms> %x21504_bf16 addend(%x21504_bf16 : tensor<?x21504xbf16>) weight(%w21504_bf16 : tensor<21504xbf16>) eps(1.0e-06) : tensor<?x21504xbf16> -> tensor<?x21504xbf16>, tensor<?x21504xbf16>
  %r8:1 = norm.fused_row <mean_var> %x21504_bf16 weight(%w21504_bf16 : tensor<21504xbf16>) bias(%w21504_bf16 : tensor<21504xbf16>) eps(1.0e-05) : tensor<?x21504xbf16> -> tensor<?x21504xbf16>
  %r9:1 = norm.fused_row <rms> %x21512_bf16 weight(%w21512_bf16 : tensor<21512xbf16>) eps(1.0e-06) : tensor<?x21512xbf16> -> tensor<?x21512xbf16>
  %r10:2 = norm.fused_row <rms> %x21512_bf16 addend(%x21512_bf16 : tensor<?x21512xbf16>) weight(%w21512_bf16 : tensor<21512xbf16>) eps(1.0e-06) : tensor<?x21512xbf16> -> tensor<?x21512xbf16>, tensor<?x21512xbf16>
  %r11:1 = norm.fused_row <mean_var> %x21512_bf16 weight(%w21512_bf16 : tensor<21512xbf16>) bias(%w21512_bf16 : tensor<21512xbf16>) eps(1.0e-05) : tensor<?x21512xbf16> -> tensor<?x21512xbf16>
  %r12:1 = norm.fused_row <rms> %x32768_bf16 weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) : tensor<?x32768xbf16> -> tensor<?x32768xbf16>
  %r13:2 = norm.fused_row <rms> %x32768_bf16 addend(%x32768_bf16 : tensor<?x32768xbf16>) weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) : tensor<?x32768xbf16> -> tensor<?x32768xbf16>, tensor<?x32768xbf16>
  %r14:1 = norm.fused_row <mean_var> %x32768_bf16 weight(%w32768_bf16 : tensor<32768xbf16>) bias(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-05) : tensor<?x32768xbf16> -> tensor<?x32768xbf16>
  %r15:1 = norm.fused_row <rms> %x32776_bf16 weight(%w32776_bf16 : tensor<32776xbf16>) eps(1.0e-06) : tensor<?x32776xbf16> -> tensor<?x32776xbf16>
  %r16:2 = norm.fused_row <rms> %x32776_bf16 addend(%x32776_bf16 : tensor<?x32776xbf16>) weight(%w32776_bf16 : tensor<32776xbf16>) eps(1.0e-06) : tensor<?x32776xbf16> -> tensor<?x32776xbf16>, tensor<?x32776xbf16>
  %r17:1 = norm.fused_row <mean_var> %x32776_bf16 weight(%w32776_bf16 : tensor<32776xbf16>) bias(%w32776_bf16 : tensor<32776xbf16>) eps(1.0e-05) : tensor<?x32776xbf16> -> tensor<?x32776xbf16>
  %r18:1 = norm.fused_row <rms> %x65536_bf16 weight(%w65536_bf16 : tensor<65536xbf16>) eps(1.0e-06) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>
  %r19:2 = norm.fused_row <rms> %x65536_bf16 addend(%x65536_bf16 : tensor<?x65536xbf16>) weight(%w65536_bf16 : tensor<65536xbf16>) eps(1.0e-06) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>, tensor<?x65536xbf16>
  %r20:1 = norm.fused_row <mean_var> %x65536_bf16 weight(%w65536_bf16 : tensor<65536xbf16>) bias(%w65536_bf16 : tensor<65536xbf16>) eps(1.0e-05) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>
  %r21:1 = norm.fused_row <rms> %x115712_bf16 weight(%w115712_bf16 : tensor<115712xbf16>) eps(1.0e-06) : tensor<?x115712xbf16> -> tensor<?x115712xbf16>
  %r22:2 = norm.fused_row <rms> %x115712_bf16 addend(%x115712_bf16 : tensor<?x115712xbf16>) weight(%w115712_bf16 : tensor<115712xbf16>) eps(1.0e-06) : tensor<?x115712xbf16> -> tensor<?x115712xbf16>, tensor<?x115712xbf16>
  %r23:1 = norm.fused_row <mean_var> %x115712_bf16 weight(%w115712_bf16 : tensor<115712xbf16>) bias(%w115712_bf16 : tensor<115712xbf16>) eps(1.0e-05) : tensor<?x115712xbf16> -> tensor<?x115712xbf16>
  %r24:1 = norm.fused_row <rms> %x115720_bf16 weight(%w115720_bf16 : tensor<115720xbf16>) eps(1.0e-06) : tensor<?x115720xbf16> -> tensor<?x115720xbf16>
  %r25:2 = norm.fused_row <rms> %x115720_bf16 addend(%x115720_bf16 : tensor<?x115720xbf16>) weight(%w115720_bf16 : tensor<115720xbf16>) eps(1.0e-06) : tensor<?x115720xbf16> -> tensor<?x115720xbf16>, tensor<?x115720xbf16>
  %r26:1 = norm.fused_row <mean_var> %x115720_bf16 weight(%w115720_bf16 : tensor<115720xbf16>) bias(%w115720_bf16 : tensor<115720xbf16>) eps(1.0e-05) : tensor<?x115720xbf16> -> tensor<?x115720xbf16>
  %r27:1 = norm.fused_row <rms> %x262144_bf16 weight(%w262144_bf16 : tensor<262144xbf16>) eps(1.0e-06) : tensor<?x262144xbf16> -> tensor<?x262144xbf16>
  %r28:2 = norm.fused_row <rms> %x262144_bf16 addend(%x262144_bf16 : tensor<?x262144xbf16>) weight(%w262144_bf16 : tensor<262144xbf16>) eps(1.0e-06) : tensor<?x262144xbf16> -> tensor<?x262144xbf16>, tensor<?x262144xbf16>
  %r29:1 = norm.fused_row <mean_var> %x262144_bf16 weight(%w262144_bf16 : tensor<262144xbf16>) bias(%w262144_bf16 : tensor<262144xbf16>) eps(1.0e-05) : tensor<?x262144xbf16> -> tensor<?x262144xbf16>
  %r30:1 = norm.fused_row <rms> %x32768_f16 weight(%w32768_f16 : tensor<32768xf16>) eps(1.0e-06) : tensor<?x32768xf16> -> tensor<?x32768xf16>
  %r31:2 = norm.fused_row <rms> %x32768_f16 addend(%x32768_f16 : tensor<?x32768xf16>) weight(%w32768_f16 : tensor<32768xf16>) eps(1.0e-06) : tensor<?x32768xf16> -> tensor<?x32768xf16>, tensor<?x32768xf16>
  %r32:1 = norm.fused_row <rms> %x32776_f16 weight(%w32776_f16 : tensor<32776xf16>) eps(1.0e-06) : tensor<?x32776xf16> -> tensor<?x32776xf16>
  %r33:2 = norm.fused_row <rms> %x32776_f16 addend(%x32776_f16 : tensor<?x32776xf16>) weight(%w32776_f16 : tensor<32776xf16>) eps(1.0e-06) : tensor<?x32776xf16> -> tensor<?x32776xf16>, tensor<?x32776xf16>
  %r34:1 = norm.fused_row <rms> %x100000_f16 weight(%w100000_f16 : tensor<100000xf16>) eps(1.0e-06) : tensor<?x100000xf16> -> tensor<?x100000xf16>
  %r35:2 = norm.fused_row <rms> %x100000_f16 addend(%x100000_f16 : tensor<?x100000xf16>) weight(%w100000_f16 : tensor<100000xf16>) eps(1.0e-06) : tensor<?x100000xf16> -> tensor<?x100000xf16>, tensor<?x100000xf16>
  %r36:1 = norm.fused_row <rms> %x115712_f16 weight(%w115712_f16 : tensor<115712xf16>) eps(1.0e-06) : tensor<?x115712xf16> -> tensor<?x115712xf16>
  %r37:2 = norm.fused_row <rms> %x115712_f16 addend(%x115712_f16 : tensor<?x115712xf16>) weight(%w115712_f16 : tensor<115712xf16>) eps(1.0e-06) : tensor<?x115712xf16> -> tensor<?x115712xf16>, tensor<?x115712xf16>
  %r38:1 = norm.fused_row <rms> %x115720_f16 weight(%w115720_f16 : tensor<115720xf16>) eps(1.0e-06) : tensor<?x115720xf16> -> tensor<?x115720xf16>
  %r39:2 = norm.fused_row <rms> %x115720_f16 addend(%x115720_f16 : tensor<?x115720xf16>) weight(%w115720_f16 : tensor<115720xf16>) eps(1.0e-06) : tensor<?x115720xf16> -> tensor<?x115720xf16>, tensor<?x115720xf16>
  %r40:1 = norm.fused_row <rms> %x8192_f32 weight(%w8192_f32 : tensor<8192xf32>) eps(1.0e-06) : tensor<?x8192xf32> -> tensor<?x8192xf32>
  %r41:2 = norm.fused_row <rms> %x8192_f32 addend(%x8192_f32 : tensor<?x8192xf32>) weight(%w8192_f32 : tensor<8192xf32>) eps(1.0e-06) : tensor<?x8192xf32> -> tensor<?x8192xf32>, tensor<?x8192xf32>
  %r42:1 = norm.fused_row <mean_var> %x8192_f32 weight(%w8192_f32 : tensor<8192xf32>) bias(%w8192_f32 : tensor<8192xf32>) eps(1.0e-05) : tensor<?x8192xf32> -> tensor<?x8192xf32>
  %r43:1 = norm.fused_row <rms> %x8196_f32 weight(%w8196_f32 : tensor<8196xf32>) eps(1.0e-06) : tensor<?x8196xf32> -> tensor<?x8196xf32>
  %r44:2 = norm.fused_row <rms> %x8196_f32 addend(%x8196_f32 : tensor<?x8196xf32>) weight(%w8196_f32 : tensor<8196xf32>) eps(1.0e-06) : tensor<?x8196xf32> -> tensor<?x8196xf32>, tensor<?x8196xf32>
  %r45:1 = norm.fused_row <mean_var> %x8196_f32 weight(%w8196_f32 : tensor<8196xf32>) bias(%w8196_f32 : tensor<8196xf32>) eps(1.0e-05) : tensor<?x8196xf32> -> tensor<?x8196xf32>
  %r46:1 = norm.fused_row <rms> %x16384_f32 weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r47:2 = norm.fused_row <rms> %x16384_f32 addend(%x16384_f32 : tensor<?x16384xf32>) weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) : tensor<?x16384xf32> -> tensor<?x16384xf32>, tensor<?x16384xf32>
  %r48:1 = norm.fused_row <mean_var> %x16384_f32 weight(%w16384_f32 : tensor<16384xf32>) bias(%w16384_f32 : tensor<16384xf32>) eps(1.0e-05) : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r49:1 = norm.fused_row <rms> %x16388_f32 weight(%w16388_f32 : tensor<16388xf32>) eps(1.0e-06) : tensor<?x16388xf32> -> tensor<?x16388xf32>
  %r50:2 = norm.fused_row <rms> %x16388_f32 addend(%x16388_f32 : tensor<?x16388xf32>) weight(%w16388_f32 : tensor<16388xf32>) eps(1.0e-06) : tensor<?x16388xf32> -> tensor<?x16388xf32>, tensor<?x16388xf32>
  %r51:1 = norm.fused_row <mean_var> %x16388_f32 weight(%w16388_f32 : tensor<16388xf32>) bias(%w16388_f32 : tensor<16388xf32>) eps(1.0e-05) : tensor<?x16388xf32> -> tensor<?x16388xf32>
  %r52:1 = norm.fused_row <rms> %x57600_f32 weight(%w57600_f32 : tensor<57600xf32>) eps(1.0e-06) : tensor<?x57600xf32> -> tensor<?x57600xf32>
  %r53:2 = norm.fused_row <rms> %x57600_f32 addend(%x57600_f32 : tensor<?x57600xf32>) weight(%w57600_f32 : tensor<57600xf32>) eps(1.0e-06) : tensor<?x57600xf32> -> tensor<?x57600xf32>, tensor<?x57600xf32>
  %r54:1 = norm.fused_row <mean_var> %x57600_f32 weight(%w57600_f32 : tensor<57600xf32>) bias(%w57600_f32 : tensor<57600xf32>) eps(1.0e-05) : tensor<?x57600xf32> -> tensor<?x57600xf32>
  %r55:1 = norm.fused_row <rms> %x57604_f32 weight(%w57604_f32 : tensor<57604xf32>) eps(1.0e-06) : tensor<?x57604xf32> -> tensor<?x57604xf32>
  %r56:2 = norm.fused_row <rms> %x57604_f32 addend(%x57604_f32 : tensor<?x57604xf32>) weight(%w57604_f32 : tensor<57604xf32>) eps(1.0e-06) : tensor<?x57604xf32> -> tensor<?x57604xf32>, tensor<?x57604xf32>
  %r57:1 = norm.fused_row <mean_var> %x57604_f32 weight(%w57604_f32 : tensor<57604xf32>) bias(%w57604_f32 : tensor<57604xf32>) eps(1.0e-05) : tensor<?x57604xf32> -> tensor<?x57604xf32>
  %r58:1 = norm.fused_row <rms> %x131072_f32 weight(%w131072_f32 : tensor<131072xf32>) eps(1.0e-06) : tensor<?x131072xf32> -> tensor<?x131072xf32>
  %r59:2 = norm.fused_row <rms> %x131072_f32 addend(%x131072_f32 : tensor<?x131072xf32>) weight(%w131072_f32 : tensor<131072xf32>) eps(1.0e-06) : tensor<?x131072xf32> -> tensor<?x131072xf32>, tensor<?x131072xf32>
  %r60:1 = norm.fused_row <mean_var> %x131072_f32 weight(%w131072_f32 : tensor<131072xf32>) bias(%w131072_f32 : tensor<131072xf32>) eps(1.0e-05) : tensor<?x131072xf32> -> tensor<?x131072xf32>
  %r61:1 = norm.fused_row <rms> %x16384_bf16 weight(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %r62:2 = norm.fused_row <rms> %x16384_bf16 addend(%x16384_bf16 : tensor<?x16384xbf16>) weight(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x16384xbf16> -> tensor<?x16384xbf16>, tensor<?x16384xbf16>
  %r63:1 = norm.fused_row <rms> %x16384_bf16 weight(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %r64:2 = norm.fused_row <rms> %x16384_bf16 addend(%x16384_bf16 : tensor<?x16384xbf16>) weight(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x16384xbf16> -> tensor<?x16384xbf16>, tensor<?x16384xbf16>
  %r65:1 = norm.fused_row <rms> %x32768_bf16 weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x32768xbf16> -> tensor<?x32768xbf16>
  %r66:2 = norm.fused_row <rms> %x32768_bf16 addend(%x32768_bf16 : tensor<?x32768xbf16>) weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x32768xbf16> -> tensor<?x32768xbf16>, tensor<?x32768xbf16>
  %r67:1 = norm.fused_row <rms> %x32768_bf16 weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x32768xbf16> -> tensor<?x32768xbf16>
  %r68:2 = norm.fused_row <rms> %x32768_bf16 addend(%x32768_bf16 : tensor<?x32768xbf16>) weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x32768xbf16> -> tensor<?x32768xbf16>, tensor<?x32768xbf16>
  %r69:1 = norm.fused_row <rms> %x8192_f32 weight(%w8192_f32 : tensor<8192xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x8192xf32> -> tensor<?x8192xf32>
  %r70:2 = norm.fused_row <rms> %x8192_f32 addend(%x8192_f32 : tensor<?x8192xf32>) weight(%w8192_f32 : tensor<8192xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x8192xf32> -> tensor<?x8192xf32>, tensor<?x8192xf32>
  %r71:1 = norm.fused_row <rms> %x8192_f32 weight(%w8192_f32 : tensor<8192xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x8192xf32> -> tensor<?x8192xf32>
  %r72:2 = norm.fused_row <rms> %x8192_f32 addend(%x8192_f32 : tensor<?x8192xf32>) weight(%w8192_f32 : tensor<8192xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x8192xf32> -> tensor<?x8192xf32>, tensor<?x8192xf32>
  %r73:1 = norm.fused_row <rms> %x16384_f32 weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r74:2 = norm.fused_row <rms> %x16384_f32 addend(%x16384_f32 : tensor<?x16384xf32>) weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x16384xf32> -> tensor<?x16384xf32>, tensor<?x16384xf32>
  %r75:1 = norm.fused_row <rms> %x16384_f32 weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r76:2 = norm.fused_row <rms> %x16384_f32 addend(%x16384_f32 : tensor<?x16384xf32>) weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x16384xf32> -> tensor<?x16384xf32>, tensor<?x16384xf32>
  %r77:2 = norm.fused_row <rms> %x32768_bf16 addend(%x32768_bf16 : tensor<?x32768xbf16>) weight(%w32768_bf16 : tensor<32768xbf16>) eps(1.0e-06) alpha(2.0) {f32_residual} : tensor<?x32768xbf16> -> tensor<?x32768xbf16>, tensor<?x32768xbf16>
  %r78:2 = norm.fused_row <rms> %x32776_bf16 addend(%x32776_bf16 : tensor<?x32776xbf16>) weight(%w32776_bf16 : tensor<32776xbf16>) eps(1.0e-06) alpha(2.0) {f32_residual} : tensor<?x32776xbf16> -> tensor<?x32776xbf16>, tensor<?x32776xbf16>
  %r79:2 = norm.fused_row <rms> %x65536_bf16 addend(%x65536_bf16 : tensor<?x65536xbf16>) weight(%w65536_bf16 : tensor<65536xbf16>) eps(1.0e-06) alpha(2.0) {f32_residual} : tensor<?x65536xbf16> -> tensor<?x65536xbf16>, tensor<?x65536xbf16>
  %r80:2 = norm.qk_norm_prologue <rms> %qkv64_bf16 q_weight(%wq64_bf16 : tensor<64xbf16>) k_weight(%wq64_bf16 : tensor<64xbf16>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xbf16> -> tensor<?x256xbf16>, tensor<?x64xbf16>
  %r81:2 = norm.qk_norm_prologue <mean_var> %qkv64_bf16 q_weight(%wq64_bf16 : tensor<64xbf16>) k_weight(%wq64_bf16 : tensor<64xbf16>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xbf16> -> tensor<?x256xbf16>, tensor<?x64xbf16>
  %r82:2 = norm.qk_norm_prologue <rms> %qkv96_bf16 q_weight(%wq96_bf16 : tensor<96xbf16>) k_weight(%wq96_bf16 : tensor<96xbf16>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64} : tensor<?x576xbf16> -> tensor<?x384xbf16>, tensor<?x96xbf16>
  %r83:2 = norm.qk_norm_prologue <mean_var> %qkv96_bf16 q_weight(%wq96_bf16 : tensor<96xbf16>) k_weight(%wq96_bf16 : tensor<96xbf16>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64} : tensor<?x576xbf16> -> tensor<?x384xbf16>, tensor<?x96xbf16>
  %r84:2 = norm.qk_norm_prologue <rms> %qkv128_bf16 q_weight(%wq128_bf16 : tensor<128xbf16>) k_weight(%wq128_bf16 : tensor<128xbf16>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x768xbf16> -> tensor<?x512xbf16>, tensor<?x128xbf16>
  %r85:2 = norm.qk_norm_prologue <mean_var> %qkv128_bf16 q_weight(%wq128_bf16 : tensor<128xbf16>) k_weight(%wq128_bf16 : tensor<128xbf16>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x768xbf16> -> tensor<?x512xbf16>, tensor<?x128xbf16>
  %r86:2 = norm.qk_norm_prologue <rms> %qkv256_bf16 q_weight(%wq256_bf16 : tensor<256xbf16>) k_weight(%wq256_bf16 : tensor<256xbf16>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
  %r87:2 = norm.qk_norm_prologue <mean_var> %qkv256_bf16 q_weight(%wq256_bf16 : tensor<256xbf16>) k_weight(%wq256_bf16 : tensor<256xbf16>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
  %r88:2 = norm.qk_norm_prologue <rms> %qkv64_f32 q_weight(%wq64_f32 : tensor<64xf32>) k_weight(%wq64_f32 : tensor<64xf32>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xf32> -> tensor<?x256xf32>, tensor<?x64xf32>
  %r89:2 = norm.qk_norm_prologue <mean_var> %qkv64_f32 q_weight(%wq64_f32 : tensor<64xf32>) k_weight(%wq64_f32 : tensor<64xf32>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xf32> -> tensor<?x256xf32>, tensor<?x64xf32>
  %r90:2 = norm.qk_norm_prologue <rms> %qkv96_f32 q_weight(%wq96_f32 : tensor<96xf32>) k_weight(%wq96_f32 : tensor<96xf32>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64} : tensor<?x576xf32> -> tensor<?x384xf32>, tensor<?x96xf32>
  %r91:2 = norm.qk_norm_prologue <mean_var> %qkv96_f32 q_weight(%wq96_f32 : tensor<96xf32>) k_weight(%wq96_f32 : tensor<96xf32>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64} : tensor<?x576xf32> -> tensor<?x384xf32>, tensor<?x96xf32>
  %r92:2 = norm.qk_norm_prologue <rms> %qkv128_f32 q_weight(%wq128_f32 : tensor<128xf32>) k_weight(%wq128_f32 : tensor<128xf32>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x768xf32> -> tensor<?x512xf32>, tensor<?x128xf32>
  %r93:2 = norm.qk_norm_prologue <mean_var> %qkv128_f32 q_weight(%wq128_f32 : tensor<128xf32>) k_weight(%wq128_f32 : tensor<128xf32>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x768xf32> -> tensor<?x512xf32>, tensor<?x128xf32>
  %r94:2 = norm.qk_norm_prologue <rms> %qkv256_f32 q_weight(%wq256_f32 : tensor<256xf32>) k_weight(%wq256_f32 : tensor<256xf32>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64} : tensor<?x1536xf32> -> tensor<?x1024xf32>, tensor<?x256xf32>
  %r95:2 = norm.qk_norm_prologue <mean_var> %qkv256_f32 q_weight(%wq256_f32 : tensor<256xf32>) k_weight(%wq256_f32 : tensor<256xf32>) eps(1.0e-06) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64} : tensor<?x1536xf32> -> tensor<?x1024xf32>, tensor<?x256xf32>
  return
}
