// RUN: norm-opt %s --split-input-file --norm-fuse-rotary-into-attention | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-fuse-rotary-into-attention --norm-fuse-qk-norm-into-attention | FileCheck %s --check-prefix=BOTH
// RUN: norm-opt %s --split-input-file --norm-fuse-rotary-into-attention --norm-fuse-qk-norm-into-attention --norm-fuse-rotary-into-attention | FileCheck %s --check-prefix=AFTER
// RUN: norm-opt %s --split-input-file --norm-fuse | FileCheck %s --check-prefix=FUSE

// q and k rotated alike, for the attention alone: the attention reads them
// unrotated and rotates itself.
// CHECK-LABEL: func.func @fused
//  CHECK-SAME: (%[[Q:.*]]: tensor<?x512xbf16>, %[[K:.*]]: tensor<?x128xbf16>, %[[V:.*]]: tensor<?x128xbf16>)
//   CHECK-NOT: norm.rotary
//       CHECK: %[[O:.*]] = norm.attention %[[Q]], %[[K]], %[[V]] scale(0.08838834764831845)
//  CHECK-SAME: rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64, rotary_dim = 64 : i64
//       CHECK: return %[[O]]
func.func @fused(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>) -> tensor<?x512xbf16> {
  %qr = norm.rotary <neox> %q {num_heads = 4 : i64, head_dim = 128 : i64, rotary_dim = 64 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x512xbf16>
  %kr = norm.rotary <neox> %k {num_heads = 1 : i64, head_dim = 128 : i64, rotary_dim = 64 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x128xbf16>
  %o = norm.attention %qr, %kr, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

// Qwen3's order, norm then rotation: the rotation moves in first, then the
// QK-Norm finds the norms it reads, so the attention normalizes and then
// rotates, as the graph does.
// BOTH-LABEL: func.func @norm_then_rotate
//   BOTH-NOT: norm.rotary
//   BOTH-NOT: norm.rms_norm
//       BOTH: norm.attention %{{.*}}, %{{.*}}, %{{.*}} q_norm_weight(%{{.*}} : tensor<128xbf16>) k_norm_weight(%{{.*}} : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06)
//  BOTH-SAME: qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64
func.func @norm_then_rotate(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                            %wq: tensor<128xbf16>, %wk: tensor<128xbf16>, %t: index) -> tensor<?x512xbf16> {
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%t, 4, 128] : tensor<?x512xbf16> into tensor<?x4x128xbf16>
  %qrows = tensor.collapse_shape %qh [[0, 1], [2]] : tensor<?x4x128xbf16> into tensor<?x128xbf16>
  %qn = norm.rms_norm %qrows weight(%wq : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qnh = tensor.expand_shape %qn [[0, 1], [2]] output_shape [%t, 4, 128] : tensor<?x128xbf16> into tensor<?x4x128xbf16>
  %qnorm = tensor.collapse_shape %qnh [[0], [1, 2]] : tensor<?x4x128xbf16> into tensor<?x512xbf16>
  %kn = norm.rms_norm %k weight(%wk : tensor<128xbf16>) eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qr = norm.rotary <neox> %qnorm {num_heads = 4 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x512xbf16>
  %kr = norm.rotary <neox> %kn {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x128xbf16>
  %o = norm.attention %qr, %kr, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

// A table's angles at explicit positions move in with the rotation (and
// from there into the kernel op); q and k rotated at different positions
// stay apart.
// CHECK-LABEL: func.func @table
//  CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x512xbf16>, %[[K:[^:]*]]: tensor<?x128xbf16>, %[[V:[^:]*]]: tensor<?x128xbf16>, %[[P:[^:]*]]: tensor<?xi32>, %[[T:[^:]*]]: tensor<?x128xf32>
//       CHECK: norm.attention %[[Q]], %[[K]], %[[V]] positions(%[[P]] : tensor<?xi32>) rope_table(%[[T]] : tensor<?x128xf32>)
//  CHECK-SAME: rope = #norm.rope<neox>}
//       CHECK: norm.rotary
//       CHECK: norm.rotary
//       CHECK: norm.attention
//   CHECK-NOT: rope =
//       CHECK: return
func.func @table(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                 %p: tensor<?xi32>, %t: tensor<?x128xf32>, %p2: tensor<?xi32>) -> (tensor<?x512xbf16>, tensor<?x512xbf16>) {
  %qr = norm.rotary <neox> %q positions(%p : tensor<?xi32>) rope_table(%t : tensor<?x128xf32>) {num_heads = 4 : i64, head_dim = 128 : i64} : tensor<?x512xbf16>
  %kr = norm.rotary <neox> %k positions(%p : tensor<?xi32>) rope_table(%t : tensor<?x128xf32>) {num_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x128xbf16>
  %o = norm.attention %qr, %kr, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  %q2 = norm.rotary <neox> %q positions(%p : tensor<?xi32>) {num_heads = 4 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x512xbf16>
  %k2 = norm.rotary <neox> %k positions(%p2 : tensor<?xi32>) {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  %o2 = norm.attention %q2, %k2, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o, %o2 : tensor<?x512xbf16>, tensor<?x512xbf16>
}

// -----

// Left alone: only q rotated; q and k rotated with different bases;
// rotated q and k with other users (two attentions read them, one with a
// QK-Norm).
// CHECK-LABEL: func.func @unfused
// CHECK-COUNT-6: norm.rotary
// CHECK-NOT: rope =
func.func @unfused(%q: tensor<?x128xf16>, %k: tensor<?x128xf16>) -> (tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16>) {
  %q1 = norm.rotary <gptj> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xf16>
  %a = norm.attention %q1, %k, %k scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x128xf16>
  %q2 = norm.rotary <gptj> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xf16>
  %k2 = norm.rotary <gptj> %k {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 5.0e+05 : f64} : tensor<?x128xf16>
  %b = norm.attention %q2, %k2, %k scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x128xf16>
  %q3 = norm.rotary <gptj> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xf16>
  %k3 = norm.rotary <gptj> %k {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xf16>
  %c = norm.attention %q3, %k3, %k scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x128xf16>
  %d = norm.attention %q3, %k3, %k scale(0.1) qk_norm_eps(1.0e-06)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x128xf16>
  %q4 = norm.rotary <gptj> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xf16>
  return %a, %b, %c, %d, %q4 : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x128xf16>
}

// -----

// Llama 4's order, rotation then an L2 QK-Norm without weights: the norms
// move in first, then the rotations they read, as `rope_first`; norm-fuse
// forms one kernel that rotates and then normalizes. The attention that
// already carries a QK-Norm takes a rotation of its inputs the same way.
// CHECK-LABEL: func.func @rotate_then_norm
//   CHECK-NOT: rope_first
//       CHECK: norm.l2_norm
//       CHECK: norm.l2_norm
// BOTH-LABEL: func.func @rotate_then_norm
//       BOTH: norm.rotary
//       BOTH: norm.rotary
//   BOTH-NOT: norm.l2_norm
//       BOTH: norm.attention %{{.*}}, %{{.*}}, %{{.*}} scale(0.08838834764831845) qk_norm_eps(1.0e-06)
//  BOTH-SAME: qk_norm = #norm.qk_norm<l2>}
// AFTER-LABEL: func.func @rotate_then_norm
//   AFTER-NOT: norm.rotary
//       AFTER: norm.attention %{{.*}}, %{{.*}}, %{{.*}} scale(0.08838834764831845) qk_norm_eps(1.0e-06)
//  AFTER-SAME: qk_norm = #norm.qk_norm<l2>, rope = #norm.rope<neox>, rope_first, rope_theta = 5.000000e+05 : f64
// FUSE-LABEL: func.func @rotate_then_norm
//   FUSE-NOT: norm.rotary
//   FUSE-NOT: norm.l2_norm
//       FUSE: norm.attention_kernel
//  FUSE-SAME: qk_norm = #norm.qk_norm<l2>, rope = #norm.rope<neox>, rope_first, rope_theta = 5.000000e+05 : f64
//   FUSE-NOT: norm.attention_kernel
func.func @rotate_then_norm(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>, %t: index) -> tensor<?x512xbf16> {
  %qr = norm.rotary <neox> %q {num_heads = 4 : i64, head_dim = 128 : i64, rope_theta = 5.0e+05 : f64} : tensor<?x512xbf16>
  %kr = norm.rotary <neox> %k {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 5.0e+05 : f64} : tensor<?x128xbf16>
  %qh = tensor.expand_shape %qr [[0], [1, 2]] output_shape [%t, 4, 128] : tensor<?x512xbf16> into tensor<?x4x128xbf16>
  %qrows = tensor.collapse_shape %qh [[0, 1], [2]] : tensor<?x4x128xbf16> into tensor<?x128xbf16>
  %qn = norm.l2_norm %qrows eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qnh = tensor.expand_shape %qn [[0, 1], [2]] output_shape [%t, 4, 128] : tensor<?x128xbf16> into tensor<?x4x128xbf16>
  %qnorm = tensor.collapse_shape %qnh [[0], [1, 2]] : tensor<?x4x128xbf16> into tensor<?x512xbf16>
  %kn = norm.l2_norm %kr eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %o = norm.attention %qnorm, %kn, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}
