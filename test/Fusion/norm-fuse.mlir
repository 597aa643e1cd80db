// RUN: norm-opt %s --norm-fuse | FileCheck %s
// RUN: norm-opt %s --norm-fuse=f32-residual=true | FileCheck %s --check-prefix=F32RES
// RUN: norm-opt %s --norm-fuse=qk-norm=attention | FileCheck %s --check-prefix=ATTN
// RUN: norm-opt %s --norm-fuse | FileCheck %s --check-prefix=ATTN
// RUN: not norm-opt %s --norm-fuse=qk-norm=nowhere 2>&1 | FileCheck %s --check-prefix=BADOPT

// BADOPT: for the --qk-norm option: Cannot find option named 'nowhere'!

// An f32 residual stream, a bf16 sublayer, a norm whose output is cast to
// bf16 for the next matmul: one kernel.
// CHECK-LABEL: func.func @add_norm_cast
//  CHECK-SAME: (%[[X:.*]]: tensor<?x2048xf32>, %[[F:.*]]: tensor<?x2048xbf16>, %[[W:.*]]: tensor<2048xf32>)
//       CHECK: %[[Y:.*]], %[[H:.*]] = norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x2048xbf16>) weight(%[[W]] : tensor<2048xf32>) eps(1.0e-06) :
//  CHECK-SAME: tensor<?x2048xf32> -> tensor<?x2048xbf16>, tensor<?x2048xf32>
//   CHECK-NOT: norm.fused_row
//       CHECK: return %[[Y]], %[[H]]
// An f32 stream is not rounded: f32-residual adds nothing.
// F32RES-LABEL: func.func @add_norm_cast
//   F32RES-NOT: f32_residual
//       F32RES: return
func.func @add_norm_cast(%x: tensor<?x2048xf32>, %f: tensor<?x2048xbf16>, %w: tensor<2048xf32>)
    -> (tensor<?x2048xbf16>, tensor<?x2048xf32>) {
  %h = norm.residual_add %x, %f : tensor<?x2048xf32>, tensor<?x2048xbf16> -> tensor<?x2048xf32>
  %n = norm.rms_norm %h weight(%w : tensor<2048xf32>) eps(1.0e-6) : tensor<?x2048xf32> -> tensor<?x2048xf32>
  %c = norm.cast %n : tensor<?x2048xf32> to tensor<?x2048xbf16>
  return %c, %h : tensor<?x2048xbf16>, tensor<?x2048xf32>
}

// A bf16 stream: the pipeline's f32-residual option reaches the kernel.
// CHECK-LABEL: func.func @bf16_stream
//       CHECK: norm.fused_row <rms> %{{.*}} addend(%{{.*}} : tensor<?x2048xbf16>) eps(1.0e-06) : tensor<?x2048xbf16> -> tensor<?x2048xbf16>, tensor<?x2048xbf16>
// F32RES-LABEL: func.func @bf16_stream
//       F32RES: norm.fused_row <rms> %{{.*}} addend(%{{.*}} : tensor<?x2048xbf16>) eps(1.0e-06) {f32_residual} : tensor<?x2048xbf16> -> tensor<?x2048xbf16>, tensor<?x2048xbf16>
func.func @bf16_stream(%x: tensor<?x2048xbf16>, %f: tensor<?x2048xbf16>) -> (tensor<?x2048xbf16>, tensor<?x2048xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x2048xbf16>, tensor<?x2048xbf16> -> tensor<?x2048xbf16>
  %y = norm.rms_norm %h eps(1.0e-6) : tensor<?x2048xbf16> -> tensor<?x2048xbf16>
  return %y, %h : tensor<?x2048xbf16>, tensor<?x2048xbf16>
}

