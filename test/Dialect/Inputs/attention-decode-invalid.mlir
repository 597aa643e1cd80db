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
