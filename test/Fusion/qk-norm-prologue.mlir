// RUN: norm-opt %s --norm-form-qk-norm-prologue | FileCheck %s
// RUN: norm-opt %s --canonicalize --norm-form-qk-norm-prologue \
// RUN:   | FileCheck %s --check-prefix=CANON

// Llama/Qwen3 shapes: 32 query and 8 key/value heads of 128. The token
// count comes from another tensor, so the prologue reads the slices' rows
// of qkv (a view), not all of qkv. The attention reads the prologue's q and
// k; so does the other user of the normalized q.
// CHECK-LABEL: func.func @gqa_128
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[QKV:.*]]: tensor<?x6144xbf16>, %[[WQ:.*]]: tensor<128xbf16>, %[[WK:.*]]: tensor<128xbf16>)
//       CHECK: %[[T:.*]] = tensor.dim %[[X]]
//       CHECK: %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 5120] [%[[T]], 1024] [1, 1]
//   CHECK-NOT: norm.rms_norm
//       CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[QKV]][0, 0] [%[[T]], 6144] [1, 1] : tensor<?x6144xbf16> to tensor<?x6144xbf16>
//       CHECK: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms> %[[ROWS]] q_weight(%[[WQ]] : tensor<128xbf16>) k_weight(%[[WK]] : tensor<128xbf16>) eps(1.0e-06)
//  CHECK-SAME: {head_dim = 128 : i64, num_kv_heads = 8 : i64, num_q_heads = 32 : i64} : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
//   CHECK-NOT: tensor.expand_shape
//   CHECK-NOT: tensor.collapse_shape
//       CHECK: %[[O:.*]] = norm.attention %[[Q]], %[[K]], %[[V]]
//       CHECK: return %[[O]], %[[Q]]
func.func @gqa_128(%x: tensor<?x4096xbf16>, %qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x4096xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
  %v = tensor.extract_slice %qkv[0, 5120] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
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
  %o = norm.attention %qn, %kn, %v scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o, %qn : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// All rows of qkv (the slices take `tensor.dim %qkv, 0` rows): the prologue
// reads qkv itself. L2 norm on 64-wide heads, 16 query and 4 key/value heads.
// CHECK-LABEL: func.func @l2_64_all_rows
//  CHECK-SAME: (%[[QKV:.*]]: tensor<?x1536xf16>)
//   CHECK-NOT: tensor.extract_slice
//       CHECK: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <l2> %[[QKV]] eps(1.0e-12)
//  CHECK-SAME: {head_dim = 64 : i64, num_kv_heads = 4 : i64, num_q_heads = 16 : i64} : tensor<?x1536xf16> -> tensor<?x1024xf16>, tensor<?x256xf16>
//       CHECK: return %[[Q]], %[[K]]
func.func @l2_64_all_rows(%qkv: tensor<?x1536xf16>)
    -> (tensor<?x1024xf16>, tensor<?x256xf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x1536xf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 1024] [1, 1] : tensor<?x1536xf16> to tensor<?x1024xf16>
  %k = tensor.extract_slice %qkv[0, 1024] [%t, 256] [1, 1] : tensor<?x1536xf16> to tensor<?x256xf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 16, 64]
      : tensor<?x1024xf16> into tensor<?x16x64xf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x16x64xf16> into tensor<?x64xf16>
  %q_normed = norm.l2_norm %q_rows eps(1.0e-12) : tensor<?x64xf16> -> tensor<?x64xf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 16, 64]
      : tensor<?x64xf16> into tensor<?x16x64xf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x16x64xf16> into tensor<?x1024xf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 4, 64]
      : tensor<?x256xf16> into tensor<?x4x64xf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x4x64xf16> into tensor<?x64xf16>
  %k_normed = norm.l2_norm %k_rows eps(1.0e-12) : tensor<?x64xf16> -> tensor<?x64xf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 4, 64]
      : tensor<?x64xf16> into tensor<?x4x64xf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x4x64xf16> into tensor<?x256xf16>
  return %qn, %kn : tensor<?x1024xf16>, tensor<?x256xf16>
}

