// RUN: norm-opt %s | FileCheck %s
// RUN: norm-opt %s | norm-opt | FileCheck %s
// RUN: norm-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// The training kernels: a forward row kernel that saves its statistics, the
// backward row kernels that read them, and the column sums of their weight
// and bias gradient partials.

// CHECK-LABEL: func.func @pre_norm_step
// CHECK: %output, %residual_out, %saved_rstd = norm.fused_row <rms> %arg0 addend(%arg1 : tensor<?x4096xbf16>) weight(%arg2 : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16> saved_rstd(tensor<?x1xf32>)
// CHECK: norm.fused_row_grad <rms> %residual_out grad(%arg3 : tensor<?x4096xbf16>) residual_grad(%arg4 : tensor<?x4096xbf16>) weight(%arg2 : tensor<4096xbf16>) saved_rstd(%saved_rstd : tensor<?x1xf32>) : tensor<?x4096xbf16> -> tensor<?x4096xbf16> weight_grad_partials(tensor<?x4096xf32>)
// CHECK: norm.column_sum %weight_grad_partials : tensor<?x4096xf32> -> tensor<4096xbf16>
// GENERIC: "norm.fused_row"({{.*}}) <{{.*}}operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 1>, statistic = #norm.statistic<rms>
// GENERIC: "norm.fused_row_grad"({{.*}}) <{alpha = 1.000000e+00 : f64, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>, resultSegmentSizes = array<i32: 1, 0, 1, 0>, statistic = #norm.statistic<rms>, weight_offset = 0.000000e+00 : f64}>
func.func @pre_norm_step(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>,
                         %w: tensor<4096xbf16>, %dy: tensor<?x4096xbf16>,
                         %dh: tensor<?x4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>) {
  %y, %h, %rstd = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
        saved_rstd(tensor<?x1xf32>)
  %dx, %dwp = norm.fused_row_grad <rms> %h grad(%dy : tensor<?x4096xbf16>)
      residual_grad(%dh : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>)
      saved_rstd(%rstd : tensor<?x1xf32>)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
        weight_grad_partials(tensor<?x4096xf32>)
  %dw = norm.column_sum %dwp : tensor<?x4096xf32> -> tensor<4096xbf16>
  return %y, %dx, %dw : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>
}

// LayerNorm saves its mean too; its backward writes weight and bias partials.
// CHECK-LABEL: func.func @layer_norm
// CHECK: norm.fused_row <mean_var> %arg0 weight(%arg1 : tensor<768xf32>) bias(%arg2 : tensor<768xf32>) eps(1.0e-05) : tensor<?x768xf16> -> tensor<?x768xf16> saved_mean(tensor<?x1xf32>) saved_rstd(tensor<?x1xf32>)
// CHECK: norm.fused_row_grad <mean_var> %arg0 grad(%arg3 : tensor<?x768xf16>) weight(%arg1 : tensor<768xf32>) saved_mean(%saved_mean : tensor<?x1xf32>) saved_rstd(%saved_rstd : tensor<?x1xf32>) : tensor<?x768xf16> -> tensor<?x768xf16> weight_grad_partials(tensor<?x768xf32>) bias_grad_partials(tensor<?x768xf32>)
func.func @layer_norm(%x: tensor<?x768xf16>, %w: tensor<768xf32>,
                      %b: tensor<768xf32>, %dy: tensor<?x768xf16>)
    -> (tensor<?x768xf16>, tensor<?x768xf16>, tensor<?x768xf32>, tensor<?x768xf32>) {
  %y, %mean, %rstd = norm.fused_row <mean_var> %x weight(%w : tensor<768xf32>)
      bias(%b : tensor<768xf32>) eps(1.0e-05)
      : tensor<?x768xf16> -> tensor<?x768xf16> saved_mean(tensor<?x1xf32>)
        saved_rstd(tensor<?x1xf32>)
  %dx, %dw, %db = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x768xf16>)
      weight(%w : tensor<768xf32>) saved_mean(%mean : tensor<?x1xf32>)
      saved_rstd(%rstd : tensor<?x1xf32>)
      : tensor<?x768xf16> -> tensor<?x768xf16>
        weight_grad_partials(tensor<?x768xf32>) bias_grad_partials(tensor<?x768xf32>)
  return %y, %dx, %dw, %db : tensor<?x768xf16>, tensor<?x768xf16>, tensor<?x768xf32>, tensor<?x768xf32>
}

