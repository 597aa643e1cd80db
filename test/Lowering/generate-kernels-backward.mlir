// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// The backward row kernel's program: the weight loaded once per CTA; one
// loop over the CTA's rows of the persistent grid (grid.x apart) carrying
// the f32 column sums of the weight and bias gradients (rows_per_cta only
// sizes the grid); per row v, grad_output and the saved statistics when the row
// exists, one exchange of sum(g * xhat) and sum(g), x-hat formed again after
// it (fma), the residual stream's gradient added, grad_input (alpha dv) and
// addend_grad (dv) stored; the partial rows stored once, after the loop.
// CHECK-LABEL: gpu.func @norm_layer_bwd_add_h1024_bf16_bf16_{{[0-9a-f]+}}_v8_t128_w4_r8(
// CHECK-SAME: %[[X:arg0]]: memref<{{[0-9]+}}xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[W:arg3]]: memref<{{[0-9]+}}xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[MEAN:arg4]]: memref<{{[0-9]+}}xf32> {llvm.align = 4 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[RSTD:arg5]]: memref<{{[0-9]+}}xf32> {llvm.align = 4 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[DW:arg8]]: memref<{{[0-9]+}}xf32> {llvm.align = 16 : i64, llvm.noalias}
// CHECK-SAME: %[[DB:arg9]]: memref<{{[0-9]+}}xf32> {llvm.align = 16 : i64, llvm.noalias}
// CHECK-SAME: nvvm.minctasm = 1
// CHECK: vector.load %[[W]]
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: %[[SUMS:.*]]:2 = scf.for %{{.*}} = %block_id_x to %{{.*}} step %[[GRID]] iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>)
// CHECK-NOT: scf.for
// CHECK: vector.load %[[X]]
// CHECK: vector.load %arg1
// CHECK: memref.load %[[RSTD]]
// CHECK: memref.load %[[MEAN]]
// CHECK: norm.row_allreduce %{{.*}}, %{{.*}} {group_size = 128 : i64} : f32, f32
// CHECK-NOT: norm.row_allreduce
// CHECK: vector.load %arg2
// CHECK: math.fma
// CHECK: vector.store %{{.*}}, %arg6
// CHECK: vector.store %{{.*}}, %arg7
// CHECK: scf.yield
// CHECK: vector.store %[[SUMS]]#0, %[[DW]]
// CHECK: vector.store %[[SUMS]]#1, %[[DB]]
// CHECK: gpu.return
func.func @layer_norm_grad(%x: tensor<?x1024xbf16>, %dy: tensor<?x1024xbf16>, %dh: tensor<?x1024xbf16>, %w: tensor<1024xbf16>, %m: tensor<?x1xf32>, %r: tensor<?x1xf32>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xf32>, tensor<?x1024xf32>) {
  %dx, %df, %dw, %db = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x1024xbf16>) residual_grad(%dh : tensor<?x1024xbf16>) weight(%w : tensor<1024xbf16>) saved_mean(%m : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) alpha(2.0) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 8>} : tensor<?x1024xbf16> -> tensor<?x1024xbf16> addend_grad(tensor<?x1024xbf16>) weight_grad_partials(tensor<?x1024xf32>) bias_grad_partials(tensor<?x1024xf32>)
  return %dx, %df, %dw, %db : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xf32>, tensor<?x1024xf32>
}

// The column sum: threads of a tile of 4 columns take every 16th partial
// row in an f32 loop, one exchange, the tile's first thread stores it
// rounded to the parameter type.
// CHECK-LABEL: gpu.func @norm_colsum_h1024_f32_bf16_{{[0-9a-f]+}}_v4_t16_w4_r8(
// CHECK: scf.for {{.*}} step %c16 iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>)
// CHECK: norm.row_allreduce %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {group_size = 16 : i64} : f32, f32, f32, f32
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK: vector.store %{{.*}}, %arg1
func.func @column_sum(%p: tensor<?x1024xf32>) -> tensor<1024xbf16> {
  %s = norm.column_sum %p {launch = #norm.launch<vector = 4, threads_per_row = 16, warps = 4, rows_per_cta = 8>} : tensor<?x1024xf32> -> tensor<1024xbf16>
  return %s : tensor<1024xbf16>
}

// Rows beyond the registers (32 elements a thread here, registers hold 16
// in a CTA of 128): v and dy staged in the dynamic shared memory, region
// after region (4 rows at once of 2000 bytes each), the column sums still
// carried in registers. Step 1 stages each chunk as it reads it, 16
// elements a thread at a time, the weight read where it is used (no load
// before the loop); a row past the last keeps the sums as they were. Step 3
// reads v and dy back from shared memory, not global memory; the weight
// again. The last chunk (768 + lane * 8) is staged only where it starts
// inside the row.
// CHECK-LABEL: gpu.func @norm_rms_bwd_add_h1000_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r8_smem(
// CHECK-NOT: vector.load
// CHECK: %[[SMEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view %[[SMEM]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<500xvector<8xbf16>, #gpu.address_space<workgroup>>
// CHECK: %[[DY:.*]] = memref.view %[[SMEM]][%c8000][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<500xvector<8xbf16>, #gpu.address_space<workgroup>>
// CHECK-NOT: vector.load
// CHECK: %[[SUMS:.*]]:4 = scf.for %{{.*}} = %block_id_x to %{{.*}} step %grid_dim_x iter_args(%[[S0:.*]] = %cst, %[[S1:.*]] = %cst, %[[S2:.*]] = %cst, %[[S3:.*]] = %cst) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.if %{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, f32, f32, f32)
// CHECK: %[[X0:.*]] = vector.load %arg0
// CHECK: %[[G0:.*]] = vector.load %arg1
// CHECK: vector.load %arg0
// CHECK: vector.load %arg1
// CHECK: memref.store %[[X0]], %[[V]][%{{.*}}] {alignment = 16 : i64}
// CHECK: memref.store %[[G0]], %[[DY]][%{{.*}}] {alignment = 16 : i64}
// CHECK: vector.load %arg3
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[V]]
// CHECK: scf.yield %[[S0]], %[[S1]], %[[S2]], %[[S3]], %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: norm.row_allreduce %{{.*}} {group_size = 32 : i64} : f32
// CHECK-NOT: vector.load %arg0
// CHECK-NOT: vector.load %arg1
// CHECK: memref.load %[[V]]
// CHECK: memref.load %[[DY]]
// CHECK: vector.load %arg3
// CHECK: vector.load %arg2
// CHECK: vector.store %{{.*}}, %arg5
// CHECK: vector.store %{{.*}}, %arg6
// CHECK-NOT: vector.load %arg0
// CHECK-NOT: vector.load %arg1
// CHECK: scf.yield
// CHECK: vector.store %[[SUMS]]#0, %arg7
func.func @staged_rms_norm_grad(%x: tensor<?x1000xbf16>, %dy: tensor<?x1000xbf16>, %w: tensor<1000xbf16>, %r: tensor<?x1xf32>, %dh: tensor<?x1000xbf16>) -> (tensor<?x1000xbf16>, tensor<?x1000xbf16>, tensor<?x1000xf32>) {
  %dx, %df, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x1000xbf16>) residual_grad(%dh : tensor<?x1000xbf16>) weight(%w : tensor<1000xbf16>) saved_rstd(%r : tensor<?x1xf32>) alpha(2.0) offset(1.0) {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x1000xbf16> -> tensor<?x1000xbf16> addend_grad(tensor<?x1000xbf16>) weight_grad_partials(tensor<?x1000xf32>)
  return %dx, %df, %dw : tensor<?x1000xbf16>, tensor<?x1000xbf16>, tensor<?x1000xf32>
}

