// reverse-threads runs the threads of each stretch from the last to the
// first: a race (a thread reading what another writes before they meet)
// then gives the other order's result, so a check run both ways catches
// it where index order alone hides it.
//
// RUN: norm-opt %s --norm-kernels-to-host=reverse-threads | FileCheck %s
// RUN: norm-opt %s --norm-kernels-to-host --norm-host-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void -O2 \
// RUN:       -shared-libs=%mlir_c_runner_utils \
// RUN:   | FileCheck %s --check-prefix=FORWARD
// RUN: norm-opt %s --norm-kernels-to-host=reverse-threads --norm-host-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void -O2 \
// RUN:       -shared-libs=%mlir_c_runner_utils \
// RUN:   | FileCheck %s --check-prefix=REVERSE

// CHECK-LABEL: func.func @racy_host(
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[C8]] step %[[C1]] {
// CHECK:   %[[LAST:.*]] = arith.subi %[[C8]], %[[C1]] : index
// CHECK:   %[[T:.*]] = arith.subi %[[LAST]], %[[I]] : index
// CHECK:   arith.addi %[[T]], %{{.*}} : index
// CHECK:   memref.store %{{.*}}[%[[T]]]

// Thread t sets x[t] = x[(t + 1) % 8] + 100, with no barrier. In index
// order thread 7 reads the x[0] thread 0 wrote; from the last thread on,
// each thread reads what the one above it wrote.
// FORWARD: ( 101, 102, 103, 104, 105, 106, 107, 201 )
// REVERSE: ( 800, 700, 600, 500, 400, 300, 200, 100 )

module attributes {gpu.container_module} {
  gpu.module @norm_kernels {
    gpu.func @racy(%x: memref<1099511627776xf32>)
        kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %t = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %hundred = arith.constant 100.0 : f32
      %next = arith.addi %t, %c1 : index
      %wrapped = arith.remui %next, %c8 : index
      %v = memref.load %x[%wrapped] : memref<1099511627776xf32>
      %w = arith.addf %v, %hundred : f32
      memref.store %w, %x[%t] : memref<1099511627776xf32>
      gpu.return
    }
  }

  func.func private @racy_host(memref<1099511627776xf32>, index)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %x = memref.alloc() : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<8xf32>
    }
    %xb = memref.reinterpret_cast %x to offset: [0], sizes: [1099511627776], strides: [1]
        : memref<8xf32> to memref<1099511627776xf32>
    func.call @racy_host(%xb, %c1) : (memref<1099511627776xf32>, index) -> ()
    %out = vector.load %x[%c0] : memref<8xf32>, vector<8xf32>
    vector.print %out : vector<8xf32>
    memref.dealloc %x : memref<8xf32>
    return
  }
}