// A static token count equal to qkv's: all rows. Head dim 256.
// CHECK-LABEL: func.func @static_256
//  CHECK-SAME: (%[[QKV:.*]]: tensor<8x3072xf32>, %[[WQ:.*]]: tensor<256xf32>, %[[WK:.*]]: tensor<256xf32>)
//       CHECK: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms> %[[QKV]] q_weight(%[[WQ]] : tensor<256xf32>) k_weight(%[[WK]] : tensor<256xf32>) eps(1.0e-05)
//  CHECK-SAME: {head_dim = 256 : i64, num_kv_heads = 2 : i64, num_q_heads = 8 : i64} : tensor<8x3072xf32> -> tensor<8x2048xf32>, tensor<8x512xf32>
//       CHECK: return %[[Q]], %[[K]]
func.func @static_256(%qkv: tensor<8x3072xf32>, %wq: tensor<256xf32>, %wk: tensor<256xf32>)
    -> (tensor<8x2048xf32>, tensor<8x512xf32>) {
  %q = tensor.extract_slice %qkv[0, 0] [8, 2048] [1, 1] : tensor<8x3072xf32> to tensor<8x2048xf32>
  %k = tensor.extract_slice %qkv[0, 2048] [8, 512] [1, 1] : tensor<8x3072xf32> to tensor<8x512xf32>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [8, 8, 256]
      : tensor<8x2048xf32> into tensor<8x8x256xf32>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<8x8x256xf32> into tensor<64x256xf32>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<256xf32>) eps(1.0e-05) : tensor<64x256xf32> -> tensor<64x256xf32>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [8, 8, 256]
      : tensor<64x256xf32> into tensor<8x8x256xf32>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<8x8x256xf32> into tensor<8x2048xf32>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [8, 2, 256]
      : tensor<8x512xf32> into tensor<8x2x256xf32>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<8x2x256xf32> into tensor<16x256xf32>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<256xf32>) eps(1.0e-05) : tensor<16x256xf32> -> tensor<16x256xf32>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [8, 2, 256]
      : tensor<16x256xf32> into tensor<8x2x256xf32>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<8x2x256xf32> into tensor<8x512xf32>
  return %qn, %kn : tensor<8x2048xf32>, tensor<8x512xf32>
}

// Left alone: a weight on q only (the prologue scales both heads or
// neither).
// CHECK-LABEL: func.func @q_weight_only
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @q_weight_only(%qkv: tensor<8x3072xf32>, %wq: tensor<256xf32>)
    -> (tensor<8x2048xf32>, tensor<8x512xf32>) {
  %q = tensor.extract_slice %qkv[0, 0] [8, 2048] [1, 1] : tensor<8x3072xf32> to tensor<8x2048xf32>
  %k = tensor.extract_slice %qkv[0, 2048] [8, 512] [1, 1] : tensor<8x3072xf32> to tensor<8x512xf32>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [8, 8, 256]
      : tensor<8x2048xf32> into tensor<8x8x256xf32>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<8x8x256xf32> into tensor<64x256xf32>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<256xf32>) eps(1.0e-05) : tensor<64x256xf32> -> tensor<64x256xf32>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [8, 8, 256]
      : tensor<64x256xf32> into tensor<8x8x256xf32>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<8x8x256xf32> into tensor<8x2048xf32>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [8, 2, 256]
      : tensor<8x512xf32> into tensor<8x2x256xf32>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<8x2x256xf32> into tensor<16x256xf32>
  %k_normed = norm.rms_norm %k_rows eps(1.0e-05) : tensor<16x256xf32> -> tensor<16x256xf32>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [8, 2, 256]
      : tensor<16x256xf32> into tensor<8x2x256xf32>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<8x2x256xf32> into tensor<8x512xf32>
  return %qn, %kn : tensor<8x2048xf32>, tensor<8x512xf32>
}

