// norm-kernels-to-host on the warp collectives and async copies: the async
// copy becomes a plain per-thread copy with a zero-filling tail, commit and
// wait disappear, and each norm.ldmatrix and norm.mma_sync becomes a loop
// over the CTA's warps that gathers the lanes' operands, computes on whole
// matrices (in scratch buffers) and scatters each lane's fragment into a
// per-thread result buffer.
//
// RUN: norm-opt %s --norm-kernels-to-host | FileCheck %s

// CHECK-LABEL: func.func @tile_host(
// CHECK-SAME:      %[[Q:.*]]: memref<1099511627776xbf16>, %[[OUT:.*]]: memref<1099511627776xf32>, %[[N:.*]]: index, %[[GRID:.*]]: index)
// CHECK-DAG:     %[[QS:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16x16xbf16>
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// The rows ldmatrix x4 gathers, its results; those of ldmatrix x2.trans.
// CHECK:         %[[ROWS4:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32x8xbf16>
// CHECK:         %[[A:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xvector<8xbf16>>
// CHECK:         %[[ROWS2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32x8xbf16>
// CHECK:         %[[B:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xvector<4xbf16>>
// The mma's matrices and its results.
// CHECK:         %[[MA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
// CHECK:         %[[MB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x8xf32>
// CHECK:         %[[MD:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x8xf32>
// CHECK:         %[[D:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xvector<4xf32>>
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[GRID]] step %[[C1]] {
// The copy: min(max(n, 0), 4) elements read, the rest zero.
// CHECK:           %[[LO:.*]] = arith.maxsi %[[N]], %{{.*}} : index
// CHECK:           %[[READ:.*]] = arith.minsi %[[LO]], %[[C4:.*]] : index
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : bf16
// CHECK:           scf.for %{{.*}} = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[READ]] step
// CHECK:               %[[V:.*]] = memref.load %[[Q]]
// CHECK:               memref.store %[[V]], %[[QS]]
// CHECK:             scf.for %{{.*}} = %[[READ]] to %[[C4]] step
// CHECK:               memref.store %[[ZERO]], %[[QS]]
// CHECK-NOT:       norm.async
// ldmatrix x4: per warp, 32 lanes give rows, then 32 lanes take fragments.
// CHECK:           %[[W32:.*]] = arith.constant 32 : index
// CHECK:           scf.for %[[WARP:.*]] = %[[C0]] to %[[C64]] step %[[W32]] {
// CHECK:             scf.for %[[LANE:.*]] = %[[C0]] to %{{.*}} step %[[C1]] {
// CHECK:               vector.load %[[QS]][%{{.*}}, %{{.*}}] : memref<16x16xbf16>, vector<8xbf16>
// CHECK:               vector.store %{{.*}}, %[[ROWS4]][%[[LANE]], %{{.*}}] : memref<32x8xbf16>, vector<8xbf16>
// CHECK:             scf.for %[[LANE2:.*]] = %[[C0]] to %[[W32]] step %[[C1]] {
// CHECK:               %[[T:.*]] = arith.addi %[[WARP]], %[[LANE2]] : index
// CHECK-COUNT-8:       memref.load %[[ROWS4]]
// CHECK:               %[[FRAG:.*]] = vector.from_elements {{.*}} : vector<8xbf16>
// CHECK:               memref.store %[[FRAG]], %[[A]][%[[T]]]
// ldmatrix x2.trans gathers 16 lanes only: the others' addresses are ignored.
// CHECK:           scf.for %{{.*}} = %[[C0]] to %[[C64]] step
// CHECK:             %[[C16:.*]] = arith.constant 16 : index
// CHECK:             scf.for %{{.*}} = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK:               vector.store %{{.*}}, %[[ROWS2]]
// CHECK:             vector.from_elements {{.*}} : vector<4xbf16>
// The mma: fragments into matrices (bf16 widened to f32), D = C + A * B in
// increasing k, D's fragments back to the lanes.
// CHECK:           scf.for %{{.*}} = %[[C0]] to %[[C64]] step
// CHECK:             scf.for
// CHECK:               memref.load %[[A]]
// CHECK:               memref.load %[[B]]
// CHECK:               arith.extf %{{.*}} : bf16 to f32
// CHECK:               memref.store %{{.*}}, %[[MA]]
// CHECK:               memref.store %{{.*}}, %[[MB]]
// CHECK:               memref.store %{{.*}}, %[[MD]]
// CHECK:             scf.for %[[M:.*]] = %[[C0]] to %{{.*}} step %[[C1]] {
// CHECK:               scf.for %[[NN:.*]] = %[[C0]] to %{{.*}} step %[[C1]] {
// CHECK:                 %[[ACC0:.*]] = memref.load %[[MD]][%[[M]], %[[NN]]]
// CHECK:                 %[[SUM:.*]] = scf.for %[[K:.*]] = %[[C0]] to %{{.*}} step %[[C1]] iter_args(%[[ACC:.*]] = %[[ACC0]]) -> (f32) {
// CHECK:                   %[[X:.*]] = memref.load %[[MA]][%[[M]], %[[K]]]
// CHECK:                   %[[Y:.*]] = memref.load %[[MB]][%[[K]], %[[NN]]]
// CHECK:                   %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK:                   %[[NEXT:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK:                   scf.yield %[[NEXT]] : f32
// CHECK:                 memref.store %[[SUM]], %[[MD]][%[[M]], %[[NN]]]
// CHECK:             scf.for
// CHECK-COUNT-4:       memref.load %[[MD]]
// CHECK:               %[[DF:.*]] = vector.from_elements {{.*}} : vector<4xf32>
// CHECK:               memref.store %[[DF]], %[[D]]
// CHECK:           scf.for
// CHECK:             memref.load %[[D]]
// CHECK:             vector.store %{{.*}}, %[[OUT]]
// CHECK:         memref.dealloc %[[ROWS4]]
// CHECK-NOT:     norm.
// CHECK-NOT:     gpu.

// CTAs of two warps; the 16x16 tile arrives in 8-byte pieces, the first n
// elements of each read (zero fill past them).
module attributes {gpu.container_module} {
  gpu.module @norm_kernels {
    gpu.func @tile(%q: memref<1099511627776xbf16>, %out: memref<1099511627776xf32>, %n: index)
        workgroup(%qs: memref<16x16xbf16, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %row = arith.divui %tid, %c4 : index
      %piece = arith.remui %tid, %c4 : index
      %col = arith.muli %piece, %c4 : index
      %at = arith.muli %tid, %c4 : index
      norm.async_copy %q[%at], %qs[%row, %col], %n {elements = 4 : i64} : memref<1099511627776xbf16>, memref<16x16xbf16, #gpu.address_space<workgroup>>
      norm.async_commit
      norm.async_wait {pending = 0 : i64}
      gpu.barrier
      // A: lane l points at row l % 16, column 8 (l / 16); B = the tile's
      // first 16x8 columns, transposed.
      %lane = arith.remui %tid, %c32 : index
      %arow = arith.remui %lane, %c16 : index
      %ahalf = arith.divui %lane, %c16 : index
      %acol = arith.muli %ahalf, %c8 : index
      %a = norm.ldmatrix %qs[%arow, %acol] {count = 4 : i64} : memref<16x16xbf16, #gpu.address_space<workgroup>> -> vector<8xbf16>
      %b = norm.ldmatrix %qs[%arow, %c0] {count = 2 : i64, transpose} : memref<16x16xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %d = norm.mma_sync %a, %b, %zero : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
      vector.store %d, %out[%at] : memref<1099511627776xf32>, vector<4xf32>
      gpu.return
    }
  }
}
