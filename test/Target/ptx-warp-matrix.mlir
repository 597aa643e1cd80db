// The warp matrix ops and async copies through norm-lower-to-ptx: the
// tile steps of a FlashAttention-2 kernel (Q, K and V tiles copied into
// shared memory with cp.async and a zero-filled tail, Q K^T and P V on
// tensor cores from ldmatrix fragments, the row maximum of S over the four
// lanes of a row). ptxas-warp-matrix.test assembles the same PTX.
//
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80 ptx-version=78" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx

// CHECK-NOT: .local
// CHECK-LABEL: .visible .entry tile_bf16(
// 16-byte copies bypass L1; the zero-filled 8-byte ones take a source size.
// CHECK: cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16;
// CHECK: cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 8, %r{{[0-9]+}};
// CHECK: cp.async.commit_group;
// CHECK: cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 8, %r{{[0-9]+}};
// CHECK: cp.async.commit_group;
// CHECK: cp.async.wait_group{{[[:space:]]+}}0;
// CHECK: bar.sync{{[[:space:]]+}}0;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// The row maximum: arith.maximumf is max.NaN (NaN wins, as on the host).
// CHECK: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK: max.NaN.f32
// CHECK: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK: max.NaN.f32
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: .local
// CHECK-LABEL: .visible .entry tile_f16(
// CHECK: cp.async.ca.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 4;
// CHECK: cp.async.commit_group;
// CHECK: cp.async.ca.shared.global [%rd{{[0-9]+}}{{.*}}], [%rd{{[0-9]+}}{{.*}}], 4;
// CHECK: cp.async.commit_group;
// CHECK: cp.async.wait_group{{[[:space:]]+}}1;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: .local

