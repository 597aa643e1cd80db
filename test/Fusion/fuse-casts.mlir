// RUN: norm-opt %s --norm-fuse-casts | FileCheck %s

// A norm computing in f32 and a cast to bf16: one kernel with a bf16 output
// (the kernel rounds its f32 result once, as the cast does).
// CHECK-LABEL: func.func @norm_then_narrowing_cast
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xf32>, %[[W:.*]]: tensor<4096xf32>)
//       CHECK: %[[Y:.*]] = norm.fused_row <rms> %[[X]] weight(%[[W]] : tensor<4096xf32>) eps(1.0e-06) : tensor<?x4096xf32> -> tensor<?x4096xbf16>{{$}}
//   CHECK-NOT: norm.cast
//       CHECK: return %[[Y]]
func.func @norm_then_narrowing_cast(%x: tensor<?x4096xf32>, %w: tensor<4096xf32>) -> tensor<?x4096xbf16> {
  %n = norm.rms_norm %x weight(%w : tensor<4096xf32>) eps(1.0e-6) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  %c = norm.cast %n : tensor<?x4096xf32> to tensor<?x4096xbf16>
  return %c : tensor<?x4096xbf16>
}

// The same at kernel level: a conversion-only kernel after a fused add+norm
// kernel of an f32 stream; residual_out stays f32 and keeps its user.
// CHECK-LABEL: func.func @kernel_then_conversion_kernel
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xf32>, %[[F:.*]]: tensor<?x4096xbf16>)
//       CHECK: %[[Y:.*]], %[[H:.*]] = norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) eps(1.0e-06) : tensor<?x4096xf32> -> tensor<?x4096xf16>, tensor<?x4096xf32>
//   CHECK-NOT: norm.fused_row
//       CHECK: return %[[Y]], %[[H]]
func.func @kernel_then_conversion_kernel(%x: tensor<?x4096xf32>, %f: tensor<?x4096xbf16>)
    -> (tensor<?x4096xf16>, tensor<?x4096xf32>) {
  %y, %h = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>) eps(1.0e-6)
      : tensor<?x4096xf32> -> tensor<?x4096xf32>, tensor<?x4096xf32>
  %c = norm.fused_row <none> %y : tensor<?x4096xf32> -> tensor<?x4096xf16>
  return %c, %h : tensor<?x4096xf16>, tensor<?x4096xf32>
}

// A lone bf16 residual add whose sum is widened: the kernel's output is its
// bf16 residual stream, so it can store that stream as f32 directly.
// CHECK-LABEL: func.func @add_then_widening_cast
//       CHECK: norm.fused_row <none> %{{.*}} addend(%{{.*}} : tensor<8x1024xbf16>) : tensor<8x1024xbf16> -> tensor<8x1024xf32>{{$}}
//   CHECK-NOT: norm.cast
func.func @add_then_widening_cast(%x: tensor<8x1024xbf16>, %f: tensor<8x1024xbf16>) -> tensor<8x1024xf32> {
  %h = norm.residual_add %x, %f : tensor<8x1024xbf16>, tensor<8x1024xbf16> -> tensor<8x1024xbf16>
  %c = norm.cast %h : tensor<8x1024xbf16> to tensor<8x1024xf32>
  return %c : tensor<8x1024xf32>
}

// Inputs: a kernel widens bf16/f16 to f32 itself, so it reads the narrow
// value: the input of a norm, the addend of an add.
// CHECK-LABEL: func.func @read_before_widening
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[S:.*]]: tensor<?x4096xf32>, %[[F:.*]]: tensor<?x4096xf16>)
//       CHECK: %[[N:.*]] = norm.fused_row <rms> %[[X]] eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xf32>{{$}}
//       CHECK: %[[H:.*]] = norm.fused_row <none> %[[S]] addend(%[[F]] : tensor<?x4096xf16>) : tensor<?x4096xf32> -> tensor<?x4096xf32>{{$}}
//   CHECK-NOT: norm.cast
//       CHECK: return %[[N]], %[[H]]
func.func @read_before_widening(%x: tensor<?x4096xbf16>, %s: tensor<?x4096xf32>, %f: tensor<?x4096xf16>)
    -> (tensor<?x4096xf32>, tensor<?x4096xf32>) {
  %xw = norm.cast %x : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %n = norm.rms_norm %xw eps(1.0e-6) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  %fw = norm.cast %f : tensor<?x4096xf16> to tensor<?x4096xf32>
  %h = norm.residual_add %s, %fw : tensor<?x4096xf32>, tensor<?x4096xf32> -> tensor<?x4096xf32>
  return %n, %h : tensor<?x4096xf32>, tensor<?x4096xf32>
}