// A full Sandwich-Norm layer: h = x + post_norm(f), then the next layer's
// pre-norm of h. The post-norm takes the add as its skip (reading f and x,
// writing h); the pre-norm is a kernel of its own reading h.
// CHECK-LABEL: func.func @sandwich_layer
//  CHECK-SAME: (%[[X:.*]]: tensor<?x1024xbf16>, %[[F:.*]]: tensor<?x1024xbf16>, %[[WPOST:.*]]: tensor<1024xbf16>, %[[WPRE:.*]]: tensor<1024xbf16>)
//       CHECK: %[[H:.*]] = norm.fused_row <rms> %[[F]] skip(%[[X]] : tensor<?x1024xbf16>) weight(%[[WPOST]] : tensor<1024xbf16>) eps(1.0e-06) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>{{$}}
//       CHECK: %[[Y:.*]] = norm.fused_row <rms> %[[H]] weight(%[[WPRE]] : tensor<1024xbf16>) eps(1.0e-06) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>{{$}}
//       CHECK: return %[[Y]], %[[H]]
func.func @sandwich_layer(%x: tensor<?x1024xbf16>, %f: tensor<?x1024xbf16>, %wpost: tensor<1024xbf16>, %wpre: tensor<1024xbf16>)
    -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %n = norm.rms_norm %f weight(%wpost : tensor<1024xbf16>) eps(1.0e-6) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %h = norm.residual_add %x, %n : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %y = norm.rms_norm %h weight(%wpre : tensor<1024xbf16>) eps(1.0e-6) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  return %y, %h : tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// Two residual adds in a row before a norm: a kernel has one addend, and
// the first sum is rounded before the second add, so this is two kernels:
// the first add alone, the second add fused with the norm.
// CHECK-LABEL: func.func @two_adds_then_norm
//  CHECK-SAME: (%[[X:.*]]: tensor<8x4096xbf16>, %[[A:.*]]: tensor<8x4096xbf16>, %[[B:.*]]: tensor<8x4096xbf16>)
//       CHECK: %[[H1:.*]] = norm.fused_row <none> %[[X]] addend(%[[A]] : tensor<8x4096xbf16>) alpha(2.0) : tensor<8x4096xbf16> -> tensor<8x4096xbf16>{{$}}
//       CHECK: %[[Y:.*]] = norm.fused_row <mean_var> %[[H1]] addend(%[[B]] : tensor<8x4096xbf16>) eps(1.0e-05) alpha(2.0) : tensor<8x4096xbf16> -> tensor<8x4096xbf16>{{$}}
//       CHECK: return %[[Y]]
func.func @two_adds_then_norm(%x: tensor<8x4096xbf16>, %a: tensor<8x4096xbf16>, %b: tensor<8x4096xbf16>) -> tensor<8x4096xbf16> {
  %h1 = norm.residual_add %x, %a alpha(2.0) : tensor<8x4096xbf16>, tensor<8x4096xbf16> -> tensor<8x4096xbf16>
  %h2 = norm.residual_add %h1, %b alpha(2.0) : tensor<8x4096xbf16>, tensor<8x4096xbf16> -> tensor<8x4096xbf16>
  %y = norm.layer_norm %h2 eps(1.0e-5) : tensor<8x4096xbf16> -> tensor<8x4096xbf16>
  return %y : tensor<8x4096xbf16>
}

// Convolutional-style normalization: GroupNorm after a residual add is one
// kernel; training BatchNorm is a column-statistics kernel and a row kernel.
// CHECK-LABEL: func.func @group_and_batch_norm
//       CHECK: norm.fused_row <mean_var> %{{.*}} addend(%{{.*}} : tensor<?x512xf16>) weight(%{{.*}} : tensor<512xf16>) bias(%{{.*}} : tensor<512xf16>) eps(1.0e-05) {groups = 16 : i64}
//       CHECK: %[[M:.*]], %[[V:.*]] = norm.column_stats %[[IN:.*]] : tensor<?x256xf32> -> tensor<256xf32>, tensor<256xf32>
//       CHECK: norm.fused_row <none> %[[IN]] mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) eps(1.0e-05)
//   CHECK-NOT: norm.batch_norm_training
func.func @group_and_batch_norm(%x: tensor<?x512xf16>, %f: tensor<?x512xf16>, %w: tensor<512xf16>, %b: tensor<512xf16>,
                                %z: tensor<?x256xf32>)
    -> (tensor<?x512xf16>, tensor<?x256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %h = norm.residual_add %x, %f : tensor<?x512xf16>, tensor<?x512xf16> -> tensor<?x512xf16>
  %g = norm.group_norm %h weight(%w : tensor<512xf16>) bias(%b : tensor<512xf16>) eps(1.0e-5) {groups = 16 : i64}
      : tensor<?x512xf16> -> tensor<?x512xf16>
  %y, %m, %v = norm.batch_norm_training %z eps(1.0e-5) : tensor<?x256xf32> -> tensor<?x256xf32>, tensor<256xf32>, tensor<256xf32>
  return %g, %y, %m, %v : tensor<?x512xf16>, tensor<?x256xf32>, tensor<256xf32>, tensor<256xf32>
}