module attributes {gpu.container_module} {
  gpu.module @norm_kernels {
    // One warp: Q (16x16), K (8x16, [n][k]) and V (16x8, [k][n]) tiles;
    // S = Q K^T, its row maxima, O = S + Q V.
    gpu.func @tile_bf16(%q: memref<1099511627776xbf16> {llvm.noalias, llvm.readonly, llvm.align = 16 : i64},
                        %k: memref<1099511627776xbf16> {llvm.noalias, llvm.readonly, llvm.align = 16 : i64},
                        %v: memref<1099511627776xbf16> {llvm.noalias, llvm.readonly, llvm.align = 16 : i64},
                        %o: memref<1099511627776xf32> {llvm.noalias, llvm.align = 16 : i64},
                        %m: memref<1099511627776xf32> {llvm.noalias, llvm.align = 16 : i64},
                        %valid: i64)
        workgroup(%qs: memref<16x16xbf16, #gpu.address_space<workgroup>>,
                  %ks: memref<8x16xbf16, #gpu.address_space<workgroup>>,
                  %vs: memref<16x8xbf16, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %lane = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %n = arith.index_cast %valid : i64 to index
      // Q: 8 elements a lane; K and V: 4 elements a lane, the first n read.
      %qrow = arith.divui %lane, %c2 : index
      %qhalf = arith.remui %lane, %c2 : index
      %qcol = arith.muli %qhalf, %c8 : index
      %qat = arith.muli %lane, %c8 : index
      norm.async_copy %q[%qat], %qs[%qrow, %qcol] {elements = 8 : i64} : memref<1099511627776xbf16>, memref<16x16xbf16, #gpu.address_space<workgroup>>
      %krow = arith.divui %lane, %c4 : index
      %kquarter = arith.remui %lane, %c4 : index
      %kcol = arith.muli %kquarter, %c4 : index
      %kat = arith.muli %lane, %c4 : index
      norm.async_copy %k[%kat], %ks[%krow, %kcol], %n {elements = 4 : i64} : memref<1099511627776xbf16>, memref<8x16xbf16, #gpu.address_space<workgroup>>
      norm.async_commit
      %vrow = arith.divui %lane, %c2 : index
      %vcol = arith.muli %qhalf, %c4 : index
      norm.async_copy %v[%kat], %vs[%vrow, %vcol], %n {elements = 4 : i64} : memref<1099511627776xbf16>, memref<16x8xbf16, #gpu.address_space<workgroup>>
      norm.async_commit
      norm.async_wait {pending = 0 : i64}
      gpu.barrier
      %arow = arith.remui %lane, %c16 : index
      %ahalf = arith.divui %lane, %c16 : index
      %acol = arith.muli %ahalf, %c8 : index
      %a = norm.ldmatrix %qs[%arow, %acol] {count = 4 : i64} : memref<16x16xbf16, #gpu.address_space<workgroup>> -> vector<8xbf16>
      %brow = arith.remui %lane, %c8 : index
      %bhalf = arith.divui %arow, %c8 : index
      %bcol = arith.muli %bhalf, %c8 : index
      %bk = norm.ldmatrix %ks[%brow, %bcol] {count = 2 : i64} : memref<8x16xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
      %bv = norm.ldmatrix %vs[%arow, %c0] {count = 2 : i64, transpose} : memref<16x8xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %s = norm.mma_sync %a, %bk, %zero : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
      // The maximum of row g over the four lanes that hold it.
      %s0 = vector.extract %s[0] : f32 from vector<4xf32>
      %s1 = vector.extract %s[1] : f32 from vector<4xf32>
      %local = arith.maximumf %s0, %s1 : f32
      %rowmax = norm.row_allreduce %local {group_size = 4 : i64, kind = #norm.reduction<max>} : f32
      memref.store %rowmax, %m[%lane] : memref<1099511627776xf32>
      %out = norm.mma_sync %a, %bv, %s : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
      %oat = arith.muli %lane, %c4 : index
      vector.store %out, %o[%oat] {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
      gpu.return
    }

    // f16 fragments: A transposed (x4.trans), one matrix (x1), 4-byte copies,
    // a wait that leaves one group in flight.
    gpu.func @tile_f16(%x: memref<1099511627776xf16> {llvm.noalias, llvm.readonly, llvm.align = 16 : i64},
                       %o: memref<1099511627776xf32> {llvm.noalias, llvm.align = 16 : i64})
        workgroup(%xs: memref<32x16xf16, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %lane = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %row = arith.divui %lane, %c2 : index
      %half = arith.remui %lane, %c2 : index
      %col = arith.muli %half, %c8 : index
      %at = arith.muli %lane, %c2 : index
      norm.async_copy %x[%at], %xs[%row, %col] {elements = 2 : i64} : memref<1099511627776xf16>, memref<32x16xf16, #gpu.address_space<workgroup>>
      norm.async_commit
      %row2 = arith.addi %row, %c16 : index
      %at2 = arith.addi %at, %c32 : index
      norm.async_copy %x[%at2], %xs[%row2, %col] {elements = 2 : i64} : memref<1099511627776xf16>, memref<32x16xf16, #gpu.address_space<workgroup>>
      norm.async_commit
      norm.async_wait {pending = 1 : i64}
      gpu.barrier
      %arow = arith.remui %lane, %c16 : index
      %ahalf = arith.divui %lane, %c16 : index
      %acol = arith.muli %ahalf, %c8 : index
      %a = norm.ldmatrix %xs[%arow, %acol] {count = 4 : i64, transpose} : memref<32x16xf16, #gpu.address_space<workgroup>> -> vector<8xf16>
      %b1 = norm.ldmatrix %xs[%arow, %c0] {count = 1 : i64} : memref<32x16xf16, #gpu.address_space<workgroup>> -> vector<2xf16>
      %b = vector.shuffle %b1, %b1 [0, 1, 0, 1] : vector<2xf16>, vector<2xf16>
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %d = norm.mma_sync %a, %b, %zero : vector<8xf16>, vector<4xf16>, vector<4xf32> -> vector<4xf32>
      %oat = arith.muli %lane, %c4 : index
      vector.store %d, %o[%oat] {alignment = 16 : i64} : memref<1099511627776xf32>, vector<4xf32>
      gpu.return
    }
  }
}
