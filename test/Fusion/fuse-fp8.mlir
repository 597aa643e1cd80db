// RUN: norm-opt %s --norm-fuse | FileCheck %s
// RUN: norm-opt %s --norm-to-ptx -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx --check-prefix=PTX

// FP8 quantization is a norm.fused_row <none> to f8E4M3FN/f8E5M2 with its
// scale. After a norm computing in f32 it folds into that norm, scales and
// all: the kernel quantizes the f32 value the unfused graph quantizes.
// All of it lowers: 7 kernels, each with its scalar fallback.
// PTX-COUNT-14: .visible .entry
// PTX-NOT: .visible .entry

// A residual add, RMSNorm to f32, a static-scale quantize (vLLM's
// fused_add_rms_norm_static_fp8_quant as a graph): one kernel.
// CHECK-LABEL: func.func @add_norm_quantize
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[R:.*]]: tensor<?x4096xbf16>, %[[W:.*]]: tensor<4096xbf16>, %[[S:.*]]: tensor<1xf32>)
//       CHECK: %[[Q:.*]], %[[H:.*]] = norm.fused_row <rms> %[[R]] addend(%[[X]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) output_scale(%[[S]] : tensor<1xf32>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>{{$}}
//   CHECK-NOT: norm.fused_row
//       CHECK: return %[[Q]], %[[H]]
func.func @add_norm_quantize(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>,
                             %w: tensor<4096xbf16>, %s: tensor<1xf32>)
    -> (tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>) {
  %h = norm.residual_add %r, %x : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %y = norm.fused_row <rms> %h weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %q = norm.fused_row <none> %y output_scale(%s : tensor<1xf32>)
      : tensor<?x4096xf32> -> tensor<?x4096xf8E4M3FN>
  return %q, %h : tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
}

// Per-token scales and their bound come along; the scales keep their user.
// CHECK-LABEL: func.func @norm_per_token
//       CHECK: %[[Q:.*]], %[[T:.*]] = norm.fused_row <mean_var> %{{.*}} weight(%{{.*}} : tensor<5120xf32>) bias(%{{.*}} : tensor<5120xf32>) scale_ub(%{{.*}} : tensor<1xf32>) eps(1.0e-05) : tensor<8x5120xf16> -> tensor<8x5120xf8E5M2> output_scales(tensor<8x1xf32>)
//   CHECK-NOT: norm.fused_row
//       CHECK: return %[[Q]], %[[T]]
func.func @norm_per_token(%x: tensor<8x5120xf16>, %w: tensor<5120xf32>,
                          %b: tensor<5120xf32>, %u: tensor<1xf32>)
    -> (tensor<8x5120xf8E5M2>, tensor<8x1xf32>) {
  %y = norm.fused_row <mean_var> %x weight(%w : tensor<5120xf32>) bias(%b : tensor<5120xf32>) eps(1.0e-05)
      : tensor<8x5120xf16> -> tensor<8x5120xf32>
  %q, %t = norm.fused_row <none> %y scale_ub(%u : tensor<1xf32>)
      : tensor<8x5120xf32> -> tensor<8x5120xf8E5M2> output_scales(tensor<8x1xf32>)
  return %q, %t : tensor<8x5120xf8E5M2>, tensor<8x1xf32>
}

// A norm rounding to bf16 first: the graph rounds twice, the quantize stays
// apart (reading the bf16 rows, which it widens exactly).
// CHECK-LABEL: func.func @rounded_twice
//       CHECK: %[[Y:.*]] = norm.fused_row <rms> %{{.*}} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
//       CHECK: %[[Q:.*]] = norm.fused_row <none> %[[Y]] output_scale(%{{.*}} : tensor<1xf32>) : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>
func.func @rounded_twice(%x: tensor<?x4096xbf16>, %s: tensor<1xf32>)
    -> tensor<?x4096xf8E4M3FN> {
  %y = norm.rms_norm %x eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %yf = norm.cast %y : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %q = norm.fused_row <none> %yf output_scale(%s : tensor<1xf32>)
      : tensor<?x4096xf32> -> tensor<?x4096xf8E4M3FN>
  return %q : tensor<?x4096xf8E4M3FN>
}

// Per-token scales take whole token rows: not into a GroupNorm.
// CHECK-LABEL: func.func @grouped
//       CHECK: norm.fused_row <mean_var> %{{.*}} eps(1.0e-05) {groups = 32 : i64} : tensor<?x1024xf32> -> tensor<?x1024xf32>
//       CHECK: norm.fused_row <none> %{{.*}} : tensor<?x1024xf32> -> tensor<?x1024xf8E4M3FN> output_scales(tensor<?x1xf32>)
func.func @grouped(%x: tensor<?x1024xf32>)
    -> (tensor<?x1024xf8E4M3FN>, tensor<?x1xf32>) {
  %y = norm.group_norm %x eps(1.0e-05) {groups = 32 : i64} : tensor<?x1024xf32> -> tensor<?x1024xf32>
  %q, %t = norm.fused_row <none> %y
      : tensor<?x1024xf32> -> tensor<?x1024xf8E4M3FN> output_scales(tensor<?x1xf32>)
  return %q, %t : tensor<?x1024xf8E4M3FN>, tensor<?x1xf32>
}

// Reading a widened input: the quantizing kernel reads the narrow rows and
// keeps its scale (the fused_row's scale operands survive every rewrite).
// CHECK-LABEL: func.func @widened_input
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[S:.*]]: tensor<1xf32>)
//       CHECK: norm.fused_row <rms> %[[X]] output_scale(%[[S]] : tensor<1xf32>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>
func.func @widened_input(%x: tensor<?x4096xbf16>, %s: tensor<1xf32>)
    -> tensor<?x4096xf8E4M3FN> {
  %xf = norm.cast %x : tensor<?x4096xbf16> to tensor<?x4096xf32>
  %y = norm.fused_row <rms> %xf output_scale(%s : tensor<1xf32>) eps(1.0e-06)
      : tensor<?x4096xf32> -> tensor<?x4096xf8E4M3FN>
  return %y : tensor<?x4096xf8E4M3FN>
}
