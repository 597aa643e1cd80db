// One case per verifier rule of the norm dialect, type constraint and
// attribute rule, then parse errors; each must give its diagnostic at the
// location of the offending op.
// RUN: norm-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

func.func @i32_input(%x: tensor<?x8xi32>) {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?x8xi32>'}}
  %0 = "norm.rms_norm"(%x) <{eps = 1.0e-06 : f64}> : (tensor<?x8xi32>) -> tensor<?x8xi32>
  return
}

// -----

func.func @f64_weight(%x: tensor<?x8xf32>, %w: tensor<8xf64>) {
  // expected-error @+1 {{operand #1 must be 1D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<8xf64>'}}
  %0 = norm.rms_norm %x weight(%w : tensor<8xf64>) eps(1.0e-06) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f8_result(%x: tensor<?x8xf8E4M3FN>) {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?x8xf8E4M3FN>'}}
  %0 = norm.cast %x : tensor<?x8xf8E4M3FN> to tensor<?x8xf32>
  return
}

// -----

func.func @f64_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{result #0 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?x8xf64>'}}
  %0 = norm.cast %x : tensor<?x8xf32> to tensor<?x8xf64>
  return
}

// -----

func.func @rank3_input(%x: tensor<2x?x8xf32>) {
  // expected-error @+1 {{operand #0 must be 2D tensor}}
  %0 = norm.l2_norm %x eps(1.0e-12) : tensor<2x?x8xf32> -> tensor<2x?x8xf32>
  return
}

// -----

func.func @unranked_input(%x: tensor<*xf32>) {
  // expected-error @+1 {{operand #0 must be 2D tensor}}
  %0 = "norm.l2_norm"(%x) <{eps = 1.0e-12 : f64}> : (tensor<*xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f16_allreduce(%a: f16) {
  // expected-error @+1 {{operand #0 must be variadic of 32-bit float, but got 'f16'}}
  %0 = norm.row_allreduce %a {group_size = 32 : i64} : f16
  return
}

// -----

func.func @f32_eps_attr(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{attribute 'eps' failed to satisfy constraint: 64-bit float attribute}}
  %0 = "norm.rms_norm"(%x) <{eps = 1.0e-06 : f32}> : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @missing_eps(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{requires attribute 'eps'}}
  %0 = "norm.rms_norm"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @symbol_kernel_attr(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{Invalid attribute `kernel` in property conversion: "k0"}}
  %0 = "norm.fused_row"(%x) <{eps = 1.0e-06 : f64, statistic = #norm.statistic<rms>, kernel = "k0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0>}> : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Operand segments (generic form)
//===----------------------------------------------------------------------===//

// -----

func.func @segment_sum(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{operand count (2) does not match with the total size (3) specified in attribute 'operandSegmentSizes'}}
  %0 = "norm.layer_norm"(%x, %w) <{eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_count(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{size mismatch in attribute conversion: 2 vs 3}}
  %0 = "norm.layer_norm"(%x, %w) <{eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1>}> : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_negative(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'operandSegmentSizes' attribute cannot have negative elements}}
  %0 = "norm.layer_norm"(%x, %w) <{eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, -1, 2>}> : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_two_weights(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{operand group starting at #1 requires 0 or 1 element, but found 2}}
  %0 = "norm.layer_norm"(%x, %w, %w) <{eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 2, 0>}> : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_no_input(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{operand group starting at #0 requires 1 element, but found 0}}
  %0 = "norm.layer_norm"(%w, %w) <{eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 0, 1, 1>}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_two_inputs(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{operand group starting at #0 requires 1 element, but found 2}}
  %0 = "norm.fused_row"(%x, %x) <{eps = 1.0e-06 : f64, statistic = #norm.statistic<rms>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0>}> : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_no_variance(%x: tensor<?x8xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{operand group starting at #2 requires 1 element, but found 0}}
  %0 = "norm.batch_norm_inference"(%x, %m, %m) <{eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>}> : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @segment_no_v(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>, %w: tensor<64xf16>) {
  // expected-error @+1 {{operand group starting at #2 requires 1 element, but found 0}}
  %0 = "norm.attention"(%q, %k, %w) <{head_dim = 64 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0, 0>, qk_norm = #norm.qk_norm<rms>, qk_norm_eps = 1.0e-06 : f64, scale = 1.250000e-01 : f64}> : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
  return
}

// -----

func.func @segment_no_qkv(%w: tensor<128xf16>) {
  // expected-error @+1 {{operand group starting at #0 requires 1 element, but found 0}}
  %0:2 = "norm.qk_norm_prologue"(%w) <{eps = 1.0e-06 : f64, head_dim = 128 : i64, kind = #norm.qk_norm<rms>, num_kv_heads = 1 : i64, num_q_heads = 1 : i64, operandSegmentSizes = array<i32: 0, 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<128xf16>) -> (tensor<?x128xf16>, tensor<?x128xf16>)
  return
}

// -----

func.func @no_operands() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %0 = "norm.rms_norm"() <{eps = 1.0e-06 : f64}> : () -> tensor<?x8xf32>
  return
}

// -----

func.func @fused_row_three_results(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{result group starting at #1 requires 0 or 1 element, but found 2}}
  %0:3 = "norm.fused_row"(%x) <{eps = 1.0e-06 : f64, statistic = #norm.statistic<rms>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 2, 0, 0, 0>}> : (tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Shapes shared by all ops
//===----------------------------------------------------------------------===//

// -----

func.func @dynamic_hidden(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{'input' must have a static hidden size, got 'tensor<?x?xf32>'}}
  %0 = norm.rms_norm %x eps(1.0e-06) : tensor<?x?xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @empty_hidden(%x: tensor<?x0xf32>) {
  // expected-error @+1 {{'input' must have a non-empty hidden size, got 'tensor<?x0xf32>'}}
  %0 = norm.layer_norm %x eps(1.0e-05) : tensor<?x0xf32> -> tensor<?x0xf32>
  return
}

// -----

func.func @hidden_mismatch(%x: tensor<?x8xf32>, %f: tensor<?x16xf32>) {
  // expected-error @+1 {{hidden size of 'sublayer' (16) does not match hidden size of 'residual' (8)}}
  %0 = norm.residual_add %x, %f : tensor<?x8xf32>, tensor<?x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @row_count_mismatch(%x: tensor<4x8xf32>, %f: tensor<2x8xf32>) {
  // expected-error @+1 {{row count of 'sublayer' (2) does not match row count of 'residual' (4)}}
  %0 = norm.residual_add %x, %f : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @weight_length(%x: tensor<?x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'weight' must have 8 elements (the hidden size), got 'tensor<16xf32>'}}
  %0 = norm.rms_norm %x weight(%w : tensor<16xf32>) eps(1.0e-06) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @dynamic_weight(%x: tensor<?x8xf32>, %w: tensor<?xf32>) {
  // expected-error @+1 {{'weight' must have 8 elements (the hidden size), got 'tensor<?xf32>'}}
  %0 = norm.layer_norm %x weight(%w : tensor<?xf32>) eps(1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @bias_length(%x: tensor<?x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'bias' must have 8 elements (the hidden size), got 'tensor<4xf32>'}}
  %0 = norm.layer_norm %x bias(%b : tensor<4xf32>) eps(1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @result_element_type(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{result type 'tensor<?x8xf32>' does not match input type 'tensor<?x8xbf16>'}}
  %0 = norm.rms_norm %x eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xf32>
  return
}

// -----

func.func @result_shape(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{result type 'tensor<4x8xf32>' does not match input type 'tensor<?x8xf32>'}}
  %0 = norm.l2_norm %x eps(1.0e-12) : tensor<?x8xf32> -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reals
//===----------------------------------------------------------------------===//

// -----

func.func @eps_zero(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{eps must be a positive finite number, got 0.0}}
  %0 = norm.rms_norm %x eps(0.0) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @eps_negative(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{eps must be a positive finite number, got -1.0e-05}}
  %0 = norm.layer_norm %x eps(-1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @eps_nan(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{eps must be a positive finite number, got NaN}}
  %0 = norm.l2_norm %x eps(0x7FF8000000000000) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @eps_inf(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{eps must be a positive finite number, got +inf}}
  %0 = "norm.group_norm"(%x) <{eps = 0x7FF0000000000000 : f64, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @offset_nan(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight_offset must be a finite number, got NaN}}
  %0 = norm.rms_norm %x weight(%w : tensor<8xf32>) eps(1.0e-06) offset(0x7FF8000000000000) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @offset_without_weight(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{weight_offset needs a weight}}
  %0 = norm.rms_norm %x eps(1.0e-06) offset(1.0) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @alpha_zero(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{alpha must be a positive finite number, got 0.0}}
  %0 = norm.residual_add %x, %x alpha(0.0) : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @alpha_negative_inf(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{alpha must be a positive finite number, got -inf}}
  %0 = norm.residual_add %x, %x alpha(0xFFF0000000000000) : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @residual_add_result(%x: tensor<?x8xbf16>, %f: tensor<?x8xf32>) {
  // expected-error @+1 {{result type 'tensor<?x8xf32>' does not match input type 'tensor<?x8xbf16>'}}
  %0 = norm.residual_add %x, %f : tensor<?x8xbf16>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// norm.group_norm
//===----------------------------------------------------------------------===//

// -----

func.func @groups_zero(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{groups must be positive, got 0}}
  %0 = norm.group_norm %x eps(1.0e-05) {groups = 0 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @groups_not_dividing(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{groups (3) must divide the hidden size (8)}}
  %0 = norm.group_norm %x eps(1.0e-05) {groups = 3 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

// -----

func.func @bn_mean_length(%x: tensor<?x8xf32>, %m: tensor<4xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'mean' must have 8 elements (the hidden size), got 'tensor<4xf32>'}}
  %0 = norm.batch_norm_inference %x mean(%m : tensor<4xf32>) variance(%v : tensor<8xf32>) eps(1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @bn_variance_length(%x: tensor<?x8xf32>, %m: tensor<8xf32>, %v: tensor<9xf32>) {
  // expected-error @+1 {{'variance' must have 8 elements (the hidden size), got 'tensor<9xf32>'}}
  %0 = norm.batch_norm_inference %x mean(%m : tensor<8xf32>) variance(%v : tensor<9xf32>) eps(1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @bn_training_stat_type(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{batch statistics are f32, got 'tensor<8xbf16>'}}
  %0:3 = norm.batch_norm_training %x eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xf32>
  return
}

// -----

func.func @bn_training_stat_length(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'batch_variance' must have 8 elements (the hidden size), got 'tensor<16xf32>'}}
  %0:3 = norm.batch_norm_training %x eps(1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<8xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_training_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{result type 'tensor<?x8xf16>' does not match input type 'tensor<?x8xf32>'}}
  %0:3 = norm.batch_norm_training %x eps(1.0e-05) : tensor<?x8xf32> -> tensor<?x8xf16>, tensor<8xf32>, tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// norm.cast
//===----------------------------------------------------------------------===//

// -----

func.func @cast_rows(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{operand type 'tensor<?x8xf32>' and result type 'tensor<4x8xbf16>' are cast incompatible}}
  %0 = norm.cast %x : tensor<?x8xf32> to tensor<4x8xbf16>
  return
}

// -----

func.func @cast_hidden(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{operand type 'tensor<?x8xf32>' and result type 'tensor<?x16xbf16>' are cast incompatible}}
  %0 = norm.cast %x : tensor<?x8xf32> to tensor<?x16xbf16>
  return
}

// -----

func.func @cast_dynamic_hidden(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{'input' must have a static hidden size, got 'tensor<?x?xf32>'}}
  %0 = norm.cast %x : tensor<?x?xf32> to tensor<?x?xbf16>
  return
}

//===----------------------------------------------------------------------===//
// norm.attention
//===----------------------------------------------------------------------===//

// -----

func.func @attn_heads(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{num_heads must be positive, got 0}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 0 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_kv_heads(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{num_kv_heads must be positive, got -1}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 1 : i64, num_kv_heads = -1 : i64, head_dim = 64 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_head_dim(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{head_dim must be positive, got 0}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 0 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_gqa(%q: tensor<?x192xf16>, %k: tensor<?x128xf16>) {
  // expected-error @+1 {{num_kv_heads (2) must divide num_heads (3)}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64} : tensor<?x192xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x192xf16>
  return
}

// -----

func.func @attn_q_width(%q: tensor<?x100xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{'q' must have num_heads (2) x head_dim (64) columns, got 'tensor<?x100xf16>'}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x100xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x100xf16>
  return
}

// -----

func.func @attn_k_width(%q: tensor<?x128xf16>, %k: tensor<?x128xf16>, %v: tensor<?x64xf16>) {
  // expected-error @+1 {{'k' must have num_kv_heads (1) x head_dim (64) columns, got 'tensor<?x128xf16>'}}
  %0 = norm.attention %q, %k, %v scale(0.125) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x128xf16>, tensor<?x128xf16>, tensor<?x64xf16> -> tensor<?x128xf16>
  return
}

// -----

func.func @attn_v_width(%q: tensor<?x128xf16>, %k: tensor<?x64xf16>, %v: tensor<?x?xf16>) {
  // expected-error @+1 {{'v' must have num_kv_heads (1) x head_dim (64) columns, got 'tensor<?x?xf16>'}}
  %0 = norm.attention %q, %k, %v scale(0.125) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x128xf16>, tensor<?x64xf16>, tensor<?x?xf16> -> tensor<?x128xf16>
  return
}

// -----

// num_heads x head_dim overflows int64; the check must not.
func.func @attn_width_overflow(%q: tensor<?x128xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{'q' must have num_heads (4611686018427387904) x head_dim (64) columns, got 'tensor<?x128xf16>'}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 4611686018427387904 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x128xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x128xf16>
  return
}

// -----

func.func @attn_kv_rows(%q: tensor<?x128xf16>, %k: tensor<4x64xf16>, %v: tensor<5x64xf16>) {
  // expected-error @+1 {{'k' and 'v' must have the same shape, got 'tensor<4x64xf16>' and 'tensor<5x64xf16>'}}
  %0 = norm.attention %q, %k, %v scale(0.125) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x128xf16>, tensor<4x64xf16>, tensor<5x64xf16> -> tensor<?x128xf16>
  return
}

// -----

func.func @attn_scale(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{scale must be a positive finite number, got -0.125}}
  %0 = norm.attention %q, %k, %k scale(-0.125) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_weight_without_kind(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>, %w: tensor<64xf16>) {
  // expected-error @+1 {{QK-Norm weights, eps and offset need a 'qk_norm' kind}}
  %0 = norm.attention %q, %k, %k q_norm_weight(%w : tensor<64xf16>) scale(0.125) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_weights_per_head_and_shared(%q: tensor<?x256xf16>, %k: tensor<?x128xf16>, %wq: tensor<256xf16>, %wk: tensor<64xf16>) {
  // expected-error @+1 {{'k_norm_weight' must have 128 elements (num_kv_heads x head_dim: a row per head), got 'tensor<64xf16>'}}
  %0 = norm.attention %q, %k, %k q_norm_weight(%wq : tensor<256xf16>) k_norm_weight(%wk : tensor<64xf16>) scale(0.125) qk_norm_eps(1.0e-06) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<rms>} : tensor<?x256xf16>, tensor<?x128xf16>, tensor<?x128xf16> -> tensor<?x256xf16>
  return
}

// -----

func.func @attn_rope_first_without_norm(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{'rope_first' needs a 'rope' style and a 'qk_norm' kind}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, rope = #norm.rope<neox>, rope_theta = 1.0e+04 : f64, rope_first} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_rope_first_without_rope(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>, %c: tensor<?xi32>) {
  // expected-error @+1 {{'rope_first' needs a 'rope' style and a 'qk_norm' kind}}
  %0:3 = norm.attention_decode %q, %k, %k seqlens(%c : tensor<?xi32>) cache(%k, %k lengths %c : tensor<?xi32>) scale(0.125) qk_norm_eps(1.0e-06) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<l2>, rope_first} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>
  return
}

// -----

func.func @attn_eps_without_kind(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{QK-Norm weights, eps and offset need a 'qk_norm' kind}}
  %0 = norm.attention %q, %k, %k scale(0.125) qk_norm_eps(1.0e-06) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_kind_without_eps(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{'qk_norm' needs 'qk_norm_eps'}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<rms>} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_qk_eps(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{qk_norm_eps must be a positive finite number, got 0.0}}
  %0 = norm.attention %q, %k, %k scale(0.125) qk_norm_eps(0.0) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<l2>} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

// -----

func.func @attn_q_weight_length(%q: tensor<?x128xf16>, %k: tensor<?x64xf16>, %w: tensor<96xf16>) {
  // expected-error @+1 {{'q_norm_weight' must have 64 elements (the head dim), got 'tensor<96xf16>'}}
  %0 = norm.attention %q, %k, %k q_norm_weight(%w : tensor<96xf16>) scale(0.125) qk_norm_eps(1.0e-06) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<rms>} : tensor<?x128xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x128xf16>
  return
}

// -----

func.func @attn_k_weight_length(%q: tensor<?x128xf16>, %k: tensor<?x64xf16>, %w: tensor<32xf16>) {
  // expected-error @+1 {{'k_norm_weight' must have 64 elements (the head dim), got 'tensor<32xf16>'}}
  %0 = norm.attention %q, %k, %k k_norm_weight(%w : tensor<32xf16>) scale(0.125) qk_norm_eps(1.0e-06) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<rms>} : tensor<?x128xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x128xf16>
  return
}

// -----

func.func @attn_result(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+1 {{result type 'tensor<?x64xf32>' does not match input type 'tensor<?x64xf16>'}}
  %0 = norm.attention %q, %k, %k scale(0.125) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf32>
  return
}

// -----

func.func @attn_kind_value(%q: tensor<?x64xf16>, %k: tensor<?x64xf16>) {
  // expected-error @+2 {{expected ::mlir::norm::QKNormKind to be one of: rms, l2}}
  // expected-error @+1 {{failed to parse Norm_QKNormKindAttr parameter 'value'}}
  %0 = norm.attention %q, %k, %k scale(0.125) qk_norm_eps(1.0e-06) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, qk_norm = #norm.qk_norm<layer>} : tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16> -> tensor<?x64xf16>
  return
}

//===----------------------------------------------------------------------===//
// norm.fused_row
//===----------------------------------------------------------------------===//

// -----

func.func @fr_dynamic_hidden(%x: tensor<?x?xbf16>) {
  // expected-error @+1 {{'input' must have a static hidden size, got 'tensor<?x?xbf16>'}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x?xbf16> -> tensor<?x?xbf16>
  return
}

// -----

func.func @fr_addend_hidden(%x: tensor<?x8xbf16>, %f: tensor<?x16xbf16>) {
  // expected-error @+1 {{hidden size of 'addend' (16) does not match hidden size of 'input' (8)}}
  %0 = norm.fused_row <rms> %x addend(%f : tensor<?x16xbf16>) eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_skip_rows(%x: tensor<4x8xbf16>, %s: tensor<3x8xbf16>) {
  // expected-error @+1 {{row count of 'skip' (3) does not match row count of 'input' (4)}}
  %0 = norm.fused_row <rms> %x skip(%s : tensor<3x8xbf16>) eps(1.0e-06) : tensor<4x8xbf16> -> tensor<4x8xbf16>
  return
}

// -----

func.func @fr_output_hidden(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{hidden size of 'output' (4) does not match hidden size of 'input' (8)}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x4xbf16>
  return
}

// -----

func.func @fr_output_rows(%x: tensor<2x8xbf16>) {
  // expected-error @+1 {{row count of 'output' (3) does not match row count of 'input' (2)}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) : tensor<2x8xbf16> -> tensor<3x8xbf16>
  return
}

// -----

func.func @fr_residual_out_rows(%x: tensor<2x8xbf16>, %f: tensor<2x8xbf16>) {
  // expected-error @+1 {{row count of 'residual_out' (4) does not match row count of 'input' (2)}}
  %0:2 = norm.fused_row <rms> %x addend(%f : tensor<2x8xbf16>) eps(1.0e-06) : tensor<2x8xbf16> -> tensor<2x8xbf16>, tensor<4x8xbf16>
  return
}

// -----

func.func @fr_weight_length(%x: tensor<?x8xbf16>, %w: tensor<4xbf16>) {
  // expected-error @+1 {{'weight' must have 8 elements (the hidden size), got 'tensor<4xbf16>'}}
  %0 = norm.fused_row <rms> %x weight(%w : tensor<4xbf16>) eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_bias_length(%x: tensor<?x8xbf16>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'bias' must have 8 elements (the hidden size), got 'tensor<16xf32>'}}
  %0 = norm.fused_row <mean_var> %x bias(%b : tensor<16xf32>) eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_mean_length(%x: tensor<?x8xbf16>, %m: tensor<4xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'mean' must have 8 elements (the hidden size), got 'tensor<4xf32>'}}
  %0 = norm.fused_row <none> %x mean(%m : tensor<4xf32>) variance(%v : tensor<8xf32>) eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_variance_length(%x: tensor<?x8xbf16>, %m: tensor<8xf32>, %v: tensor<2xf32>) {
  // expected-error @+1 {{'variance' must have 8 elements (the hidden size), got 'tensor<2xf32>'}}
  %0 = norm.fused_row <none> %x mean(%m : tensor<8xf32>) variance(%v : tensor<2xf32>) eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_eps(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{eps must be a positive finite number, got -1.0}}
  %0 = norm.fused_row <rms> %x eps(-1.0) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_alpha(%x: tensor<?x8xbf16>, %f: tensor<?x8xbf16>) {
  // expected-error @+1 {{alpha must be a positive finite number, got -2.0}}
  %0 = norm.fused_row <rms> %x addend(%f : tensor<?x8xbf16>) eps(1.0e-06) alpha(-2.0) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_alpha_without_addend(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{alpha needs an addend}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) alpha(2.0) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_residual_out_without_addend(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{residual_out needs an addend}}
  %0:2 = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<?x8xbf16>
  return
}

// -----

func.func @fr_f32_residual_without_addend(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{f32_residual needs an addend}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {f32_residual} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_residual_out_type(%x: tensor<?x8xbf16>, %f: tensor<?x8xbf16>) {
  // expected-error @+1 {{residual_out must keep the element type of 'input' ('bf16'), got 'tensor<?x8xf32>'}}
  %0:2 = norm.fused_row <rms> %x addend(%f : tensor<?x8xbf16>) eps(1.0e-06) {f32_residual} : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<?x8xf32>
  return
}

// -----

func.func @fr_offset_without_weight(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{weight_offset needs a weight}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) offset(1.0) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_offset_inf(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{weight_offset must be a finite number, got +inf}}
  %0 = norm.fused_row <rms> %x weight(%w : tensor<8xbf16>) eps(1.0e-06) offset(0x7FF0000000000000) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_groups_zero(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{groups must be positive, got 0}}
  %0 = norm.fused_row <mean_var> %x eps(1.0e-05) {groups = 0 : i64} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_groups_not_dividing(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{groups (5) must divide the hidden size (8)}}
  %0 = norm.fused_row <mean_var> %x eps(1.0e-05) {groups = 5 : i64} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_groups_without_statistic(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{groups > 1 needs a statistic to group (rms, mean_var or l2)}}
  %0 = norm.fused_row <none> %x {groups = 2 : i64} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_mean_without_variance(%x: tensor<?x8xbf16>, %m: tensor<8xf32>) {
  // expected-error @+1 {{'mean' and 'variance' go together}}
  %0 = norm.fused_row <none> %x mean(%m : tensor<8xf32>) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_stats_with_statistic(%x: tensor<?x8xbf16>, %m: tensor<8xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{per-channel 'mean'/'variance' need statistic 'none'}}
  %0 = norm.fused_row <mean_var> %x mean(%m : tensor<8xf32>) variance(%v : tensor<8xf32>) eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_statistic_value(%x: tensor<?x8xbf16>) {
  // expected-error @+2 {{expected ::mlir::norm::Statistic to be one of: rms, mean_var, l2, none}}
  // expected-error @+1 {{failed to parse Norm_StatisticAttr parameter 'value' which is to be a `::mlir::norm::Statistic`}}
  %0 = norm.fused_row <variance> %x eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_launch_idle_threads(%x: tensor<?x256xbf16>) {
  // expected-error @+1 {{launch configuration leaves threads without work: 64 threads x vector 8 for rows of 256 elements}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 64, warps = 2, rows_per_cta = 1>} : tensor<?x256xbf16> -> tensor<?x256xbf16>
  return
}

// -----

// With groups, a launch serves rows of hidden / groups elements.
func.func @fr_launch_idle_threads_groups(%x: tensor<?x4096xbf16>) {
  // expected-error @+1 {{launch configuration leaves threads without work: 32 threads x vector 8 for rows of 128 elements}}
  %0 = norm.fused_row <mean_var> %x eps(1.0e-05) {groups = 32 : i64, launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 1, rows_per_cta = 1>} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return
}

// -----

// More than 64 elements per thread: the kernel stages the row in shared
// memory.
func.func @fr_launch_staged(%x: tensor<?x16384xbf16>) {
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>} : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  return
}

// -----

func.func @fr_launch_too_long(%x: tensor<?x16777217xbf16>) {
  // expected-error @+1 {{hidden size must be in [1, 16777216], got 16777217}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 1, threads_per_row = 1024, warps = 32, rows_per_cta = 1>} : tensor<?x16777217xbf16> -> tensor<?x16777217xbf16>
  return
}

// -----

// The layer op the user wrote states the kernels' limit itself (it was
// refused later, naming the norm.fused_row that fusion formed).
func.func @rms_too_long(%x: tensor<?x16777217xf32>) {
  // expected-error @+1 {{'norm.rms_norm' op 'input': hidden size must be in [1, 16777216], got 16777217 (the kernels' limit)}}
  %0 = norm.rms_norm %x eps(1.0e-06) : tensor<?x16777217xf32> -> tensor<?x16777217xf32>
  return
}

// -----

// The largest hidden size a type can state must not overflow the check.
func.func @fr_launch_huge(%x: tensor<?x9223372036854775807xbf16>) {
  // expected-error @+1 {{hidden size must be in [1, 16777216], got 9223372036854775807}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 1, warps = 1, rows_per_cta = 32>} : tensor<?x9223372036854775807xbf16> -> tensor<?x9223372036854775807xbf16>
  return
}

// -----

// QK-Norm heads stay in registers.
func.func @qk_launch_registers(%qkv: tensor<?x12288xbf16>) {
  // expected-error @+1 {{launch configuration keeps 128 elements of a row per thread in registers, more than the 64 a thread of a CTA of 32 threads holds without spilling; use more threads per row}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4096 : i64, launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 1, rows_per_cta = 1>} : tensor<?x12288xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return
}

// -----

func.func @fr_launch_access_bytes(%x: tensor<?x4096xf32>) {
  // expected-error @+1 {{launch vector width 8 of f32 moves 32 bytes per access (at most 16)}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>} : tensor<?x4096xf32> -> tensor<?x4096xf32>
  return
}

// -----

// The widest row tensor counts, here the f32 output of a fused cast.
func.func @fr_launch_access_bytes_output(%x: tensor<?x4096xbf16>) {
  // expected-error @+1 {{launch vector width 8 of f32 moves 32 bytes per access (at most 16)}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>} : tensor<?x4096xbf16> -> tensor<?x4096xf32>
  return
}

//===----------------------------------------------------------------------===//
// norm.qk_norm_prologue
//===----------------------------------------------------------------------===//

// -----

func.func @qk_q_heads(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{num_q_heads must be positive, got 0}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 0 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_kv_heads(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{num_kv_heads must be positive, got 0}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 0 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_head_dim(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{head_dim must be positive, got -128}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = -128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_eps(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{eps must be a positive finite number, got NaN}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(0x7FF8000000000001) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_q_width(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{'q' must have num_q_heads (1) x head_dim (128) columns, got 'tensor<?x256xbf16>'}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x256xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_k_width(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{'k' must have num_kv_heads (1) x head_dim (128) columns, got 'tensor<?x64xbf16>'}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x64xbf16>
  return
}

// -----

func.func @qk_qkv_width(%qkv: tensor<?x512xbf16>) {
  // expected-error @+1 {{'qkv' must have (num_q_heads + 2 * num_kv_heads) x head_dim = 384 columns, got 'tensor<?x512xbf16>'}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x512xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

// A weight row per query head beside one row the two key/value heads share.
func.func @qk_weights_per_head_and_shared(%qkv: tensor<?x1536xbf16>, %wq: tensor<1024xbf16>, %wk: tensor<128xbf16>) {
  // expected-error @+1 {{'k_weight' must have 256 elements (num_kv_heads x head_dim: a row per head), got 'tensor<128xbf16>'}}
  %0:2 = norm.qk_norm_prologue <mean_var> %qkv q_weight(%wq : tensor<1024xbf16>) k_weight(%wk : tensor<128xbf16>) eps(1.0e-05) {num_q_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
  return
}

// -----

// q and k fit, but the packed width overflows int64.
func.func @qk_qkv_width_overflow(%qkv: tensor<?x512xbf16>, %q: tensor<?x4611686018427387904xbf16>) {
  // expected-error @+1 {{'qkv' must have (num_q_heads + 2 * num_kv_heads) x head_dim columns, got 'tensor<?x512xbf16>'}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 4611686018427387904 : i64, num_kv_heads = 4611686018427387904 : i64, head_dim = 1 : i64} : tensor<?x512xbf16> -> tensor<?x4611686018427387904xbf16>, tensor<?x4611686018427387904xbf16>
  return
}

// -----

func.func @qk_rows(%qkv: tensor<4x384xbf16>) {
  // expected-error @+1 {{row count of 'k' (5) does not match row count of 'qkv' (4)}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<4x384xbf16> -> tensor<?x128xbf16>, tensor<5x128xbf16>
  return
}

// -----

func.func @qk_q_weight(%qkv: tensor<?x384xbf16>, %w: tensor<96xbf16>) {
  // expected-error @+1 {{'q_weight' must have 128 elements (the head dim), got 'tensor<96xbf16>'}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv q_weight(%w : tensor<96xbf16>) eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_k_weight(%qkv: tensor<?x384xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{'k_weight' must have 128 elements (the head dim), got 'tensor<64xbf16>'}}
  %0:2 = norm.qk_norm_prologue <l2> %qkv k_weight(%w : tensor<64xbf16>) eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

// A launch serves rows of head_dim elements.
func.func @qk_launch(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{launch configuration leaves threads without work: 32 threads x vector 8 for rows of 128 elements}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 1, rows_per_cta = 1>} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_launch_access_bytes(%qkv: tensor<?x384xf32>) {
  // expected-error @+1 {{launch vector width 8 of f32 moves 32 bytes per access (at most 16)}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 1, rows_per_cta = 2>} : tensor<?x384xf32> -> tensor<?x128xf32>, tensor<?x128xf32>
  return
}

// -----

// StableLM's 20 of 80: a vector of 4 would split the pairs 10 apart.
func.func @qk_rope_launch(%qkv: tensor<?x240xbf16>) {
  // expected-error @+1 {{the QK-Norm prologue turns neox pairs within a thread: the vector must divide rotary_dim / 2 (10), got 4}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 80 : i64, rope = #norm.rope<neox>, rotary_dim = 20 : i64, rope_theta = 1.0e+04 : f64, launch = #norm.launch<vector = 4, threads_per_row = 4, warps = 1, rows_per_cta = 8>} : tensor<?x240xbf16> -> tensor<?x80xbf16>, tensor<?x80xbf16>
  return
}

// -----

func.func @qk_rope_first_without_rope(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{'rope_first' needs a 'rope' style}}
  %0:2 = norm.qk_norm_prologue <l2> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, rope_first} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_positions_without_rope(%qkv: tensor<?x384xbf16>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'rotary_dim', 'rope_theta', 'positions' and 'rope_table' need a 'rope' style}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv positions(%p : tensor<?xi32>) eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

// The backward of the prologue is the norm's: no statistics with rope.
func.func @qk_rope_saved_stats(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{save_stats keeps the statistics for the QK-Norm's backward, which has no rotary embeddings}}
  %0:3 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, rope = #norm.rope<gptj>, rope_theta = 1.0e+04 : f64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16> saved_rstd(tensor<?x2xf32>)
  return
}

//===----------------------------------------------------------------------===//
// norm.column_stats
//===----------------------------------------------------------------------===//

// -----

func.func @cs_f32(%x: tensor<?x256xbf16>) {
  // expected-error @+1 {{column statistics are f32, got 'tensor<256xbf16>'}}
  %0:2 = norm.column_stats %x : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xbf16>
  return
}

// -----

func.func @cs_length(%x: tensor<?x256xbf16>) {
  // expected-error @+1 {{'mean' must have 256 elements (the hidden size), got 'tensor<128xf32>'}}
  %0:2 = norm.column_stats %x : tensor<?x256xbf16> -> tensor<128xf32>, tensor<256xf32>
  return
}

// -----

func.func @cs_launch_access_bytes(%x: tensor<?x256xf32>) {
  // expected-error @+1 {{launch vector width 8 of f32 moves 32 bytes per access (at most 16)}}
  %0:2 = norm.column_stats %x {launch = #norm.launch<vector = 8, threads_per_row = 1, warps = 8, rows_per_cta = 256>} : tensor<?x256xf32> -> tensor<256xf32>, tensor<256xf32>
  return
}

//===----------------------------------------------------------------------===//
// norm.row_allreduce
//===----------------------------------------------------------------------===//

// -----

func.func @ar_group_not_pow2(%a: f32) {
  // expected-error @+1 {{group_size must be a power of two up to 32 or a multiple of 32 up to 1024, got 24}}
  %0 = norm.row_allreduce %a {group_size = 24 : i64} : f32
  return
}

// -----

func.func @ar_group_not_warps(%a: f32) {
  // expected-error @+1 {{group_size must be a power of two up to 32 or a multiple of 32 up to 1024, got 48}}
  %0 = norm.row_allreduce %a {group_size = 48 : i64} : f32
  return
}

// -----

func.func @ar_group_too_large(%a: f32) {
  // expected-error @+1 {{group_size must be a power of two up to 32 or a multiple of 32 up to 1024, got 2048}}
  %0 = norm.row_allreduce %a {group_size = 2048 : i64} : f32
  return
}

// -----

func.func @ar_group_zero(%a: f32) {
  // expected-error @+1 {{group_size must be a power of two up to 32 or a multiple of 32 up to 1024, got 0}}
  %0 = norm.row_allreduce %a {group_size = 0 : i64} : f32
  return
}

// -----

func.func @ar_no_values() {
  // expected-error @+1 {{needs at least one value}}
  "norm.row_allreduce"() <{group_size = 32 : i64}> : () -> ()
  return
}

// -----

func.func @ar_result_count(%a: f32) {
  // expected-error @+2 {{inferred type(s) 'f32' are incompatible with return type(s) of operation 'f32', 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = "norm.row_allreduce"(%a) <{group_size = 32 : i64}> : (f32) -> (f32, f32)
  return
}

// -----

func.func @ar_kind(%a: f32) {
  // expected-error @+2 {{expected ::mlir::norm::ReductionKind to be one of: add, max}}
  // expected-error @+1 {{failed to parse Norm_ReductionKindAttr parameter 'value'}}
  %0 = norm.row_allreduce %a {group_size = 4 : i64, kind = #norm.reduction<min>} : f32
  return
}

//===----------------------------------------------------------------------===//
// norm.mma_sync
//===----------------------------------------------------------------------===//

// -----

func.func @mma_a_f32(%a: vector<8xf32>, %b: vector<4xbf16>, %c: vector<4xf32>) {
  // expected-error @+1 {{A must be vector<8xbf16> or vector<8xf16> (8 elements of the 16x16 matrix a lane holds), got 'vector<8xf32>'}}
  %d = norm.mma_sync %a, %b, %c : vector<8xf32>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @mma_a_size(%a: vector<4xbf16>, %b: vector<4xbf16>, %c: vector<4xf32>) {
  // expected-error @+1 {{A must be vector<8xbf16> or vector<8xf16>}}
  %d = norm.mma_sync %a, %b, %c : vector<4xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @mma_b_type(%a: vector<8xbf16>, %b: vector<4xf16>, %c: vector<4xf32>) {
  // expected-error @+1 {{B must be 'vector<4xbf16>' (4 elements of the 16x8 matrix, of A's type), got 'vector<4xf16>'}}
  %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xf16>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @mma_b_size(%a: vector<8xf16>, %b: vector<8xf16>, %c: vector<4xf32>) {
  // expected-error @+1 {{B must be 'vector<4xf16>'}}
  %d = norm.mma_sync %a, %b, %c : vector<8xf16>, vector<8xf16>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @mma_c_f16(%a: vector<8xf16>, %b: vector<4xf16>, %c: vector<4xf16>) {
  // expected-error @+1 {{C must be vector<4xf32> (f32 accumulation), got 'vector<4xf16>'}}
  %d = norm.mma_sync %a, %b, %c : vector<8xf16>, vector<4xf16>, vector<4xf16> -> vector<4xf16>
  return
}

// -----

func.func @mma_d_type(%a: vector<8xbf16>, %b: vector<4xbf16>, %c: vector<4xf32>) {
  // expected-error @+1 {{result must be vector<4xf32> like C, got 'vector<8xf32>'}}
  %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<8xf32>
  return
}

// -----

func.func @mma_rank(%a: vector<2x4xbf16>, %b: vector<4xbf16>, %c: vector<4xf32>) {
  // expected-error @+1 {{A must be vector<8xbf16> or vector<8xf16>}}
  %d = norm.mma_sync %a, %b, %c : vector<2x4xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// norm.wgmma and #norm.shared_matrix
//===----------------------------------------------------------------------===//

// -----

func.func @wgmma_f32(%m: memref<512xf32, #gpu.address_space<workgroup>>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{multiplies bf16 or f16 matrices: B's element type must be bf16 or f16, got 'f32'}}
  %d = norm.wgmma %m[%i], %m[%i], %c {a_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>, b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : memref<512xf32, #gpu.address_space<workgroup>>, memref<512xf32, #gpu.address_space<workgroup>>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_global(%m: memref<512xbf16>, %a: vector<8xbf16>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{B must be a one-dimensional, contiguous memref of 'bf16' in #gpu.address_space<workgroup>, got 'memref<512xbf16>'}}
  %d = norm.wgmma %a, %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : vector<8xbf16>, memref<512xbf16>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_mixed(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %a: vector<8xf16>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{A must be a memref or, in registers, 'vector<8xbf16>' (a warp's 16x16 fragment, of B's type), got 'vector<8xf16>'}}
  %d = norm.wgmma %a, %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : vector<8xf16>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_no_a_layout(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{A in workgroup memory needs an index and an a_layout}}
  %d = norm.wgmma %m[%i], %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : memref<512xbf16, #gpu.address_space<workgroup>>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_register_a_layout(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %a: vector<8xbf16>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{A in registers takes no index and no a_layout}}
  %d = norm.wgmma %a, %m[%i], %c {a_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>, b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : vector<8xbf16>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_n(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %a: vector<8xbf16>, %c: vector<6xf32>, %i: index) {
  // expected-error @+1 {{C must be vector<(N/2)xf32> with N a multiple of 8 from 8 to 256 (f32 accumulation), got 'vector<6xf32>'}}
  %d = norm.wgmma %a, %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : vector<8xbf16>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<6xf32> -> vector<6xf32>
  return
}

// -----

func.func @wgmma_too_wide(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %a: vector<8xbf16>, %c: vector<132xf32>, %i: index) {
  // expected-error @+1 {{C must be vector<(N/2)xf32> with N a multiple of 8 from 8 to 256 (f32 accumulation), got 'vector<132xf32>'}}
  %d = norm.wgmma %a, %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 0, lbo = 128, sbo = 256>} : vector<8xbf16>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<132xf32> -> vector<132xf32>
  return
}

// -----

func.func @wgmma_swizzle(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %a: vector<8xbf16>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{swizzle must be 0, 32, 64 or 128 (bytes), got 16}}
  %d = norm.wgmma %a, %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 16, lbo = 128, sbo = 256>} : vector<8xbf16>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_sbo(%m: memref<512xbf16, #gpu.address_space<workgroup>>, %a: vector<8xbf16>, %c: vector<4xf32>, %i: index) {
  // expected-error @+1 {{sbo must be a multiple of 16 below 2^18 (bytes), got 262144}}
  %d = norm.wgmma %a, %m[%i], %c {b_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 262144>} : vector<8xbf16>, memref<512xbf16, #gpu.address_space<workgroup>>, vector<4xf32> -> vector<4xf32>
  return
}

// -----

func.func @wgmma_wait_pending(%c: vector<4xf32>) {
  // expected-error @+1 {{pending must be 0 to 7 (groups), got 8}}
  %d = norm.wgmma_wait %c {pending = 8 : i64} : vector<4xf32>
  return
}

// -----

func.func @wgmma_fence_i32(%c: vector<4xi32>) {
  // expected-error @+1 {{passes wgmma registers: vectors of f32, bf16 or f16, got 'vector<4xi32>'}}
  %d = norm.wgmma_fence %c : vector<4xi32>
  return
}

// -----

func.func @tma_box(%map: memref<16xi64>, %src: memref<?xbf16>, %tile: memref<4096xbf16, #gpu.address_space<workgroup>>, %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{boxes have 1 to 256 rows and columns, rows a multiple of 16 bytes and at most the swizzle's width; got 64 x 128 of 2 bytes, swizzle 128}}
  norm.tma_load %map, %src[%i, %i, %i] at [%i, %i], %tile[%i], %bars[%i] {box_rows = 64 : i64, box_columns = 128 : i64, swizzle = 128 : i64} : memref<16xi64>, memref<?xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @tma_map(%map: memref<8xi64>, %src: memref<?xbf16>, %tile: memref<4096xbf16, #gpu.address_space<workgroup>>, %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{map must be the 128 bytes of a CUtensorMap in the default address space, got 'memref<8xi64>'}}
  norm.tma_load %map, %src[%i, %i, %i] at [%i, %i], %tile[%i], %bars[%i] {box_rows = 64 : i64, box_columns = 64 : i64, swizzle = 128 : i64} : memref<8xi64>, memref<?xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @mbarrier_i32(%bars: memref<4xi32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{takes barrier objects: a one-dimensional, contiguous memref of i64 in #gpu.address_space<workgroup>, got 'memref<4xi32, #gpu.address_space<workgroup>>'}}
  norm.mbarrier_arrive %bars[%i] : memref<4xi32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @mbarrier_count(%bars: memref<4xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{count must be 1 to 2^20 - 1 (arrivals), got 0}}
  norm.mbarrier_init %bars[%i] {count = 0 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @mbarrier_tries(%bars: memref<4xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{max_tries must be 1 to 2^31 - 1, got 0}}
  norm.mbarrier_wait %bars[%i], %i {max_tries = 0 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @bulk_copy_bytes(%src: memref<?xbf16>, %tile: memref<64xbf16, #gpu.address_space<workgroup>>, %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{bytes must be a positive multiple of 16 below 2^31, got 24}}
  norm.bulk_copy %src[%i], %tile[%i], %bars[%i] {bytes = 24 : i64} : memref<?xbf16>, memref<64xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @bulk_copy_types(%src: memref<?xf16>, %tile: memref<64xbf16, #gpu.address_space<workgroup>>, %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies whole-byte elements of one type: src and dst must have the same element type, got 'f16' and 'bf16'}}
  norm.bulk_copy %src[%i], %tile[%i], %bars[%i] {bytes = 32 : i64} : memref<?xf16>, memref<64xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @bulk_copy_to_global(%src: memref<?xbf16>, %dst: memref<64xbf16>, %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{writes workgroup memory: dst must be a one-dimensional, contiguous memref in #gpu.address_space<workgroup>, got 'memref<64xbf16>'}}
  norm.bulk_copy %src[%i], %dst[%i], %bars[%i] {bytes = 32 : i64} : memref<?xbf16>, memref<64xbf16>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

//===----------------------------------------------------------------------===//
// norm.ldmatrix
//===----------------------------------------------------------------------===//

// -----

func.func @ldmatrix_f32(%m: memref<64xf32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{loads 16-bit matrices: the memref's element type must be bf16 or f16 (or an FP8 type, two bytes an element), got 'f32'}}
  %v = norm.ldmatrix %m[%i] {count = 1 : i64} : memref<64xf32, #gpu.address_space<workgroup>> -> vector<2xf32>
  return
}

// -----

func.func @ldmatrix_global(%m: memref<64xbf16>, %i: index) {
  // expected-error @+1 {{reads workgroup memory: the memref must be in #gpu.address_space<workgroup>, got 'memref<64xbf16>'}}
  %v = norm.ldmatrix %m[%i] {count = 1 : i64} : memref<64xbf16> -> vector<2xbf16>
  return
}

// -----

func.func @ldmatrix_count(%m: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{count must be 1, 2 or 4 (matrices), got 3}}
  %v = norm.ldmatrix %m[%i] {count = 3 : i64} : memref<64xbf16, #gpu.address_space<workgroup>> -> vector<6xbf16>
  return
}

// -----

func.func @ldmatrix_result(%m: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{result must be 'vector<8xbf16>' (2 elements of each of 4 matrices), got 'vector<4xbf16>'}}
  %v = norm.ldmatrix %m[%i] {count = 4 : i64} : memref<64xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
  return
}

// -----

func.func @ldmatrix_fp8_result(%m: memref<64xf8E4M3FN, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{result must be 'vector<8xf8E4M3FN>' (4 elements of each of 2 matrices), got 'vector<4xf8E4M3FN>'}}
  %v = norm.ldmatrix %m[%i] {count = 2 : i64} : memref<64xf8E4M3FN, #gpu.address_space<workgroup>> -> vector<4xf8E4M3FN>
  return
}

// -----

func.func @ldmatrix_i8(%m: memref<64xi8, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{loads 16-bit matrices: the memref's element type must be bf16 or f16 (or an FP8 type, two bytes an element), got 'i8'}}
  %v = norm.ldmatrix %m[%i] {count = 1 : i64} : memref<64xi8, #gpu.address_space<workgroup>> -> vector<4xi8>
  return
}

// -----

func.func @ldmatrix_result_type(%m: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{result must be 'vector<2xbf16>' (2 elements of each of 1 matrices), got 'vector<2xf16>'}}
  %v = norm.ldmatrix %m[%i] {count = 1 : i64} : memref<64xbf16, #gpu.address_space<workgroup>> -> vector<2xf16>
  return
}

// -----

func.func @ldmatrix_indices(%m: memref<8x8xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{needs 2 indices for the memref of rank 2, got 1}}
  %v = norm.ldmatrix %m[%i] {count = 1 : i64} : memref<8x8xbf16, #gpu.address_space<workgroup>> -> vector<2xbf16>
  return
}

// -----

func.func @ldmatrix_strided(%m: memref<8x8xbf16, strided<[1, 8]>, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{the memref must have a contiguous innermost dimension (stride 1)}}
  %v = norm.ldmatrix %m[%i, %i] {count = 1 : i64} : memref<8x8xbf16, strided<[1, 8]>, #gpu.address_space<workgroup>> -> vector<2xbf16>
  return
}

//===----------------------------------------------------------------------===//
// norm.async_copy, norm.async_wait
//===----------------------------------------------------------------------===//

// -----

func.func @copy_src_shared(%s: memref<64xbf16, #gpu.address_space<workgroup>>, %d: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{reads global memory: src must be in the default address space, got 'memref<64xbf16, #gpu.address_space<workgroup>>'}}
  norm.async_copy %s[%i], %d[%i] {elements = 8 : i64} : memref<64xbf16, #gpu.address_space<workgroup>>, memref<64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_dst_global(%s: memref<64xbf16>, %d: memref<64xbf16>, %i: index) {
  // expected-error @+1 {{writes workgroup memory: dst must be in #gpu.address_space<workgroup>, got 'memref<64xbf16>'}}
  norm.async_copy %s[%i], %d[%i] {elements = 8 : i64} : memref<64xbf16>, memref<64xbf16>
  return
}

// -----

func.func @copy_types(%s: memref<64xbf16>, %d: memref<64xf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies between memrefs of one element type, got 'bf16' and 'f16'}}
  norm.async_copy %s[%i], %d[%i] {elements = 8 : i64} : memref<64xbf16>, memref<64xf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_bytes(%s: memref<64xbf16>, %d: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies 4, 8 or 16 bytes, got 3 elements of 'bf16'}}
  norm.async_copy %s[%i], %d[%i] {elements = 3 : i64} : memref<64xbf16>, memref<64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_too_many(%s: memref<64xf32>, %d: memref<64xf32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies 4, 8 or 16 bytes, got 8 elements of 'f32'}}
  norm.async_copy %s[%i], %d[%i] {elements = 8 : i64} : memref<64xf32>, memref<64xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_zero(%s: memref<64xf32>, %d: memref<64xf32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies 4, 8 or 16 bytes, got 0 elements of 'f32'}}
  norm.async_copy %s[%i], %d[%i] {elements = 0 : i64} : memref<64xf32>, memref<64xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_indices(%s: memref<8x8xf32>, %d: memref<64xf32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{needs 2 indices for src of rank 2, got 1}}
  norm.async_copy %s[%i], %d[%i] {elements = 4 : i64} : memref<8x8xf32>, memref<64xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_vector_elements(%s: memref<8xvector<4xf32>>, %d: memref<8xvector<4xf32>, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies integers or floats of whole bytes, got 'vector<4xf32>'}}
  norm.async_copy %s[%i], %d[%i] {elements = 1 : i64} : memref<8xvector<4xf32>>, memref<8xvector<4xf32>, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_rows_2d(%s: memref<8x64xbf16>, %d: memref<1024xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{src must be a one-dimensional memref of stride 1, got 'memref<8x64xbf16>'}}
  norm.async_copy_rows %s[%i] step %i, %d[%i] step 64 {elements = 8 : i64, rows = 8 : i64} : memref<8x64xbf16>, memref<1024xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_rows_none(%s: memref<?xbf16>, %d: memref<1024xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copies at least one row, got 0}}
  norm.async_copy_rows %s[%i] step %i, %d[%i] step 64 {elements = 8 : i64, rows = 0 : i64} : memref<?xbf16>, memref<1024xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_rows_overlap(%s: memref<?xbf16>, %d: memref<1024xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{dst_stride must be at least elements (8), got 4}}
  norm.async_copy_rows %s[%i] step %i, %d[%i] step 4 {elements = 8 : i64, rows = 2 : i64} : memref<?xbf16>, memref<1024xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_rows_far(%s: memref<?xbf16>, %d: memref<1024xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{4096 rows of dst_stride 1048576 reach past 32-bit offsets}}
  norm.async_copy_rows %s[%i] step %i, %d[%i] step 1048576 {elements = 8 : i64, rows = 4096 : i64} : memref<?xbf16>, memref<1024xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @copy_rows_shared_src(%s: memref<64xbf16, #gpu.address_space<workgroup>>, %d: memref<1024xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{reads global memory: src must be in the default address space}}
  norm.async_copy_rows %s[%i] step %i, %d[%i] step 64 {elements = 8 : i64, rows = 2 : i64} : memref<64xbf16, #gpu.address_space<workgroup>>, memref<1024xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @wait_negative() {
  // expected-error @+1 {{pending must be a non-negative 32-bit count of groups, got -1}}
  norm.async_wait {pending = -1 : i64}
  return
}

// -----

func.func @wait_missing() {
  // expected-error @+1 {{requires attribute 'pending'}}
  norm.async_wait
  return
}

//===----------------------------------------------------------------------===//
// #norm.launch
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{vector width must be 1, 2, 4 or 8, got 3}}
func.func @launch_vector() attributes {l = #norm.launch<vector = 3, threads_per_row = 32, warps = 1, rows_per_cta = 1>}

// -----

// expected-error @+1 {{vector width must be 1, 2, 4 or 8, got 16}}
func.func @launch_vector_wide() attributes {l = #norm.launch<vector = 16, threads_per_row = 32, warps = 1, rows_per_cta = 1>}

// -----

// expected-error @+1 {{threads_per_row must be 1, 2, 4, 8, 16 or a multiple of 32 up to 1024, got 12}}
func.func @launch_threads_not_pow2() attributes {l = #norm.launch<vector = 4, threads_per_row = 12, warps = 1, rows_per_cta = 1>}


// -----

// expected-error @+1 {{threads_per_row must be 1, 2, 4, 8, 16 or a multiple of 32 up to 1024, got 2048}}
func.func @launch_threads_too_many() attributes {l = #norm.launch<vector = 4, threads_per_row = 2048, warps = 32, rows_per_cta = 1>}

// -----

// expected-error @+1 {{warps must be in [1, 32], got 0}}
func.func @launch_warps_zero() attributes {l = #norm.launch<vector = 4, threads_per_row = 32, warps = 0, rows_per_cta = 1>}

// -----

// expected-error @+1 {{warps must be in [1, 32], got 33}}
func.func @launch_warps_many() attributes {l = #norm.launch<vector = 4, threads_per_row = 32, warps = 33, rows_per_cta = 1>}

// -----

// expected-error @+1 {{threads_per_row (256) must divide the 128 threads of a CTA of 4 warps}}
func.func @launch_threads_cta() attributes {l = #norm.launch<vector = 4, threads_per_row = 256, warps = 4, rows_per_cta = 1>}

// -----

// expected-error @+1 {{rows_per_cta (0) must be a positive multiple of the 4 rows a CTA works on at once}}
func.func @launch_rows_zero() attributes {l = #norm.launch<vector = 4, threads_per_row = 32, warps = 4, rows_per_cta = 0>}

// -----

// expected-error @+1 {{rows_per_cta (6) must be a positive multiple of the 4 rows a CTA works on at once}}
func.func @launch_rows_multiple() attributes {l = #norm.launch<vector = 4, threads_per_row = 32, warps = 4, rows_per_cta = 6>}

// -----

// expected-error @+1 {{struct is missing required parameter: rows_per_cta}}
func.func @launch_missing() attributes {l = #norm.launch<vector = 4, threads_per_row = 32, warps = 4>}

// -----

// expected-error @+2 {{expected ::mlir::norm::Statistic to be one of: rms, mean_var, l2, none}}
// expected-error @+1 {{failed to parse Norm_StatisticAttr parameter 'value' which is to be a `::mlir::norm::Statistic`}}
func.func @statistic_value() attributes {s = #norm.statistic<sum>}

//===----------------------------------------------------------------------===//
// Parse errors
//===----------------------------------------------------------------------===//

// -----

func.func @unknown_op(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{custom op 'norm.frobnicate' is unknown}}
  %0 = norm.frobnicate %x : tensor<?x8xf32>
  return
}

// -----

func.func @unknown_generic_op(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{unregistered operation 'norm.frobnicate' found in dialect ('norm') that does not allow unknown operations}}
  %0 = "norm.frobnicate"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @missing_eps_keyword(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{expected 'eps'}}
  %0 = norm.rms_norm %x : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @integer_eps(%x: tensor<?x8xf32>) {
  // expected-error @+2 {{unexpected decimal integer literal for a floating point value}}
  // expected-note @+1 {{add a trailing dot to make the literal a float}}
  %0 = norm.rms_norm %x eps(1) : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @truncated_op(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{expected ')'}}
  %0 = norm.rms_norm %x eps(1.0e-06 : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @truncated_type(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{expected '->'}}
  %0 = norm.rms_norm %x eps(1.0e-06) : tensor<?x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Attributes an op does not define
//===----------------------------------------------------------------------===//

// A misspelt attribute would silently drop what the user meant.
func.func @unknown_attribute(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{'norm.rms_norm' op has no attribute 'weight_ofset'; did you mean 'weight_offset'?}}
  %0 = norm.rms_norm %x weight(%w : tensor<8xbf16>) eps(1.0e-06) {weight_ofset = 1.0 : f64} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @unknown_attribute_far(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{'norm.l2_norm' op has no attribute 'note' (attributes of other dialects need their prefix, e.g. 'mydialect.note')}}
  %0 = norm.l2_norm %x eps(1.0e-06) {note = "x"} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

// With a dialect prefix, an attribute is its dialect's business.
func.func @prefixed_attribute(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  %0 = norm.l2_norm %x eps(1.0e-06) {test.note = "kept"} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// -----

// ... but the norm dialect's own discardable attributes are only these.
// expected-error @+1 {{unknown norm dialect attribute 'norm.max_shared_bytes'}}
module attributes {norm.max_shared_bytes = 1024 : i64} {}

// -----

//===----------------------------------------------------------------------===//
// Targets
//===----------------------------------------------------------------------===//

// expected-error @+1 {{unsupported chip 'sm_75' (expected sm_80, sm_89, sm_90 or sm_90a)}}
module attributes {norm.target = #norm.target<chip = "sm_75", ptx_version = 80, max_shared_bytes = 0>} {}

// -----

// expected-error @+1 {{max-shared-bytes (200000) exceeds what a CTA may use on sm_89 (101376)}}
module attributes {norm.target = #norm.target<chip = "sm_89", ptx_version = 80, max_shared_bytes = 200000>} {}

// -----

// expected-error @+1 {{unsupported ptx-version 70 (expected 78 to 90, i.e. PTX 7.8 to 9.0)}}
module attributes {norm.target = #norm.target<chip = "sm_90", ptx_version = 70, max_shared_bytes = 0>} {}

// -----

// expected-error @+1 {{pdl needs griddepcontrol, which sm_89 lacks (sm_90 and sm_90a have it)}}
module attributes {norm.target = #norm.target<chip = "sm_89", ptx_version = 80, max_shared_bytes = 0, pdl = true>} {}

// -----

func.func @target_on_a_function() attributes {norm.target = #norm.target<chip = "sm_90", ptx_version = 80, max_shared_bytes = 0>} {
  // expected-error @-1 {{'norm.target' belongs on a module}}
  return
}

// -----

// expected-error @+1 {{'norm.target' must be a #norm.target, got "sm_90"}}
module attributes {norm.target = "sm_90"} {}

// -----

//===----------------------------------------------------------------------===//
// eps exactly where something reads it
//===----------------------------------------------------------------------===//

// An add-only kernel has no statistic: an eps would mean nothing.
func.func @fr_eps_unread(%x: tensor<?x8xbf16>, %a: tensor<?x8xbf16>) {
  // expected-error @+1 {{'norm.fused_row' op takes no eps: without a statistic or per-channel variance nothing reads it}}
  %0 = norm.fused_row <none> %x addend(%a : tensor<?x8xbf16>) eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_eps_missing(%x: tensor<?x8xbf16>) {
  // expected-error @+1 {{'norm.fused_row' op needs an eps: statistic 'rms' reads it}}
  %0 = norm.fused_row <rms> %x : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @fr_eps_missing_variance(%x: tensor<?x8xbf16>, %m: tensor<8xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{'norm.fused_row' op needs an eps: statistic 'none' with per-channel variance reads it}}
  %0 = norm.fused_row <none> %x mean(%m : tensor<8xf32>) variance(%v : tensor<8xf32>) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

// The kernel model has one type for weight and bias, one for per-channel
// statistics.
func.func @fr_mixed_params(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xf32>) {
  // expected-error @+1 {{parameters of one kernel share an element type: 'bias' is 'f32', 'weight' is 'bf16'}}
  %0 = norm.fused_row <mean_var> %x weight(%w : tensor<8xbf16>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return
}

// -----

func.func @qk_one_weight(%qkv: tensor<?x384xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{'q_weight' and 'k_weight' go together}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv q_weight(%w : tensor<128xbf16>) eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_offset_without_weight(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{weight_offset needs a weight}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) offset(1.0) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xbf16>
  return
}

// -----

func.func @qk_mixed_outputs(%qkv: tensor<?x384xbf16>) {
  // expected-error @+1 {{'q' and 'k' share an element type}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x384xbf16> -> tensor<?x128xbf16>, tensor<?x128xf32>
  return
}

// -----

// Heads of 131072 fit no CTA's registers, where the prologue keeps them.
func.func @qk_heads_beyond_registers(%qkv: tensor<?x393216xbf16>) {
  // expected-error @+1 {{rows of 131072 elements do not fit in the registers of one CTA (at most 49152), where this kernel keeps them; such rows are not supported}}
  %0:2 = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 131072 : i64, launch = #norm.launch<vector = 8, threads_per_row = 1024, warps = 32, rows_per_cta = 1>} : tensor<?x393216xbf16> -> tensor<?x131072xbf16>, tensor<?x131072xbf16>
  return
}

// -----

func.func @attention_offset_without_weights(%q: tensor<?x128xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>) {
  // expected-error @+1 {{qk_norm_offset needs both QK-Norm weights}}
  %0 = norm.attention %q, %k, %v scale(0.088) qk_norm_eps(1.0e-06) qk_norm_offset(1.0) {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, qk_norm = #norm.qk_norm<rms>} : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return
}

// -----

func.func @layer_norm_mixed_params(%x: tensor<?x8xf16>, %w: tensor<8xf16>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'norm.layer_norm' op parameters of one kernel share an element type: 'bias' is 'f32', 'weight' is 'f16'}}
  %0 = norm.layer_norm %x weight(%w : tensor<8xf16>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<?x8xf16> -> tensor<?x8xf16>
  return
}

// -----

func.func @set_max_registers_odd() {
  // expected-error @+1 {{count must be a multiple of 8 in [24, 256] (setmaxnreg), got 20}}
  norm.set_max_registers {count = 20 : i64, increase = false}
  return
}

// -----

func.func @named_barrier_zero() {
  // expected-error @+1 {{id must be 1 to 15 (0 is the CTA's barrier), got 0}}
  norm.named_barrier {id = 0 : i64, threads = 128 : i64}
  return
}

// -----

func.func @named_barrier_partial_warp() {
  // expected-error @+1 {{threads must be whole warps, 32 to 1024, got 48}}
  norm.named_barrier {id = 2 : i64, threads = 48 : i64}
  return
}
