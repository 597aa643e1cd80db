// norm.attention_kernel in the sm_90a family (#34): FlashAttention-3's
// roles behind the query prologue, keys prepared by norm.k_prepare or
// plain. Claims on the PTX for sm_90a:
// - the tensor maps of k and v are 128-byte grid-constant parameters
//   (.param .align 64 .b8 [128]), read by TMA through their generic
//   addresses (cvta.param), never copied;
// - the producer's TMA boxes (cp.async.bulk.tensor with the mbarrier's
//   transaction bytes), its setmaxnreg down, the consumers' up, wgmma of
//   the tile's width, mbarrier waits, the fence before wgmma reads what the
//   prologue stored, the consumers' named barrier;
// - the output through shared memory in 16-byte stores (st.global.v4);
// - ptxas: no stack frame, no spills, at every head dim and overlap;
// - norm-fuse for sm_90a (FUSE): the K-prepare kernel, then the attention
//   in this family with the heuristic's tiles (norm::
//   getWarpgroupAttentionHeuristic: two consumer warpgroups, the widest key
//   tile the registers hold with the overlap), at head dims 64, 128, 256.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_90a" -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --input-file=%t.ptx --check-prefix=TX
// RUN: not norm-opt %s --norm-lower-to-ptx="chip=sm_90" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SM90

// RUN: norm-opt %S/attention-prepared-keys.mlir --norm-fuse --norm-lower-to-ptx="chip=sm_90a" -o %t.fuse.ptx
// RUN: FileCheck %s --input-file=%t.fuse.ptx --check-prefix=FUSE
// RUN: %ptxas -arch=sm_90a -v %t.fuse.ptx -o %t.fuse.cubin 2>&1 | FileCheck %s --check-prefix=FUSE-PTXAS

// FUSE-LABEL: .visible .entry norm_kprep_rms_ropeneox128_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8(
// FUSE-LABEL: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox128_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w12_r128_n128_s2_g2o(
//       FUSE: wgmma.mma_async
// FUSE-LABEL: .visible .entry norm_attn_causal_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w12_r128_n128_s2_g2o(
// FUSE-LABEL: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox256_d256_h8x1_bf16_{{[0-9a-f]+}}_v8_t32_w12_r128_n80_s2_g2(
// FUSE-LABEL: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox64_d64_h16x4_bf16_{{[0-9a-f]+}}_v8_t8_w12_r128_n128_s2_g2o(
// FUSE-PTXAS-COUNT-10: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// FUSE-PTXAS-NOT: bytes spill

// SM90: error: 'norm.attention_kernel' op the sm_90a attention family (warpgroups) needs wgmma, setmaxnreg and TMA: target sm_90a, not sm_90

// CHECK-NOT: .local
// CHECK-LABEL: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox128_pos_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w12_r128_n128_s2_g2(
//       CHECK: .param .align 64 .b8 [[KMAP:norm_attn_[a-z0-9_]+_g2_param_[0-9]+]][128],
//  CHECK-NEXT: .param .align 64 .b8 [[VMAP:norm_attn_[a-z0-9_]+_g2_param_[0-9]+]][128]
//  CHECK-NEXT: )
//   CHECK-DAG: mov.b64 {{.*}}, [[KMAP]];
//   CHECK-DAG: mov.b64 {{.*}}, [[VMAP]];
//   CHECK-DAG: rsqrt.approx
//   CHECK-DAG: sin.approx
//   CHECK-DAG: fence.proxy.async.shared::cta;
//   CHECK-DAG: mbarrier.init.shared::cta.b64
//   CHECK-DAG: setmaxnreg.dec.sync.aligned.u32 24;
//   CHECK-DAG: cvta.param.u64
//   CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//   CHECK-DAG: setmaxnreg.inc.sync.aligned.u32 240;
//   CHECK-DAG: mbarrier.try_wait.parity
//   CHECK-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
//   CHECK-DAG: bar.sync 1, 256;
//   CHECK-DAG: st.global.v4.b32
// CHECK-LABEL: .visible .entry norm_attn_d64_h8x8_f16_{{[0-9a-f]+}}_v8_t8_w8_r64_n64_s3_g1o(
//       CHECK: .param .align 64 .b8 {{.*}}[128],
//   CHECK-DAG: setmaxnreg.dec.sync.aligned.u32 56;
//   CHECK-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
//   CHECK-DAG: bar.sync 1, 128;
// CHECK-LABEL: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox256_d256_h8x1_bf16_{{[0-9a-f]+}}_v8_t32_w12_r128_n64_s2_g2(
// CHECK-LABEL: .visible .entry norm_attn_qkl2_kprep_d128_h16x2_bf16_{{[0-9a-f]+}}_v8_t16_w12_r128_n128_s2_g2o(
// CHECK-LABEL: .visible .entry norm_attn_causal_d64_h16x4_bf16_{{[0-9a-f]+}}_v8_t8_w16_r192_n80_s4_g3o(
//       CHECK: setmaxnreg.dec.sync.aligned.u32 32;
//       CHECK: setmaxnreg.inc.sync.aligned.u32 160;

