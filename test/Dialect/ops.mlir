// RUN: norm-opt %s | norm-opt | FileCheck %s
// RUN: norm-opt %s --mlir-print-op-generic | norm-opt | FileCheck %s

// CHECK-LABEL: func @layer_ops
func.func @layer_ops(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>,
                     %w: tensor<4096xbf16>, %b: tensor<4096xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: norm.rms_norm %{{.*}} weight(%{{.*}} : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %0 = norm.rms_norm %x weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.rms_norm %{{.*}} eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %1 = norm.rms_norm %0 eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.layer_norm %{{.*}} weight(%{{.*}} : tensor<4096xbf16>) bias(%{{.*}} : tensor<4096xbf16>) eps(1.0e-05)
  %2 = norm.layer_norm %1 weight(%w : tensor<4096xbf16>) bias(%b : tensor<4096xbf16>) eps(1.0e-5) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.residual_add %{{.*}}, %{{.*}} alpha(2.0)
  %3 = norm.residual_add %2, %f alpha(2.0) : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %3 : tensor<?x4096xbf16>
}

// CHECK-LABEL: func @kernel_ops
func.func @kernel_ops(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  // CHECK: norm.fused_row <rms> %{{.*}} addend(%{{.*}} : tensor<?x4096xbf16>) weight(%{{.*}} : tensor<4096xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %y, %h = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>)
      eps(1.0e-6) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
