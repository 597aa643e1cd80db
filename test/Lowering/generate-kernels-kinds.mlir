// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// Each kernel kind's program: what differs from the RMSNorm frame.

// GroupNorm: kernel rows are (token, group) pairs; the weights of a group
// are loaded for each row (before it, as every group exists); the variance
// uses the group's first value.
// CHECK-LABEL: gpu.func @norm_group_h512_f32_f32_{{[0-9a-f]+}}_v4_t4_w1_r8(
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %c32 : index
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[ROW:.*]], %[[ROWS]] : index
// CHECK: %[[TOKEN:.*]] = arith.divui %[[ROW]], %c32 : index
// CHECK: %[[GROUP:.*]] = arith.remui %[[ROW]], %c32 : index
// CHECK: %[[COL:.*]] = arith.muli %[[GROUP]], %c16 : index
// CHECK: %[[WCOL:.*]] = arith.addi %[[COL]], %{{.*}} : index
// CHECK: vector.load %arg1[%[[WCOL]]] {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: vector.load %arg2[%[[WCOL]]]
// CHECK: scf.if %[[VALID]] -> (vector<4xf32>, f32)
// CHECK: arith.muli %[[TOKEN]],
// CHECK-NOT: memref.load %arg0
// The group's mean, then the squared deviations from it.
// CHECK: %[[INV:.*]] = arith.constant 6.250000e-02 : f32
// CHECK: %[[SUM:.*]] = norm.row_allreduce %{{.*}} {group_size = 4 : i64} : f32
// CHECK: arith.mulf %[[SUM]], %[[INV]]
// CHECK: norm.row_allreduce %{{.*}} {group_size = 4 : i64} : f32

// BatchNorm inference: no statistic, no reduction; 1 / sqrt(var + eps) per
// channel once per CTA.
// CHECK-LABEL: gpu.func @norm_bn_h256_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r4(
// CHECK: %[[VAR:.*]] = vector.load %arg3
// CHECK: %[[SUM:.*]] = arith.addf %[[VAR]], %{{.*}} : vector<8xf32>
// CHECK: %[[INV:.*]] = math.rsqrt %[[SUM]] fastmath<afn> : vector<8xf32>
// CHECK: scf.if
// CHECK-NOT: norm.row_allreduce
// CHECK: arith.subf
// CHECK: arith.mulf %{{.*}}, %[[INV]] : vector<8xf32>
// CHECK: gpu.return

// Sandwich-Norm: the normalized value (with Gemma's 1 + w) is rounded to
// the output type before the skip is added.
// CHECK-LABEL: gpu.func @norm_rms_skip_h1024_bf16_f16_{{[0-9a-f]+}}_v8_t128_w4_r1(
// CHECK: norm.row_allreduce %{{.*}} {group_size = 128 : i64} : f32
// CHECK: %[[ONE:.*]] = vector.broadcast %cst{{.*}} : f32 to vector<8xf32>
// CHECK: %[[W:.*]] = arith.addf %{{.*}}, %[[ONE]] : vector<8xf32>
// CHECK: %[[N:.*]] = arith.mulf %{{.*}}, %[[W]] : vector<8xf32>
// CHECK: %[[SKIP:.*]] = arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: %[[R:.*]] = arith.truncf %[[N]] : vector<8xf32> to vector<8xf16>
// CHECK: %[[RF:.*]] = arith.extf %[[R]] : vector<8xf16> to vector<8xf32>
// CHECK: %[[Y:.*]] = arith.addf %[[RF]], %[[SKIP]] : vector<8xf32>
// CHECK: arith.truncf %[[Y]] : vector<8xf32> to vector<8xf16>

// QK-Norm prologue: kernel rows are (token, head) pairs of the packed qkv
// row; q heads go to q, k heads to k, v heads are not read.
// CHECK-LABEL: gpu.func @norm_qk_rms_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8(
// CHECK: %[[WQ:.*]] = vector.load %arg1
// CHECK: %[[WK:.*]] = vector.load %arg2
// CHECK: %[[HEADS:.*]] = arith.muli %{{.*}}, %c5 : index
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[ROW:.*]], %[[HEADS]]
// CHECK: %[[TOKEN:.*]] = arith.divui %[[ROW]], %c5
// CHECK: %[[HEAD:.*]] = arith.remui %[[ROW]], %c5
// CHECK: %[[ISQ:.*]] = arith.cmpi ult, %[[HEAD]], %c4
// CHECK: norm.row_allreduce %{{.*}} {group_size = 16 : i64} : f32
// CHECK: arith.constant 7.812500e-03 : f32
// CHECK: %[[WQF:.*]] = arith.extf %[[WQ]]
// CHECK: %[[WKF:.*]] = arith.extf %[[WK]]
// CHECK: arith.select %[[ISQ]], %[[WQF]], %[[WKF]] : vector<8xf32>
// CHECK: scf.if %[[ISQ]] {
// CHECK: vector.store %{{.*}}, %arg3
// CHECK: } else {
// CHECK: arith.subi %[[HEAD]], %c4
// CHECK: vector.store %{{.*}}, %arg4

