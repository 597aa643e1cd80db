// RUN: norm-opt %s -split-input-file | FileCheck %s
// RUN: norm-opt %s -split-input-file | norm-opt -split-input-file | FileCheck %s
// RUN: norm-opt %s -split-input-file --mlir-print-op-generic \
// RUN:   | FileCheck %s --check-prefix=GENERIC

// In-place outputs of norm.fused_row print, parse and round-trip; the
// generic form holds them as the row operand enum.

// vLLM's fused_add_rms_norm(input, residual): the residual stream (our
// input) takes the sum, the sublayer's output (our addend) the norm.
// CHECK-LABEL: func.func @vllm
// CHECK: norm.fused_row <rms> %{{.*}} addend(%{{.*}} : tensor<?x4096xbf16>) weight(%{{.*}} : tensor<4096xbf16>) eps(1.0e-06) output_over(addend) residual_over(input) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
// GENERIC-LABEL: sym_name = "vllm"
// GENERIC: "norm.fused_row"
// GENERIC-SAME: output_over = 2 : i32
// GENERIC-SAME: residual_over = 1 : i32
func.func @vllm(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>, %w: tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %r addend(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) eps(1.0e-06) output_over(addend) residual_over(input) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}

// -----

// One of the two: the output over the input of a plain LayerNorm.
// CHECK-LABEL: func.func @layer
// CHECK: norm.fused_row <mean_var> %{{.*}} eps(1.0e-05) output_over(input) : tensor<?x768xf16> -> tensor<?x768xf16>
// CHECK-NOT: residual_over
// GENERIC-LABEL: sym_name = "layer"
// GENERIC-NOT: residual_over
// GENERIC: output_over = 1 : i32
func.func @layer(%x: tensor<?x768xf16>) -> tensor<?x768xf16> {
  %y = norm.fused_row <mean_var> %x eps(1.0e-05) output_over(input) : tensor<?x768xf16> -> tensor<?x768xf16>
  return %y : tensor<?x768xf16>
}
