// Diagnostics of norm.attention_decode_kernel (RUN line in
// ../attention-decode-kernel.mlir): the kernel model's rules and the op's.

func.func @head_dim(%q: tensor<?x288xbf16>, %k: tensor<?x72xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x288xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>) {
  // expected-error @below {{attention needs a head dim that is a multiple of 16 from 16 to 256, got 72}}
  %o, %a, %b = norm.attention_decode_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>)
      cache(%k, %k lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 72 : i64}
      : tensor<?x288xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>
     -> tensor<?x288xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>
  return %o, %a, %b : tensor<?x288xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16>
}

// -----

func.func @cache_columns(%q: tensor<?x256xbf16>, %k: tensor<?x128xbf16>, %kc: tensor<?x256xbf16>,
                         %cu: tensor<?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>) {
  // expected-error @below {{'k_cache' must have the columns of 'k' (128), got 'tensor<?x256xbf16>'}}
  %o, %a, %b = norm.attention_decode_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>)
      cache(%kc, %kc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x256xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %o, %a, %b : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
}

// -----

func.func @cache_type(%q: tensor<?x128xbf16>, %kc: tensor<?x128xf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x128xbf16>, tensor<?x128xf16>, tensor<?x128xf16>) {
  // expected-error @below {{'k_cache' must have the element type of 'q' ('bf16'), got 'tensor<?x128xf16>'}}
  %o, %a, %b = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%kc, %kc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xf16>, tensor<?x128xf16>
     -> tensor<?x128xbf16>, tensor<?x128xf16>, tensor<?x128xf16>
  return %o, %a, %b : tensor<?x128xbf16>, tensor<?x128xf16>, tensor<?x128xf16>
}

// -----

func.func @cache_shapes(%q: tensor<?x128xbf16>, %kc: tensor<64x128xbf16>, %vc: tensor<32x128xbf16>,
                        %cu: tensor<?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<32x128xbf16>) {
  // expected-error @below {{'k_cache' and 'v_cache' must have the same shape, got 'tensor<64x128xbf16>' and 'tensor<32x128xbf16>'}}
  %o, %a, %b = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<32x128xbf16>
     -> tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<32x128xbf16>
  return %o, %a, %b : tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<32x128xbf16>
}

// -----

func.func @updated_types(%q: tensor<?x128xbf16>, %kc: tensor<64x128xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<64x128xbf16>) {
  // expected-error @below {{the updated caches have the types of the caches}}
  %o, %a, %b = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%kc, %kc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<64x128xbf16>, tensor<64x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<64x128xbf16>
  return %o, %a, %b : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<64x128xbf16>
}

// -----

func.func @rope_without_theta(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>)
    -> (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>) {
  // expected-error @below {{'rope' needs 'rope_theta'}}
  %o, %a, %b = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>)
      cache(%q, %q lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, rope = #norm.rope<neox>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return %o, %a, %b : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
}

// -----

func.func @empty_offsets(%q: tensor<?x128xbf16>, %cu: tensor<0xi32>, %len: tensor<?xi32>)
    -> (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>) {
  // expected-error @below {{'cu_seqlens' holds batch + 1 offsets, so at least 2 (a batch of one sequence), got 'tensor<0xi32>'}}
  %o, %a, %b = norm.attention_decode_kernel %q, %q, %q seqlens(%cu : tensor<0xi32>)
      cache(%q, %q lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return %o, %a, %b : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
}
