// RUN: norm-opt %s --norm-fuse-qk-norm-into-attention | FileCheck %s
// RUN: norm-opt %s --canonicalize --norm-fuse-qk-norm-into-attention \
// RUN:   | FileCheck %s --check-prefix=CANON

// GQA with RMSNorm on 128-wide heads: the attention reads q and k and
// normalizes them itself, with both weights.
// CHECK-LABEL: func.func @rms_gqa_128
//  CHECK-SAME: (%[[Q:.*]]: tensor<?x4096xbf16>, %[[K:.*]]: tensor<?x1024xbf16>, %[[V:.*]]: tensor<?x1024xbf16>,
//  CHECK-SAME: %[[WQ:.*]]: tensor<128xbf16>, %[[WK:.*]]: tensor<128xbf16>)
//   CHECK-NOT: tensor.expand_shape
//   CHECK-NOT: norm.rms_norm
//       CHECK: %[[O:.*]] = norm.attention %[[Q]], %[[K]], %[[V]] q_norm_weight(%[[WQ]] : tensor<128xbf16>) k_norm_weight(%[[WK]] : tensor<128xbf16>) scale(0.125) qk_norm_eps(1.0e-06)
//  CHECK-SAME: {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, qk_norm = #norm.qk_norm<rms>}
//  CHECK-SAME: : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
//   CHECK-NOT: tensor.collapse_shape
//       CHECK: return %[[O]]
func.func @rms_gqa_128(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// L2 norm (no weights) on 64-wide heads, static token count, f16.
// CHECK-LABEL: func.func @l2_mha_64_static
//   CHECK-NOT: norm.l2_norm
//       CHECK: norm.attention %arg0, %arg1, %arg2 scale(0.125) qk_norm_eps(1.0e-12)
//  CHECK-SAME: qk_norm = #norm.qk_norm<l2>
//  CHECK-SAME: : tensor<16x512xf16>, tensor<16x512xf16>, tensor<16x512xf16> -> tensor<16x512xf16>
func.func @l2_mha_64_static(%q: tensor<16x512xf16>, %k: tensor<16x512xf16>, %v: tensor<16x512xf16>)
    -> tensor<16x512xf16> {
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [16, 8, 64]
      : tensor<16x512xf16> into tensor<16x8x64xf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<16x8x64xf16> into tensor<128x64xf16>
  %q_normed = norm.l2_norm %q_rows eps(1.0e-12) : tensor<128x64xf16> -> tensor<128x64xf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [16, 8, 64]
      : tensor<128x64xf16> into tensor<16x8x64xf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<16x8x64xf16> into tensor<16x512xf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [16, 8, 64]
      : tensor<16x512xf16> into tensor<16x8x64xf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<16x8x64xf16> into tensor<128x64xf16>
  %k_normed = norm.l2_norm %k_rows eps(1.0e-12) : tensor<128x64xf16> -> tensor<128x64xf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [16, 8, 64]
      : tensor<128x64xf16> into tensor<16x8x64xf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<16x8x64xf16> into tensor<16x512xf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 8 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64, causal}
      : tensor<16x512xf16>, tensor<16x512xf16>, tensor<16x512xf16> -> tensor<16x512xf16>
  return %o : tensor<16x512xf16>
}

// 256-wide heads in f32; only q has a weight (no k_norm_weight before scale).
// CHECK-LABEL: func.func @rms_256_f32_q_weight_only
//       CHECK: norm.attention %arg0, %arg1, %arg2 q_norm_weight(%arg3 : tensor<256xf32>) scale(0.125) qk_norm_eps(1.0e-05)
//  CHECK-SAME: num_heads = 4 : i64, num_kv_heads = 2 : i64, qk_norm = #norm.qk_norm<rms>
func.func @rms_256_f32_q_weight_only(%q: tensor<?x1024xf32>, %k: tensor<?x512xf32>, %v: tensor<?x512xf32>,
    %wq: tensor<256xf32>)
    -> tensor<?x1024xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x1024xf32>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 4, 256]
      : tensor<?x1024xf32> into tensor<?x4x256xf32>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x4x256xf32> into tensor<?x256xf32>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<256xf32>) eps(1.0e-05) : tensor<?x256xf32> -> tensor<?x256xf32>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 4, 256]
      : tensor<?x256xf32> into tensor<?x4x256xf32>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x4x256xf32> into tensor<?x1024xf32>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 256]
      : tensor<?x512xf32> into tensor<?x2x256xf32>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x2x256xf32> into tensor<?x256xf32>
  %k_normed = norm.rms_norm %k_rows eps(1.0e-05) : tensor<?x256xf32> -> tensor<?x256xf32>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 2, 256]
      : tensor<?x256xf32> into tensor<?x2x256xf32>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x2x256xf32> into tensor<?x512xf32>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 256 : i64, causal}
      : tensor<?x1024xf32>, tensor<?x512xf32>, tensor<?x512xf32> -> tensor<?x1024xf32>
  return %o : tensor<?x1024xf32>
}

