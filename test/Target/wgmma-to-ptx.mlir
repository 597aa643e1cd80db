// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_90a" -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// The warpgroup ops in PTX: the async-proxy fence after the shared stores,
// wgmma.fence before the multiplies, descriptors of the start address
// (>> 4, 14 bits) or'ed with the layout's bits (128-byte swizzle: mode 1 in
// bits 62-63, SBO 1024 >> 4 in bits 32-45, LBO 16 >> 4 in bits 16-29:
// 0x4000004000010000; 64-byte MN-major: mode 2, SBO 512, LBO 2048), the
// accumulators tied in place, scale-d from a predicate, transpose-b 1 for
// the MN-major B; dynamic shared memory aligned to the 128-byte swizzle's
// 1024-byte atom. A named barrier of the warpgroup and setmaxnreg between.

// CHECK: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// CHECK-LABEL: .entry wgmma(
// CHECK: st.shared.b16
// CHECK: fence.proxy.async.shared::cta;
// CHECK: bar.sync 0;
// CHECK: bar.sync 1, 128;
// CHECK: setmaxnreg.inc.sync.aligned.u32 232;
// CHECK: wgmma.fence.sync.aligned;
// CHECK: or.b64 [[DA:%rd[0-9]+]], {{%rd[0-9]+}}, 4611686293305360384;
// CHECK: or.b64 [[DB:%rd[0-9]+]], {{%rd[0-9]+}}, 4611686293305360384;
// CHECK: setp.ne.b32 p, [[ZERO:%r[0-9]+]], 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {[[D0:%r[0-9]+]], {{(%r[0-9]+, )+}}[[D31:%r[0-9]+]]}, [[DA]], [[DB]], p, 1, 1, 0, 0;
// CHECK: or.b64 [[DV:%rd[0-9]+]], {{%rd[0-9]+}}, -9223371899407433728;
// CHECK: setp.ne.b32 p, [[ONE:%r[0-9]+]], 0;
// CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {[[D0]], {{(%r[0-9]+, )+}}[[D31]]}, {{[{]}}[[P:%r[0-9]+]], [[P]], [[P]], [[P]]}, [[DV]], p, 1, 1, 1;
// CHECK: wgmma.commit_group.sync.aligned;
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK: st.global.b32
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

module attributes {gpu.container_module} {
gpu.module @norm_kernels {
  gpu.func @wgmma(%a: memref<1099511627776xbf16>, %d: memref<1099511627776xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %tid = gpu.thread_id x
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %tile = memref.view %smem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4096xbf16, #gpu.address_space<workgroup>>
    %x = memref.load %a[%tid] : memref<1099511627776xbf16>
    memref.store %x, %tile[%tid] : memref<4096xbf16, #gpu.address_space<workgroup>>
    norm.async_proxy_fence
    gpu.barrier
    norm.named_barrier {id = 1 : i64, threads = 128 : i64}
    norm.set_max_registers {count = 232 : i64, increase = true}
    %zero = arith.constant dense<0.0> : vector<32xf32>
    %c = norm.wgmma_fence %zero : vector<32xf32>
    %s = norm.wgmma %tile[%c0], %tile[%c16], %c {a_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>, b_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>, accumulate = false} : memref<4096xbf16, #gpu.address_space<workgroup>>, memref<4096xbf16, #gpu.address_space<workgroup>>, vector<32xf32> -> vector<32xf32>
    %p = arith.constant dense<1.0> : vector<8xbf16>
    %o = norm.wgmma %p, %tile[%c0], %s {b_layout = #norm.shared_matrix<swizzle = 64, lbo = 2048, sbo = 512, mn_major = true>} : vector<8xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, vector<32xf32> -> vector<32xf32>
    norm.wgmma_commit
    %r = norm.wgmma_wait %o {pending = 1 : i64} : vector<32xf32>
    %e = vector.extract %r[3] : f32 from vector<32xf32>
    memref.store %e, %d[%tid] : memref<1099511627776xf32>
    gpu.return
  }
}
}
