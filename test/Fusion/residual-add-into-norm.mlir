// RUN: norm-opt %s --norm-fuse-residual-add-into-norm | FileCheck %s
// RUN: norm-opt %s --norm-fuse-residual-add-into-norm=f32-residual=true | FileCheck %s --check-prefix=F32RES

// Pre-norm: h = x + f feeds the norm and the next residual add. One kernel
// reads x and f once and writes y and h; the other user of h reads
// residual_out.
// CHECK-LABEL: func.func @pre_norm
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[F:.*]]: tensor<?x4096xbf16>, %[[G:.*]]: tensor<?x4096xbf16>, %[[W:.*]]: tensor<4096xbf16>)
//   CHECK-NOT: norm.residual_add %[[X]]
//       CHECK: %[[Y:.*]], %[[H:.*]] = norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) :
//  CHECK-SAME: tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
//   CHECK-NOT: f32_residual
//   CHECK-NOT: norm.rms_norm
//       CHECK: %[[NEXT:.*]] = norm.residual_add %[[H]], %[[G]]
//       CHECK: return %[[Y]], %[[NEXT]]
// F32RES-LABEL: func.func @pre_norm
//       F32RES: norm.fused_row <rms> %{{.*}} addend(%{{.*}}) weight(%{{.*}}) eps(1.0e-06) {f32_residual} :
func.func @pre_norm(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %g: tensor<?x4096xbf16>,
                    %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %y = norm.rms_norm %h weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %next = norm.residual_add %h, %g : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %y, %next : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// Post-norm: h has no other user, so the kernel does not store it.
// CHECK-LABEL: func.func @post_norm_layer_norm
//  CHECK-SAME: (%[[X:.*]]: tensor<8x1024xf16>, %[[F:.*]]: tensor<8x1024xf16>, %[[W:.*]]: tensor<1024xf16>, %[[B:.*]]: tensor<1024xf16>)
//       CHECK: %[[Y:.*]] = norm.fused_row <mean_var> %[[X]] addend(%[[F]] : tensor<8x1024xf16>) weight(%[[W]] : tensor<1024xf16>) bias(%[[B]] : tensor<1024xf16>) eps(1.0e-05) :
//  CHECK-SAME: tensor<8x1024xf16> -> tensor<8x1024xf16>{{$}}
//   CHECK-NOT: norm.residual_add
//       CHECK: return %[[Y]]
func.func @post_norm_layer_norm(%x: tensor<8x1024xf16>, %f: tensor<8x1024xf16>,
                                %w: tensor<1024xf16>, %b: tensor<1024xf16>) -> tensor<8x1024xf16> {
  %h = norm.residual_add %x, %f : tensor<8x1024xf16>, tensor<8x1024xf16> -> tensor<8x1024xf16>
  %y = norm.layer_norm %h weight(%w : tensor<1024xf16>) bias(%b : tensor<1024xf16>) eps(1.0e-5) : tensor<8x1024xf16> -> tensor<8x1024xf16>
  return %y : tensor<8x1024xf16>
}

// DeepNorm: alpha scales the residual input and is carried to the kernel.
// CHECK-LABEL: func.func @deep_norm
//       CHECK: norm.fused_row <mean_var> %{{.*}} addend(%{{.*}} : tensor<?x1024xbf16>) eps(1.0e-05) alpha(2.378414230005442) :
//  CHECK-SAME: tensor<?x1024xbf16> -> tensor<?x1024xbf16>{{$}}
//   CHECK-NOT: norm.residual_add
func.func @deep_norm(%x: tensor<?x1024xbf16>, %f: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %h = norm.residual_add %x, %f alpha(2.378414230005442) : tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %y = norm.layer_norm %h eps(1.0e-5) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// An f32 residual stream beside a bf16 sublayer: the kernel's input is the
// f32 stream, h keeps f32, the norm's output type stays f32. f32-residual
// changes nothing for a stream that is f32 already.
// CHECK-LABEL: func.func @f32_stream_bf16_sublayer
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xf32>, %[[F:.*]]: tensor<?x4096xbf16>, %[[W:.*]]: tensor<4096xbf16>)
//       CHECK: %[[Y:.*]], %[[H:.*]] = norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) offset(1.0) :
//  CHECK-SAME: tensor<?x4096xf32> -> tensor<?x4096xf32>, tensor<?x4096xf32>
//       CHECK: return %[[Y]], %[[H]]
// F32RES-LABEL: func.func @f32_stream_bf16_sublayer
//   F32RES-NOT: f32_residual
//       F32RES: return
func.func @f32_stream_bf16_sublayer(%x: tensor<?x4096xf32>, %f: tensor<?x4096xbf16>,
                                    %w: tensor<4096xbf16>) -> (tensor<?x4096xf32>, tensor<?x4096xf32>) {
  %h = norm.residual_add %x, %f : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %y = norm.rms_norm %h weight(%w : tensor<4096xbf16>) eps(1.0e-6) offset(1.0) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  return %y, %h : tensor<?x4096xf32>, tensor<?x4096xf32>
}

// A bf16 stream beside an f32 sublayer output: h is bf16 (the residual's type).
// CHECK-LABEL: func.func @bf16_stream_f32_sublayer
//       CHECK: norm.fused_row <l2> %{{.*}} addend(%{{.*}} : tensor<?x128xf32>) eps(1.0e-12) :
//  CHECK-SAME: tensor<?x128xbf16> -> tensor<?x128xbf16>{{$}}
func.func @bf16_stream_f32_sublayer(%x: tensor<?x128xbf16>, %f: tensor<?x128xf32>) -> tensor<?x128xbf16> {
  %h = norm.residual_add %x, %f : tensor<?x128xbf16>, tensor<?x128xf32> -> tensor<?x128xbf16>
  %y = norm.l2_norm %h eps(1.0e-12) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// GroupNorm keeps its groups; batch norm with running statistics keeps them.
// CHECK-LABEL: func.func @group_and_batch_norm
//       CHECK: norm.fused_row <mean_var> %{{.*}} addend(%{{.*}} : tensor<?x512xf32>) weight(%{{.*}}) bias(%{{.*}}) eps(1.0e-05) {groups = 32 : i64} :
//       CHECK: norm.fused_row <none> %{{.*}} addend(%{{.*}} : tensor<16x256xf16>) mean(%{{.*}} : tensor<256xf32>) variance(%{{.*}} : tensor<256xf32>) eps(0.001) :
//   CHECK-NOT: norm.residual_add
func.func @group_and_batch_norm(%x: tensor<?x512xf32>, %f: tensor<?x512xf32>, %w: tensor<512xf32>, %b: tensor<512xf32>,
                                %a: tensor<16x256xf16>, %c: tensor<16x256xf16>, %m: tensor<256xf32>, %v: tensor<256xf32>)
    -> (tensor<?x512xf32>, tensor<16x256xf16>) {
  %h = norm.residual_add %x, %f : tensor<?x512xf32>, tensor<?x512xf32> -> tensor<?x512xf32>
  %y = norm.group_norm %h weight(%w : tensor<512xf32>) bias(%b : tensor<512xf32>) eps(1.0e-5) {groups = 32 : i64}
      : tensor<?x512xf32> -> tensor<?x512xf32>
  %h2 = norm.residual_add %a, %c : tensor<16x256xf16>, tensor<16x256xf16> -> tensor<16x256xf16>
  %y2 = norm.batch_norm_inference %h2 mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>) eps(1.0e-3)
      : tensor<16x256xf16> -> tensor<16x256xf16>
  return %y, %y2 : tensor<?x512xf32>, tensor<16x256xf16>
}

// h feeds two norms: the first one in the block is fused; the second reads
// residual_out (it becomes its own kernel later).
// CHECK-LABEL: func.func @two_norms
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[F:.*]]: tensor<?x4096xbf16>)
//       CHECK: %[[Y:.*]], %[[H:.*]] = norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) eps(1.0e-06) :
//       CHECK: %[[Z:.*]] = norm.layer_norm %[[H]] eps(1.0e-05)
//       CHECK: return %[[Y]], %[[Z]]
func.func @two_norms(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %y = norm.rms_norm %h eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %z = norm.layer_norm %h eps(1.0e-5) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %y, %z : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// A user of h between the add and the norm: the kernel goes where the add
// was, so that the user can read residual_out.
// CHECK-LABEL: func.func @user_before_norm
//       CHECK: %[[Y:.*]], %[[H:.*]] = norm.fused_row <rms>
//       CHECK: %[[U:.*]] = call @use(%[[H]])
//       CHECK: return %[[Y]], %[[U]]
func.func private @use(tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
func.func @user_before_norm(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %u = func.call @use(%h) : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  %y = norm.rms_norm %h weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %y, %u : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// A user of h before the norm and a weight defined after that user: no
// place dominates both, so nothing changes.
// CHECK-LABEL: func.func @no_insertion_point
//       CHECK: norm.residual_add
//       CHECK: call @use
//       CHECK: call @weight
//       CHECK: norm.rms_norm
//   CHECK-NOT: norm.fused_row
func.func private @weight() -> tensor<4096xbf16>
func.func @no_insertion_point(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %u = func.call @use(%h) : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  %w = func.call @weight() : () -> tensor<4096xbf16>
  %y = norm.rms_norm %h weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %y, %u : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// Left alone: an add without a norm, an add whose result is only the
// residual of another add, a norm of something else, a kernel that reads h
// as its skip too, and a kernel whose launch configuration is fixed.
// CHECK-LABEL: func.func @left_alone
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[F:.*]]: tensor<?x4096xbf16>,
//       CHECK: %[[H:.*]] = norm.residual_add %[[X]], %[[F]]
//       CHECK: norm.residual_add %[[H]], %[[F]]
//       CHECK: norm.rms_norm %[[X]]
//       CHECK: norm.fused_row <rms> %[[H]] skip(%[[H]] : tensor<?x4096xbf16>) eps
//       CHECK: %[[H4:.*]] = norm.residual_add %[[X]], %[[F]]
//       CHECK: norm.fused_row <rms> %[[H4]] eps(1.0e-06) {launch =
func.func @left_alone(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h2 = norm.residual_add %h, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %y = norm.rms_norm %x weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %s = norm.fused_row <rms> %h skip(%h : tensor<?x4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %h4 = norm.residual_add %x, %f : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %k = norm.fused_row <rms> %h4 eps(1.0e-6) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %h2, %y, %s, %k : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