// Left alone: only q is normalized.
// CHECK-LABEL: func.func @only_q
//   CHECK-NOT: qk_norm
//       CHECK: return
func.func @only_q(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %o = norm.attention %qn, %k, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// Left alone: q and k with different eps.
// CHECK-LABEL: func.func @eps_differ
//   CHECK-NOT: qk_norm
//       CHECK: return
func.func @eps_differ(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// Left alone: RMSNorm on q, L2 norm on k.
// CHECK-LABEL: func.func @kinds_differ
//   CHECK-NOT: qk_norm
//       CHECK: return
func.func @kinds_differ(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.l2_norm %k_rows eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// Left alone: rows of 64 values while the heads have 128.
// CHECK-LABEL: func.func @rows_are_not_heads
//   CHECK-NOT: qk_norm
//       CHECK: return
func.func @rows_are_not_heads(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 64, 64]
      : tensor<?x4096xbf16> into tensor<?x64x64xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x64x64xbf16> into tensor<?x64xbf16>
  %q_normed = norm.rms_norm %q_rows eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 64, 64]
      : tensor<?x64xbf16> into tensor<?x64x64xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x64x64xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 16, 64]
      : tensor<?x1024xbf16> into tensor<?x16x64xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x16x64xbf16> into tensor<?x64xbf16>
  %k_normed = norm.rms_norm %k_rows eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 16, 64]
      : tensor<?x64xbf16> into tensor<?x16x64xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x16x64xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// Gemma 3's (1 + w) form: the offset moves into the attention op.
// CHECK-LABEL: func.func @weight_offset
//       CHECK: norm.attention %arg0, %arg1, %arg2 q_norm_weight(%arg3 : tensor<128xbf16>) k_norm_weight(%arg4 : tensor<128xbf16>) scale(0.125) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
//  CHECK-SAME: qk_norm = #norm.qk_norm<rms>
//   CHECK-NOT: norm.rms_norm
//       CHECK: return
func.func @weight_offset(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// Left alone: the normalized rows of q have another user.
// CHECK-LABEL: func.func @norm_has_other_user
//   CHECK-NOT: qk_norm
//       CHECK: return
func.func @norm_has_other_user(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x128xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o, %q_normed : tensor<?x4096xbf16>, tensor<?x128xbf16>
}

// Left alone: the normalized k has another user.
// CHECK-LABEL: func.func @normed_k_has_other_user
//   CHECK-NOT: qk_norm
//       CHECK: return
func.func @normed_k_has_other_user(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: the attention normalizes q and k already.
// CHECK-LABEL: func.func @has_qk_norm
//       CHECK: norm.rms_norm
//       CHECK: norm.rms_norm
//       CHECK: norm.attention
func.func @has_qk_norm(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>)
    -> tensor<?x4096xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x4096xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// Multi-query attention (Gemma 3 1B): one key/value head, whose reshapes
// canonicalization folds away; a per-head LayerNorm on q and k.
// CANON-LABEL: func.func @mqa_layer_norm
//       CANON: norm.attention %{{.*}}, %{{.*}}, %{{.*}} q_norm_weight(%{{.*}} : tensor<256xbf16>) k_norm_weight(%{{.*}} : tensor<256xbf16>) scale(0.0625) qk_norm_eps(1.0e-05)
//  CANON-SAME: num_heads = 4 : i64, num_kv_heads = 1 : i64, qk_norm = #norm.qk_norm<mean_var>
//   CANON-NOT: norm.layer_norm
func.func @mqa_layer_norm(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
    %wq: tensor<256xbf16>, %wk: tensor<256xbf16>) -> tensor<?x1024xbf16> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %q, %c0 : tensor<?x1024xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 4, 256]
      : tensor<?x1024xbf16> into tensor<?x4x256xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x4x256xbf16> into tensor<?x256xbf16>
  %q_normed = norm.layer_norm %q_rows weight(%wq : tensor<256xbf16>) eps(1.0e-05) : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 4, 256]
      : tensor<?x256xbf16> into tensor<?x4x256xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x4x256xbf16> into tensor<?x1024xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 1, 256]
      : tensor<?x256xbf16> into tensor<?x1x256xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x1x256xbf16> into tensor<?x256xbf16>
  %k_normed = norm.layer_norm %k_rows weight(%wk : tensor<256xbf16>) eps(1.0e-05) : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 1, 256]
      : tensor<?x256xbf16> into tensor<?x1x256xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x1x256xbf16> into tensor<?x256xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.0625)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64, causal}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %o : tensor<?x1024xbf16>
}

// Command R+: a LayerNorm QK-Norm with a weight row per head, written as a
// GroupNorm of one group per head with an H * D weight: the attention takes
// the weights per head (norm-fuse.mlir: one kernel). With a bias it stays
// apart.
// CHECK-LABEL: func.func @cohere_per_head
//  CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x1024xbf16>, %[[K:[^:]*]]: tensor<?x256xbf16>, %[[V:[^:]*]]: tensor<?x256xbf16>, %[[WQ:[^:]*]]: tensor<1024xbf16>, %[[WK:[^:]*]]: tensor<256xbf16>
//       CHECK: norm.attention %[[Q]], %[[K]], %[[V]] q_norm_weight(%[[WQ]] : tensor<1024xbf16>) k_norm_weight(%[[WK]] : tensor<256xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-05)
//  CHECK-SAME: qk_norm = #norm.qk_norm<mean_var>
//       CHECK: norm.group_norm
//       CHECK: norm.group_norm
//       CHECK: norm.attention
//   CHECK-NOT: qk_norm =
//       CHECK: return
func.func @cohere_per_head(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
    %wq: tensor<1024xbf16>, %wk: tensor<256xbf16>, %b: tensor<1024xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %qn = norm.group_norm %q weight(%wq : tensor<1024xbf16>) eps(1.0e-05) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %kn = norm.group_norm %k weight(%wk : tensor<256xbf16>) eps(1.0e-05) {groups = 2 : i64} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.08838834764831845)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, causal}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  %qb = norm.group_norm %q weight(%wq : tensor<1024xbf16>) bias(%b : tensor<1024xbf16>) eps(1.0e-05) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %kb = norm.group_norm %k weight(%wk : tensor<256xbf16>) eps(1.0e-05) {groups = 2 : i64} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %o2 = norm.attention %qb, %kb, %v scale(0.08838834764831845)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, causal}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %o, %o2 : tensor<?x1024xbf16>, tensor<?x1024xbf16>
}
