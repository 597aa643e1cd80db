// Diagnostics of norm.rotary (RUN line in ../rotary.mlir).

func.func @width(%q: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  // expected-error @below {{'input' must have num_heads (16) x head_dim (128) columns, got 'tensor<?x4096xbf16>'}}
  %0 = norm.rotary <neox> %q {num_heads = 16 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x4096xbf16>
  return %0 : tensor<?x4096xbf16>
}

// -----

func.func @rotary_dim(%q: tensor<?x256xbf16>) -> tensor<?x256xbf16> {
  // expected-error @below {{gptj rotary embeddings need an even rotary dim from 2 to the head dim (128), got 13}}
  %0 = norm.rotary <gptj> %q {num_heads = 2 : i64, head_dim = 128 : i64, rotary_dim = 13 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x256xbf16>
  return %0 : tensor<?x256xbf16>
}

// -----

func.func @theta(%q: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{rope_theta must not be 1}}
  %0 = norm.rotary <neox> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0 : f64} : tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}

// -----

func.func @heads(%q: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{num_heads must be positive, got 0}}
  %0 = norm.rotary <neox> %q {num_heads = 0 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}

// -----

func.func @both_angles(%q: tensor<?x128xbf16>, %t: tensor<?x128xf32>) -> tensor<?x128xbf16> {
  // expected-error @below {{the angles come from 'rope_table' or from 'rope_theta', not both}}
  %0 = norm.rotary <neox> %q rope_table(%t : tensor<?x128xf32>) {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}

// -----

func.func @no_angles(%q: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{'rope' needs 'rope_theta' or a 'rope_table'}}
  %0 = norm.rotary <neox> %q {num_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}

// -----

func.func @table_columns(%q: tensor<?x256xbf16>, %t: tensor<?x128xf32>) -> tensor<?x256xbf16> {
  // expected-error @below {{'rope_table' must have rotary_dim (64) columns, got 'tensor<?x128xf32>'}}
  %0 = norm.rotary <gptj> %q rope_table(%t : tensor<?x128xf32>) {num_heads = 2 : i64, head_dim = 128 : i64, rotary_dim = 64 : i64} : tensor<?x256xbf16>
  return %0 : tensor<?x256xbf16>
}

// -----

func.func @positions_count(%q: tensor<5x128xbf16>, %p: tensor<4xi32>) -> tensor<5x128xbf16> {
  // expected-error @below {{'positions' must hold one position per token ('tensor<5x128xbf16>'), got 'tensor<4xi32>'}}
  %0 = norm.rotary <neox> %q positions(%p : tensor<4xi32>) {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<5x128xbf16>
  return %0 : tensor<5x128xbf16>
}

// -----

func.func @table_type(%q: tensor<?x128xbf16>, %t: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{operand #1 must be 2D tensor of 32-bit float values}}
  %0 = norm.rotary <neox> %q rope_table(%t : tensor<?x128xbf16>) {num_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}
