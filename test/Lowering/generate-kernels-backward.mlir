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
