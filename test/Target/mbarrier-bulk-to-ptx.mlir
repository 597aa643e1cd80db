// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_90a" -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// Shared-memory barriers, bulk and TMA copies in PTX (the tensor copy's
// coordinates innermost first, the map by its address): one thread initializes the
// barrier (and fences the init for the async proxy), arrives expecting the
// copies' bytes and issues them; every thread waits in a try_wait loop
// bounded by max_tries (64 here) that traps instead of hanging. The wait
// must survive canonicalization (it has no results).

// CHECK: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// CHECK-LABEL: .entry bulk(
// CHECK: mbarrier.init.shared::cta.b64 [[[BAR:%rd[0-9]+]]], 1;
// CHECK-NEXT: fence.mbarrier_init.release.cluster;
// CHECK: bar.sync 0;
// CHECK: mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{%rd[0-9]+}}], {{%r[0-9]+}};
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}], 1024, [{{%rd[0-9]+}}];
// CHECK: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}], 1024, [{{%rd[0-9]+}}];
// CHECK: mbarrier.try_wait.parity.shared::cta.b64 p, [{{%rd[0-9]+}}], {{%r[0-9]+}};
// CHECK-NEXT: selp.u32 {{%r[0-9]+}}, 1, 0, p;
// CHECK: trap;
// CHECK: ld.shared.b32
// CHECK: mbarrier.arrive.shared::cta.b64 _, [{{%rd[0-9]+}}];
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [{{%rd[0-9]+}}, {{[{]}}{{%r[0-9]+}}, {{%r[0-9]+}}}], [{{%rd[0-9]+}}];
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

module attributes {gpu.container_module} {
gpu.module @norm_kernels {
  gpu.func @bulk(%src: memref<1099511627776xf32>, %dst: memref<1099511627776xf32>, %map: memref<16xi64>, %row: index, %col: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %bytes = arith.constant 2048 : index
    %tid = gpu.thread_id x
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %tile = memref.view %smem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<512xf32, #gpu.address_space<workgroup>>
    %c2048 = arith.constant 2048 : index
    %bars = memref.view %smem[%c2048][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
    %first = arith.cmpi eq, %tid, %c0 : index
    scf.if %first {
      norm.mbarrier_init %bars[%c0] {count = 1 : i64} : memref<2xi64, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    scf.if %first {
      norm.mbarrier_arrive %bars[%c0], %bytes : memref<2xi64, #gpu.address_space<workgroup>>
      norm.bulk_copy %src[%c0], %tile[%c0], %bars[%c0] {bytes = 1024 : i64} : memref<1099511627776xf32>, memref<512xf32, #gpu.address_space<workgroup>>, memref<2xi64, #gpu.address_space<workgroup>>
      norm.bulk_copy %src[%c256], %tile[%c256], %bars[%c0] {bytes = 1024 : i64} : memref<1099511627776xf32>, memref<512xf32, #gpu.address_space<workgroup>>, memref<2xi64, #gpu.address_space<workgroup>>
    }
    norm.mbarrier_wait %bars[%c0], %c0 {max_tries = 64 : i64} : memref<2xi64, #gpu.address_space<workgroup>>
    %x = memref.load %tile[%tid] : memref<512xf32, #gpu.address_space<workgroup>>
    memref.store %x, %dst[%tid] : memref<1099511627776xf32>
    %c1 = arith.constant 1 : index
    norm.mbarrier_arrive %bars[%c1] : memref<2xi64, #gpu.address_space<workgroup>>
    scf.if %first {
      %c64 = arith.constant 64 : index
      norm.tma_load %map, %src[%c256, %c64, %c64] at [%row, %col], %tile[%c0], %bars[%c1] {box_rows = 8 : i64, box_columns = 32 : i64, swizzle = 128 : i64} : memref<16xi64>, memref<1099511627776xf32>, memref<512xf32, #gpu.address_space<workgroup>>, memref<2xi64, #gpu.address_space<workgroup>>
    }
    gpu.return
  }
}
}
