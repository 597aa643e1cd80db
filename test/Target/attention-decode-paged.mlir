// Decode attention over paged KV caches (#33): the key loop per tile of
// cached keys at head dim 128, GQA 4, QK-Norm + RoPE (the heuristic's
// launch: one tile of 16 query rows shared by 4 warps that split each
// 64-key tile, 2 stages; 128 threads copy a 64-row tile, each thread every
// 8th row of one 16-byte column), pages of 1 (SGLang), 16 (vLLM) and 64
// rows. Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill, the
// iteration that prefetches a whole tile of cached keys, per warp
// (--with=cp_async picks the path that copies); the contiguous cache's is
// 297 (attention-decode-mix.mlir).
//   pages of 64: one block-table load a tile and thread, then the tile's
//     8 rows of the thread with norm.async_copy_rows (one add and one
//     cp.async a row): 306 (+9);
//   pages of 16: 4 loads (2 rows a page): 359;
//   pages of 1: a load a row: 367;
//   FlashInfer's ragged table, pages of 16: 359, vLLM's: the cached keys
//     lie inside the sequence's pages, so no lookup guards its load (was
//     +8; the K-prepare kernel's appends past the capacity keep theirs).
// (Counted before the script split blocks at guarded branches: 349, 402,
// 406 and 410, every path charged with the append's stores.)
// The block table is read-only (ld.global.nc); no registers spill.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.ptx
// RUN: %python %S/Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill --with=cp_async %t.ptx | FileCheck %s --check-prefix=MIX
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// MIX: norm_decode_qkrms_ropeneox128_p1_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 {{.*}} ld_global=8 {{.*}} total=367 per_mma=11.47
// MIX: norm_decode_qkrms_ropeneox128_p16_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 {{.*}} ld_global=4 {{.*}} total=359 per_mma=11.22
// MIX: norm_decode_qkrms_ropeneox128_p64_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 {{.*}} ld_global=1 {{.*}} total=306 per_mma=9.56
// MIX: norm_decode_qkrms_ropeneox128_p16i_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 {{.*}} ld_global=4 {{.*}} total=359 per_mma=11.22

// The table's parameter (after q, k, v, q_weight, k_weight, cu_seqlens,
// cache_seqlens) claims 4-byte alignment, and its entries load through the
// non-coherent cache.
// PTX: .entry norm_decode_qkrms_ropeneox128_p1_
// PTX: .param .u64 .ptr .align 4 norm_decode_qkrms_ropeneox128_p1_{{.*}}_param_7,
// PTX: ld.global.nc.b32

// A ragged table (FlashInfer's): kv_indices and kv_indptr after
// cache_seqlens, both 4-byte aligned (no spills either).
// PTX: .entry norm_decode_qkrms_ropeneox128_p16i_
// PTX: .param .u64 .ptr .align 4 norm_decode_qkrms_ropeneox128_p16i_{{.*}}_param_7,
// PTX-NEXT: .param .u64 .ptr .align 4 norm_decode_qkrms_ropeneox128_p16i_{{.*}}_param_8,

// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-4: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @decode_pages1(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%bt : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, cache_block_size = 1 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

func.func @decode_pages16(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%bt : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

func.func @decode_pages64(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%bt : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, cache_block_size = 64 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// FlashInfer's ragged table (kv_indices, kv_indptr), pages of 16: the
// sequence's first entry and page count from page_indptr once, then each
// lookup guarded by the sequence's capacity (an entry past its pages is
// never loaded).
func.func @decode_ragged16(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %bt: tensor<?xi32>, %ip: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%bt : tensor<?xi32>) page_indptr(%ip : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}
