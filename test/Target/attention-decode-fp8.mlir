// Decode attention over an e4m3 KV cache (#33): pages of 16, head dim
// 128, GQA 4, QK-Norm + RoPE, one scale and one per kv head. The cached
// tiles' bytes land in FP8 tiles of their own (8 cp.async of 16 bytes a
// thread and tile of 64 keys; rows laid out as norm::getFp8TileLayout,
// free of bank conflicts) and widen in registers, as FlashInfer's and
// FA3's kernels do: an ldmatrix x2 of byte pairs gives a lane 4 keys' or
// values' bytes a matrix; one prmt picks the pairs an m16n8k16 B fragment
// takes and one cvt.rn.f16x2.e4m3x2 widens each pair, exact. The key
// fragment's bytes are 4 adjacent head columns, so the query tile holds
// its columns in the same order (within each 16, the even ones then the
// odd ones, once per CTA); the value fragment (ldmatrix .trans of byte
// pairs) holds 2 keys x 2 columns, so each lane accumulates 4 adjacent
// output columns in two n8 blocks. The mma.sync are f16 (the query
// rounded to f16 once: exact for |q| in [2^-14, 65504]); the key scale
// joins the softmax scale, the value scale the output's. A tile of new
// keys passes through the one bf16 tile (normalized, rotated, appended,
// rounded to e4m3 into the stage's FP8 tiles, then a barrier, which every
// tile takes: barriers stay out of branches), so the next tile's copies
// wait for it (norm::getAttentionWideStages).
//
// The heuristic's launch is the bf16 cache's: one tile of 16 query rows,
// 4 warps splitting 64-key tiles (norm::getMaxFp8DecodeBlockN; the shared
// memory, 69632 bytes, fits sm_89's 99 KiB). Per warp and cached tile
// (Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill
// --with=cp_async): 475 PTX, 32 mma.sync, 24 ldmatrix, 64
// cvt.rn.f16x2.e4m3x2, 32 prmt and 32 cvt.u16.u32 (the pairs' halves),
// against 359 for the bf16 cache at pages of 16
// (attention-decode-paged.mlir): 1900 a CTA and 64 keys. Before, a pass
// widened the tiles into bf16 tiles in shared memory (cvt 256 a warp: e4m3
// -> f16 -> f32 -> bf16), whose bf16 stages left room for 32-key tiles
// only, over 2 key warps and a second, padding row tile: 774 a warp and
// 32 keys by the script's earlier count, 6192 a CTA and 64 keys. Not
// measured. Registers: 203-207, no spill.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.ptx
// RUN: %python %S/Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill --with=cp_async %t.ptx | FileCheck %s --check-prefix=MIX
// RUN: FileCheck %s --check-prefix=PTX --implicit-check-not='mma.sync.aligned.m16n8k16.row.col.f32.bf16' < %t.ptx
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// sm_80 has no FP8 cvt: integer code widens the bytes.
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80 < %t.sm80.ptx

// MIX: norm_decode_qkrms_ropeneox128_p16_fp8_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 {{.*}} cvt=106 {{.*}} shared=0 {{.*}} total=475 per_mma=14.84
// MIX: norm_decode_qkrms_ropeneox128_p16_fp8h_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 {{.*}} cvt=106 {{.*}} shared=0 {{.*}} total=475 per_mma=14.84

// Appends round with satfinite; cached bytes arrive by ldmatrix of byte
// pairs (the values' transposed), a prmt picks a fragment's pairs, which
// widen a pair at a time into f16 mma.sync operands; no bf16 mma.sync
// anywhere in the PTX (implicit-check-not).
// PTX: .entry norm_decode_qkrms_ropeneox128_p16_fp8_
// PTX-DAG: cvt.rn.satfinite.e4m3x2.f32
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX-DAG: prmt.b32 {{.*}}, 0x3120U;
// PTX-DAG: cvt.rn.f16x2.e4m3x2
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
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
