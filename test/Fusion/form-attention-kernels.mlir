// RUN: norm-opt %s --split-input-file --norm-form-attention-kernels=keys-in-loop=true --verify-diagnostics | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-form-attention-kernels --verify-diagnostics | FileCheck %s --check-prefix=PREP

// By default the keys of an attention with a QK-Norm or rope are prepared
// once by a norm.k_prepare of k's fields (k's weight, eps, offset, rope)
// and the kernel normalizes and rotates q alone (prepared_k); with
// keys-in-loop (CHECK) one kernel normalizes each key tile in its loop.
// PREP-LABEL: func.func @one_sequence
//  PREP-SAME: (%[[Q:.*]]: tensor<?x512xbf16>, %[[K:.*]]: tensor<?x128xbf16>, %[[V:.*]]: tensor<?x128xbf16>, %[[WQ:.*]]: tensor<128xbf16>, %[[WK:.*]]: tensor<128xbf16>)
//       PREP: %[[KP:.*]] = norm.k_prepare %[[K]] k_weight(%[[WK]] : tensor<128xbf16>) eps(1.0e-06) offset(1.0) {head_dim = 128 : i64, num_kv_heads = 1 : i64, qk_norm = #norm.qk_norm<rms>} : tensor<?x128xbf16> -> tensor<?x128xbf16>
//       PREP: norm.attention_kernel %[[Q]], %[[KP]], %[[V]] seqlens(%{{.*}} : tensor<2xi32>) q_norm_weight(%[[WQ]] : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
//  PREP-SAME: {causal, head_dim = 128 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, prepared_k, qk_norm = #norm.qk_norm<rms>}
// Plain attention keeps its keys as they are.
// PREP-LABEL: func.func @static_tokens
//   PREP-NOT: norm.k_prepare
//       PREP: norm.attention_kernel
//   PREP-NOT: prepared_k
// One weight: each kernel takes its own (no ones).
// PREP-LABEL: func.func @one_weight
//  PREP-SAME: (%[[Q1:.*]]: tensor<?x128xbf16>, %[[W1:.*]]: tensor<128xbf16>)
//       PREP: %[[KP1:.*]] = norm.k_prepare %[[Q1]] eps(1.0e-06) {head_dim = 128 : i64, num_kv_heads = 1 : i64, qk_norm = #norm.qk_norm<rms>}
//       PREP: norm.attention_kernel %[[Q1]], %[[KP1]], %[[Q1]] seqlens(%{{.*}} : tensor<2xi32>) q_norm_weight(%[[W1]] : tensor<128xbf16>) scale(0.1)
// PREP-LABEL: func.func @k_weight_only
//  PREP-SAME: (%[[Q2:.*]]: tensor<?x64xf16>, %[[W2:.*]]: tensor<64xf16>)
//       PREP: %[[KP2:.*]] = norm.k_prepare %[[Q2]] k_weight(%[[W2]] : tensor<64xf16>) eps(1.0e-06) {head_dim = 64 : i64, num_kv_heads = 1 : i64, qk_norm = #norm.qk_norm<l2>}
//       PREP: norm.attention_kernel %[[Q2]], %[[KP2]], %[[Q2]] seqlens(%{{.*}} : tensor<2xi32>) scale(0.1) qk_norm_eps(1.0e-06) {
// The rotation alone (no QK-Norm), at explicit positions from a table,
// partial: both kernels take the rotary operands and fields.
// PREP-LABEL: func.func @rope_alone
//  PREP-SAME: (%[[Q3:.*]]: tensor<?x256xbf16>, %[[K3:.*]]: tensor<?x64xbf16>, %[[P3:.*]]: tensor<?xi32>, %[[T3:.*]]: tensor<?x32xf32>)
//       PREP: %[[KP3:.*]] = norm.k_prepare %[[K3]] positions(%[[P3]] : tensor<?xi32>) rope_table(%[[T3]] : tensor<?x32xf32>) {head_dim = 64 : i64, num_kv_heads = 1 : i64, rope = #norm.rope<gptj>, rotary_dim = 32 : i64}
//       PREP: norm.attention_kernel %[[Q3]], %[[KP3]], %[[K3]] seqlens(%{{.*}} : tensor<2xi32>) positions(%[[P3]] : tensor<?xi32>) rope_table(%[[T3]] : tensor<?x32xf32>) scale(0.125) {head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, prepared_k, rope = #norm.rope<gptj>, rotary_dim = 32 : i64}

