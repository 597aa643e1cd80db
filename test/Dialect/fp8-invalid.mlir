// RUN: norm-opt %s -split-input-file -verify-diagnostics

// The rules of FP8 outputs (norm::verifyOpSpec and, with a launch,
// norm::verifyLaunchFor); each one a message of its own.

func.func @fp8_without_scale(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{an FP8 output (f8E4M3FN) needs a scale: static (output_scale) or per_token (output_scales)}}
  %y = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xf8E4M3FN>
  return
}

// -----

func.func @scale_of_bf16(%x: tensor<?x64xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{output scales quantize FP8 outputs (f8E4M3FN, f8E5M2), not bf16}}
  %y = norm.fused_row <rms> %x output_scale(%s : tensor<1xf32>) eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  return
}

// -----

func.func @static_and_per_token(%x: tensor<?x64xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{quantizes with a static 'output_scale' or writes per-token 'output_scales', not both}}
  %y, %t = norm.fused_row <rms> %x output_scale(%s : tensor<1xf32>) eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xf8E4M3FN> output_scales(tensor<?x1xf32>)
  return
}

// -----

func.func @scale_not_scalar(%x: tensor<?x64xbf16>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'output_scale' is a scalar: one element, got 'tensor<2xf32>'}}
  %y = norm.fused_row <rms> %x output_scale(%s : tensor<2xf32>) eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xf8E4M3FN>
  return
}

// -----

func.func @scales_per_group(%x: tensor<8x64xbf16>) {
  // expected-error @+1 {{'output_scales' must have 1 columns, got 'tensor<8x2xf32>'}}
  %y, %t = norm.fused_row <rms> %x eps(1.0e-06) : tensor<8x64xbf16> -> tensor<8x64xf8E4M3FN> output_scales(tensor<8x2xf32>)
  return
}

// -----

func.func @per_token_groups(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{per-token FP8 scales take the amax of a whole token row: groups must be 1, got 4}}
  %y, %t = norm.fused_row <mean_var> %x eps(1.0e-05) {groups = 4 : i64} : tensor<?x64xbf16> -> tensor<?x64xf8E4M3FN> output_scales(tensor<?x1xf32>)
  return
}

// -----

func.func @bound_of_static(%x: tensor<?x64xbf16>, %s: tensor<1xf32>, %u: tensor<1xf32>) {
  // expected-error @+1 {{scale_ub bounds per-token FP8 scales only}}
  %y = norm.fused_row <rms> %x output_scale(%s : tensor<1xf32>) scale_ub(%u : tensor<1xf32>) eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xf8E5M2>
  return
}

// -----

func.func @fp8_skip(%x: tensor<?x64xbf16>, %k: tensor<?x64xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{an FP8 output quantizes the normalized row; a skip (Sandwich-Norm) add before it is not supported}}
  %y = norm.fused_row <rms> %x skip(%k : tensor<?x64xbf16>) output_scale(%s : tensor<1xf32>) eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xf8E4M3FN>
  return
}

// -----

func.func @fp8_residual_out(%x: tensor<?x64xbf16>, %a: tensor<?x64xbf16>, %s: tensor<1xf32>) {
  // expected-error @+1 {{result #1 must be 2D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?x64xf8E4M3FN>'}}
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x64xbf16>) output_scale(%s : tensor<1xf32>) eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xf8E4M3FN>, tensor<?x64xf8E4M3FN>
  return
}

// -----

// Rows too long to stage (262144 bf16 elements) are read twice from global
// memory: per-token scales would need a third pass.
func.func @streamed_per_token(%x: tensor<?x262144xbf16>) {
  // expected-error @+1 {{per-token FP8 scales need rows held whole (in registers or staged in shared memory), but rows of 262144 elements take 524288 bytes staged, more than the 231424 a CTA of the target may use; use a static scale there}}
  %y, %t = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 1024, warps = 32, rows_per_cta = 1>} : tensor<?x262144xbf16> -> tensor<?x262144xf8E4M3FN> output_scales(tensor<?x1xf32>)
  return
}

// -----

// Staged rows that do not fit four at a time.
func.func @streamed_by_launch(%x: tensor<?x65536xbf16>) {
  // expected-error @+1 {{per-token FP8 scales need rows held whole (in registers or staged in shared memory), but rows of 65536 elements are streamed with this launch (4 rows of 131072 bytes at once do not fit the shared memory of a CTA): stage fewer rows at once}}
  %y, %t = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 32, rows_per_cta = 4>} : tensor<?x65536xbf16> -> tensor<?x65536xf8E4M3FN> output_scales(tensor<?x1xf32>)
  return
}
