// RUN: norm-opt %s -split-input-file -verify-diagnostics

// The rules of in-place outputs (norm::verifyInPlace and, with a launch,
// norm::verifyLaunchFor); each one a message of its own.

func.func @cast_over_input(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{output (f32) cannot overwrite 'input' (bf16): an in-place output keeps the element type of the rows it overwrites}}
  %y = norm.fused_row <rms> %x eps(1.0e-06) output_over(input) : tensor<?x64xbf16> -> tensor<?x64xf32>
  return
}

// -----

func.func @over_missing_addend(%x: tensor<?x64xbf16>) {
  // expected-error @+1 {{output cannot overwrite an addend the operation does not have}}
  %y = norm.fused_row <rms> %x eps(1.0e-06) output_over(addend) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  return
}

// -----

func.func @residual_over_without_residual(%x: tensor<?x64xbf16>, %a: tensor<?x64xbf16>) {
  // expected-error @+1 {{residual_over needs residual_out, the output it writes in place}}
  %y = norm.fused_row <rms> %x addend(%a : tensor<?x64xbf16>) eps(1.0e-06) residual_over(input) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  return
}

// -----

func.func @both_over_input(%x: tensor<?x64xbf16>, %a: tensor<?x64xbf16>) {
  // expected-error @+1 {{output and residual_out cannot both overwrite 'input'}}
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x64xbf16>) eps(1.0e-06) output_over(input) residual_over(input) : tensor<?x64xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  return
}

// -----

func.func @residual_over_other_type(%x: tensor<?x64xbf16>, %a: tensor<?x64xf32>) {
  // expected-error @+1 {{residual_out (bf16) cannot overwrite 'addend' (f32)}}
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x64xf32>) eps(1.0e-06) residual_over(addend) : tensor<?x64xbf16> -> tensor<?x64xbf16>, tensor<?x64xbf16>
  return
}

// -----

// Streamed rows (here 262144 bf16 elements, beyond what a CTA stages)
// store residual_out in their first pass: mean_var rows, whose first element
// every thread reads, cannot then be in place (rms rows, which read v back
// from residual_out, can: generate-kernels-in-place.mlir).
func.func @streamed_residual(%x: tensor<?x262144xbf16>, %a: tensor<?x262144xbf16>) {
  // expected-error @+1 {{residual_out over 'input' needs mean_var rows read whole before they are written (every thread reads their first element) (in registers or staged in shared memory), but rows of 262144 elements take 524288 bytes staged, more than the 231424 a CTA of the target may use, and streamed rows store residual_out in their first pass: such rows cannot write it in place}}
  %y, %h = norm.fused_row <mean_var> %x addend(%a : tensor<?x262144xbf16>) eps(1.0e-05) residual_over(input) {launch = #norm.launch<vector = 8, threads_per_row = 1024, warps = 32, rows_per_cta = 1>} : tensor<?x262144xbf16> -> tensor<?x262144xbf16>, tensor<?x262144xbf16>
  return
}

// -----

// An f32 residual stream: the second pass reads the input and addend again,
// which residual_out overwrote.
func.func @streamed_f32_residual(%x: tensor<?x262144xbf16>, %a: tensor<?x262144xbf16>) {
  // expected-error @+1 {{residual_out over 'addend' needs rows read whole before they are written, or read back from residual_out (not with an f32 residual stream) (in registers or staged in shared memory), but rows of 262144 elements take 1048576 bytes staged}}
  %y, %h = norm.fused_row <rms> %x addend(%a : tensor<?x262144xbf16>) eps(1.0e-06) residual_over(addend) {f32_residual, launch = #norm.launch<vector = 8, threads_per_row = 1024, warps = 32, rows_per_cta = 1>} : tensor<?x262144xbf16> -> tensor<?x262144xbf16>, tensor<?x262144xbf16>
  return
}

// -----

// Rows a CTA could stage one at a time, launched four at a time.
func.func @streamed_by_launch(%x: tensor<?x65536xbf16>, %a: tensor<?x65536xbf16>) {
  // expected-error @+1 {{residual_out over 'addend' needs mean_var rows read whole before they are written (every thread reads their first element) (in registers or staged in shared memory), but rows of 65536 elements are streamed with this launch (4 rows of 131072 bytes at once do not fit the shared memory of a CTA): stage fewer rows at once}}
  %y, %h = norm.fused_row <mean_var> %x addend(%a : tensor<?x65536xbf16>) eps(1.0e-05) residual_over(addend) {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 4>} : tensor<?x65536xbf16> -> tensor<?x65536xbf16>, tensor<?x65536xbf16>
  return
}
