// RUN: norm-opt %s --split-input-file | norm-opt --split-input-file | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-roundtrip > /dev/null
// RUN: norm-opt %S/Inputs/k-prepare-invalid.mlir --split-input-file --verify-diagnostics

// Qwen 3's keys: RMS QK-Norm, then NeoX RoPE by index within each sequence
// of the batch, read by an attention kernel that normalizes and rotates q
// alone.
// CHECK-LABEL: func.func @qwen3
//       CHECK: %[[KP:.*]] = norm.k_prepare %{{.*}} seqlens(%{{.*}} : tensor<3xi32>) k_weight(%{{.*}} : tensor<128xbf16>) eps(1.0e-06) {head_dim = 128 : i64, num_kv_heads = 8 : i64, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
//       CHECK: norm.attention_kernel %{{.*}}, %[[KP]], %{{.*}} seqlens(%{{.*}} : tensor<3xi32>) q_norm_weight(%{{.*}} : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, prepared_k, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
func.func @qwen3(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
                 %cu: tensor<3xi32>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> tensor<?x4096xbf16> {
  %kp = norm.k_prepare %k seqlens(%cu : tensor<3xi32>) k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  %o = norm.attention_kernel %q, %kp, %v seqlens(%cu : tensor<3xi32>)
      q_norm_weight(%wq : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       prepared_k, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>,
       rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %o : tensor<?x4096xbf16>
}

// -----

// Keys and values in one launch (v copied beside its keys), Gemma 3's
// (1 + w), statistics saved for the backward (no rope), and a rotation
// alone at explicit positions from a table (no cu_seqlens).
// CHECK-LABEL: func.func @forms
//       CHECK: norm.k_prepare %{{.*}} values(%{{.*}} : tensor<?x256xf16>) k_weight(%{{.*}} : tensor<256xf16>) eps(1.0e-06) offset(1.0) {head_dim = 256 : i64, num_kv_heads = 1 : i64, qk_norm = #norm.qk_norm<mean_var>} : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<?x256xf16> saved_mean(tensor<?x1xf32>) saved_rstd(tensor<?x1xf32>)
//       CHECK: norm.k_prepare %{{.*}} positions(%{{.*}} : tensor<?xi32>) rope_table(%{{.*}} : tensor<?x64xf32>) {head_dim = 128 : i64, num_kv_heads = 2 : i64, rope = #norm.rope<gptj>, rotary_dim = 64 : i64} : tensor<?x256xf16> -> tensor<?x256xf16>
func.func @forms(%k: tensor<?x256xf16>, %v: tensor<?x256xf16>, %w: tensor<256xf16>,
                 %pos: tensor<?xi32>, %table: tensor<?x64xf32>) {
  %kn, %vn, %mean, %rstd = norm.k_prepare %k values(%v : tensor<?x256xf16>) k_weight(%w : tensor<256xf16>)
      eps(1.0e-06) offset(1.0)
      {qk_norm = #norm.qk_norm<mean_var>, num_kv_heads = 1 : i64, head_dim = 256 : i64}
      : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<?x256xf16>
        saved_mean(tensor<?x1xf32>) saved_rstd(tensor<?x1xf32>)
  %kr = norm.k_prepare %k positions(%pos : tensor<?xi32>) rope_table(%table : tensor<?x64xf32>)
      {num_kv_heads = 2 : i64, head_dim = 128 : i64, rope = #norm.rope<gptj>, rotary_dim = 64 : i64}
      : tensor<?x256xf16> -> tensor<?x256xf16>
  return
}

// -----

// A chunked-prefill step of Qwen 3: keys normalized and rotated at their
// cache positions, written with the values into the KV cache (the results
// are the updated caches).
// CHECK-LABEL: func.func @into_cache
//       CHECK: %{{.*}}, %{{.*}} = norm.k_prepare %{{.*}} values(%{{.*}} : tensor<?x1024xbf16>) seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xi32>) k_weight(%{{.*}} : tensor<128xbf16>) eps(1.0e-06) {head_dim = 128 : i64, num_kv_heads = 8 : i64, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?x1024xbf16>
func.func @into_cache(%k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>, %cu: tensor<?xi32>,
                      %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>, %len: tensor<?xi32>,
                      %wk: tensor<128xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %kc2, %vc2 = norm.k_prepare %k values(%v : tensor<?x1024xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xi32>)
      k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %kc2, %vc2 : tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// -----

// The same into SGLang's token pool: a paged cache of pages of one row,
// each new token's row looked up in its sequence's block table.
// CHECK-LABEL: func.func @into_pages
//       CHECK: norm.k_prepare %{{.*}} values(%{{.*}} : tensor<?x1024xbf16>) seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xi32>) pages(%{{.*}} : tensor<?xi32>) k_weight(%{{.*}} : tensor<128xbf16>) eps(1.0e-06) {cache_block_size = 1 : i64, head_dim = 128 : i64
func.func @into_pages(%k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>, %cu: tensor<?xi32>,
                      %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>, %len: tensor<?xi32>,
                      %table: tensor<?xi32>, %wk: tensor<128xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %kc2, %vc2 = norm.k_prepare %k values(%v : tensor<?x1024xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xi32>)
      pages(%table : tensor<?xi32>) k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64, cache_block_size = 1 : i64}
      : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %kc2, %vc2 : tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// -----

// QK-Norm + RoPE + the write into an e4m3 cache of one scale.
// CHECK-LABEL: func.func @into_fp8
//       CHECK: norm.k_prepare {{.*}} cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>, tensor<?xi32>) scales(%{{.*}}, %{{.*}} : tensor<1xf32>, tensor<1xf32>)
func.func @into_fp8(%k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>, %cu: tensor<?xi32>,
                    %kc: tensor<?x1024xf8E4M3FN>, %vc: tensor<?x1024xf8E4M3FN>, %len: tensor<?xi32>,
                    %ks: tensor<1xf32>, %vs: tensor<1xf32>) -> (tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>) {
  %kc2, %vc2 = norm.k_prepare %k values(%v : tensor<?x1024xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>, tensor<?xi32>)
      scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16> -> tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
  return %kc2, %vc2 : tensor<?x1024xf8E4M3FN>, tensor<?x1024xf8E4M3FN>
}
