// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// LayerNorm of 100 bf16 values, 8 threads x 8 values: chunk 0 lies inside
// the row for every lane, chunk 1 does not (elements 64..127 of 100): lanes
// test their position, lane 4 loads and stores a masked partial vector,
// lanes 5-7 nothing. A CTA of 4 rows at a time loops twice over its 8 rows.
// The mean comes from one norm.row_allreduce, the sum of squared deviations
// from it from a second.

// CHECK-LABEL: gpu.func @norm_layer_h100_bf16_bf16_{{[0-9a-f]+}}_v8_t8_w1_r8(
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[W:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias}
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// Weights: chunk 0 whole, chunk 1 tested and masked, before the row loop.
// CHECK: %[[E0:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK: vector.load %[[W]][%[[E0]]] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK: %[[E1:.*]] = arith.addi %[[E0]], %c64 : index
// CHECK: %[[END:.*]] = arith.addi %[[E1]], %c8 : index
// CHECK: %[[FULL:.*]] = arith.cmpi ule, %[[END]], %c100 : index
// CHECK: scf.if %[[FULL]] -> (vector<8xbf16>) {
// CHECK: vector.load %[[W]][%[[E1]]] {alignment = 16 : i64}
// CHECK: } else {
// CHECK: %[[LEFT:.*]] = arith.subi %c100, %[[E1]] : index
// CHECK: %[[MASK:.*]] = vector.create_mask %[[LEFT]] : vector<8xi1>
// CHECK: vector.maskedload %[[W]][%[[E1]]], %[[MASK]], %{{.*}} : memref<1099511627776xbf16>, vector<8xi1>, vector<8xbf16> into vector<8xbf16>
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK: %[[VALID:.*]] = arith.cmpi ult,
// CHECK: %[[ROW:.*]]:3 = scf.if %[[VALID]] -> (vector<8xbf16>, vector<8xbf16>, f32) {
// CHECK: vector.load %[[X]]
// CHECK: vector.maskedload %[[X]]
// CHECK-NOT: memref.load %[[X]]
// CHECK: %[[S1:.*]] = vector.reduction <add>
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[S1]]
// CHECK: } else {
// CHECK: scf.yield
// CHECK-NEXT: }
// The mean first, then the squared deviations from it over the row in
// registers: a second exchange, no cancellation.
// CHECK: %[[SUM:.*]] = norm.row_allreduce %[[ROW]]#2 {group_size = 8 : i64} : f32
// CHECK: %[[MEAN:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[MEAN]] : f32 to vector<8xf32>
// CHECK: arith.subf %{{.*}}, %[[SPLAT]] : vector<8xf32>
// Elements outside the row do not count.
// CHECK: %[[D1:.*]] = arith.subf %{{.*}}, %[[SPLAT]] : vector<8xf32>
// CHECK: %[[TAIL:.*]] = vector.create_mask
// CHECK: arith.select %[[TAIL]], %[[D1]], %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK: %[[SQUARES:.*]] = vector.reduction <add>
// CHECK: %[[M2:.*]] = norm.row_allreduce %[[SQUARES]] {group_size = 8 : i64} : f32
// CHECK-NEXT: scf.if %[[VALID]] {
// CHECK: arith.mulf %[[M2]], %{{.*}} : f32
// CHECK: math.rsqrt %{{.*}} fastmath<afn> : f32
// CHECK: vector.store %{{.*}}, %[[Y]][%{{.*}}] {alignment = 16 : i64}
// CHECK: scf.if %[[FULL]] {
// CHECK: vector.store %{{.*}}, %[[Y]][%{{.*}}] {alignment = 16 : i64}
// CHECK: } else {
// CHECK: vector.maskedstore %[[Y]][%{{.*}}], %{{.*}}, %{{.*}} : memref<1099511627776xbf16>, vector<8xi1>, vector<8xbf16>
func.func @layer_norm(%x: tensor<?x100xbf16>, %w: tensor<100xbf16>) -> tensor<?x100xbf16> {
  %y = norm.fused_row <mean_var> %x weight(%w : tensor<100xbf16>) eps(1.0e-05)
      {launch = #norm.launch<vector = 8, threads_per_row = 8, warps = 1, rows_per_cta = 8>}
      : tensor<?x100xbf16> -> tensor<?x100xbf16>
  return %y : tensor<?x100xbf16>
}

// A row length that is a multiple of the vector: lanes past the end load
// zeros and store nothing, no masks.
// CHECK-LABEL: gpu.func @norm_rms_h96_f32_f32_{{[0-9a-f]+}}_v4_t16_w1_r2(
// CHECK: %[[E:.*]] = arith.addi %{{.*}}, %c64 : index
// CHECK: %[[IN:.*]] = arith.cmpi ule, %{{.*}}, %c96 : index
// CHECK: scf.if %[[IN]] -> (vector<4xf32>) {
// CHECK: vector.load
// CHECK: } else {
// CHECK-NEXT: arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK-NOT: create_mask
// CHECK: norm.row_allreduce %{{.*}} {group_size = 16 : i64} : f32
// CHECK: %[[IN2:.*]] = arith.cmpi ule, %{{.*}}, %c96 : index
// CHECK-NEXT: scf.if %[[IN2]] {
// CHECK-NEXT: vector.store {{.*}} : memref<1099511627776xf32>, vector<4xf32>{{$}}
// CHECK-NEXT: }
// CHECK-NOT: maskedstore
// CHECK: gpu.return
func.func @rms(%x: tensor<?x96xf32>) -> tensor<?x96xf32> {
  %y = norm.fused_row <rms> %x eps(1.0e-06)
      {launch = #norm.launch<vector = 4, threads_per_row = 16, warps = 1, rows_per_cta = 2>}
      : tensor<?x96xf32> -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}
