// gpu.dynamic_shared_memory on the host: one heap buffer per host function,
// as large as the furthest memref.view of it needs, shared by the threads
// of a CTA and reused by the CTAs one after the other.
//
// RUN: norm-opt %s --norm-kernels-to-host | FileCheck %s
// RUN: norm-opt %s --norm-kernels-to-host --norm-host-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void -O2 \
// RUN:       -shared-libs=%mlir_c_runner_utils \
// RUN:   | FileCheck %s --check-prefix=EXEC

// Two views: 8 vectors of 4 f32 at byte 0, 16 f32 at byte 128. Both ops
// stand for the same memory: one buffer of 128 + 64 bytes.
// CHECK-LABEL: func.func @reverse_host(
// CHECK: %[[SHARED:.*]] = memref.alloc() {alignment = 64 : i64} : memref<192xi8>
// CHECK: %[[MEMORY:.*]] = memref.cast %[[SHARED]] : memref<192xi8> to memref<?xi8>
// CHECK: scf.for
// CHECK-DAG: memref.view %[[MEMORY]][%{{.*}}][] : memref<?xi8> to memref<8xvector<4xf32>>
// CHECK-DAG: memref.view %[[MEMORY]][%{{.*}}][] : memref<?xi8> to memref<16xf32>
// CHECK: memref.dealloc %[[SHARED]]
// CHECK-NOT: gpu.
// CHECK-NOT: #gpu.address_space

// Each CTA of 16 threads reverses its 16 values through shared memory
// (thread t writes slot t, a barrier, thread t reads slot 15 - t) and adds
// the CTA's first vector, written by thread 0 through the other view.
// EXEC: ( 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
// EXEC-SAME: 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32 )

module attributes {gpu.container_module} {
  gpu.module @norm_kernels {
    gpu.func @reverse(%x: memref<1099511627776xf32>, %y: memref<1099511627776xf32>)
        kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c15 = arith.constant 15 : index
      %c16 = arith.constant 16 : index
      %c128 = arith.constant 128 : index
      %base = arith.muli %bid, %c16 : index
      %at = arith.addi %base, %tid : index
      %memory = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %vectors = memref.view %memory[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8xvector<4xf32>, #gpu.address_space<workgroup>>
      %again = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %scalars = memref.view %again[%c128][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
      %v = memref.load %x[%at] : memref<1099511627776xf32>
      memref.store %v, %scalars[%tid] : memref<16xf32, #gpu.address_space<workgroup>>
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %head = vector.load %x[%base] : memref<1099511627776xf32>, vector<4xf32>
        memref.store %head, %vectors[%c0] : memref<8xvector<4xf32>, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %mirror = arith.subi %c15, %tid : index
      %r = memref.load %scalars[%mirror] : memref<16xf32, #gpu.address_space<workgroup>>
      %head = memref.load %vectors[%c0] : memref<8xvector<4xf32>, #gpu.address_space<workgroup>>
      %h0 = vector.extract %head[0] : f32 from vector<4xf32>
      %sum = arith.addf %r, %h0 : f32
      memref.store %sum, %y[%at] : memref<1099511627776xf32>
      gpu.return
    }
  }

  func.func private @reverse_host(memref<1099511627776xf32>,
                                  memref<1099511627776xf32>, index)

  // x = 0, 1, ..., 31: CTA 0 adds x[0] = 0, CTA 1 adds x[16] = 16.
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %x = memref.alloc() : memref<32xf32>
    scf.for %i = %c0 to %c32 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<32xf32>
    }
    %y = memref.alloc() : memref<32xf32>
    %xb = memref.reinterpret_cast %x to offset: [0], sizes: [1099511627776], strides: [1]
        : memref<32xf32> to memref<1099511627776xf32>
    %yb = memref.reinterpret_cast %y to offset: [0], sizes: [1099511627776], strides: [1]
        : memref<32xf32> to memref<1099511627776xf32>
    %grid = arith.constant 2 : index
    func.call @reverse_host(%xb, %yb, %grid)
        : (memref<1099511627776xf32>, memref<1099511627776xf32>, index) -> ()
    %out = vector.load %y[%c0] : memref<32xf32>, vector<32xf32>
    vector.print %out : vector<32xf32>
    memref.dealloc %x : memref<32xf32>
    memref.dealloc %y : memref<32xf32>
    return
  }
}
