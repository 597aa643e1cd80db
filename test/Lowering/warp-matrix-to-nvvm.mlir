// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1 index-bitwidth=64},canonicalize,cse))" \
// RUN:   | FileCheck %s

// The norm dialect's ConvertToLLVM interface inside convert-gpu-to-nvvm:
// the warp matrix ops become NVVM's, with A and B packed two elements to a
// 32-bit register (bf16 as i32 with explicit PTX types, f16 as
// vector<2xf16>), addresses from the memref descriptors (shared memory in
// address space 3, global sources cast to address space 1).

// CHECK-LABEL: llvm.func @mma(
// CHECK-SAME:      %[[A:.*]]: vector<8xbf16>, %[[B:.*]]: vector<4xbf16>, %[[C:.*]]: vector<4xf32>, %[[HA:.*]]: vector<8xf16>, %[[HB:.*]]: vector<4xf16>
// CHECK:         %[[AREGS:.*]] = llvm.bitcast %[[A]] : vector<8xbf16> to vector<4xi32>
// CHECK-COUNT-4: llvm.extractelement %[[AREGS]]
// CHECK:         %[[BREGS:.*]] = llvm.bitcast %[[B]] : vector<4xbf16> to vector<2xi32>
// CHECK-COUNT-2: llvm.extractelement %[[BREGS]]
// CHECK-COUNT-4: llvm.extractelement %[[C]]
// CHECK:         %[[D:.*]] = nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-4: llvm.extractvalue %[[D]]
// CHECK:         %[[HREGS:.*]] = llvm.bitcast %[[HA]] : vector<8xf16> to vector<4xi32>
// CHECK:         llvm.bitcast %{{.*}} : i32 to vector<2xf16>
// CHECK:         nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:     norm.

// CHECK-LABEL: llvm.func @ldmatrix(
// CHECK-SAME:      %[[I:.*]]: i64, %[[J:.*]]: i64
// CHECK:         %[[ROW:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, bf16
// CHECK:         %[[X4:.*]] = nvvm.ldmatrix %[[ROW]] {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK-COUNT-4: llvm.extractvalue %[[X4]]
// CHECK:         llvm.bitcast %{{.*}} : vector<4xi32> to vector<8xbf16>
// CHECK:         nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 2 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32)>
// CHECK:         llvm.bitcast %{{.*}} : vector<2xi32> to vector<4xbf16>
// CHECK:         %[[X1:.*]] = nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 1 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> i32
// CHECK:         llvm.insertelement %[[X1]]
// CHECK:         llvm.bitcast %{{.*}} : vector<1xi32> to vector<2xbf16>

// Byte pairs (e4m3): the registers are the bytes, as i8 to LLVM.
// CHECK-LABEL: llvm.func @ldmatrix_fp8(
// CHECK:         %[[ROW8:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
// CHECK:         nvvm.ldmatrix %[[ROW8]] {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK:         llvm.bitcast %{{.*}} : vector<4xi32> to vector<16xi8>

// CHECK-LABEL: llvm.func @copy(
// CHECK-SAME:      %[[SRC:.*]]: !llvm.ptr, %[[F:.*]]: !llvm.ptr, %[[IDX:.*]]: i64, %[[N:.*]]: i64
// CHECK:         %[[S:.*]] = llvm.getelementptr %[[SRC]][%[[IDX]]] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:         %[[G:.*]] = llvm.addrspacecast %[[S]] : !llvm.ptr to !llvm.ptr<1>
// CHECK:         nvvm.cp.async.shared.global %[[DST:.*]], %[[G]], 16, cache =  cg : !llvm.ptr<3>, !llvm.ptr<1>
// The source size in bytes: src_elements * 2.
// CHECK:         %[[BYTES:.*]] = llvm.mul %[[N]], %{{.*}} : i64
// CHECK:         %[[SIZE:.*]] = llvm.trunc %[[BYTES]] : i64 to i32
// CHECK:         nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 8, cache =  ca, %[[SIZE]] : !llvm.ptr<3>, !llvm.ptr<1>, i32
// CHECK:         nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache =  ca, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// norm.async_copy_rows: the first row as norm.async_copy's; each next source
// the one before plus the stride's bytes in an opaque add, destinations
// 1024 elements apart.
// CHECK:         %[[ROW0:.*]] = llvm.getelementptr %{{.*}}[%[[IDX]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, bf16
// CHECK:         nvvm.cp.async.shared.global %[[ROW0]], %[[G]], 16, cache =  cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK:         %[[A0:.*]] = llvm.ptrtoint %[[G]] : !llvm.ptr<1> to i64
// CHECK:         %[[A1:.*]] = llvm.inline_asm "add.s64 $0, $1, $2;", "=l,l,l" %[[A0]], %[[BYTES]] : (i64, i64) -> i64
// CHECK:         %[[G1:.*]] = llvm.inttoptr %[[A1]] : i64 to !llvm.ptr<1>
// CHECK:         %[[ROW1:.*]] = llvm.getelementptr %[[ROW0]][1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, bf16
// CHECK:         nvvm.cp.async.shared.global %[[ROW1]], %[[G1]], 16, cache =  cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK:         %[[A2:.*]] = llvm.ptrtoint %[[G1]] : !llvm.ptr<1> to i64
// CHECK:         llvm.inline_asm "add.s64 $0, $1, $2;", "=l,l,l" %[[A2]], %[[BYTES]] : (i64, i64) -> i64
// CHECK:         llvm.getelementptr %[[ROW0]][2048] : (!llvm.ptr<3>) -> !llvm.ptr<3>, bf16
// CHECK:         nvvm.cp.async.shared.global
// CHECK-NOT:     nvvm.cp.async.shared.global
// CHECK:         nvvm.cp.async.commit.group
// CHECK:         nvvm.cp.async.wait.group 1
// CHECK-NOT:     norm.

