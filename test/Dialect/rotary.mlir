// RUN: norm-opt %s --split-input-file | norm-opt --split-input-file | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics --verify-roundtrip > /dev/null
// RUN: norm-opt %S/Inputs/rotary-invalid.mlir --split-input-file --verify-diagnostics
// RUN: not norm-opt %S/Inputs/rotary-alone.mlir --norm-generate-kernels 2>&1 | FileCheck %s --check-prefix=ALONE

// CHECK-LABEL: func.func @rotary
// CHECK: norm.rotary <neox> %{{.*}} {head_dim = 128 : i64, num_heads = 32 : i64, rope_theta = 1.000000e+06 : f64} : tensor<?x4096xbf16>
// CHECK: norm.rotary <gptj> %{{.*}} {head_dim = 64 : i64, num_heads = 2 : i64, rope_theta = 1.000000e+04 : f64, rotary_dim = 32 : i64} : tensor<7x128xf32>
func.func @rotary(%q: tensor<?x4096xbf16>, %x: tensor<7x128xf32>) -> (tensor<?x4096xbf16>, tensor<7x128xf32>) {
  %0 = norm.rotary <neox> %q {num_heads = 32 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64} : tensor<?x4096xbf16>
  %1 = norm.rotary <gptj> %x {num_heads = 2 : i64, head_dim = 64 : i64, rotary_dim = 32 : i64, rope_theta = 1.0e+04 : f64} : tensor<7x128xf32>
  return %0, %1 : tensor<?x4096xbf16>, tensor<7x128xf32>
}

// -----

// Positions from a buffer, angles from a cos/sin table (no theta).
// CHECK-LABEL: func.func @rotary_table
// CHECK: norm.rotary <neox> %{{.*}} positions(%{{.*}} : tensor<?xi32>) rope_table(%{{.*}} : tensor<?x64xf32>) {head_dim = 128 : i64, num_heads = 32 : i64, rotary_dim = 64 : i64} : tensor<?x4096xbf16>
// CHECK: norm.rotary <gptj> %{{.*}} positions(%{{.*}} : tensor<7xi32>) {head_dim = 64 : i64, num_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : tensor<7x128xf32>
func.func @rotary_table(%q: tensor<?x4096xbf16>, %pos: tensor<?xi32>, %table: tensor<?x64xf32>,
                        %x: tensor<7x128xf32>, %p7: tensor<7xi32>) -> (tensor<?x4096xbf16>, tensor<7x128xf32>) {
  %0 = norm.rotary <neox> %q positions(%pos : tensor<?xi32>) rope_table(%table : tensor<?x64xf32>) {num_heads = 32 : i64, head_dim = 128 : i64, rotary_dim = 64 : i64} : tensor<?x4096xbf16>
  %1 = norm.rotary <gptj> %x positions(%p7 : tensor<7xi32>) {num_heads = 2 : i64, head_dim = 64 : i64, rope_theta = 1.0e+04 : f64} : tensor<7x128xf32>
  return %0, %1 : tensor<?x4096xbf16>, tensor<7x128xf32>
}

// ALONE: error: 'norm.rotary' op is not a kernel op; norm-fuse-rotary-into-attention (part of norm-fuse) moves it into the norm.attention that reads it (q and k alike)
