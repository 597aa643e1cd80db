// RUN: norm-opt %s --norm-assign-launch-config \
// RUN:   --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// In-place row kernels: the buffers an output may overwrite (and that
// output) carry no llvm.noalias, so that their loads stay coherent with
// the stores; the weight keeps it. Every store of a row comes after the
// row's exchange, when all threads have read it: residual_out too, which
// kernels not in place store before the exchange.

// vLLM's fused_add_rms_norm: residual_out over input, output over addend
// (rows in registers, 512 threads of 8 elements).
// CHECK-LABEL: gpu.func @norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK-SAME: %[[X:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.readonly},
// CHECK-SAME: %[[A:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.readonly},
// CHECK-SAME: %[[W:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64},
// CHECK-SAME: %[[H:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64},
// CHECK: vector.load %[[W]]
// CHECK: vector.load %[[A]]
// CHECK: vector.load %[[X]]
// CHECK-NOT: vector.store
// CHECK: norm.row_allreduce
// CHECK: vector.store %{{.*}}, %[[H]]
// CHECK: vector.store %{{.*}}, %[[Y]]
// CHECK: gpu.return
func.func @vllm(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %r addend(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) eps(1.0e-06) output_over(addend) residual_over(input) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// The same op not in place: noalias everywhere, residual_out stored before
// the exchange.
// CHECK-LABEL: gpu.func @norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK-SAME: {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: {llvm.align = 16 : i64, llvm.noalias},
// CHECK-SAME: %[[H2:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias},
// CHECK: vector.store %{{.*}}, %[[H2]]
// CHECK: norm.row_allreduce
func.func @not_in_place(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %r addend(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// LayerNorm rows staged in shared memory, residual_out over addend and
// output over input: every thread reads its elements of both before the
// exchange; both outputs are stored from the staged row after it.
// CHECK-LABEL: gpu.func @norm_layer_add_h65536_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// CHECK-SAME: %[[LX:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.readonly},
// CHECK-SAME: %[[LA:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.readonly},
// CHECK-SAME: %[[LW:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[LY:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64},
// CHECK-SAME: %[[LH:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64},
// CHECK-DAG: vector.load %[[LX]]
// CHECK-DAG: vector.load %[[LA]]
// CHECK-NOT: vector.store
// CHECK: norm.row_allreduce
// CHECK: memref.load %view
// CHECK: vector.store %{{.*}}, %[[LY]]
// CHECK: vector.store %{{.*}}, %[[LH]]
// CHECK: gpu.return
func.func @staged(%x: tensor<?x65536xbf16>, %a: tensor<?x65536xbf16>, %w: tensor<65536xbf16>) -> (tensor<?x65536xbf16>, tensor<?x65536xbf16>) {
  %y, %h = norm.fused_row <mean_var> %x addend(%a : tensor<?x65536xbf16>) weight(%w : tensor<65536xbf16>) eps(1.0e-05) output_over(input) residual_over(addend) : tensor<?x65536xbf16> -> tensor<?x65536xbf16>, tensor<?x65536xbf16>
  return %y, %h : tensor<?x65536xbf16>, tensor<?x65536xbf16>
}

// Streamed rms rows (262144 bf16 elements, beyond what a CTA stages) in
// place: residual_out is stored in the first pass, each thread over the
// elements it has just read, and the second pass reads v back from it,
// not from the input it overwrote.
// CHECK-LABEL: gpu.func @norm_rms_add_h262144_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// CHECK-SAME: %[[SX:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.readonly},
// CHECK-SAME: %[[SA:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.readonly},
// CHECK-SAME: %[[SW:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[SY:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64},
// CHECK-SAME: %[[SH:arg[0-9]+]]: memref<1099511627776xbf16> {llvm.align = 16 : i64},
// CHECK: scf.for
// CHECK: vector.load %[[SA]]
// CHECK: vector.load %[[SX]]
// CHECK: vector.store %{{.*}}, %[[SH]]
// CHECK: norm.row_allreduce
// CHECK: scf.for
// CHECK-NOT: vector.load %[[SX]]
// CHECK-NOT: vector.load %[[SA]]
// CHECK: vector.load %[[SH]]
// CHECK: vector.load %[[SW]]
// CHECK-NOT: vector.load %[[SX]]
// CHECK-NOT: vector.load %[[SA]]
// CHECK: vector.store %{{.*}}, %[[SY]]
// CHECK: gpu.return
func.func @streamed(%x: tensor<?x262144xbf16>, %r: tensor<?x262144xbf16>, %w: tensor<262144xbf16>) -> (tensor<?x262144xbf16>, tensor<?x262144xbf16>) {
  %y, %h = norm.fused_row <rms> %r addend(%x : tensor<?x262144xbf16>) weight(%w : tensor<262144xbf16>) eps(1.0e-06) output_over(addend) residual_over(input) : tensor<?x262144xbf16> -> tensor<?x262144xbf16>, tensor<?x262144xbf16>
  return %y, %h : tensor<?x262144xbf16>, tensor<?x262144xbf16>
}