gpu.module @norm_kernels {
  gpu.func @mma(%a: vector<8xbf16>, %b: vector<4xbf16>, %c: vector<4xf32>,
                %ha: vector<8xf16>, %hb: vector<4xf16>, %out: memref<8xvector<4xf32>>) kernel {
    %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
    %e = norm.mma_sync %ha, %hb, %d : vector<8xf16>, vector<4xf16>, vector<4xf32> -> vector<4xf32>
    %c0 = arith.constant 0 : index
    memref.store %e, %out[%c0] : memref<8xvector<4xf32>>
    gpu.return
  }
  gpu.func @ldmatrix(%i: index, %j: index, %out: memref<8xvector<8xbf16>>)
      workgroup(%tile: memref<64x64xbf16, #gpu.address_space<workgroup>>) kernel {
    %a = norm.ldmatrix %tile[%i, %j] {count = 4 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<8xbf16>
    %b = norm.ldmatrix %tile[%i, %j] {count = 2 : i64, transpose} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
    %c = norm.ldmatrix %tile[%i, %j] {count = 1 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<2xbf16>
    %c0 = arith.constant 0 : index
    memref.store %a, %out[%c0] : memref<8xvector<8xbf16>>
    %bc = vector.shuffle %b, %c [0, 1, 2, 3, 4, 5, 4, 5] : vector<4xbf16>, vector<2xbf16>
    %c1 = arith.constant 1 : index
    memref.store %bc, %out[%c1] : memref<8xvector<8xbf16>>
    gpu.return
  }
  gpu.func @ldmatrix_fp8(%i: index, %out: memref<8xvector<16xf8E4M3FN>>)
      workgroup(%bytes: memref<4096xf8E4M3FN, #gpu.address_space<workgroup>>) kernel {
    %a = norm.ldmatrix %bytes[%i] {count = 4 : i64, transpose} : memref<4096xf8E4M3FN, #gpu.address_space<workgroup>> -> vector<16xf8E4M3FN>
    %c0 = arith.constant 0 : index
    memref.store %a, %out[%c0] : memref<8xvector<16xf8E4M3FN>>
    gpu.return
  }
  gpu.func @copy(%src: memref<1024xbf16>, %f: memref<1024xf32>, %i: index, %n: index)
      workgroup(%dst: memref<64x64xbf16, #gpu.address_space<workgroup>>,
                %fdst: memref<256xf32, #gpu.address_space<workgroup>>,
                %flat: memref<4096xbf16, #gpu.address_space<workgroup>>) kernel {
    norm.async_copy %src[%i], %dst[%i, %i] {elements = 8 : i64} : memref<1024xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
    norm.async_copy %src[%i], %dst[%i, %i], %n {elements = 4 : i64} : memref<1024xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
    norm.async_copy %f[%i], %fdst[%i], %n {elements = 1 : i64} : memref<1024xf32>, memref<256xf32, #gpu.address_space<workgroup>>
    norm.async_copy_rows %src[%i] step %n, %flat[%i] step 1024 {elements = 8 : i64, rows = 3 : i64} : memref<1024xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>
    norm.async_commit
    norm.async_wait {pending = 1 : i64}
    gpu.return
  }
}
