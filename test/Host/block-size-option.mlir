// Without known_block_size the CTA size comes from the pass option; a host
// program's declaration of the host function is replaced by the definition.

// RUN: norm-opt %s --norm-kernels-to-host="block-size=96" | FileCheck %s
// CHECK-LABEL: func.func @plain_host(%{{.*}}: memref<8xf32>, %{{.*}}: index)
// CHECK:         arith.constant 96 : index
// CHECK-NOT:   func.func private @plain_host
// CHECK-LABEL: func.func @caller
// CHECK:         call @plain_host

gpu.module @norm_kernels {
  gpu.func @plain(%x: memref<8xf32>) kernel {
    %t = gpu.thread_id x
    %c8 = arith.constant 8 : index
    %i = arith.remui %t, %c8 : index
    %v = memref.load %x[%i] : memref<8xf32>
    %s = norm.row_allreduce %v {group_size = 32 : i64} : f32
    memref.store %s, %x[%i] : memref<8xf32>
    gpu.return
  }
}
func.func private @plain_host(memref<8xf32>, index)
func.func @caller(%x: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  func.call @plain_host(%x, %c1) : (memref<8xf32>, index) -> ()
  return
}
