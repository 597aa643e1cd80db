// Decode attention's key loop per tile of cached keys (#33), at head dim
// 128 with QK-Norm + RoPE, GQA 1, 4 and 8 at one new token (the
// heuristic's launch: one tile of 16 query rows, which one token's group
// of heads fills, shared by 4 warps that split each 64-key tile into
// slices of 16, then merge their (max, sum, output) once in shared memory).
// Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill
// --with=cp_async: the iteration that prefetches a whole tile of cached
// keys (one add and one cp.async a row, norm.async_copy_rows; a split's
// last, partial tile and the new keys take the zero-filling copies) and
// has no new keys to normalize, rotate and append, per warp: 297 PTX
// instructions, 32 mma.sync (16 for Q K^T over its 16 keys, 16 for P V),
// 24 ldmatrix, 10 ex2. (332 as counted before the script split blocks at
// guarded branches: it charged every path with the append's stores.)
//
// Before the split, 4 warps of 16 rows each (r64) issued 650 per warp and
// tile, 128 mma.sync, of which warps 1 to 3 (no real row) and all but 1, 4
// or 8 rows of warp 0 were padding: 4 x 128 mma.sync a tile against 4 x 32
// now; no warp computes a padding tile. Within the one m16 tile the rows
// past the group (15, 12 and 8 of 16) remain: mma.sync has no narrower
// shape. Not measured on a GPU.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: %python %S/Inputs/ptx-loop-mix.py --shortest --without=cp_async_fill --with=cp_async %t.sm90.ptx | FileCheck %s --check-prefix=MIX
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// MIX: norm_decode_qkrms_ropeneox128_d128_h8x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 async_sync=2 ex2=10 sincos=0 rsqrt=0 fma_f32=8 alu_f32=78 max_f32=12 cvt=7 shfl=4 bar=4 setp=15 selp=15 shared=0 ld_global=0 st_global=0 branch=6 int64=56 int32=5 other=3 total=297 per_mma=9.28 masked=297
// MIX: norm_decode_qkrms_ropeneox128_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 async_sync=2 ex2=10 sincos=0 rsqrt=0 fma_f32=8 alu_f32=78 max_f32=12 cvt=7 shfl=4 bar=4 setp=15 selp=15 shared=0 ld_global=0 st_global=0 branch=6 int64=56 int32=5 other=3 total=297 per_mma=9.28 masked=297
// MIX: norm_decode_qkrms_ropeneox128_d128_h32x4_bf16_{{[0-9a-f]+}}_v8_t16_w4_r16_n64_s2 mma=32 ldmatrix=24 cp_async_fill=0 cp_async=16 async_sync=2 ex2=10 sincos=0 rsqrt=0 fma_f32=8 alu_f32=78 max_f32=12 cvt=7 shfl=4 bar=4 setp=15 selp=15 shared=0 ld_global=0 st_global=0 branch=6 int64=56 int32=5 other=3 total=297 per_mma=9.28 masked=297

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-3: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// GQA 1 (8 q heads, 8 kv heads).
func.func @decode_gqa1(%q: tensor<?x1024xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 8 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// GQA 4 (Qwen3, Llama 3 8B).
func.func @decode_gqa4(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// GQA 8.
func.func @decode_gqa8(%q: tensor<?x4096xbf16>, %k: tensor<?x512xbf16>, %v: tensor<?x512xbf16>,
    %cu: tensor<?xi32>, %len: tensor<?xi32>, %kc: tensor<?x512xbf16>, %vc: tensor<?x512xbf16>,
    %w: tensor<128xbf16>) -> (tensor<?x4096xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 4 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>
     -> tensor<?x4096xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>
}
