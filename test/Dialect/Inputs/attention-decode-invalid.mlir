// Diagnostics of norm.attention_decode (RUN line in ../attention-decode.mlir).

func.func @cache_columns(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %kc: tensor<?x256xbf16>, %len: tensor<?xi32>) {
  // expected-error @below {{'k_cache' must have the columns of 'k' (128), got 'tensor<?x256xbf16>'}}
  %o, %a, %b = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%kc, %kc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x128xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return
}

// -----

func.func @f32(%q: tensor<?x128xf32>, %cu: tensor<?xi32>, %len: tensor<?xi32>) {
  // expected-error @below {{attention reads and writes bf16 or f16}}
  %o, %a, %b = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%q, %q lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
     -> tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32>
  return
}

// -----

func.func @rope_without_angles(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>) {
  // expected-error @below {{'rope' needs 'rope_theta' or a 'rope_table'}}
  %o, %a, %b = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%q, %q lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, rope = #norm.rope<neox>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

// A static cu_seqlens of one offset is a batch of no sequence.
func.func @no_batch(%q: tensor<?x128xbf16>, %cu: tensor<1xi32>, %len: tensor<?xi32>) {
  // expected-error @below {{'cu_seqlens' holds batch + 1 offsets, so at least 2 (a batch of one sequence), got 'tensor<1xi32>'}}
  %o, %a, %b = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<1xi32>)
      cache(%q, %q lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @partial_pages(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<100x128xbf16>, %len: tensor<?xi32>, %t: tensor<?xi32>) {
  // expected-error @below {{the caches' 100 rows are not whole pages of 16 rows (cache_block_size)}}
  %o:3 = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) pages(%t : tensor<?xi32>) scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<100x128xbf16>, tensor<100x128xbf16> -> tensor<?x128xbf16>, tensor<100x128xbf16>, tensor<100x128xbf16>
  return
}

// -----

func.func @size_without_pages(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>) {
  // expected-error @below {{'pages' (the block table) and 'cache_block_size' go together}}
  %o:3 = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @indptr_without_pages(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @below {{'page_indptr' (a ragged table's offsets) needs 'pages'}}
  %o:3 = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) page_indptr(%p : tensor<?xi32>) scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @pages_of_512(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>, %t: tensor<?xi32>) {
  // expected-error @below {{a paged KV cache's block size must be a power of two in [1, 256] (vLLM's 16, SGLang's 1), got 512}}
  %o:3 = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) pages(%t : tensor<?xi32>) scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, cache_block_size = 512 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @fp8_without_scales(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xf8E4M3FN>, %len: tensor<?xi32>) {
  // expected-error @below {{'k_cache' must have the element type of 'q' ('bf16'), got 'tensor<?x128xf8E4M3FN>'}}
  %o:3 = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xf8E4M3FN>, tensor<?x128xf8E4M3FN> -> tensor<?x128xbf16>, tensor<?x128xf8E4M3FN>, tensor<?x128xf8E4M3FN>
  return
}

// -----

func.func @scales_of_bf16(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %c: tensor<?x128xbf16>, %len: tensor<?xi32>, %s: tensor<1xf32>) {
  // expected-error @below {{an f8E4M3FN cache takes 'scales' (k_scale, v_scale), and only it}}
  %o:3 = norm.attention_decode %q, %q, %q seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) scales(%s, %s : tensor<1xf32>, tensor<1xf32>) scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @scales_of_three(%q: tensor<?x512xbf16>, %k: tensor<?x256xbf16>, %cu: tensor<?xi32>, %c: tensor<?x256xf8E4M3FN>, %len: tensor<?xi32>, %s: tensor<3xf32>) {
  // expected-error @below {{a cache scale holds one element or one per kv head (2), got 'tensor<3xf32>'}}
  %o:3 = norm.attention_decode %q, %k, %k seqlens(%cu : tensor<?xi32>) cache(%c, %c lengths %len : tensor<?xi32>) scales(%s, %s : tensor<3xf32>, tensor<3xf32>) scale(0.125)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64}
      : tensor<?x512xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xf8E4M3FN>, tensor<?x256xf8E4M3FN> -> tensor<?x512xbf16>, tensor<?x256xf8E4M3FN>, tensor<?x256xf8E4M3FN>
  return
}
