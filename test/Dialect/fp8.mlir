// RUN: norm-opt %s | norm-opt | FileCheck %s

// FP8 outputs print as they parse: the static scale operand, the per-token
// scales' bound and result.

// CHECK-LABEL: func.func @static_scale
// CHECK: norm.fused_row <rms> %{{.*}} addend(%{{.*}} : tensor<?x4096xbf16>) weight(%{{.*}} : tensor<4096xbf16>) output_scale(%{{.*}} : tensor<1xf32>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
func.func @static_scale(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>,
                        %w: tensor<4096xbf16>, %s: tensor<1xf32>)
    -> (tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) output_scale(%s : tensor<1xf32>)
      eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
}

// CHECK-LABEL: func.func @per_token
// CHECK: norm.fused_row <mean_var> %{{.*}} weight(%{{.*}} : tensor<768xf32>) bias(%{{.*}} : tensor<768xf32>) scale_ub(%{{.*}} : tensor<1xf32>) eps(1.0e-05) : tensor<8x768xf16> -> tensor<8x768xf8E5M2> output_scales(tensor<8x1xf32>) saved_mean(tensor<8x1xf32>) saved_rstd(tensor<8x1xf32>)
func.func @per_token(%x: tensor<8x768xf16>, %w: tensor<768xf32>,
                     %b: tensor<768xf32>, %u: tensor<1xf32>)
    -> (tensor<8x768xf8E5M2>, tensor<8x1xf32>) {
  %y, %s, %m, %r = norm.fused_row <mean_var> %x weight(%w : tensor<768xf32>)
      bias(%b : tensor<768xf32>) scale_ub(%u : tensor<1xf32>) eps(1.0e-05)
      : tensor<8x768xf16> -> tensor<8x768xf8E5M2> output_scales(tensor<8x1xf32>)
        saved_mean(tensor<8x1xf32>) saved_rstd(tensor<8x1xf32>)
  return %y, %s : tensor<8x768xf8E5M2>, tensor<8x1xf32>
}
