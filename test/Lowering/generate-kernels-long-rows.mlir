// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// Rows whose threads own more than 64 elements each loop over their chunks,
// four 16-byte chunks per iteration, and keep the row out of registers.

// Shared: fused add + RMSNorm of 4100 bf16 values, 32 threads x 8 values a
// chunk: 16 chunks inside the row for every lane (a loop of 4 iterations),
// then chunk 16, partial for lane 0 (4100 = 16 * 256 + 4). A CTA works on
// 4 rows at a time, each with its own region of 513 vectors (4104 elements)
// of the dynamic shared memory. v is read from global memory once: staged
// while the sum of squares accumulates, one exchange, then read back from
// shared memory.

// CHECK: #[[NOUNROLL_UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[NOUNROLL:.*]] = #llvm.loop_annotation<unroll = #[[NOUNROLL_UNROLL]]>
// CHECK-LABEL: gpu.func @norm_rms_add_h4100_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r8_smem(
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[A:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[W:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[H:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[SLOT:.*]] = arith.divui %[[TID]], %c32 : index
// CHECK: %[[MEMORY:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[STAGED:.*]] = memref.view %[[MEMORY]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2052xvector<8xbf16>, #gpu.address_space<workgroup>>
// CHECK: %[[REGION:.*]] = arith.muli %[[SLOT]], %c513 : index
// CHECK: scf.for
// CHECK: %[[VALID:.*]] = arith.cmpi ult,
// CHECK: %[[PARTIAL:.*]] = scf.if %[[VALID]] -> (f32) {
// CHECK: %[[SUMS:.*]] = scf.for %[[OFFSET:.*]] = %c0 to %c4096 step %c1024 iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<8xf32>) {
// CHECK: %[[C0:.*]] = arith.addi %[[OFFSET]], %{{.*}} : index
// All four chunks are loaded before any is staged or summed.
// CHECK: vector.load %[[X]]
// CHECK: %[[V0:.*]] = arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK-COUNT-3: vector.load %[[X]]
// CHECK-NOT: memref.store
// CHECK: %[[Q0:.*]] = arith.divui %[[C0]], %c8 : index
// CHECK: %[[S0:.*]] = arith.addi %[[REGION]], %[[Q0]] : index
// CHECK: memref.store %[[V0]], %[[STAGED]][%[[S0]]] {alignment = 16 : i64}
// CHECK: vector.store %[[V0]], %[[H]][%{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-3: memref.store %{{.*}}, %[[STAGED]]
// CHECK: arith.addf %[[ACC]], %{{.*}} : vector<8xf32>
// CHECK: scf.yield
// The loop is not unrolled further: four chunks at once is what the
// register rule counted (norm::getChunksInFlight).
// CHECK-NEXT: } {loop_annotation = #[[NOUNROLL]]}
// The last chunk: a masked load; staged whole where it starts in the row.
// CHECK: vector.maskedload %[[X]]
// CHECK: %[[STARTS:.*]] = arith.cmpi ult, %{{.*}}, %c4100 : index
// CHECK: scf.if %[[STARTS]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[STAGED]]
// CHECK: vector.maskedstore %[[H]]
// CHECK: %[[SUM:.*]] = vector.reduction <add>
// CHECK: scf.yield %[[SUM]] : f32
// CHECK: norm.row_allreduce %[[PARTIAL]] {group_size = 32 : i64} : f32
// CHECK-NOT: norm.row_allreduce
// CHECK: scf.if %[[VALID]] {
// CHECK: math.rsqrt
// CHECK: scf.for %{{.*}} = %c0 to %c4096 step %c1024 {
// CHECK: memref.load %[[STAGED]][%{{.*}}] {alignment = 16 : i64} : memref<2052xvector<8xbf16>, #gpu.address_space<workgroup>>
// CHECK: vector.load %[[W]]
// CHECK-NOT: vector.load %[[X]]
// CHECK-NOT: vector.load %[[A]]
// CHECK: vector.store %{{.*}}, %[[Y]]
// CHECK-NOT: vector.store %{{.*}}, %[[H]]
// CHECK: gpu.return
func.func @staged(%x: tensor<?x4100xbf16>, %a: tensor<?x4100xbf16>, %w: tensor<4100xbf16>) -> (tensor<?x4100xbf16>, tensor<?x4100xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x4100xbf16>) weight(%w : tensor<4100xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x4100xbf16> -> tensor<?x4100xbf16>, tensor<?x4100xbf16>
  return %y, %h : tensor<?x4100xbf16>, tensor<?x4100xbf16>
}

// Streamed: 4 rows of 16384 f32 values would take 256 KiB of shared memory.
// Step 1 stores v to residual_out as it reads the row, step 3 reads v back
// from there (not from input and addend).

// CHECK-LABEL: gpu.func @norm_rms_add_h16384_f32_f32_{{[0-9a-f]+}}_v4_t32_w4_r4_stream(
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[A:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[H:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-NOT: gpu.dynamic_shared_memory
// CHECK: scf.for %{{.*}} = %c0 to %c16384 step %c512 iter_args
// CHECK-COUNT-4: vector.load %[[X]]
// CHECK-COUNT-4: vector.store %{{.*}}, %[[H]]
// CHECK: norm.row_allreduce
// CHECK-NOT: norm.row_allreduce
// CHECK: scf.for %{{.*}} = %c0 to %c16384 step %c512 {
// CHECK-NOT: vector.load %[[X]]
// CHECK-NOT: vector.load %[[A]]
// CHECK-COUNT-4: vector.load %[[H]]
// CHECK-COUNT-4: vector.store %{{.*}}, %[[Y]]
// CHECK: gpu.return
func.func @streamed(%x: tensor<?x16384xf32>, %a: tensor<?x16384xf32>) -> (tensor<?x16384xf32>, tensor<?x16384xf32>) {
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x16384xf32>) eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 32, warps = 4, rows_per_cta = 4>} : tensor<?x16384xf32> -> tensor<?x16384xf32>, tensor<?x16384xf32>
  return %y, %h : tensor<?x16384xf32>, tensor<?x16384xf32>
}

// Streamed with f32_residual: residual_out holds v rounded to bf16, so step 3
// reads input and addend again and recomputes the f32 v.

// CHECK-LABEL: gpu.func @norm_rms_add_h65600_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[A:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[H:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK: norm.row_allreduce
// Two chunks a thread at once in CTAs of 1024 threads (64 registers):
// norm::getChunksInFlight.
// CHECK: scf.for %{{.*}} = %c0 to %c65536 step %c16384 {
// CHECK: vector.load %[[A]]
// CHECK: vector.load %[[X]]
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}} : vector<8xf32>
// CHECK-NOT: arith.truncf %[[SUM]]
// CHECK: vector.store %{{.*}}, %[[Y]]
// CHECK-NOT: vector.load %[[H]]
// CHECK: gpu.return
func.func @recomputed(%x: tensor<?x65600xbf16>, %a: tensor<?x65600xbf16>) -> (tensor<?x65600xbf16>, tensor<?x65600xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x65600xbf16>) eps(1.0e-06) {f32_residual, launch = #norm.launch<vector = 8, threads_per_row = 1024, warps = 32, rows_per_cta = 1>} : tensor<?x65600xbf16> -> tensor<?x65600xbf16>, tensor<?x65600xbf16>
  return %y, %h : tensor<?x65600xbf16>, tensor<?x65600xbf16>
}

// Without a statistic there is nothing to wait for: one pass, no exchange.

// CHECK-LABEL: gpu.func @norm_ew_add_h4096_bf16_f16_{{[0-9a-f]+}}_v8_t8_w1_r4_stream(
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[A:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[H:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK-NOT: norm.row_allreduce
// CHECK: scf.for %{{.*}} = %c0 to %c4096 step %c256 {
// CHECK-COUNT-4: vector.load %[[X]]
// CHECK: vector.store %{{.*}}, %[[Y]]{{.*}} vector<8xf16>
// CHECK-NEXT: arith.addi
// CHECK-NEXT: vector.store %{{.*}}, %[[H]]{{.*}} vector<8xbf16>
// CHECK-NOT: norm.row_allreduce
// CHECK: gpu.return
func.func @one_pass(%x: tensor<?x4096xbf16>, %a: tensor<?x4096xbf16>) -> (tensor<?x4096xf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <none> %x addend(%a : tensor<?x4096xbf16>) {launch = #norm.launch<vector = 8, threads_per_row = 8, warps = 1, rows_per_cta = 4>} : tensor<?x4096xbf16> -> tensor<?x4096xf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xf16>, tensor<?x4096xbf16>
}