// norm.attention becomes the kernel op over one sequence of all its tokens,
// every field kept.
// CHECK-LABEL: func.func @one_sequence
//  CHECK-SAME: (%[[Q:.*]]: tensor<?x512xbf16>, %[[K:.*]]: tensor<?x128xbf16>, %[[V:.*]]: tensor<?x128xbf16>, %[[WQ:.*]]: tensor<128xbf16>, %[[WK:.*]]: tensor<128xbf16>)
//       CHECK: %[[T:.*]] = tensor.dim %[[Q]], %{{.*}} : tensor<?x512xbf16>
//       CHECK: %[[T32:.*]] = arith.index_cast %[[T]] : index to i32
//       CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
//       CHECK: %[[CU:.*]] = tensor.from_elements %[[ZERO]], %[[T32]] : tensor<2xi32>
//       CHECK: %[[O:.*]] = norm.attention_kernel %[[Q]], %[[K]], %[[V]] seqlens(%[[CU]] : tensor<2xi32>) q_norm_weight(%[[WQ]] : tensor<128xbf16>) k_norm_weight(%[[WK]] : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
//  CHECK-SAME: {causal, head_dim = 128 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, qk_norm = #norm.qk_norm<rms>}
//   CHECK-NOT: norm.attention %
//       CHECK: return %[[O]]
func.func @one_sequence(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                        %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> tensor<?x512xbf16> {
  %o = norm.attention %q, %k, %v q_norm_weight(%wq : tensor<128xbf16>)
      k_norm_weight(%wk : tensor<128xbf16>) scale(0.08838834764831845)
      qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       causal, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

// Static token counts fold to a constant end offset.
// CHECK-LABEL: func.func @static_tokens
//       CHECK: %[[END:.*]] = arith.constant 7 : i32
//       CHECK: tensor.from_elements %{{.*}}, %[[END]] : tensor<2xi32>
//       CHECK: norm.attention_kernel
func.func @static_tokens(%q: tensor<7x128xf16>) -> tensor<7x128xf16> {
  %o = norm.attention %q, %q, %q scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<7x128xf16>, tensor<7x128xf16>, tensor<7x128xf16> -> tensor<7x128xf16>
  return %o : tensor<7x128xf16>
}

// -----

// A QK-Norm weight for q only: k gets a weight of ones (the kernels take
// both or neither).
// CHECK-LABEL: func.func @one_weight
//  CHECK-SAME: (%{{.*}}: tensor<?x128xbf16>, %[[W:.*]]: tensor<128xbf16>)
//       CHECK: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : tensor<128xbf16>
//       CHECK: norm.attention_kernel {{.*}} q_norm_weight(%[[W]] : tensor<128xbf16>) k_norm_weight(%[[ONES]] : tensor<128xbf16>)
func.func @one_weight(%q: tensor<?x128xbf16>, %w: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %o = norm.attention %q, %q, %q q_norm_weight(%w : tensor<128xbf16>) scale(0.1)
      qk_norm_eps(1.0e-06)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

// The same for a k weight alone (f16).
// CHECK-LABEL: func.func @k_weight_only
//       CHECK: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : tensor<64xf16>
//       CHECK: norm.attention_kernel {{.*}} q_norm_weight(%[[ONES]] : tensor<64xf16>) k_norm_weight(%{{.*}} : tensor<64xf16>)
func.func @k_weight_only(%q: tensor<?x64xf16>, %w: tensor<64xf16>) -> tensor<?x64xf16> {
  %o = norm.attention %q, %q, %q k_norm_weight(%w : tensor<64xf16>) scale(0.1)
      qk_norm_eps(1.0e-06)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64,
       qk_norm = #norm.qk_norm<l2>}
      : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return %o : tensor<?x64xf16>
}

// -----

// CHECK-LABEL: func.func @rope_alone
//   CHECK-NOT: norm.k_prepare
//       CHECK: norm.attention_kernel
//   CHECK-NOT: prepared_k
func.func @rope_alone(%q: tensor<?x256xbf16>, %k: tensor<?x64xbf16>, %pos: tensor<?xi32>,
                      %table: tensor<?x32xf32>) -> tensor<?x256xbf16> {
  %o = norm.attention %q, %k, %k positions(%pos : tensor<?xi32>)
      rope_table(%table : tensor<?x32xf32>) scale(0.125)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64,
       rope = #norm.rope<gptj>, rotary_dim = 32 : i64}
      : tensor<?x256xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x256xbf16>
  return %o : tensor<?x256xbf16>
}
