// Every kernel kind, hidden sizes 1, 3, 127, 769, 2880 and 16384, bf16, f16
// and f32, with the heuristic's launch configuration: 86 ops, 124 kernels
// with their scalar fallbacks. ptxas must accept them for sm_90 and sm_80,
// with no local memory and no register spills.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-NOT: .extern .func
// CHECK-NOT: .local
// CHECK-COUNT-124: .visible .entry
// CHECK-NOT: .visible .entry
// CHECK-NOT: .extern .func
// CHECK-NOT: .local

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-124: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-NOT: error

func.func @all_kernels(%x1_bf16: tensor<?x1xbf16>,
    %w1_bf16: tensor<1xbf16>,
    %x3_bf16: tensor<?x3xbf16>,
    %w3_bf16: tensor<3xbf16>,
    %x127_bf16: tensor<?x127xbf16>,
    %w127_bf16: tensor<127xbf16>,
    %x769_bf16: tensor<?x769xbf16>,
    %w769_bf16: tensor<769xbf16>,
    %x2880_bf16: tensor<?x2880xbf16>,
    %w2880_bf16: tensor<2880xbf16>,
    %x16384_bf16: tensor<?x16384xbf16>,
    %w16384_bf16: tensor<16384xbf16>,
    %s769: tensor<769xf32>,
    %qkv128_32_8_bf16: tensor<?x6144xbf16>,
    %wq128_bf16: tensor<128xbf16>,
    %qkv64_4_1_bf16: tensor<?x384xbf16>,
    %wq64_bf16: tensor<64xbf16>,
    %qkv3_2_1_bf16: tensor<?x12xbf16>,
    %wq3_bf16: tensor<3xbf16>,
    %qkv127_2_2_bf16: tensor<?x762xbf16>,
    %wq127_bf16: tensor<127xbf16>,
    %x1_f16: tensor<?x1xf16>,
    %w1_f16: tensor<1xf16>,
    %x3_f16: tensor<?x3xf16>,
    %w3_f16: tensor<3xf16>,
    %x127_f16: tensor<?x127xf16>,
    %w127_f16: tensor<127xf16>,
    %x769_f16: tensor<?x769xf16>,
    %w769_f16: tensor<769xf16>,
    %x2880_f16: tensor<?x2880xf16>,
    %w2880_f16: tensor<2880xf16>,
    %x16384_f16: tensor<?x16384xf16>,
    %w16384_f16: tensor<16384xf16>,
    %qkv128_32_8_f16: tensor<?x6144xf16>,
    %wq128_f16: tensor<128xf16>,
    %qkv64_4_1_f16: tensor<?x384xf16>,
    %wq64_f16: tensor<64xf16>,
    %qkv3_2_1_f16: tensor<?x12xf16>,
    %wq3_f16: tensor<3xf16>,
    %qkv127_2_2_f16: tensor<?x762xf16>,
    %wq127_f16: tensor<127xf16>,
    %x1_f32: tensor<?x1xf32>,
    %w1_f32: tensor<1xf32>,
    %x3_f32: tensor<?x3xf32>,
    %w3_f32: tensor<3xf32>,
    %x127_f32: tensor<?x127xf32>,
    %w127_f32: tensor<127xf32>,
    %x769_f32: tensor<?x769xf32>,
    %w769_f32: tensor<769xf32>,
    %x2880_f32: tensor<?x2880xf32>,
    %w2880_f32: tensor<2880xf32>,
    %x16384_f32: tensor<?x16384xf32>,
    %w16384_f32: tensor<16384xf32>,
    %qkv128_32_8_f32: tensor<?x6144xf32>,
    %wq128_f32: tensor<128xf32>,
    %qkv64_4_1_f32: tensor<?x384xf32>,
    %wq64_f32: tensor<64xf32>,
    %qkv3_2_1_f32: tensor<?x12xf32>,
    %wq3_f32: tensor<3xf32>,
    %qkv127_2_2_f32: tensor<?x762xf32>,
    %wq127_f32: tensor<127xf32>) {
  %r0:2 = norm.fused_row <rms> %x1_bf16 addend(%x1_bf16 : tensor<?x1xbf16>) weight(%w1_bf16 : tensor<1xbf16>) eps(1.0e-06) : tensor<?x1xbf16> -> tensor<?x1xbf16>, tensor<?x1xbf16>
  %r1:1 = norm.fused_row <mean_var> %x1_bf16 weight(%w1_bf16 : tensor<1xbf16>) bias(%w1_bf16 : tensor<1xbf16>) eps(1.0e-05) : tensor<?x1xbf16> -> tensor<?x1xbf16>
  %r2:2 = norm.fused_row <rms> %x3_bf16 addend(%x3_bf16 : tensor<?x3xbf16>) weight(%w3_bf16 : tensor<3xbf16>) eps(1.0e-06) : tensor<?x3xbf16> -> tensor<?x3xbf16>, tensor<?x3xbf16>
  %r3:1 = norm.fused_row <mean_var> %x3_bf16 weight(%w3_bf16 : tensor<3xbf16>) bias(%w3_bf16 : tensor<3xbf16>) eps(1.0e-05) : tensor<?x3xbf16> -> tensor<?x3xbf16>
  %r4:2 = norm.fused_row <rms> %x127_bf16 addend(%x127_bf16 : tensor<?x127xbf16>) weight(%w127_bf16 : tensor<127xbf16>) eps(1.0e-06) : tensor<?x127xbf16> -> tensor<?x127xbf16>, tensor<?x127xbf16>
  %r5:1 = norm.fused_row <mean_var> %x127_bf16 weight(%w127_bf16 : tensor<127xbf16>) bias(%w127_bf16 : tensor<127xbf16>) eps(1.0e-05) : tensor<?x127xbf16> -> tensor<?x127xbf16>
  %r6:2 = norm.fused_row <rms> %x769_bf16 addend(%x769_bf16 : tensor<?x769xbf16>) weight(%w769_bf16 : tensor<769xbf16>) eps(1.0e-06) : tensor<?x769xbf16> -> tensor<?x769xbf16>, tensor<?x769xbf16>
  %r7:1 = norm.fused_row <mean_var> %x769_bf16 weight(%w769_bf16 : tensor<769xbf16>) bias(%w769_bf16 : tensor<769xbf16>) eps(1.0e-05) : tensor<?x769xbf16> -> tensor<?x769xbf16>
  %r8:2 = norm.fused_row <rms> %x2880_bf16 addend(%x2880_bf16 : tensor<?x2880xbf16>) weight(%w2880_bf16 : tensor<2880xbf16>) eps(1.0e-06) : tensor<?x2880xbf16> -> tensor<?x2880xbf16>, tensor<?x2880xbf16>
  %r9:1 = norm.fused_row <mean_var> %x2880_bf16 weight(%w2880_bf16 : tensor<2880xbf16>) bias(%w2880_bf16 : tensor<2880xbf16>) eps(1.0e-05) : tensor<?x2880xbf16> -> tensor<?x2880xbf16>
  %r10:2 = norm.fused_row <rms> %x16384_bf16 addend(%x16384_bf16 : tensor<?x16384xbf16>) weight(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-06) : tensor<?x16384xbf16> -> tensor<?x16384xbf16>, tensor<?x16384xbf16>
  %r11:1 = norm.fused_row <mean_var> %x16384_bf16 weight(%w16384_bf16 : tensor<16384xbf16>) bias(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-05) : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %r12:1 = norm.fused_row <l2> %x127_bf16 eps(1.0e-12) : tensor<?x127xbf16> -> tensor<?x127xbf16>
  %r13:1 = norm.fused_row <l2> %x2880_bf16 eps(1.0e-12) : tensor<?x2880xbf16> -> tensor<?x2880xbf16>
  %r14:1 = norm.fused_row <mean_var> %x2880_bf16 weight(%w2880_bf16 : tensor<2880xbf16>) bias(%w2880_bf16 : tensor<2880xbf16>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x2880xbf16> -> tensor<?x2880xbf16>
  %r15:1 = norm.fused_row <mean_var> %x16384_bf16 weight(%w16384_bf16 : tensor<16384xbf16>) bias(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %r16:1 = norm.fused_row <none> %x769_bf16 weight(%s769 : tensor<769xf32>) mean(%s769 : tensor<769xf32>) variance(%s769 : tensor<769xf32>) eps(1.0e-05) : tensor<?x769xbf16> -> tensor<?x769xbf16>
  %r17:2 = norm.fused_row <none> %x3_bf16 addend(%x3_bf16 : tensor<?x3xbf16>) : tensor<?x3xbf16> -> tensor<?x3xbf16>, tensor<?x3xbf16>
  %r18:2 = norm.fused_row <none> %x16384_bf16 addend(%x16384_bf16 : tensor<?x16384xbf16>) : tensor<?x16384xbf16> -> tensor<?x16384xbf16>, tensor<?x16384xbf16>
  %r19:1 = norm.fused_row <rms> %x769_bf16 skip(%x769_bf16 : tensor<?x769xbf16>) weight(%w769_bf16 : tensor<769xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x769xbf16> -> tensor<?x769xbf16>
  %r20:1 = norm.fused_row <rms> %x16384_bf16 skip(%x16384_bf16 : tensor<?x16384xbf16>) weight(%w16384_bf16 : tensor<16384xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %r21:2 = norm.fused_row <rms> %x2880_bf16 addend(%x2880_bf16 : tensor<?x2880xbf16>) weight(%w2880_bf16 : tensor<2880xbf16>) eps(1.0e-06) alpha(2.0) {f32_residual} : tensor<?x2880xbf16> -> tensor<?x2880xbf16>, tensor<?x2880xbf16>
  %r22:2 = norm.qk_norm_prologue <rms> %qkv128_32_8_bf16 q_weight(%wq128_bf16 : tensor<128xbf16>) k_weight(%wq128_bf16 : tensor<128xbf16>) eps(1.0e-06) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64} : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  %r23:2 = norm.qk_norm_prologue <rms> %qkv64_4_1_bf16 q_weight(%wq64_bf16 : tensor<64xbf16>) k_weight(%wq64_bf16 : tensor<64xbf16>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xbf16> -> tensor<?x256xbf16>, tensor<?x64xbf16>
  %r24:2 = norm.qk_norm_prologue <l2> %qkv3_2_1_bf16 q_weight(%wq3_bf16 : tensor<3xbf16>) k_weight(%wq3_bf16 : tensor<3xbf16>) eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 3 : i64} : tensor<?x12xbf16> -> tensor<?x6xbf16>, tensor<?x3xbf16>
  %r25:2 = norm.qk_norm_prologue <rms> %qkv127_2_2_bf16 q_weight(%wq127_bf16 : tensor<127xbf16>) k_weight(%wq127_bf16 : tensor<127xbf16>) eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 127 : i64} : tensor<?x762xbf16> -> tensor<?x254xbf16>, tensor<?x254xbf16>
  %r26:2 = norm.column_stats %x1_bf16 : tensor<?x1xbf16> -> tensor<1xf32>, tensor<1xf32>
  %r27:2 = norm.column_stats %x769_bf16 : tensor<?x769xbf16> -> tensor<769xf32>, tensor<769xf32>
  %r28:2 = norm.column_stats %x16384_bf16 : tensor<?x16384xbf16> -> tensor<16384xf32>, tensor<16384xf32>
  %r29:2 = norm.fused_row <rms> %x1_f16 addend(%x1_f16 : tensor<?x1xf16>) weight(%w1_f16 : tensor<1xf16>) eps(1.0e-06) : tensor<?x1xf16> -> tensor<?x1xf16>, tensor<?x1xf16>
  %r30:1 = norm.fused_row <mean_var> %x1_f16 weight(%w1_f16 : tensor<1xf16>) bias(%w1_f16 : tensor<1xf16>) eps(1.0e-05) : tensor<?x1xf16> -> tensor<?x1xf16>
  %r31:2 = norm.fused_row <rms> %x3_f16 addend(%x3_f16 : tensor<?x3xf16>) weight(%w3_f16 : tensor<3xf16>) eps(1.0e-06) : tensor<?x3xf16> -> tensor<?x3xf16>, tensor<?x3xf16>
  %r32:1 = norm.fused_row <mean_var> %x3_f16 weight(%w3_f16 : tensor<3xf16>) bias(%w3_f16 : tensor<3xf16>) eps(1.0e-05) : tensor<?x3xf16> -> tensor<?x3xf16>
  %r33:2 = norm.fused_row <rms> %x127_f16 addend(%x127_f16 : tensor<?x127xf16>) weight(%w127_f16 : tensor<127xf16>) eps(1.0e-06) : tensor<?x127xf16> -> tensor<?x127xf16>, tensor<?x127xf16>
  %r34:1 = norm.fused_row <mean_var> %x127_f16 weight(%w127_f16 : tensor<127xf16>) bias(%w127_f16 : tensor<127xf16>) eps(1.0e-05) : tensor<?x127xf16> -> tensor<?x127xf16>
  %r35:2 = norm.fused_row <rms> %x769_f16 addend(%x769_f16 : tensor<?x769xf16>) weight(%w769_f16 : tensor<769xf16>) eps(1.0e-06) : tensor<?x769xf16> -> tensor<?x769xf16>, tensor<?x769xf16>
  %r36:1 = norm.fused_row <mean_var> %x769_f16 weight(%w769_f16 : tensor<769xf16>) bias(%w769_f16 : tensor<769xf16>) eps(1.0e-05) : tensor<?x769xf16> -> tensor<?x769xf16>
  %r37:2 = norm.fused_row <rms> %x2880_f16 addend(%x2880_f16 : tensor<?x2880xf16>) weight(%w2880_f16 : tensor<2880xf16>) eps(1.0e-06) : tensor<?x2880xf16> -> tensor<?x2880xf16>, tensor<?x2880xf16>
  %r38:1 = norm.fused_row <mean_var> %x2880_f16 weight(%w2880_f16 : tensor<2880xf16>) bias(%w2880_f16 : tensor<2880xf16>) eps(1.0e-05) : tensor<?x2880xf16> -> tensor<?x2880xf16>
  %r39:2 = norm.fused_row <rms> %x16384_f16 addend(%x16384_f16 : tensor<?x16384xf16>) weight(%w16384_f16 : tensor<16384xf16>) eps(1.0e-06) : tensor<?x16384xf16> -> tensor<?x16384xf16>, tensor<?x16384xf16>
  %r40:1 = norm.fused_row <mean_var> %x16384_f16 weight(%w16384_f16 : tensor<16384xf16>) bias(%w16384_f16 : tensor<16384xf16>) eps(1.0e-05) : tensor<?x16384xf16> -> tensor<?x16384xf16>
  %r41:1 = norm.fused_row <l2> %x127_f16 eps(1.0e-12) : tensor<?x127xf16> -> tensor<?x127xf16>
  %r42:1 = norm.fused_row <l2> %x2880_f16 eps(1.0e-12) : tensor<?x2880xf16> -> tensor<?x2880xf16>
  %r43:1 = norm.fused_row <mean_var> %x2880_f16 weight(%w2880_f16 : tensor<2880xf16>) bias(%w2880_f16 : tensor<2880xf16>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x2880xf16> -> tensor<?x2880xf16>
  %r44:1 = norm.fused_row <mean_var> %x16384_f16 weight(%w16384_f16 : tensor<16384xf16>) bias(%w16384_f16 : tensor<16384xf16>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x16384xf16> -> tensor<?x16384xf16>
  %r45:1 = norm.fused_row <none> %x769_f16 weight(%s769 : tensor<769xf32>) mean(%s769 : tensor<769xf32>) variance(%s769 : tensor<769xf32>) eps(1.0e-05) : tensor<?x769xf16> -> tensor<?x769xf16>
  %r46:2 = norm.fused_row <none> %x3_f16 addend(%x3_bf16 : tensor<?x3xbf16>) : tensor<?x3xf16> -> tensor<?x3xbf16>, tensor<?x3xf16>
  %r47:2 = norm.fused_row <none> %x16384_f16 addend(%x16384_bf16 : tensor<?x16384xbf16>) : tensor<?x16384xf16> -> tensor<?x16384xbf16>, tensor<?x16384xf16>
  %r48:1 = norm.fused_row <rms> %x769_f16 skip(%x769_bf16 : tensor<?x769xbf16>) weight(%w769_f16 : tensor<769xf16>) eps(1.0e-06) offset(1.0) : tensor<?x769xf16> -> tensor<?x769xf16>
  %r49:1 = norm.fused_row <rms> %x16384_f16 skip(%x16384_bf16 : tensor<?x16384xbf16>) weight(%w16384_f16 : tensor<16384xf16>) eps(1.0e-06) offset(1.0) : tensor<?x16384xf16> -> tensor<?x16384xf16>
  %r50:2 = norm.fused_row <rms> %x2880_f16 addend(%x2880_f16 : tensor<?x2880xf16>) weight(%w2880_f16 : tensor<2880xf16>) eps(1.0e-06) alpha(2.0) {f32_residual} : tensor<?x2880xf16> -> tensor<?x2880xf16>, tensor<?x2880xf16>
  %r51:2 = norm.qk_norm_prologue <rms> %qkv128_32_8_f16 q_weight(%wq128_f16 : tensor<128xf16>) k_weight(%wq128_f16 : tensor<128xf16>) eps(1.0e-06) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64} : tensor<?x6144xf16> -> tensor<?x4096xf16>, tensor<?x1024xf16>
  %r52:2 = norm.qk_norm_prologue <rms> %qkv64_4_1_f16 q_weight(%wq64_f16 : tensor<64xf16>) k_weight(%wq64_f16 : tensor<64xf16>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xf16> -> tensor<?x256xf16>, tensor<?x64xf16>
  %r53:2 = norm.qk_norm_prologue <l2> %qkv3_2_1_f16 q_weight(%wq3_f16 : tensor<3xf16>) k_weight(%wq3_f16 : tensor<3xf16>) eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 3 : i64} : tensor<?x12xf16> -> tensor<?x6xf16>, tensor<?x3xf16>
  %r54:2 = norm.qk_norm_prologue <rms> %qkv127_2_2_f16 q_weight(%wq127_f16 : tensor<127xf16>) k_weight(%wq127_f16 : tensor<127xf16>) eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 127 : i64} : tensor<?x762xf16> -> tensor<?x254xf16>, tensor<?x254xf16>
  %r55:2 = norm.column_stats %x1_f16 : tensor<?x1xf16> -> tensor<1xf32>, tensor<1xf32>
  %r56:2 = norm.column_stats %x769_f16 : tensor<?x769xf16> -> tensor<769xf32>, tensor<769xf32>
  %r57:2 = norm.column_stats %x16384_f16 : tensor<?x16384xf16> -> tensor<16384xf32>, tensor<16384xf32>
  %r58:2 = norm.fused_row <rms> %x1_f32 addend(%x1_f32 : tensor<?x1xf32>) weight(%w1_f32 : tensor<1xf32>) eps(1.0e-06) : tensor<?x1xf32> -> tensor<?x1xf32>, tensor<?x1xf32>
  %r59:1 = norm.fused_row <mean_var> %x1_f32 weight(%w1_f32 : tensor<1xf32>) bias(%w1_f32 : tensor<1xf32>) eps(1.0e-05) : tensor<?x1xf32> -> tensor<?x1xf32>
  %r60:2 = norm.fused_row <rms> %x3_f32 addend(%x3_f32 : tensor<?x3xf32>) weight(%w3_f32 : tensor<3xf32>) eps(1.0e-06) : tensor<?x3xf32> -> tensor<?x3xf32>, tensor<?x3xf32>
  %r61:1 = norm.fused_row <mean_var> %x3_f32 weight(%w3_f32 : tensor<3xf32>) bias(%w3_f32 : tensor<3xf32>) eps(1.0e-05) : tensor<?x3xf32> -> tensor<?x3xf32>
  %r62:2 = norm.fused_row <rms> %x127_f32 addend(%x127_f32 : tensor<?x127xf32>) weight(%w127_f32 : tensor<127xf32>) eps(1.0e-06) : tensor<?x127xf32> -> tensor<?x127xf32>, tensor<?x127xf32>
  %r63:1 = norm.fused_row <mean_var> %x127_f32 weight(%w127_f32 : tensor<127xf32>) bias(%w127_f32 : tensor<127xf32>) eps(1.0e-05) : tensor<?x127xf32> -> tensor<?x127xf32>
  %r64:2 = norm.fused_row <rms> %x769_f32 addend(%x769_f32 : tensor<?x769xf32>) weight(%w769_f32 : tensor<769xf32>) eps(1.0e-06) : tensor<?x769xf32> -> tensor<?x769xf32>, tensor<?x769xf32>
  %r65:1 = norm.fused_row <mean_var> %x769_f32 weight(%w769_f32 : tensor<769xf32>) bias(%w769_f32 : tensor<769xf32>) eps(1.0e-05) : tensor<?x769xf32> -> tensor<?x769xf32>
  %r66:2 = norm.fused_row <rms> %x2880_f32 addend(%x2880_f32 : tensor<?x2880xf32>) weight(%w2880_f32 : tensor<2880xf32>) eps(1.0e-06) : tensor<?x2880xf32> -> tensor<?x2880xf32>, tensor<?x2880xf32>
  %r67:1 = norm.fused_row <mean_var> %x2880_f32 weight(%w2880_f32 : tensor<2880xf32>) bias(%w2880_f32 : tensor<2880xf32>) eps(1.0e-05) : tensor<?x2880xf32> -> tensor<?x2880xf32>
  %r68:2 = norm.fused_row <rms> %x16384_f32 addend(%x16384_f32 : tensor<?x16384xf32>) weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) : tensor<?x16384xf32> -> tensor<?x16384xf32>, tensor<?x16384xf32>
  %r69:1 = norm.fused_row <mean_var> %x16384_f32 weight(%w16384_f32 : tensor<16384xf32>) bias(%w16384_f32 : tensor<16384xf32>) eps(1.0e-05) : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r70:1 = norm.fused_row <l2> %x127_f32 eps(1.0e-12) : tensor<?x127xf32> -> tensor<?x127xf32>
  %r71:1 = norm.fused_row <l2> %x2880_f32 eps(1.0e-12) : tensor<?x2880xf32> -> tensor<?x2880xf32>
  %r72:1 = norm.fused_row <mean_var> %x2880_f32 weight(%w2880_f32 : tensor<2880xf32>) bias(%w2880_f32 : tensor<2880xf32>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x2880xf32> -> tensor<?x2880xf32>
  %r73:1 = norm.fused_row <mean_var> %x16384_f32 weight(%w16384_f32 : tensor<16384xf32>) bias(%w16384_f32 : tensor<16384xf32>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r74:1 = norm.fused_row <none> %x769_f32 weight(%s769 : tensor<769xf32>) mean(%s769 : tensor<769xf32>) variance(%s769 : tensor<769xf32>) eps(1.0e-05) : tensor<?x769xf32> -> tensor<?x769xf32>
  %r75:2 = norm.fused_row <none> %x3_f32 addend(%x3_bf16 : tensor<?x3xbf16>) : tensor<?x3xf32> -> tensor<?x3xbf16>, tensor<?x3xf32>
  %r76:2 = norm.fused_row <none> %x16384_f32 addend(%x16384_bf16 : tensor<?x16384xbf16>) : tensor<?x16384xf32> -> tensor<?x16384xbf16>, tensor<?x16384xf32>
  %r77:1 = norm.fused_row <rms> %x769_f32 skip(%x769_bf16 : tensor<?x769xbf16>) weight(%w769_f32 : tensor<769xf32>) eps(1.0e-06) offset(1.0) : tensor<?x769xf32> -> tensor<?x769xf32>
  %r78:1 = norm.fused_row <rms> %x16384_f32 skip(%x16384_bf16 : tensor<?x16384xbf16>) weight(%w16384_f32 : tensor<16384xf32>) eps(1.0e-06) offset(1.0) : tensor<?x16384xf32> -> tensor<?x16384xf32>
  %r79:2 = norm.qk_norm_prologue <rms> %qkv128_32_8_f32 q_weight(%wq128_f32 : tensor<128xf32>) k_weight(%wq128_f32 : tensor<128xf32>) eps(1.0e-06) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64} : tensor<?x6144xf32> -> tensor<?x4096xf32>, tensor<?x1024xf32>
  %r80:2 = norm.qk_norm_prologue <rms> %qkv64_4_1_f32 q_weight(%wq64_f32 : tensor<64xf32>) k_weight(%wq64_f32 : tensor<64xf32>) eps(1.0e-06) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x384xf32> -> tensor<?x256xf32>, tensor<?x64xf32>
  %r81:2 = norm.qk_norm_prologue <l2> %qkv3_2_1_f32 q_weight(%wq3_f32 : tensor<3xf32>) k_weight(%wq3_f32 : tensor<3xf32>) eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 3 : i64} : tensor<?x12xf32> -> tensor<?x6xf32>, tensor<?x3xf32>
  %r82:2 = norm.qk_norm_prologue <rms> %qkv127_2_2_f32 q_weight(%wq127_f32 : tensor<127xf32>) k_weight(%wq127_f32 : tensor<127xf32>) eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 127 : i64} : tensor<?x762xf32> -> tensor<?x254xf32>, tensor<?x254xf32>
  %r83:2 = norm.column_stats %x1_f32 : tensor<?x1xf32> -> tensor<1xf32>, tensor<1xf32>
  %r84:2 = norm.column_stats %x769_f32 : tensor<?x769xf32> -> tensor<769xf32>, tensor<769xf32>
  %r85:2 = norm.column_stats %x16384_f32 : tensor<?x16384xf32> -> tensor<16384xf32>, tensor<16384xf32>
  return
}
