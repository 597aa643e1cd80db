// RUN: norm-opt %s --norm-fuse-sandwich-norm | FileCheck %s

// Sandwich-Norm: x + norm(f) is one kernel reading f and x: the norm's
// input is f, x is the skip, the output has the add's type.
// CHECK-LABEL: func.func @sandwich
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[F:.*]]: tensor<?x4096xbf16>, %[[W:.*]]: tensor<4096xbf16>)
//       CHECK: %[[H:.*]] = norm.fused_row <rms> %[[F]] skip(%[[X]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) :
//  CHECK-SAME: tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//   CHECK-NOT: norm.rms_norm
//   CHECK-NOT: norm.residual_add
//       CHECK: return %[[H]]
func.func @sandwich(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  %n = norm.rms_norm %f weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h = norm.residual_add %x, %n : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %h : tensor<?x4096xbf16>
}

// Static rows on the norm, dynamic on the residual: the output takes the
// add's type. LayerNorm keeps weight and bias.
// CHECK-LABEL: func.func @sandwich_layer_norm_static_rows
//       CHECK: norm.fused_row <mean_var> %{{.*}} skip(%{{.*}} : tensor<?x1024xf16>) weight(%{{.*}} : tensor<1024xf16>) bias(%{{.*}} : tensor<1024xf16>) eps(1.0e-05) :
//  CHECK-SAME: tensor<16x1024xf16> -> tensor<?x1024xf16>{{$}}
func.func @sandwich_layer_norm_static_rows(%x: tensor<?x1024xf16>, %f: tensor<16x1024xf16>,
                                           %w: tensor<1024xf16>, %b: tensor<1024xf16>) -> tensor<?x1024xf16> {
  %n = norm.layer_norm %f weight(%w : tensor<1024xf16>) bias(%b : tensor<1024xf16>) eps(1.0e-5) : tensor<16x1024xf16> -> tensor<16x1024xf16>
  %h = norm.residual_add %x, %n : tensor<?x1024xf16>, tensor<16x1024xf16> -> tensor<?x1024xf16>
  return %h : tensor<?x1024xf16>
}

// The residual may have users of its own; only the norm's result must be
// used by the add alone.
// CHECK-LABEL: func.func @residual_has_other_users
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[F:.*]]: tensor<?x4096xbf16>)
//       CHECK: %[[H:.*]] = norm.fused_row <rms> %[[F]] skip(%[[X]] : tensor<?x4096xbf16>) eps(1.0e-06)
//       CHECK: return %[[H]], %[[X]]
func.func @residual_has_other_users(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %n = norm.rms_norm %f eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h = norm.residual_add %x, %n : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %h, %x : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// A fused add+norm kernel as the sublayer (x + norm(a + b)) takes the skip
// too, and keeps storing its residual stream for its other user.
// CHECK-LABEL: func.func @sandwich_of_fused_add_norm
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[A:.*]]: tensor<?x4096xbf16>, %[[B:.*]]: tensor<?x4096xbf16>)
//       CHECK: %[[Y:.*]], %[[R:.*]] = norm.fused_row <rms> %[[A]] addend(%[[B]] : tensor<?x4096xbf16>) skip(%[[X]] : tensor<?x4096xbf16>) eps(1.0e-06) :
//  CHECK-SAME: tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
//       CHECK: return %[[Y]], %[[R]]
func.func @sandwich_of_fused_add_norm(%x: tensor<?x4096xbf16>, %a: tensor<?x4096xbf16>, %b: tensor<?x4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %n, %r = norm.fused_row <rms> %a addend(%b : tensor<?x4096xbf16>) eps(1.0e-6)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %h = norm.residual_add %x, %n : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %h, %r : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// Left alone:
// - alpha != 1 (a kernel's skip is not scaled);
// - an f32 stream plus a bf16 norm: the graph rounds the norm to bf16
//   before the add, the kernel would round to f32;
// - a norm with another user;
// - a norm that is the residual, not the sublayer;
// - a kernel that has a skip already.
// CHECK-LABEL: func.func @left_alone
//   CHECK-NOT: skip(%arg
//       CHECK: norm.rms_norm
//       CHECK: norm.residual_add %{{.*}}, %{{.*}} alpha(2.0)
//       CHECK: norm.rms_norm
//       CHECK: norm.residual_add %{{.*}}, %{{.*}} : tensor<?x4096xf32>, tensor<?x4096xbf16>
//       CHECK: norm.rms_norm
//       CHECK: norm.residual_add
//       CHECK: norm.rms_norm
//       CHECK: norm.residual_add
//       CHECK: norm.fused_row <rms> %{{.*}} skip(%{{.*}} : tensor<?x4096xbf16>)
//       CHECK: norm.residual_add
//       CHECK: return
func.func @left_alone(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %x32: tensor<?x4096xf32>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %n0 = norm.rms_norm %f eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h0 = norm.residual_add %x, %n0 alpha(2.0) : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %n1 = norm.rms_norm %f eps(1.0e-5) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h1 = norm.residual_add %x32, %n1 : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %n2 = norm.rms_norm %f eps(1.0e-4) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h2 = norm.residual_add %x, %n2 : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %n3 = norm.rms_norm %f eps(1.0e-3) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h3 = norm.residual_add %n3, %x : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %n4 = norm.fused_row <rms> %f skip(%x : tensor<?x4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h4 = norm.residual_add %x, %n4 : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %h0, %h1, %h2, %n2, %h3, %h4
      : tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