// With qk-norm=attention (the default), QK-Norm moves into the attention
// kernel where it can; where the normalized q has another user it cannot,
// and the prologue kernel is formed instead.
// ATTN-LABEL: func.func @qk_norm_with_other_user
//   ATTN-NOT: qk_norm =
//       ATTN: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms> %arg0 eps(1.0e-06) {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_q_heads = 4 : i64}
//       ATTN: %[[O:.*]] = norm.attention_kernel %[[Q]], %[[K]], %{{.*}} seqlens(%{{.*}} : tensor<2xi32>) scale(0.125) {causal, head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64} :
//       ATTN: return %[[O]], %[[Q]]
func.func @qk_norm_with_other_user(%qkv: tensor<4x512xbf16>) -> (tensor<4x256xbf16>, tensor<4x256xbf16>) {
  %q = tensor.extract_slice %qkv[0, 0] [4, 256] [1, 1] : tensor<4x512xbf16> to tensor<4x256xbf16>
  %k = tensor.extract_slice %qkv[0, 256] [4, 128] [1, 1] : tensor<4x512xbf16> to tensor<4x128xbf16>
  %v = tensor.extract_slice %qkv[0, 384] [4, 128] [1, 1] : tensor<4x512xbf16> to tensor<4x128xbf16>
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [4, 4, 64] : tensor<4x256xbf16> into tensor<4x4x64xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]] : tensor<4x4x64xbf16> into tensor<16x64xbf16>
  %q_normed = norm.rms_norm %q_rows eps(1.0e-06) : tensor<16x64xbf16> -> tensor<16x64xbf16>
  %q_nheads = tensor.expand_shape %q_normed [[0, 1], [2]] output_shape [4, 4, 64] : tensor<16x64xbf16> into tensor<4x4x64xbf16>
  %qn = tensor.collapse_shape %q_nheads [[0], [1, 2]] : tensor<4x4x64xbf16> into tensor<4x256xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [4, 2, 64] : tensor<4x128xbf16> into tensor<4x2x64xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]] : tensor<4x2x64xbf16> into tensor<8x64xbf16>
  %k_normed = norm.rms_norm %k_rows eps(1.0e-06) : tensor<8x64xbf16> -> tensor<8x64xbf16>
  %k_nheads = tensor.expand_shape %k_normed [[0, 1], [2]] output_shape [4, 2, 64] : tensor<8x64xbf16> into tensor<4x2x64xbf16>
  %kn = tensor.collapse_shape %k_nheads [[0], [1, 2]] : tensor<4x2x64xbf16> into tensor<4x128xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.125) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, causal}
      : tensor<4x256xbf16>, tensor<4x128xbf16>, tensor<4x128xbf16> -> tensor<4x256xbf16>
  return %o, %qn : tensor<4x256xbf16>, tensor<4x256xbf16>
}

// Command R+'s QK-Norm, a LayerNorm with a weight row per head written as
// a GroupNorm of one group per head: the keys normalized once (no weight)
// by a K-prepare kernel, and one attention kernel that takes q's weights
// per head and reads the prepared keys.
// ATTN-LABEL: func.func @qk_weight_per_head
//   ATTN-NOT: norm.group_norm
//   ATTN-NOT: norm.fused_row
//       ATTN: %[[K:.*]] = norm.k_prepare %arg1 eps(1.0e-05) {head_dim = 128 : i64, num_kv_heads = 2 : i64, qk_norm = #norm.qk_norm<mean_var>} : tensor<?x256xbf16> -> tensor<?x256xbf16>
//       ATTN: norm.attention_kernel %arg0, %[[K]], %arg2 seqlens(%{{.*}} : tensor<2xi32>) q_norm_weight(%arg3 : tensor<1024xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-05)
//  ATTN-SAME: prepared_k, qk_norm = #norm.qk_norm<mean_var>
func.func @qk_weight_per_head(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
    %wq: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %qn = norm.group_norm %q weight(%wq : tensor<1024xbf16>) eps(1.0e-05) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %kn = norm.group_norm %k eps(1.0e-05) {groups = 2 : i64} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  %o = norm.attention %qn, %kn, %v scale(0.08838834764831845)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, causal}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %o : tensor<?x1024xbf16>
}
