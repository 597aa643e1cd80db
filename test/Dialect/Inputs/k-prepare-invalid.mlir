// The rules of norm.k_prepare and of prepared keys (test/Dialect/k-prepare.mlir).

func.func @nothing_to_do(%k: tensor<?x128xbf16>) {
  // expected-error @+1 {{needs a 'qk_norm' kind, a 'rope' style, or both}}
  %0 = norm.k_prepare %k {num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @weight_without_norm(%k: tensor<?x128xbf16>, %w: tensor<128xbf16>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{'k_weight', eps, offset and saved statistics need a 'qk_norm' kind}}
  %0 = norm.k_prepare %k k_weight(%w : tensor<128xbf16>) positions(%pos : tensor<?xi32>)
      {num_kv_heads = 1 : i64, head_dim = 128 : i64, rope = #norm.rope<neox>, rope_theta = 1.0e+04 : f64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @norm_without_eps(%k: tensor<?x128xbf16>) {
  // expected-error @+1 {{'qk_norm' needs eps}}
  %0 = norm.k_prepare %k {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @heads_do_not_fit(%k: tensor<?x256xbf16>) {
  // expected-error @+1 {{'k' must have num_kv_heads (3) x head_dim (128) columns, got 'tensor<?x256xbf16>'}}
  %0 = norm.k_prepare %k eps(1.0e-06) {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 3 : i64, head_dim = 128 : i64}
      : tensor<?x256xbf16> -> tensor<?x256xbf16>
  return
}

// -----

// A rotation by index needs the sequences; with positions they are not read.
func.func @rope_without_offsets(%k: tensor<?x128xbf16>) {
  // expected-error @+1 {{'cu_seqlens' is there exactly when keys turn by their index within their sequence ('rope' without 'positions')}}
  %0 = norm.k_prepare %k eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @offsets_with_positions(%k: tensor<?x128xbf16>, %cu: tensor<2xi32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{'cu_seqlens' is there exactly when keys turn by their index}}
  %0 = norm.k_prepare %k seqlens(%cu : tensor<2xi32>) positions(%pos : tensor<?xi32>)
      {num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @saved_with_rope(%k: tensor<?x128xbf16>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{save_stats keeps the statistics for the QK-Norm's backward}}
  %0, %1 = norm.k_prepare %k positions(%pos : tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16> saved_rstd(tensor<?x1xf32>)
  return
}

// -----

func.func @values_unlike_keys(%k: tensor<?x128xbf16>, %v: tensor<?x128xf16>) {
  // expected-error @+1 {{'v_out' must have the type of 'v'}}
  %0, %1 = norm.k_prepare %k values(%v : tensor<?x128xf16>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @prepared_keys_with_k_weight(%q: tensor<?x128xbf16>, %cu: tensor<2xi32>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{prepared keys were normalized before: no 'k_norm_weight'}}
  %0 = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<2xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.1) qk_norm_eps(1.0e-06)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       prepared_k, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @prepared_plain_keys(%q: tensor<?x128xbf16>, %cu: tensor<2xi32>) {
  // expected-error @+1 {{'prepared_k' needs a 'qk_norm' kind or a 'rope' style for q}}
  %0 = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<2xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, prepared_k}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @cache_without_values(%k: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>) {
  // expected-error @+1 {{a cache takes the values ('v') and the sequences ('cu_seqlens') of the new tokens}}
  %0 = norm.k_prepare %k seqlens(%cu : tensor<?xi32>)
      cache(%c, %c lengths %len : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @cache_columns(%k: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x256xbf16>, %len: tensor<?xi32>) {
  // expected-error @+1 {{'k_cache' must have the columns of 'k' (128), got 'tensor<?x256xbf16>'}}
  %0, %1 = norm.k_prepare %k values(%k : tensor<?x128xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%c, %c lengths %len : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x256xbf16>, tensor<?x256xbf16>
  return
}

// -----

func.func @cache_results(%k: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<64x128xbf16>, %len: tensor<?xi32>) {
  // expected-error @+1 {{'k_out' and 'v_out' are the updated caches, of their types}}
  %0, %1 = norm.k_prepare %k values(%k : tensor<?x128xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%c, %c lengths %len : tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @cache_saves_no_statistics(%k: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>) {
  // expected-error @+1 {{a cache write saves no statistics}}
  %0, %1, %2 = norm.k_prepare %k values(%k : tensor<?x128xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%c, %c lengths %len : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16> saved_rstd(tensor<?x1xf32>)
  return
}

// -----

func.func @pages_without_size(%k: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'pages' (the block table) and 'cache_block_size' go together}}
  %0:2 = norm.k_prepare %k values(%k : tensor<?x128xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%c, %c lengths %len : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>) pages(%t : tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @pages_without_cache(%k: tensor<?x128xbf16>, %t: tensor<?xi32>) {
  // expected-error @+1 {{'pages' page a KV cache: give 'cache' too}}
  %0 = norm.k_prepare %k pages(%t : tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64} : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @pages_of_24(%k: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{a paged KV cache's block size must be a power of two in [1, 256] (vLLM's 16, SGLang's 1), got 24}}
  %0:2 = norm.k_prepare %k values(%k : tensor<?x128xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%c, %c lengths %len : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>) pages(%t : tensor<?xi32>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, head_dim = 128 : i64, cache_block_size = 24 : i64} : tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}