// Each stage's full barrier expects the bytes of its boxes: K and V, head
// dim / 64 boxes each of block_n rows x 128 bytes (D=128, N=128: 4 boxes,
// 65536 bytes; D=64, N=64: 2 boxes, 16384), each box issued once a tile
// (and tile 0 before the loop when overlapped).
//  TX-LABEL: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox128_pos_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w12_r128_n128_s2_g2(
//       TX: mov.b32 [[BYTES:%r[0-9]+]], 65536;
//       TX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{%rd[0-9]+}}], [[BYTES]];
//  TX-COUNT-4: cp.async.bulk.tensor.2d
//   TX-NOT: cp.async.bulk.tensor
//  TX-LABEL: .visible .entry norm_attn_d64_h8x8_f16_{{[0-9a-f]+}}_v8_t8_w8_r64_n64_s3_g1o(
//       TX: mov.b32 [[SMALL:%r[0-9]+]], 16384;
//       TX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{%rd[0-9]+}}], [[SMALL]];
//  TX-COUNT-2: cp.async.bulk.tensor.2d
//       TX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{%rd[0-9]+}}], {{%r[0-9]+}};
//  TX-COUNT-2: cp.async.bulk.tensor.2d
//   TX-NOT: cp.async.bulk.tensor
//  TX-LABEL: .visible .entry

// PTXAS-COUNT-5: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: bytes spill

func.func @attention(%q128: tensor<?x4096xbf16>, %k128: tensor<?x1024xbf16>,
                     %w128: tensor<128xbf16>, %cu: tensor<?xi32>,
                     %pos: tensor<?xi32>,
                     %q64: tensor<?x512xf16>, %k64: tensor<?x512xf16>,
                     %q256: tensor<?x2048xbf16>, %k256: tensor<?x256xbf16>,
                     %w256: tensor<256xbf16>,
                     %q2: tensor<?x2048xbf16>, %k2: tensor<?x256xbf16>,
                     %q3: tensor<?x1024xbf16>, %k3: tensor<?x256xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x512xf16>, tensor<?x8xf32>,
        tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x1024xbf16>) {
  // Qwen3: RMS QK-Norm and NeoX rotary of q in the prologue, prepared keys,
  // GQA 4, causal; two consumer warpgroups, 128 keys a tile, two stages.
  %a = norm.attention_kernel %q128, %k128, %k128 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) positions(%pos : tensor<?xi32>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       causal, prepared_k, qk_norm = #norm.qk_norm<rms>,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 12, rows_per_cta = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  // Plain f16 at head dim 64 with the LSE: one consumer warpgroup, three
  // stages, the softmax overlapped.
  %b, %lse = norm.attention_kernel %q64, %k64, %k64 seqlens(%cu : tensor<?xi32>)
      scale(0.125)
      {num_heads = 8 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64,

       launch = #norm.launch<vector = 8, threads_per_row = 8, warps = 8, rows_per_cta = 64, block_n = 64, stages = 3, warpgroups = 1, overlap = 1>}
      : tensor<?x512xf16>, tensor<?x512xf16>, tensor<?x512xf16> -> tensor<?x512xf16>, tensor<?x8xf32>
  // Gemma 3 at head dim 256: one kv head, (1 + w), 64 keys a tile.
  %c = norm.attention_kernel %q256, %k256, %k256 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w256 : tensor<256xbf16>)
      scale(0.0625) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       causal, prepared_k, qk_norm = #norm.qk_norm<rms>,
       rope = #norm.rope<neox>, rope_theta = 1.0e+04 : f64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 12, rows_per_cta = 128, block_n = 64, stages = 2, warpgroups = 2>}
      : tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x2048xbf16>
  // L2 QK-Norm, overlapped at the register rule's edge (192 accumulators).
  %d = norm.attention_kernel %q2, %k2, %k2 seqlens(%cu : tensor<?xi32>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 16 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       prepared_k, qk_norm = #norm.qk_norm<l2>,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 12, rows_per_cta = 128, block_n = 128, stages = 2, warpgroups = 2, overlap = 1>}
      : tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x2048xbf16>
  // Three consumer warpgroups (160 registers each), four stages of 80 keys.
  %e = norm.attention_kernel %q3, %k3, %k3 seqlens(%cu : tensor<?xi32>)
      scale(0.125)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
       causal,
       launch = #norm.launch<vector = 8, threads_per_row = 8, warps = 16, rows_per_cta = 192, block_n = 80, stages = 4, warpgroups = 3, overlap = 1>}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %a, %b, %lse, %c, %d, %e : tensor<?x4096xbf16>, tensor<?x512xf16>, tensor<?x8xf32>,
      tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x1024xbf16>
}