// Column statistics: a tile of `vector` columns per thread group; each
// thread takes every 64th row (Welford's update); two reductions (the
// means, the deviations); the first thread of the tile stores mean and
// variance.
// CHECK-LABEL: gpu.func @norm_colstats_h300_bf16_f32_{{[0-9a-f]+}}_v4_t64_w4_r2(
// CHECK-SAME: %arg0: memref<1099511627776xbf16> {llvm.align = 8 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %arg1: memref<1099511627776xf32> {llvm.align = 16 : i64, llvm.noalias}
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c64
// CHECK: %[[ROWS:.*]] = arith.index_cast %arg3
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %{{.*}}, %c75 : index
// CHECK: scf.if %[[VALID]]
// Welford's update per row: count, mean and squared deviations.
// CHECK: scf.for %{{.*}} = %[[LANE]] to %[[ROWS]] step %c64 iter_args({{.*}}) -> (f32, vector<4xf32>, vector<4xf32>)
// CHECK: arith.divf %{{.*}}, %{{.*}} fastmath<afn> : f32
// The columns' means over the tile's threads, then their squared
// deviations from them.
// CHECK: norm.row_allreduce {{.*}} {group_size = 64 : i64} : f32, f32, f32, f32
// CHECK: norm.row_allreduce {{.*}} {group_size = 64 : i64} : f32, f32, f32, f32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[STORE:.*]] = arith.andi %[[VALID]], %[[FIRST]]
// CHECK: scf.if %[[STORE]] {
// CHECK: vector.from_elements
// CHECK: vector.store %{{.*}}, %arg1[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
// CHECK: vector.store %{{.*}}, %arg2[%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>

func.func @group_norm(%x: tensor<?x512xf32>, %w: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<?x512xf32> {
  %y = norm.fused_row <mean_var> %x weight(%w : tensor<512xf32>) bias(%b : tensor<512xf32>) eps(1.0e-05)
      {groups = 32 : i64, launch = #norm.launch<vector = 4, threads_per_row = 4, warps = 1, rows_per_cta = 8>}
      : tensor<?x512xf32> -> tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}
func.func @batch_norm(%x: tensor<?x256xbf16>, %m: tensor<256xf32>, %v: tensor<256xf32>, %w: tensor<256xf32>) -> tensor<?x256xbf16> {
  %y = norm.fused_row <none> %x weight(%w : tensor<256xf32>) mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>) eps(1.0e-05)
      {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 4>}
      : tensor<?x256xbf16> -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
func.func @sandwich(%x: tensor<?x1024xbf16>, %f: tensor<?x1024xbf16>, %w: tensor<1024xbf16>) -> tensor<?x1024xf16> {
  %y = norm.fused_row <rms> %f skip(%x : tensor<?x1024xbf16>) weight(%w : tensor<1024xbf16>) eps(1.0e-06) offset(1.0)
      {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
      : tensor<?x1024xbf16> -> tensor<?x1024xf16>
  return %y : tensor<?x1024xf16>
}
func.func @qk(%qkv: tensor<?x768xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> (tensor<?x512xbf16>, tensor<?x128xbf16>) {
  %q, %k = norm.qk_norm_prologue <rms> %qkv q_weight(%wq : tensor<128xbf16>) k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>}
      : tensor<?x768xbf16> -> tensor<?x512xbf16>, tensor<?x128xbf16>
  return %q, %k : tensor<?x512xbf16>, tensor<?x128xbf16>
}
func.func @column_stats(%x: tensor<?x300xbf16>) -> (tensor<300xf32>, tensor<300xf32>) {
  %m, %v = norm.column_stats %x {launch = #norm.launch<vector = 4, threads_per_row = 64, warps = 4, rows_per_cta = 2>}
      : tensor<?x300xbf16> -> tensor<300xf32>, tensor<300xf32>
  return %m, %v : tensor<300xf32>, tensor<300xf32>
}
