// RUN: norm-opt %s --split-input-file | norm-opt --split-input-file | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics --verify-roundtrip > /dev/null
// RUN: norm-opt %S/Inputs/attention-kernel-invalid.mlir --split-input-file --verify-diagnostics

// The kernel op of attention: varlen offsets, QK-Norm weights, the
// optional log-sum-exp result and an attention launch configuration.
// CHECK-LABEL: func.func @kernel
// CHECK: norm.attention_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) q_norm_weight(%{{.*}} : tensor<128xbf16>) k_norm_weight(%{{.*}} : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
// CHECK-SAME: causal
// CHECK-SAME: launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 64, block_n = 64, stages = 2>
// CHECK-SAME: -> tensor<?x4096xbf16>, tensor<?x32xf32>
func.func @kernel(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
                  %cu: tensor<?xi32>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x32xf32>) {
  %o, %lse = norm.attention_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       qk_norm = #norm.qk_norm<rms>,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 64, block_n = 64, stages = 2>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>, tensor<?x32xf32>
  return %o, %lse : tensor<?x4096xbf16>, tensor<?x32xf32>
}

// -----

// Without QK-Norm and without lse; head dim 96 (threads_per_row 16, the
// last 4 lanes of each head row idle).
// CHECK-LABEL: func.func @plain
// CHECK: norm.attention_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<2xi32>) scale(0.1)
// CHECK-SAME: -> tensor<?x768xf16>{{$}}
func.func @plain(%q: tensor<?x768xf16>, %k: tensor<?x96xf16>, %v: tensor<?x96xf16>,
                 %cu: tensor<2xi32>) -> tensor<?x768xf16> {
  %o = norm.attention_kernel %q, %k, %v seqlens(%cu : tensor<2xi32>) scale(0.1)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 8, rows_per_cta = 128, block_n = 32, stages = 1>}
      : tensor<?x768xf16>, tensor<?x96xf16>, tensor<?x96xf16> -> tensor<?x768xf16>
  return %o : tensor<?x768xf16>
}

// -----

// Rotary embeddings: a partial interleaved rotation (ChatGLM), and a full
// neox one on norm.attention whose rotary_dim defaults to the head dim.
// CHECK-LABEL: func.func @rope
// CHECK: norm.attention_kernel
// CHECK-SAME: rope = #norm.rope<gptj>, rope_theta = 1.000000e+04 : f64, rotary_dim = 64 : i64
// CHECK: norm.attention
// CHECK-SAME: rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64
// CHECK-NOT: rotary_dim
func.func @rope(%q: tensor<?x128xf16>, %cu: tensor<?xi32>) -> (tensor<?x128xf16>, tensor<?x128xf16>) {
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal,
       rope = #norm.rope<gptj>, rotary_dim = 64 : i64, rope_theta = 1.0e+04 : f64}
      : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x128xf16>
  %a = norm.attention %q, %q, %q scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x128xf16>
  return %o, %a : tensor<?x128xf16>, tensor<?x128xf16>
}

// -----

// Positions and a cos/sin table on both attention ops and on the decode
// kernel; theta is absent with a table.
// CHECK-LABEL: func.func @rope_table
// CHECK: norm.attention_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) positions(%{{.*}} : tensor<?xi32>) rope_table(%{{.*}} : tensor<?x128xf32>) scale(0.1)
// CHECK-SAME: rope = #norm.rope<neox>}
// CHECK: norm.attention %{{.*}}, %{{.*}}, %{{.*}} rope_table(%{{.*}} : tensor<?x64xf32>) scale(0.1)
// CHECK-SAME: rope = #norm.rope<gptj>, rotary_dim = 64 : i64}
// CHECK: norm.attention_decode_kernel {{.*}} positions(%{{.*}} : tensor<?xi32>) scale(0.1)
// CHECK-SAME: rope_theta = 1.000000e+06 : f64
func.func @rope_table(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %p: tensor<?xi32>,
                      %t: tensor<?x128xf32>, %t64: tensor<?x64xf32>, %len: tensor<?xi32>)
    -> (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>)
      positions(%p : tensor<?xi32>) rope_table(%t : tensor<?x128xf32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal,
       rope = #norm.rope<neox>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  %a = norm.attention %q, %q, %q rope_table(%t64 : tensor<?x64xf32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<gptj>, rotary_dim = 64 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  %d, %kc, %vc = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%q, %q lengths %len : tensor<?xi32>) positions(%p : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return %o, %a, %d : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
}