// Left alone: only q is normalized.
// CHECK-LABEL: func.func @only_q
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @only_q(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  return %qn, %k : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: k does not start where q ends.
// CHECK-LABEL: func.func @k_offset
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @k_offset(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 5120] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
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
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: different eps on q and k.
// CHECK-LABEL: func.func @eps_differ
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @eps_differ(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
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
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: RMSNorm on q, L2 norm on k.
// CHECK-LABEL: func.func @kinds_differ
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @kinds_differ(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
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
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Gemma 3's (1 + w) weights: the offset goes into the prologue.
// CHECK-LABEL: func.func @weight_offset
//       CHECK: norm.qk_norm_prologue <rms> %{{.*}} q_weight(%{{.*}} : tensor<128xbf16>) k_weight(%{{.*}} : tensor<128xbf16>) eps(1.0e-06) offset(1.0) {head_dim = 128 : i64, num_kv_heads = 8 : i64, num_q_heads = 32 : i64}
//   CHECK-NOT: norm.rms_norm
//       CHECK: return
func.func @weight_offset(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
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
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: q takes every other row.
// CHECK-LABEL: func.func @strided_rows
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @strided_rows(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %c2i = arith.constant 2 : index
  %half = arith.divui %t, %c2i : index
  %q = tensor.extract_slice %qkv[0, 0] [%half, 4096] [2, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%half, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%half, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%half, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%half, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%half, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: q and k over different rows.
// CHECK-LABEL: func.func @rows_differ
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @rows_differ(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>, %n: index)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%n, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%n, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%n, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: qkv has more columns than q, k and v.
// CHECK-LABEL: func.func @not_packed
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @not_packed(%qkv: tensor<?x6272xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6272xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6272xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6272xbf16> to tensor<?x1024xbf16>
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
  return %qn, %kn : tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

// Left alone: the normalized rows of k have another user.
// CHECK-LABEL: func.func @norm_has_other_user
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @norm_has_other_user(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 4096] [1, 1] : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%t, 1024] [1, 1] : tensor<?x6144xbf16> to tensor<?x1024xbf16>
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
  return %qn, %kn, %k_normed : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16>
}

// Gemma 3 1B: 4 query heads and one key/value head of 256, (1 + w)
// weights (multi-query attention). With one head the reshapes around k's
// norm are identities that canonicalization folds away: the prologue forms
// either way.
// CHECK-LABEL: func.func @mqa_gemma3
//       CHECK: norm.qk_norm_prologue <rms> %{{.*}} q_weight(%{{.*}} : tensor<256xbf16>) k_weight(%{{.*}} : tensor<256xbf16>) eps(1.0e-06) offset(1.0) {head_dim = 256 : i64, num_kv_heads = 1 : i64, num_q_heads = 4 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
//   CHECK-NOT: norm.rms_norm
// CANON-LABEL: func.func @mqa_gemma3
//       CANON: norm.qk_norm_prologue <rms> %{{.*}} q_weight(%{{.*}} : tensor<256xbf16>) k_weight(%{{.*}} : tensor<256xbf16>) eps(1.0e-06) offset(1.0) {head_dim = 256 : i64, num_kv_heads = 1 : i64, num_q_heads = 4 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
//   CANON-NOT: norm.rms_norm
//       CANON: return
func.func @mqa_gemma3(%qkv: tensor<?x1536xbf16>, %wq: tensor<256xbf16>, %wk: tensor<256xbf16>)
    -> (tensor<?x1024xbf16>, tensor<?x256xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x1536xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 1024] [1, 1] : tensor<?x1536xbf16> to tensor<?x1024xbf16>
  %k = tensor.extract_slice %qkv[0, 1024] [%t, 256] [1, 1] : tensor<?x1536xbf16> to tensor<?x256xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 4, 256]
      : tensor<?x1024xbf16> into tensor<?x4x256xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x4x256xbf16> into tensor<?x256xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<256xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 4, 256]
      : tensor<?x256xbf16> into tensor<?x4x256xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x4x256xbf16> into tensor<?x1024xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 1, 256]
      : tensor<?x256xbf16> into tensor<?x1x256xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x1x256xbf16> into tensor<?x256xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<256xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 1, 256]
      : tensor<?x256xbf16> into tensor<?x1x256xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x1x256xbf16> into tensor<?x256xbf16>
  return %qn, %kn : tensor<?x1024xbf16>, tensor<?x256xbf16>
}

