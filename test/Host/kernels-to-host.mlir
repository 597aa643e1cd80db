// RUN: norm-opt %s --split-input-file --norm-kernels-to-host | FileCheck %s
// RUN: norm-opt %s --split-input-file --norm-kernels-to-host=keep-gpu-module \
// RUN:   | FileCheck %s --check-prefix=KEEP

// A row_allreduce splits the body into two thread loops. Uniform code (the
// CTA's first row) runs once per CTA; the lane, a function of the thread
// index, is recomputed after the split; the partial sum crosses the split in
// a per-thread buffer; the allreduce sums groups of 16 threads in order.

// CHECK-LABEL: func.func @rows_host(
// CHECK-SAME:      %[[X:.*]]: memref<1099511627776xf32>, %[[ROWS:.*]]: i64, %[[GRID:.*]]: index)
// CHECK-SAME:      attributes {norm.host_kernel}
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK:         %[[PARTIAL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
// CHECK:         %[[SUM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
// CHECK:         scf.for %[[CTA:.*]] = %[[C0]] to %[[GRID]] step %[[C1]] {
// CHECK:           %[[FIRST:.*]] = arith.muli %[[CTA]], %{{.*}} : index
// CHECK:           scf.for %[[T:.*]] = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK:             %[[LANE:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK:             %[[V:.*]] = memref.load %[[X]][%[[LANE]]]
// CHECK:             memref.store %[[V]], %[[PARTIAL]][%[[T]]]
// CHECK:           }
// CHECK:           %[[G16:.*]] = arith.constant 16 : index
// CHECK:           scf.for %[[G:.*]] = %[[C0]] to %[[C64]] step %[[G16]] {
// CHECK:             %[[END:.*]] = arith.addi %[[G]], %[[G16]] : index
// CHECK:             %[[TOTAL:.*]] = scf.for %[[U:.*]] = %[[G]] to %[[END]] step %[[C1]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:               %[[P:.*]] = memref.load %[[PARTIAL]][%[[U]]]
// CHECK:               %[[NEXT:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK:               scf.yield %[[NEXT]]
// CHECK:             scf.for %[[W:.*]] = %[[G]] to %[[END]] step %[[C1]] {
// CHECK:               memref.store %[[TOTAL]], %[[SUM]][%[[W]]]
// CHECK:           %[[N:.*]] = arith.index_cast %[[ROWS]] : i64 to index
// CHECK:           scf.for %[[T2:.*]] = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK:             %[[SLOT:.*]] = arith.divui %[[T2]], %{{.*}} : index
// CHECK:             %[[ROW:.*]] = arith.addi %[[FIRST]], %[[SLOT]] : index
// CHECK:             %[[VALID:.*]] = arith.cmpi ult, %[[ROW]], %[[N]] : index
// CHECK:             %[[S:.*]] = memref.load %[[SUM]][%[[T2]]]
// CHECK:             %[[LANE2:.*]] = arith.remui %[[T2]], %{{.*}} : index
// CHECK:             scf.if %[[VALID]]
// CHECK:               memref.store %[[S]], %[[X]][%[[LANE2]]]
// CHECK:         memref.dealloc %[[PARTIAL]]
// CHECK:         memref.dealloc %[[SUM]]
// CHECK-NOT:     gpu.
// CHECK-NOT:   gpu.module

// KEEP: gpu.module @norm_kernels
// KEEP: gpu.func @rows
// KEEP: func.func @rows_host

gpu.module @norm_kernels {
  gpu.func @rows(%x: memref<1099511627776xf32>, %rows: i64)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %b = gpu.block_id x
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %first = arith.muli %b, %c4 : index
    %lane = arith.remui %t, %c16 : index
    %v = memref.load %x[%lane] : memref<1099511627776xf32>
    %s = norm.row_allreduce %v {group_size = 16 : i64} : f32
    %slot = arith.divui %t, %c16 : index
    %row = arith.addi %first, %slot : index
    %n = arith.index_cast %rows : i64 to index
    %valid = arith.cmpi ult, %row, %n : index
    scf.if %valid {
      memref.store %s, %x[%lane] : memref<1099511627776xf32>
    }
    gpu.return
  }
}

// -----

// A barrier and a row_allreduce inside a loop with uniform bounds: the loop
// runs once per CTA and is split inside. Loop-carried values (a scalar and a
// vector) live in per-thread buffers seeded before the loop and updated at
// the end of each iteration. Workgroup memory becomes one host buffer in the
// default memory space; y/z indices are constants (the host CTA is 1-D).

// CHECK-LABEL: func.func @loop_host(
// CHECK-SAME:      %[[X:.*]]: memref<1024xf32>, %{{.*}}: i64, %[[GRID:.*]]: index)
// CHECK:         %[[SHARED:.*]] = memref.alloca() {alignment = 64 : i64} : memref<32xf32>
// CHECK:         %[[ACC:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32xf32>
// CHECK:         %[[VEC:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32xvector<4xf32>>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[GRID]]
// CHECK:           %[[Y:.*]] = arith.constant 0 : index
// CHECK:           %[[SPLAT:.*]] = vector.broadcast
// CHECK:           scf.for %[[T:.*]] =
// CHECK-NEXT:        memref.store %{{.*}}, %[[ACC]][%[[T]]]
// CHECK-NEXT:        memref.store %[[SPLAT]], %[[VEC]][%[[T]]]
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             scf.for %[[T1:.*]] =
// CHECK:               %[[V:.*]] = memref.load %[[X]][%[[T1]]] : memref<1024xf32>
// CHECK:               memref.store %[[V]], %[[SHARED]][%[[T1]]] : memref<32xf32>
// CHECK:             scf.for %[[T2:.*]] =
// CHECK:               memref.load %[[SHARED]][%[[Y]]] : memref<32xf32>
// CHECK:             arith.addf
// CHECK:             scf.for %[[T3:.*]] =
// CHECK:               vector.insert
// CHECK:             scf.for %[[T4:.*]] =
// CHECK:               memref.store %{{.*}}, %[[ACC]][%[[T4]]]
// CHECK:               memref.store %{{.*}}, %[[VEC]][%[[T4]]]
// CHECK:           scf.for %[[T5:.*]] =
// CHECK:             %[[E:.*]] = memref.load %[[VEC]][%[[T5]]]
// CHECK:             vector.extract %[[E]][0]
// CHECK:             memref.load %[[ACC]][%[[T5]]]

gpu.module @norm_kernels {
  gpu.func @loop(%x: memref<1024xf32, #gpu.address_space<global>>, %n: i64)
      workgroup(%shared: memref<32xf32, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = gpu.thread_id x
    %ty = gpu.thread_id y
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %v0 = vector.broadcast %zero : f32 to vector<4xf32>
    %acc, %vec = scf.for %i = %c0 to %c4 step %c1
        iter_args(%a = %zero, %vv = %v0) -> (f32, vector<4xf32>) {
      %x0 = memref.load %x[%t] : memref<1024xf32, #gpu.address_space<global>>
      memref.store %x0, %shared[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %o = memref.load %shared[%ty] : memref<32xf32, #gpu.address_space<workgroup>>
      %s = norm.row_allreduce %o {group_size = 32 : i64} : f32
      %na = arith.addf %a, %s : f32
      %nv = vector.insert %s, %vv[0] : f32 into vector<4xf32>
      scf.yield %na, %nv : f32, vector<4xf32>
    }
    %e = vector.extract %vec[0] : f32 from vector<4xf32>
    %r = arith.addf %acc, %e : f32
    memref.store %r, %x[%t] : memref<1024xf32, #gpu.address_space<global>>
    gpu.return
  }
}