// GroupNorm (32 groups of 40 channels): kernel rows are (token, group)
// pairs. The grid's thread groups come in whole multiples of the groups, so
// thread group p = bid * 4 + slot only takes rows of group p mod 32: its
// weight is loaded once, before the loop, from that group's channels, and
// its column sums are stored there, in partial row p / 32 of the hidden
// size. Rows read their statistics at (token, group).
// CHECK-LABEL: gpu.func @norm_group_bwd_h1280_bf16_bf16_{{[0-9a-f]+}}_v4_t8_w1_r16(
// CHECK-SAME: %[[GW:arg2]]: memref<{{[0-9]+}}xbf16> {llvm.align = 8 : i64, llvm.noalias, llvm.readonly}
// CHECK-SAME: %[[GRSTD:arg4]]: memref<{{[0-9]+}}xf32>
// CHECK-SAME: %[[GDW:arg6]]: memref<{{[0-9]+}}xf32> {llvm.align = 16 : i64, llvm.noalias}
// CHECK: %[[SLOT:.*]] = arith.divui %thread_id_x, %c8
// CHECK: %[[FIRST:.*]] = arith.muli %block_id_x, %c4
// CHECK: %[[P:.*]] = arith.addi %[[FIRST]], %[[SLOT]]
// CHECK: %[[G:.*]] = arith.remui %[[P]], %c32
// CHECK: %[[CH:.*]] = arith.muli %[[G]], %c40
// CHECK: %[[WAT:.*]] = arith.addi %[[CH]], %{{.*}}
// CHECK: vector.load %[[GW]][%[[WAT]]]
// CHECK: scf.for %{{.*}} = %block_id_x to %{{.*}} step %grid_dim_x
// CHECK: %[[TOKEN:.*]] = arith.divui %[[ROW:.*]], %c32
// CHECK: %[[GROUP:.*]] = arith.remui %[[ROW]], %c32
// CHECK: %[[RAT:.*]] = arith.addi %{{.*}}, %[[GROUP]]
// CHECK: memref.load %[[GRSTD]][%[[RAT]]]
// CHECK-NOT: vector.load %[[GW]]
// CHECK: norm.row_allreduce
// CHECK: %[[PROW:.*]] = arith.divui %[[P]], %c32
// CHECK: %[[PBASE:.*]] = arith.muli %[[PROW]], %{{.*}}
// CHECK: %[[PAT:.*]] = arith.addi %[[PBASE]], %[[CH]]
// CHECK: %[[DWAT:.*]] = arith.addi %[[PAT]], %{{.*}}
// CHECK: vector.store %{{.*}}, %[[GDW]][%[[DWAT]]]
func.func @group_norm_grad(%x: tensor<?x1280xbf16>, %dy: tensor<?x1280xbf16>, %w: tensor<1280xbf16>, %m: tensor<?x32xf32>, %r: tensor<?x32xf32>) -> (tensor<?x1280xbf16>, tensor<?x1280xf32>, tensor<?x1280xf32>) {
  %dx, %dw, %db = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x1280xbf16>) weight(%w : tensor<1280xbf16>) saved_mean(%m : tensor<?x32xf32>) saved_rstd(%r : tensor<?x32xf32>) {groups = 32 : i64, launch = #norm.launch<vector = 4, threads_per_row = 8, warps = 1, rows_per_cta = 16>} : tensor<?x1280xbf16> -> tensor<?x1280xbf16> weight_grad_partials(tensor<?x1280xf32>) bias_grad_partials(tensor<?x1280xf32>)
  return %dx, %dw, %db : tensor<?x1280xbf16>, tensor<?x1280xf32>, tensor<?x1280xf32>
}