// The skip of a Sandwich kernel is read narrow too.
// CHECK-LABEL: func.func @skip_before_widening
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[F:.*]]: tensor<?x4096xf32>)
//       CHECK: norm.fused_row <rms> %[[F]] skip(%[[X]] : tensor<?x4096xbf16>) eps(1.0e-06) : tensor<?x4096xf32> -> tensor<?x4096xf32>{{$}}
func.func @skip_before_widening(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xf32>) -> tensor<?x4096xf32> {
  %xw = norm.cast %x : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %y = norm.fused_row <rms> %f skip(%xw : tensor<?x4096xf32>) eps(1.0e-6) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}

// Left alone, each because the result would round differently:
// - a bf16 norm widened to f32 (the graph rounds to bf16 first);
// - a bf16 norm converted to f16 (rounded twice in the graph);
// - an f32 kernel with a skip (it rounds the normalized value to its output
//   type before the add);
// - an f32 add whose input is widened (the input's type is the stream's);
// - a narrowed norm input;
// and because of the structure:
// - a norm whose result has another user;
// - a kernel with a fixed launch configuration.
// CHECK-LABEL: func.func @left_alone
//       CHECK: %[[N0:.*]] = norm.rms_norm
//       CHECK: norm.cast %[[N0]] : tensor<?x4096xbf16> to tensor<?x4096xf32>
//       CHECK: %[[N1:.*]] = norm.rms_norm
//       CHECK: norm.cast %[[N1]] : tensor<?x4096xbf16> to tensor<?x4096xf16>
//       CHECK: %[[N2:.*]] = norm.fused_row <rms> %{{.*}} skip
//       CHECK: norm.cast %[[N2]]
//       CHECK: %[[XW:.*]] = norm.cast %{{.*}} : tensor<?x4096xbf16> to tensor<?x4096xf32>
//       CHECK: norm.residual_add %[[XW]], %{{.*}} : tensor<?x4096xf32>, tensor<?x4096xf32>
//       CHECK: %[[NARROW:.*]] = norm.cast %{{.*}} : tensor<?x4096xf32> to tensor<?x4096xbf16>
//       CHECK: norm.rms_norm %[[NARROW]]
//       CHECK: %[[N5:.*]] = norm.rms_norm
//       CHECK: norm.cast %[[N5]] : tensor<?x4096xf32> to tensor<?x4096xbf16>
//       CHECK: %[[N6:.*]] = norm.fused_row <rms> %{{.*}} {launch =
//       CHECK: norm.cast %[[N6]] : tensor<?x4096xf32> to tensor<?x4096xbf16>
func.func @left_alone(%x: tensor<?x4096xbf16>, %s: tensor<?x4096xf32>)
    -> (tensor<?x4096xf32>, tensor<?x4096xf16>, tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<?x4096xbf16>,
        tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<?x4096xbf16>) {
  %n0 = norm.rms_norm %x eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %c0 = norm.cast %n0 : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %n1 = norm.rms_norm %x eps(1.0e-5) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %c1 = norm.cast %n1 : tensor<?x4096xbf16> to tensor<?x4096xf16>
  %n2 = norm.fused_row <rms> %s skip(%s : tensor<?x4096xf32>) eps(1.0e-6) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  %c2 = norm.cast %n2 : tensor<?x4096xf32> to tensor<?x4096xbf16>
  %xw = norm.cast %x : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %h3 = norm.residual_add %xw, %s : tensor<?x4096xf32>, tensor<?x4096xf32> -> tensor<?x4096xf32>
  %narrow = norm.cast %s : tensor<?x4096xf32> to tensor<?x4096xbf16>
  %n4 = norm.rms_norm %narrow eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %n5 = norm.rms_norm %s eps(1.0e-6) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  %c5 = norm.cast %n5 : tensor<?x4096xf32> to tensor<?x4096xbf16>
  %n6 = norm.fused_row <rms> %s eps(1.0e-6) {launch = #norm.launch<vector = 4, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
      : tensor<?x4096xf32> -> tensor<?x4096xf32>
  %c6 = norm.cast %n6 : tensor<?x4096xf32> to tensor<?x4096xbf16>
  return %c0, %c1, %c2, %h3, %n4, %c5, %n5, %c6
      : tensor<?x4096xf32>, tensor<?x4096xf16>, tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<?x4096xbf16>,
        tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<?x4096xbf16>
}
