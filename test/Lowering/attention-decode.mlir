// RUN: norm-opt %s --norm-assign-launch-config --norm-generate-kernels | FileCheck %s --check-prefix=IR
// RUN: norm-opt %s --norm-to-ptx 2>&1 | FileCheck %s --check-prefix=PTX

// The decode kernel: 4 warps (the default) on one tile of 16 query rows
// (GQA 4: a token's group), each a slice of 16 keys of each 64-key tile;
// key tiles copied from the
// new k/v rows or from the caches (one branch per tile), the new keys
// normalized and rotated only, appended to both caches by whole 16-byte
// chunks; then each split's rows and log2-sum-exps to the workspace, the
// semaphore of (tile, kv head) behind a release fence, and the last split
// combining in split order after its acquire fence, resetting the
// semaphore.
// IR-LABEL: gpu.func @norm_decode_qkrms_ropeneox128_d128_h8x2_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2(
// IR-SAME: %[[Q:arg0]]: memref<{{[0-9]+}}xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// IR-SAME: %[[K:arg1]]: memref<{{[0-9]+}}xbf16> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// IR-SAME: %[[KC:arg8]]: memref<{{[0-9]+}}xbf16> {llvm.align = 16 : i64, llvm.noalias},
// IR-SAME: %[[VC:arg9]]: memref<{{[0-9]+}}xbf16> {llvm.align = 16 : i64, llvm.noalias},
// IR-SAME: %[[WS:arg10]]: memref<{{[0-9]+}}xf32> {llvm.align = 16 : i64, llvm.noalias},
// IR-SAME: %[[SEM:arg11]]: memref<{{[0-9]+}}xi32> {llvm.align = 4 : i64, llvm.noalias},
// IR: norm.async_copy %[[K]][
// IR: } else {
// IR: norm.async_copy %[[KC]][
// IR: vector.store %{{.*}}, %[[KC]][%{{.*}}] {alignment = 16 : i64} : memref<{{[0-9]+}}xbf16>, vector<8xbf16>
// IR: vector.store %{{.*}}, %[[VC]][%{{.*}}] {alignment = 16 : i64} : memref<{{[0-9]+}}xbf16>, vector<8xbf16>
// IR: norm.mma_sync
// The 4 warps that split the key tiles of the one tile of 16 query rows
// merge: (max, sum) and 16 output quads a lane, 4 x 32 x 17 records over
// the tiles; the first warp rescales and adds the other three.
// IR: %[[MERGE:.*]] = memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2176xvector<4xf32>, #gpu.address_space<workgroup>>
// IR-NEXT: gpu.barrier
// IR-COUNT-17: memref.store %{{.*}}, %[[MERGE]][%{{.*}}] : memref<2176xvector<4xf32>, #gpu.address_space<workgroup>>
// IR: gpu.barrier
// IR-COUNT-3: memref.load %[[MERGE]][%{{.*}}] : memref<2176xvector<4xf32>, #gpu.address_space<workgroup>>
// IR: math.exp2
// IR: math.exp2
// IR-COUNT-16: memref.load %[[MERGE]][%{{.*}}] : memref<2176xvector<4xf32>, #gpu.address_space<workgroup>>
// IR: vector.store %{{.*}}, %[[WS]][%{{.*}}] {alignment = 8 : i64} : memref<{{[0-9]+}}xf32>, vector<2xf32>
// IR: math.log2
// IR: gpu.barrier
// IR: llvm.fence syncscope("device") acq_rel
// IR-NEXT: memref.atomic_rmw addi %{{.*}}, %[[SEM]][%{{.*}}] : (i32, memref<{{[0-9]+}}xi32>) -> i32
// IR: memref.store %{{.*}}, %[[SEM]][%{{.*}}]
// IR-NEXT: llvm.fence syncscope("device") acq_rel
// IR: gpu.barrier
// IR: scf.for
// IR: vector.load %[[WS]][%{{.*}}] {alignment = 16 : i64} : memref<{{[0-9]+}}xf32>, vector<4xf32>
// IR: math.exp2
// IR: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<{{[0-9]+}}xbf16>, vector<4xbf16>

// PTX: .visible .entry norm_decode_qkrms_ropeneox128_d128_h8x2_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2(
// PTX-NOT: __nv_
// PTX: cp.async.cg.shared.global
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: fence.acq_rel.gpu;
// PTX: atom.global.add.u32
// PTX: fence.acq_rel.gpu;
// PTX: ld.global.v4.b32
// PTX-NOT: __nv_
func.func @decode(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
                  %cu: tensor<?xi32>, %kc: tensor<?x256xbf16>, %vc: tensor<?x256xbf16>,
                  %len: tensor<?xi32>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>)
      q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %o, %kc2, %vc2 : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
}
