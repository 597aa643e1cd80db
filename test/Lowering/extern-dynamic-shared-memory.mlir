// RUN: norm-opt %s --pass-pipeline='builtin.module(gpu.module(norm-extern-dynamic-shared-memory))' | FileCheck %s

// Only the uninitialized zero-sized array in shared memory (address space 3)
// is the memory sized at launch; it becomes external, the rest stays.

// CHECK-LABEL: gpu.module @norm_kernels
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @exchange() {addr_space = 3 : i32} : !llvm.array<32 x f32>
// CHECK: llvm.mlir.global internal @global_empty() {addr_space = 1 : i32} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @initialized(dense<> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
gpu.module @norm_kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @exchange() {addr_space = 3 : i32} : !llvm.array<32 x f32>
  llvm.mlir.global internal @global_empty() {addr_space = 1 : i32} : !llvm.array<0 x i8>
  llvm.mlir.global internal @initialized(dense<> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
}
