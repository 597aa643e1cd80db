// RUN: norm-opt %s --split-input-file --norm-form-qk-norm-prologue | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-fuse | FileCheck %s --check-prefix=FUSE

// Qwen3's QK-Norm, then RoPE, for an attention kernel the project does not
// own (the results are the function's): one prologue normalizes and rotates
// q and k, its results replace the rotations'.
// CHECK-LABEL: func.func @norm_then_rotate
//  CHECK-SAME: (%[[QKV:[^:]*]]: tensor<?x1536xbf16>, %[[WQ:[^:]*]]: tensor<128xbf16>, %[[WK:[^:]*]]: tensor<128xbf16>, %[[P:[^:]*]]: tensor<?xi32>)
//   CHECK-NOT: norm.rms_norm
//   CHECK-NOT: norm.rotary
//       CHECK: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms> %[[QKV]] q_weight(%[[WQ]] : tensor<128xbf16>) k_weight(%[[WK]] : tensor<128xbf16>) positions(%[[P]] : tensor<?xi32>) eps(1.0e-06)
//  CHECK-SAME: {head_dim = 128 : i64, num_kv_heads = 2 : i64, num_q_heads = 8 : i64, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
//   CHECK-NOT: norm.rotary
//       CHECK: return %[[Q]], %[[K]]
func.func @norm_then_rotate(%qkv: tensor<?x1536xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>, %p: tensor<?xi32>)
    -> (tensor<?x1024xbf16>, tensor<?x256xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x1536xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 1024] [1, 1] : tensor<?x1536xbf16> to tensor<?x1024xbf16>
  %k = tensor.extract_slice %qkv[0, 1024] [%t, 256] [1, 1] : tensor<?x1536xbf16> to tensor<?x256xbf16>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 8, 128] : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %qrows = tensor.collapse_shape %qh [[0, 1], [2]] : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %qn = norm.rms_norm %qrows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qnh = tensor.expand_shape %qn [[0, 1], [2]] output_shape [%t, 8, 128] : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %qnorm = tensor.collapse_shape %qnh [[0], [1, 2]] : tensor<?x8x128xbf16> into tensor<?x1024xbf16>
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
  %krows = tensor.collapse_shape %kh [[0, 1], [2]] : tensor<?x2x128xbf16> into tensor<?x128xbf16>
  %kn = norm.rms_norm %krows weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %knh = tensor.expand_shape %kn [[0, 1], [2]] output_shape [%t, 2, 128] : tensor<?x128xbf16> into tensor<?x2x128xbf16>
  %knorm = tensor.collapse_shape %knh [[0], [1, 2]] : tensor<?x2x128xbf16> into tensor<?x256xbf16>
  %qr = norm.rotary <neox> %qnorm positions(%p : tensor<?xi32>) {num_heads = 8 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x1024xbf16>
  %kr = norm.rotary <neox> %knorm positions(%p : tensor<?xi32>) {num_heads = 2 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x256xbf16>
  return %qr, %kr : tensor<?x1024xbf16>, tensor<?x256xbf16>
}

// -----

// Llama 4: RoPE (interleaved, a cos/sin table), then an L2 norm without a
// weight of the rotated rows: rope_first. One key/value head (the norm
// alone on it). The whole pipeline forms the same prologue.
// CHECK-LABEL: func.func @llama4_rotate_then_norm
//  CHECK-SAME: (%[[QKV:[^:]*]]: tensor<?x768xbf16>, %[[T:[^:]*]]: tensor<?x128xf32>)
//   CHECK-NOT: norm.rotary
//       CHECK: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <l2> %[[QKV]] rope_table(%[[T]] : tensor<?x128xf32>) eps(1.0e-06)
//  CHECK-SAME: {head_dim = 128 : i64, num_kv_heads = 1 : i64, num_q_heads = 4 : i64, rope = #norm.rope<gptj>, rope_first}
//   CHECK-NOT: norm.l2_norm
//       CHECK: return %[[Q]], %[[K]]
// FUSE-LABEL: func.func @llama4_rotate_then_norm
//       FUSE: norm.qk_norm_prologue <l2> %{{.*}} rope_table(%{{.*}} : tensor<?x128xf32>)
//  FUSE-SAME: rope = #norm.rope<gptj>, rope_first
//   FUSE-NOT: norm.rotary
func.func @llama4_rotate_then_norm(%qkv: tensor<?x768xbf16>, %table: tensor<?x128xf32>)
    -> (tensor<?x512xbf16>, tensor<?x128xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x768xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 512] [1, 1] : tensor<?x768xbf16> to tensor<?x512xbf16>
  %k = tensor.extract_slice %qkv[0, 512] [%t, 128] [1, 1] : tensor<?x768xbf16> to tensor<?x128xbf16>
  %qr = norm.rotary <gptj> %q rope_table(%table : tensor<?x128xf32>) {num_heads = 4 : i64, head_dim = 128 : i64} : tensor<?x512xbf16>
  %kr = norm.rotary <gptj> %k rope_table(%table : tensor<?x128xf32>) {num_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x128xbf16>
  %qh = tensor.expand_shape %qr [[0], [1, 2]] output_shape [%t, 4, 128] : tensor<?x512xbf16> into tensor<?x4x128xbf16>
  %qrows = tensor.collapse_shape %qh [[0, 1], [2]] : tensor<?x4x128xbf16> into tensor<?x128xbf16>
  %qn = norm.l2_norm %qrows eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qnh = tensor.expand_shape %qn [[0, 1], [2]] output_shape [%t, 4, 128] : tensor<?x128xbf16> into tensor<?x4x128xbf16>
  %qnorm = tensor.collapse_shape %qnh [[0], [1, 2]] : tensor<?x4x128xbf16> into tensor<?x512xbf16>
  %kn = norm.l2_norm %kr eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %qnorm, %kn : tensor<?x512xbf16>, tensor<?x128xbf16>
}

// -----

// StableLM's partial rotary (20 of 80) after a LayerNorm: any even
// rotary_dim fuses.
// CHECK-LABEL: func.func @stablelm_partial
// FUSE-LABEL: func.func @stablelm_partial
//       CHECK: norm.qk_norm_prologue <mean_var>
//  CHECK-SAME: rope = #norm.rope<neox>, rope_theta = 1.000000e+04 : f64, rotary_dim = 20 : i64}
//   CHECK-NOT: norm.rotary
func.func @stablelm_partial(%qkv: tensor<?x480xf16>) -> (tensor<?x160xf16>, tensor<?x160xf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x480xf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 160] [1, 1] : tensor<?x480xf16> to tensor<?x160xf16>
  %k = tensor.extract_slice %qkv[0, 160] [%t, 160] [1, 1] : tensor<?x480xf16> to tensor<?x160xf16>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 2, 80] : tensor<?x160xf16> into tensor<?x2x80xf16>
  %qrows = tensor.collapse_shape %qh [[0, 1], [2]] : tensor<?x2x80xf16> into tensor<?x80xf16>
  %qn = norm.layer_norm %qrows eps(1.0e-05) : tensor<?x80xf16> -> tensor<?x80xf16>
  %qnh = tensor.expand_shape %qn [[0, 1], [2]] output_shape [%t, 2, 80] : tensor<?x80xf16> into tensor<?x2x80xf16>
  %qnorm = tensor.collapse_shape %qnh [[0], [1, 2]] : tensor<?x2x80xf16> into tensor<?x160xf16>
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [%t, 2, 80] : tensor<?x160xf16> into tensor<?x2x80xf16>
  %krows = tensor.collapse_shape %kh [[0, 1], [2]] : tensor<?x2x80xf16> into tensor<?x80xf16>
  %kn = norm.layer_norm %krows eps(1.0e-05) : tensor<?x80xf16> -> tensor<?x80xf16>
  %knh = tensor.expand_shape %kn [[0, 1], [2]] output_shape [%t, 2, 80] : tensor<?x80xf16> into tensor<?x2x80xf16>
  %knorm = tensor.collapse_shape %knh [[0], [1, 2]] : tensor<?x2x80xf16> into tensor<?x160xf16>
  %qr = norm.rotary <neox> %qnorm {num_heads = 2 : i64, head_dim = 80 : i64, rotary_dim = 20 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x160xf16>
  %kr = norm.rotary <neox> %knorm {num_heads = 2 : i64, head_dim = 80 : i64, rotary_dim = 20 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x160xf16>
  return %qr, %kr : tensor<?x160xf16>, tensor<?x160xf16>
}

// -----

// Negative: q and k rotated differently (other bases) keep their
// rotations; the norms still form the prologue. A rotated q whose
// unrotated rows are also returned keeps its rotation too.
// CHECK-LABEL: func.func @rotated_differently
//       CHECK: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms>
//   CHECK-NOT: rope
//       CHECK: norm.rotary <neox> %[[Q]]
//       CHECK: norm.rotary <neox> %[[K]]
func.func @rotated_differently(%qkv: tensor<?x384xbf16>) -> (tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qkv, %c0 : tensor<?x384xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%t, 128] [1, 1] : tensor<?x384xbf16> to tensor<?x128xbf16>
  %k = tensor.extract_slice %qkv[0, 128] [%t, 128] [1, 1] : tensor<?x384xbf16> to tensor<?x128xbf16>
  %qn = norm.rms_norm %q eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %kn = norm.rms_norm %k eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qr = norm.rotary <neox> %qn {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  %kr = norm.rotary <neox> %kn {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 5.0e+05 : f64} : tensor<?x128xbf16>
  return %qr, %kr : tensor<?x128xbf16>, tensor<?x128xbf16>
}
