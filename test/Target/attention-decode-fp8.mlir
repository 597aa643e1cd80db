// Decode attention over an e4m3 KV cache (#33): pages of 16, head dim
// 128, GQA 4, QK-Norm + RoPE, one scale and one per kv head. The cached
// tiles' bytes land in FP8 tiles of their own (4 cp.async of 16 bytes a
// thread and tile of 32 keys) and widen into the bf16 tiles, exact (the
// key scale joins the softmax scale, the value scale the output's): on
// sm_90 one cvt.rn.f16x2.e4m3x2 a pair, then f16 -> f32 -> bf16 (no cvt
// from e4m3 to bf16 before sm_100). Key tiles of 32 (the heuristic's for
// FP8 at head dim 128, norm::getMaxFp8DecodeBlockN, which two stages of
// fit sm_89's 99 KiB), so 2 warps split each tile's keys and the CTA holds
// two tiles of 16 query rows (the second one padding at GQA 4; the tuner
// also tries 64 keys over one tile of rows where shared memory holds
// them): 774 PTX a warp and cached tile (24.2 per key of its slice of 16,
// against 6.3 for the bf16 cache's at pages of 16,
// attention-decode-paged.mlir); the widening pass (cvt 256, alu_f32 158)
// is most of the difference, and the next step moves it into the
// fragments (FlashInfer's and FA3's in-register dequant). Not measured.
// Registers: 201-219, no spill.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.ptx
// RUN: %python %S/Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill %t.ptx | FileCheck %s --check-prefix=MIX
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// sm_80 has no FP8 cvt: integer code widens the bytes.
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.ptx

// MIX: norm_decode_qkrms_ropeneox128_p16_fp8_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r32_n32_s2 mma=32 {{.*}} total=774 per_mma=24.19
// MIX: norm_decode_qkrms_ropeneox128_p16_fp8h_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r32_n32_s2 mma=32 {{.*}} total=774 per_mma=24.19

// Appends round with satfinite; cached bytes widen a pair at a time.
// PTX: .entry norm_decode_qkrms_ropeneox128_p16_fp8_
// PTX-DAG: cvt.rn.satfinite.e4m3x2.f32
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// SM80: .entry norm_decode_qkrms_ropeneox128_p16_fp8_
// SM80-NOT: e4m3x2

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-2: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @decode_fp81(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?xi32>, %kc: tensor<?x1024xf8E4M3FN>, %vc: tensor<?x1024xf8E4M3FN>,
    %ks: tensor<1xf32>, %vs: tensor<1xf32>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%bt : tensor<?xi32>)
      scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
     -> tensor<?x4096xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
}

func.func @decode_fp88(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?xi32>, %kc: tensor<?x1024xf8E4M3FN>, %vc: tensor<?x1024xf8E4M3FN>,
    %ks: tensor<8xf32>, %vs: tensor<8xf32>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%bt : tensor<?xi32>)
      scales(%ks, %vs : tensor<8xf32>, tensor<8xf32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
     -> tensor<?x4096xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
}
