// RUN: norm-opt %s -split-input-file -verify-diagnostics

// The rules of the training kernels; each one a message of its own.

func.func @saved_mean_without_mean_var(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'saved_mean' needs statistic 'mean_var' and 'saved_rstd'}}
  %y, %m, %r = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x64xf32> -> tensor<?x64xf32> saved_mean(tensor<?x1xf32>) saved_rstd(tensor<?x1xf32>)
  return
}

// -----

func.func @mean_var_saves_both(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{statistic 'mean_var' saves 'saved_mean' with 'saved_rstd'}}
  %y, %r = norm.fused_row <mean_var> %x eps(1.0e-05) : tensor<?x64xf32> -> tensor<?x64xf32> saved_rstd(tensor<?x1xf32>)
  return
}

// -----

func.func @saved_rstd_per_group(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{'saved_rstd' must have 4 columns, got 'tensor<?x1xf32>'}}
  %y, %m, %r = norm.fused_row <mean_var> %x eps(1.0e-05) {groups = 4 : i64} : tensor<?x64xf32> -> tensor<?x64xf32> saved_mean(tensor<?x4xf32>) saved_rstd(tensor<?x1xf32>)
  return
}

// -----

func.func @nothing_to_save(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) {
  // expected-error @+1 {{save_stats needs a statistic to save}}
  %o, %r = norm.fused_row <none> %x addend(%y : tensor<?x64xf32>) : tensor<?x64xf32> -> tensor<?x64xf32> saved_rstd(tensor<?x1xf32>)
  return
}

// -----

func.func @saved_rows(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{row count of 'saved_rstd' (4) does not match the rows (8)}}
  %y, %r = norm.fused_row <rms> %x eps(1.0e-06) : tensor<8x64xf32> -> tensor<8x64xf32> saved_rstd(tensor<4x1xf32>)
  return
}

// -----

func.func @grad_needs_saved_mean(%x: tensor<?x64xf32>, %dy: tensor<?x64xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{'saved_mean' is there exactly for statistic 'mean_var'}}
  %dx = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x64xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @addend_grad_with_alpha_1(%x: tensor<?x64xf32>, %dy: tensor<?x64xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{'addend_grad' is there exactly when alpha is not 1}}
  %dx, %da = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x64xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x64xf32> -> tensor<?x64xf32> addend_grad(tensor<?x64xf32>)
  return
}

// -----

func.func @alpha_needs_addend_grad(%x: tensor<?x64xf32>, %dy: tensor<?x64xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{'addend_grad' is there exactly when alpha is not 1}}
  %dx = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x64xf32>) saved_rstd(%r : tensor<?x1xf32>) alpha(2.0) : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @partials_need_weight(%x: tensor<?x64xf32>, %dy: tensor<?x64xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{'weight_grad_partials' needs the 'weight'}}
  %dx, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x64xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x64xf32> -> tensor<?x64xf32> weight_grad_partials(tensor<?x64xf32>)
  return
}

// -----

func.func @partials_width(%x: tensor<?x64xf32>, %dy: tensor<?x64xf32>, %w: tensor<64xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{'weight_grad_partials' must have 64 columns, got 'tensor<?x32xf32>'}}
  %dx, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x64xf32>) weight(%w : tensor<64xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x64xf32> -> tensor<?x64xf32> weight_grad_partials(tensor<?x32xf32>)
  return
}

// -----

func.func @grad_input_type(%x: tensor<?x64xbf16>, %dy: tensor<?x64xbf16>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{'grad_input' must have the element type of 'input' ('bf16'), got 'tensor<?x64xf32>'}}
  %dx = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x64xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x64xbf16> -> tensor<?x64xf32>
  return
}

// -----