// DeepNorm's alpha makes the addend's gradient differ from the input's;
// Gemma's (1 + w); GroupNorm saves one statistic per group.
// CHECK-LABEL: func.func @deepnorm_gemma
// CHECK: norm.fused_row_grad <rms> %arg0 grad(%arg1 : tensor<?x2880xbf16>) weight(%arg2 : tensor<2880xbf16>) saved_rstd(%arg3 : tensor<?x1xf32>) alpha(1.8612097182041991) offset(1.0) : tensor<?x2880xbf16> -> tensor<?x2880xbf16> addend_grad(tensor<?x2880xf32>)
// CHECK: norm.fused_row <mean_var> %arg4 eps(1.0e-05) {groups = 32 : i64} : tensor<?x512xf32> -> tensor<?x512xf32> saved_mean(tensor<?x32xf32>) saved_rstd(tensor<?x32xf32>)
func.func @deepnorm_gemma(%h: tensor<?x2880xbf16>, %dy: tensor<?x2880xbf16>,
                          %w: tensor<2880xbf16>, %rstd: tensor<?x1xf32>,
                          %g: tensor<?x512xf32>)
    -> (tensor<?x2880xbf16>, tensor<?x2880xf32>, tensor<?x32xf32>) {
  %dx, %df = norm.fused_row_grad <rms> %h grad(%dy : tensor<?x2880xbf16>)
      weight(%w : tensor<2880xbf16>) saved_rstd(%rstd : tensor<?x1xf32>)
      alpha(1.8612097182041991) offset(1.0)
      : tensor<?x2880xbf16> -> tensor<?x2880xbf16> addend_grad(tensor<?x2880xf32>)
  %y, %m, %r = norm.fused_row <mean_var> %g eps(1.0e-05) {groups = 32 : i64}
      : tensor<?x512xf32> -> tensor<?x512xf32> saved_mean(tensor<?x32xf32>)
        saved_rstd(tensor<?x32xf32>)
  return %dx, %df, %r : tensor<?x2880xbf16>, tensor<?x2880xf32>, tensor<?x32xf32>
}

// QK-Norm: the prologue saves one rstd per head (q heads first); its
// backward is one op per kind of head, over row slices of the same tensors,
// the heads sharing their weight (per_head_weight).
// CHECK-LABEL: func.func @qk_norm
// CHECK: norm.qk_norm_prologue <rms> %arg0 q_weight(%arg1 : tensor<128xbf16>) k_weight(%arg2 : tensor<128xbf16>) eps(1.0e-06) {head_dim = 128 : i64, num_kv_heads = 2 : i64, num_q_heads = 8 : i64} : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16> saved_rstd(tensor<?x10xf32>)
// CHECK: norm.fused_row_grad <rms> %arg3 grad(%arg4 : tensor<?x1024xbf16>) weight(%arg1 : tensor<128xbf16>) saved_rstd(%arg5 : tensor<?x8xf32>) {groups = 8 : i64, per_head_weight} : tensor<?x1024xbf16> -> tensor<?x1024xbf16> weight_grad_partials(tensor<?x128xf32>)
// GENERIC: "norm.qk_norm_prologue"({{.*}}) <{{.*}}resultSegmentSizes = array<i32: 1, 1, 0, 1>
func.func @qk_norm(%qkv: tensor<?x1536xbf16>, %wq: tensor<128xbf16>,
                   %wk: tensor<128xbf16>, %qpre: tensor<?x1024xbf16>,
                   %dq: tensor<?x1024xbf16>, %rq: tensor<?x8xf32>)
    -> (tensor<?x1024xbf16>, tensor<?x10xf32>, tensor<?x1024xbf16>, tensor<?x128xf32>) {
  %q, %k, %rstd = norm.qk_norm_prologue <rms> %qkv q_weight(%wq : tensor<128xbf16>)
      k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {num_q_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64}
      : tensor<?x1536xbf16> -> tensor<?x1024xbf16>, tensor<?x256xbf16>
        saved_rstd(tensor<?x10xf32>)
  %dqpre, %dwq = norm.fused_row_grad <rms> %qpre grad(%dq : tensor<?x1024xbf16>)
      weight(%wq : tensor<128xbf16>) saved_rstd(%rq : tensor<?x8xf32>)
      {groups = 8 : i64, per_head_weight}
      : tensor<?x1024xbf16> -> tensor<?x1024xbf16> weight_grad_partials(tensor<?x128xf32>)
  return %q, %rstd, %dqpre, %dwq : tensor<?x1024xbf16>, tensor<?x10xf32>, tensor<?x1024xbf16>, tensor<?x128xf32>
}