// One query and one key/value head: both norms stand alone after
// canonicalization.
// CANON-LABEL: func.func @one_head_each
//       CANON: norm.qk_norm_prologue <l2> %{{.*}} eps(1.0e-12) {head_dim = 64 : i64, num_kv_heads = 1 : i64, num_q_heads = 1 : i64} : tensor<?x192xf16> -> tensor<?x64xf16>, tensor<?x64xf16>
//   CANON-NOT: norm.l2_norm
func.func @one_head_each(%qkv: tensor<?x192xf16>) -> (tensor<?x64xf16>, tensor<?x64xf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x192xf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 64] [1, 1] : tensor<?x192xf16> to tensor<?x64xf16>
  %k = tensor.extract_slice %qkv[0, 64] [%t, 64] [1, 1] : tensor<?x192xf16> to tensor<?x64xf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 1, 64]
      : tensor<?x64xf16> into tensor<?x1x64xf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x1x64xf16> into tensor<?x64xf16>
  %q_normed = norm.l2_norm %q_rows eps(1.0e-12) : tensor<?x64xf16> -> tensor<?x64xf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 1, 64]
      : tensor<?x64xf16> into tensor<?x1x64xf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x1x64xf16> into tensor<?x64xf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 1, 64]
      : tensor<?x64xf16> into tensor<?x1x64xf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x1x64xf16> into tensor<?x64xf16>
  %k_normed = norm.l2_norm %k_rows eps(1.0e-12) : tensor<?x64xf16> -> tensor<?x64xf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 1, 64]
      : tensor<?x64xf16> into tensor<?x1x64xf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x1x64xf16> into tensor<?x64xf16>
  return %qn, %kn : tensor<?x64xf16>, tensor<?x64xf16>
}

// ViT-22B: LayerNorm per head, weights, no bias.
// CHECK-LABEL: func.func @layer_norm_heads
//       CHECK: norm.qk_norm_prologue <mean_var> %{{.*}} q_weight(%{{.*}} : tensor<128xbf16>) k_weight(%{{.*}} : tensor<128xbf16>) eps(1.0e-05) {head_dim = 128 : i64, num_kv_heads = 2 : i64, num_q_heads = 2 : i64}
//   CHECK-NOT: norm.layer_norm
//       CHECK: return
func.func @layer_norm_heads(%qkv: tensor<?x768xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x768xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 256] [1, 1] : tensor<?x768xbf16> to tensor<?x256xbf16>
  %k = tensor.extract_slice %qkv[0, 256] [%t, 256] [1, 1] : tensor<?x768xbf16> to tensor<?x256xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.layer_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.layer_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  return %qn, %kn : tensor<?x256xbf16>, tensor<?x256xbf16>
}

