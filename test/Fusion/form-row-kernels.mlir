// RUN: norm-opt %s --norm-form-row-kernels | FileCheck %s

// CHECK-LABEL: func.func @norms
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[W:.*]]: tensor<4096xbf16>, %[[B:.*]]: tensor<4096xbf16>)
//   CHECK-NOT: norm.{{(rms|layer|l2|group)}}_norm
//       CHECK: %[[R:.*]] = norm.fused_row <rms> %[[X]] weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//       CHECK: %[[L:.*]] = norm.fused_row <mean_var> %[[R]] weight(%[[W]] : tensor<4096xbf16>) bias(%[[B]] : tensor<4096xbf16>) eps(1.0e-05) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//       CHECK: %[[L2:.*]] = norm.fused_row <l2> %[[L]] eps(1.0e-12) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//       CHECK: %[[G:.*]] = norm.fused_row <mean_var> %[[L2]] weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//   CHECK-NOT: norm.{{(rms|layer|l2|group)}}_norm
//       CHECK: return %[[G]]
func.func @norms(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>, %b: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  %0 = norm.rms_norm %x weight(%w : tensor<4096xbf16>) eps(1.0e-6) offset(1.0) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %1 = norm.layer_norm %0 weight(%w : tensor<4096xbf16>) bias(%b : tensor<4096xbf16>) eps(1.0e-5) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %2 = norm.l2_norm %1 eps(1.0e-12) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %3 = norm.group_norm %2 weight(%w : tensor<4096xbf16>) eps(1.0e-5) {groups = 32 : i64} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %3 : tensor<?x4096xbf16>
}

// Inference batch norm: statistic none with the running statistics.
// CHECK-LABEL: func.func @batch_norm_inference
//  CHECK-SAME: (%[[X:.*]]: tensor<32x256xf16>, %[[M:.*]]: tensor<256xf32>, %[[V:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<256xf16>, %[[B:.*]]: tensor<256xf16>)
//   CHECK-NOT: norm.batch_norm_inference
//       CHECK: norm.fused_row <none> %[[X]] weight(%[[W]] : tensor<256xf16>) bias(%[[B]] : tensor<256xf16>) mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) eps(1.0e-05) : tensor<32x256xf16> -> tensor<32x256xf16>{{$}}
//   CHECK-NOT: norm.batch_norm_inference
func.func @batch_norm_inference(%x: tensor<32x256xf16>, %m: tensor<256xf32>, %v: tensor<256xf32>,
                                %w: tensor<256xf16>, %b: tensor<256xf16>) -> tensor<32x256xf16> {
  %y = norm.batch_norm_inference %x mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>)
      weight(%w : tensor<256xf16>) bias(%b : tensor<256xf16>) eps(1.0e-5) : tensor<32x256xf16> -> tensor<32x256xf16>
  return %y : tensor<32x256xf16>
}

// Training batch norm: two kernels, the column statistics and the row
// kernel normalizing with them; the statistics are the op's results.
// CHECK-LABEL: func.func @batch_norm_training
//  CHECK-SAME: (%[[X:.*]]: tensor<?x256xbf16>, %[[W:.*]]: tensor<256xbf16>, %[[B:.*]]: tensor<256xbf16>)
//       CHECK: %[[M:.*]], %[[V:.*]] = norm.column_stats %[[X]] : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
//       CHECK: %[[Y:.*]] = norm.fused_row <none> %[[X]] weight(%[[W]] : tensor<256xbf16>) bias(%[[B]] : tensor<256xbf16>) mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) eps(0.001) : tensor<?x256xbf16> -> tensor<?x256xbf16>{{$}}
//       CHECK: return %[[Y]], %[[M]], %[[V]]
func.func @batch_norm_training(%x: tensor<?x256xbf16>, %w: tensor<256xbf16>, %b: tensor<256xbf16>)
    -> (tensor<?x256xbf16>, tensor<256xf32>, tensor<256xf32>) {
  %y, %mean, %var = norm.batch_norm_training %x weight(%w : tensor<256xbf16>) bias(%b : tensor<256xbf16>) eps(1.0e-3)
      : tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<256xf32>, tensor<256xf32>
  return %y, %mean, %var : tensor<?x256xbf16>, tensor<256xf32>, tensor<256xf32>
}

// A lone residual add is an elementwise kernel with an addend (alpha kept);
// a lone cast one with another output type.
// CHECK-LABEL: func.func @add_and_cast
//  CHECK-SAME: (%[[X:.*]]: tensor<?x4096xf32>, %[[F:.*]]: tensor<?x4096xbf16>)
//       CHECK: %[[H:.*]] = norm.fused_row <none> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) alpha(1.5) : tensor<?x4096xf32> -> tensor<?x4096xf32>{{$}}
//       CHECK: %[[C:.*]] = norm.fused_row <none> %[[H]] : tensor<?x4096xf32> -> tensor<?x4096xbf16>{{$}}
//   CHECK-NOT: norm.residual_add
//   CHECK-NOT: norm.cast
//       CHECK: return %[[C]]
func.func @add_and_cast(%x: tensor<?x4096xf32>, %f: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %h = norm.residual_add %x, %f alpha(1.5) : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %c = norm.cast %h : tensor<?x4096xf32> to tensor<?x4096xbf16>
  return %c : tensor<?x4096xbf16>
}

// Attention is not a row kernel; kernel ops already formed stay as written.
// CHECK-LABEL: func.func @left_alone
//       CHECK: norm.attention
//       CHECK: norm.fused_row <rms> %{{.*}} eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
//       CHECK: norm.column_stats
func.func @left_alone(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<1024xf32>, tensor<1024xf32>) {
  %o = norm.attention %q, %k, %v scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  %y = norm.fused_row <rms> %o eps(1.0e-6) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %m, %s = norm.column_stats %k : tensor<?x1024xbf16> -> tensor<1024xf32>, tensor<1024xf32>
  return %o, %y, %m, %s : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<1024xf32>, tensor<1024xf32>
}
