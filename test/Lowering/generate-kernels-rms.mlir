// RUN: norm-opt %s --norm-generate-kernels | FileCheck %s
// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" \
// RUN:   | FileCheck %s --check-prefix=NOFALLBACK

// Fused add + RMSNorm, bf16, 512 threads per row: every thread holds one
// 16-byte vector of the row, the weight is loaded once before the row, the
// sum of squares of the rounded residual is reduced across the row once.

// CHECK: module attributes {gpu.container_module} {
// CHECK-LABEL: func.func @fused_add_rms
// CHECK: norm.fused_row <rms> {{.*}}kernel = @norm_kernels::@[[KERNEL:norm_rms_add_h4096_bf16_bf16_[0-9a-f]{8}_v8_t512_w16_r1]]
// Identical ops share one kernel.
// CHECK: norm.fused_row <rms> {{.*}}kernel = @norm_kernels::@[[KERNEL]]
// Another eps is another kernel.
// CHECK: norm.fused_row <rms> {{.*}}kernel = @norm_kernels::@[[OTHER:norm_rms_add_h4096_bf16_bf16_[0-9a-f]{8}_v8_t512_w16_r1]]

// Ops without a launch configuration get no kernel.
// CHECK-LABEL: func.func @no_launch
// CHECK: norm.fused_row
// CHECK-NOT: kernel =
// CHECK-SAME: -> tensor<?x64xf32>

// CHECK: gpu.module @norm_kernels
// CHECK: gpu.func @[[KERNEL]](
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[A:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[W:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[H:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[ROWS:arg[0-9]+]]: i64, %[[XS:arg[0-9]+]]: i64, %[[AS:arg[0-9]+]]: i64, %[[YS:arg[0-9]+]]: i64, %[[HS:arg[0-9]+]]: i64)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 512, 1, 1>, nvvm.minctasm = 1 : i32}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c512
// CHECK: %[[START:.*]] = arith.muli %[[LANE]], %c8
// CHECK: %[[WV:.*]] = vector.load %[[W]][%[[START]]] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK: %[[VALID:.*]] = arith.cmpi ult,
// CHECK: %[[ROW:.*]]:2 = scf.if %[[VALID]] -> (vector<8xbf16>, f32) {
// CHECK-DAG: vector.load %[[X]][{{.*}}] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK-DAG: vector.load %[[A]][{{.*}}] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK: %[[SUM:.*]] = arith.addf {{.*}} : vector<8xf32>
// The residual sum is rounded to bf16 before the statistic, and stored as h
// before the reduction.
// CHECK: %[[V:.*]] = arith.truncf %[[SUM]] : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %[[V]], %[[H]][%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK: %[[VF:.*]] = arith.extf %[[V]]
// CHECK: arith.mulf %[[VF]], %[[VF]]
// CHECK: %[[PART:.*]] = vector.reduction <add>
// CHECK: scf.yield %[[V]], %[[PART]]
// CHECK: } else {
// CHECK: scf.yield
// CHECK: }
// The reduction runs in every thread, outside the row's condition.
// CHECK-NEXT: %[[TOTAL:.*]] = norm.row_allreduce %[[ROW]]#1 {group_size = 512 : i64} : f32
// CHECK-NEXT: scf.if %[[VALID]] {
// CHECK: arith.mulf %[[TOTAL]], %{{.*}} : f32
// CHECK: %[[SCALE:.*]] = math.rsqrt %{{.*}} fastmath<afn> : f32
// CHECK: vector.store %{{.*}}, %[[Y]][%{{.*}}] {alignment = 16 : i64} : memref<1099511627776xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store
// CHECK: gpu.return

// The scalar fallback for misaligned buffers: same op, vector = 1.
// CHECK: gpu.func @{{norm_rms_add_h4096_bf16_bf16_[0-9a-f]{8}_v1_t512_w16_r1}}(
// CHECK-SAME: {llvm.align = 2 : i64, llvm.noalias, llvm.readonly}
// CHECK-COUNT-8: vector.load %{{.*}} {alignment = 2 : i64} : memref<1099511627776xbf16>, vector<1xbf16>

// CHECK: gpu.func @[[OTHER]](

// NOFALLBACK: gpu.func @{{.*}}_v8_t512_w16_r1(
// NOFALLBACK-NOT: _v1_t512

func.func @fused_add_rms(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>,
                         %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%r : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %y2, %h2 = norm.fused_row <rms> %x addend(%r : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %y3, %h3 = norm.fused_row <rms> %x addend(%r : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-05)
      {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %y2, %y3 : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

func.func @no_launch(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