// Left alone: a LayerNorm with a bias (the prologue has none), and offsets
// that differ between q and k.
// CHECK-LABEL: func.func @layer_norm_bias
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @layer_norm_bias(%qkv: tensor<?x768xbf16>, %wq: tensor<128xbf16>, %bq: tensor<128xbf16>)
    -> (tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x768xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 256] [1, 1] : tensor<?x768xbf16> to tensor<?x256xbf16>
  %k = tensor.extract_slice %qkv[0, 256] [%t, 256] [1, 1] : tensor<?x768xbf16> to tensor<?x256xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.layer_norm %q_rows weight(%wq : tensor<128xbf16>) bias(%bq : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.layer_norm %k_rows weight(%wq : tensor<128xbf16>) bias(%bq : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  return %qn, %kn : tensor<?x256xbf16>, tensor<?x256xbf16>
}

// CHECK-LABEL: func.func @offsets_differ
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @offsets_differ(%qkv: tensor<?x768xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x768xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 256] [1, 1] : tensor<?x768xbf16> to tensor<?x256xbf16>
  %k = tensor.extract_slice %qkv[0, 256] [%t, 256] [1, 1] : tensor<?x768xbf16> to tensor<?x256xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %q_normed = norm.rms_norm %q_rows weight(%wq : tensor<128xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.rms_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  return %qn, %kn : tensor<?x256xbf16>, tensor<?x256xbf16>
}

// Command R+: LayerNorm per head with a weight row per head (GroupNorm of
// one group a head, no bias). With one key/value head its norm is a
// LayerNorm whose weight is that head's row: still a row per head.
// CHECK-LABEL: func.func @cohere_per_head
//  CHECK-SAME: %[[WQ:[^:]*]]: tensor<1024xbf16>, %[[WK:[^:]*]]: tensor<256xbf16>, %[[WK1:[^:]*]]: tensor<128xbf16>
//       CHECK: norm.qk_norm_prologue <mean_var> %{{.*}} q_weight(%[[WQ]] : tensor<1024xbf16>) k_weight(%[[WK]] : tensor<256xbf16>) eps(1.0e-05) {head_dim = 128 : i64, num_kv_heads = 2 : i64, num_q_heads = 8 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
//       CHECK: norm.qk_norm_prologue <mean_var> %{{.*}} q_weight(%[[WQ]] : tensor<1024xbf16>) k_weight(%[[WK1]] : tensor<128xbf16>) eps(1.0e-05) {head_dim = 128 : i64, num_kv_heads = 1 : i64, num_q_heads = 8 : i64} : tensor<?x1280xbf16> -> tensor<?x1024xbf16>, tensor<?x128xbf16>
//   CHECK-NOT: norm.group_norm
//       CHECK: return
func.func @cohere_per_head(%qkv: tensor<?x1536xbf16>, %mqa: tensor<?x1280xbf16>,
    %wq: tensor<1024xbf16>, %wk: tensor<256xbf16>, %wk1: tensor<128xbf16>)
    -> (tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x1536xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 1024] [1, 1] : tensor<?x1536xbf16> to tensor<?x1024xbf16>
  %k = tensor.extract_slice %qkv[0, 1024] [%t, 256] [1, 1] : tensor<?x1536xbf16> to tensor<?x256xbf16>
  %qn = norm.group_norm %q weight(%wq : tensor<1024xbf16>) eps(1.0e-05) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %kn = norm.group_norm %k weight(%wk : tensor<256xbf16>) eps(1.0e-05) {groups = 2 : i64} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %m = tensor.dim %mqa, %c0 : tensor<?x1280xbf16>
  %q1 = tensor.extract_slice %mqa[0, 0] [%m, 1024] [1, 1] : tensor<?x1280xbf16> to tensor<?x1024xbf16>
  %k1 = tensor.extract_slice %mqa[0, 1024] [%m, 128] [1, 1] : tensor<?x1280xbf16> to tensor<?x128xbf16>
  %qn1 = norm.group_norm %q1 weight(%wq : tensor<1024xbf16>) eps(1.0e-05) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %kn1 = norm.layer_norm %k1 weight(%wk1 : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %qn, %kn, %qn1, %kn1 : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x1024xbf16>, tensor<?x128xbf16>
}

// Left alone: a weight row per query head beside one row the two key/value
// heads share (the kernel takes a row per head for both or one each).
// CHECK-LABEL: func.func @per_head_beside_shared
//   CHECK-NOT: norm.qk_norm_prologue
//       CHECK: return
func.func @per_head_beside_shared(%qkv: tensor<?x1536xbf16>, %wq: tensor<1024xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x1024xbf16>, tensor<?x256xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x1536xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 1024] [1, 1] : tensor<?x1536xbf16> to tensor<?x1024xbf16>
  %k = tensor.extract_slice %qkv[0, 1024] [%t, 256] [1, 1] : tensor<?x1536xbf16> to tensor<?x256xbf16>
  %qn = norm.group_norm %q weight(%wq : tensor<1024xbf16>) eps(1.0e-05) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 128]
      : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %k_normed = norm.layer_norm %k_rows weight(%wk : tensor<128xbf16>) eps(1.0e-05) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [%t, 2, 128]
      : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  return %qn, %kn : tensor<?x1024xbf16>, tensor<?x256xbf16>
}