func.func @grad_rows(%x: tensor<8x64xf32>, %dy: tensor<4x64xf32>, %r: tensor<8x1xf32>) {
  // expected-error @+1 {{row count of 'grad_output' (4) does not match row count of 'input' (8)}}
  %dx = norm.fused_row_grad <rms> %x grad(%dy : tensor<4x64xf32>) saved_rstd(%r : tensor<8x1xf32>) : tensor<8x64xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @no_statistic(%x: tensor<?x64xf32>, %dy: tensor<?x64xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{backward kernels differentiate rms_norm, layer_norm, group_norm and l2_norm rows (and heads); elementwise has none yet}}
  %dx = norm.fused_row_grad <none> %x grad(%dy : tensor<?x64xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

// Backward rows beyond the registers are staged in shared memory in CTAs of
// at most 512 threads: f32 LayerNorm with a bias spills past 4 elements a
// thread in registers in CTAs of 1024 threads (test/Target/ptxas-backward.mlir).
func.func @registers(%x: tensor<?x6144xf32>, %dy: tensor<?x6144xf32>, %w: tensor<6144xf32>, %m: tensor<?x1xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{keeps 8 elements of a row per thread, more than the registers of a CTA of 1024 threads hold, and a backward kernel stages longer rows only in CTAs of at most 512 threads; use fewer warps}}
  %dx, %dw, %db = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x6144xf32>) weight(%w : tensor<6144xf32>) saved_mean(%m : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) {launch = #norm.launch<vector = 4, threads_per_row = 1024, warps = 32, rows_per_cta = 16>} : tensor<?x6144xf32> -> tensor<?x6144xf32> weight_grad_partials(tensor<?x6144xf32>) bias_grad_partials(tensor<?x6144xf32>)
  return
}

// -----

// Staged, the f32 column sums of the weight and the bias gradients stay in
// registers: 32 elements a thread in CTAs of 512 threads, 12 in CTAs of 256
// of them (twice as many registers, kMaxStagedBackwardElements at most).
func.func @staged_column_sums(%x: tensor<?x12288xf32>, %dy: tensor<?x12288xf32>, %w: tensor<12288xf32>, %m: tensor<?x1xf32>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{keeps the column sums of 48 elements of a row per thread in registers, more than the 32 a thread of a CTA of 256 threads holds without spilling; use more threads per row}}
  %dx, %dw, %db = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x12288xf32>) weight(%w : tensor<12288xf32>) saved_mean(%m : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) {launch = #norm.launch<vector = 4, threads_per_row = 256, warps = 8, rows_per_cta = 1>} : tensor<?x12288xf32> -> tensor<?x12288xf32> weight_grad_partials(tensor<?x12288xf32>) bias_grad_partials(tensor<?x12288xf32>)
  return
}

// -----

func.func @too_long(%x: tensor<?x20480xbf16>, %dy: tensor<?x20480xbf16>, %w: tensor<20480xbf16>, %r: tensor<?x1xf32>) {
  // expected-error @+1 {{the backward kernel's f32 column sums of rows of 20480 elements do not fit in the registers of one CTA (at most 16384 elements); such rows are not supported}}
  %dx, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x20480xbf16>) weight(%w : tensor<20480xbf16>) saved_rstd(%r : tensor<?x1xf32>) {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>} : tensor<?x20480xbf16> -> tensor<?x20480xbf16> weight_grad_partials(tensor<?x20480xf32>)
  return
}

// -----

func.func @column_sum_width(%p: tensor<?x64xf32>) {
  // expected-error @+1 {{'output' must have 64 elements}}
  %s = norm.column_sum %p : tensor<?x64xf32> -> tensor<32xbf16>
  return
}

// -----

func.func @column_sum_of_f32(%p: tensor<?x64xbf16>) {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float values}}
  %s = norm.column_sum %p : tensor<?x64xbf16> -> tensor<64xbf16>
  return
}

// -----

func.func @head_weight(%x: tensor<?x1024xbf16>, %dy: tensor<?x1024xbf16>, %w: tensor<1024xbf16>, %r: tensor<?x8xf32>) {
  // expected-error @+1 {{'weight' must have 128 elements (the head dim), got 'tensor<1024xbf16>'}}
  %dx = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x1024xbf16>) weight(%w : tensor<1024xbf16>) saved_rstd(%r : tensor<?x8xf32>) {groups = 8 : i64, per_head_weight} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  return
}

// -----

func.func @grouped_partials(%x: tensor<?x1024xbf16>, %dy: tensor<?x1024xbf16>, %w: tensor<1024xbf16>, %r: tensor<?x8xf32>) {
  // expected-error @+1 {{'weight_grad_partials' must have 1024 columns, got 'tensor<?x128xf32>'}}
  %dx, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x1024xbf16>) weight(%w : tensor<1024xbf16>) saved_rstd(%r : tensor<?x8xf32>) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16> weight_grad_partials(tensor<?x128xf32>)
  return
}

// -----

func.func @grouped_weight(%x: tensor<?x1024xbf16>, %dy: tensor<?x1024xbf16>, %w: tensor<128xbf16>, %r: tensor<?x8xf32>) {
  // expected-error @+1 {{'weight' must have 1024 elements}}
  %dx = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x1024xbf16>) weight(%w : tensor<128xbf16>) saved_rstd(%r : tensor<?x8xf32>) {groups = 8 : i64} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  return
}

// -----

func.func @qk_saved_per_head(%qkv: tensor<?x512xbf16>) {
  // expected-error @+1 {{'saved_rstd' must have 3 columns, got 'tensor<?x4xf32>'}}
  %q, %k, %r = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x512xbf16> -> tensor<?x256xbf16>, tensor<?x128xbf16> saved_rstd(tensor<?x4xf32>)
  return
}

// -----

func.func @qk_saved_mean(%qkv: tensor<?x512xbf16>) {
  // expected-error @+1 {{'saved_mean' needs kind 'mean_var' and 'saved_rstd'}}
  %q, %k, %m, %r = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06) {num_q_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64} : tensor<?x512xbf16> -> tensor<?x256xbf16>, tensor<?x128xbf16> saved_mean(tensor<?x3xf32>) saved_rstd(tensor<?x3xf32>)
  return
}
