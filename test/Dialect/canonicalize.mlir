// Canonicalization of norm ops: each rewrite, and the near misses it must
// leave alone.
// RUN: norm-opt %s --canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @cast_same_type(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = norm.cast %x : tensor<?x8xf32> to tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// bf16 -> f32 is exact, so rounding back to bf16 gives x.
// CHECK-LABEL: func @cast_round_trip_exact
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xbf16>)
// CHECK-NEXT: return %[[X]]
func.func @cast_round_trip_exact(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  %0 = norm.cast %x : tensor<?x8xbf16> to tensor<?x8xf32>
  %1 = norm.cast %0 : tensor<?x8xf32> to tensor<?x8xbf16>
  return %1 : tensor<?x8xbf16>
}

// -----

// CHECK-LABEL: func @cast_chain_through_f32
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[Y:.*]]: tensor<4x8xf16>)
// CHECK-NEXT: %[[A:.*]] = norm.cast %[[X]] : tensor<4x8xbf16> to tensor<4x8xf16>
// CHECK-NEXT: %[[B:.*]] = norm.cast %[[Y]] : tensor<4x8xf16> to tensor<4x8xbf16>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @cast_chain_through_f32(%x: tensor<4x8xbf16>, %y: tensor<4x8xf16>)
    -> (tensor<4x8xf16>, tensor<4x8xbf16>) {
  %0 = norm.cast %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %1 = norm.cast %0 : tensor<4x8xf32> to tensor<4x8xf16>
  %2 = norm.cast %y : tensor<4x8xf16> to tensor<4x8xf32>
  %3 = norm.cast %2 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %1, %3 : tensor<4x8xf16>, tensor<4x8xbf16>
}

// -----

// f32 -> bf16 rounds: the round trip is not the identity and must stay, as
// must a chain through a type that does not hold the source exactly.
// CHECK-LABEL: func @cast_chain_rounding
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[Y:.*]]: tensor<?x8xbf16>)
// CHECK-NEXT: %[[A:.*]] = norm.cast %[[X]] : tensor<?x8xf32> to tensor<?x8xbf16>
// CHECK-NEXT: %[[B:.*]] = norm.cast %[[A]] : tensor<?x8xbf16> to tensor<?x8xf32>
// CHECK-NEXT: %[[C:.*]] = norm.cast %[[Y]] : tensor<?x8xbf16> to tensor<?x8xf16>
// CHECK-NEXT: %[[D:.*]] = norm.cast %[[C]] : tensor<?x8xf16> to tensor<?x8xbf16>
// CHECK-NEXT: return %[[B]], %[[D]]
func.func @cast_chain_rounding(%x: tensor<?x8xf32>, %y: tensor<?x8xbf16>)
    -> (tensor<?x8xf32>, tensor<?x8xbf16>) {
  %0 = norm.cast %x : tensor<?x8xf32> to tensor<?x8xbf16>
  %1 = norm.cast %0 : tensor<?x8xbf16> to tensor<?x8xf32>
  %2 = norm.cast %y : tensor<?x8xbf16> to tensor<?x8xf16>
  %3 = norm.cast %2 : tensor<?x8xf16> to tensor<?x8xbf16>
  return %1, %3 : tensor<?x8xf32>, tensor<?x8xbf16>
}

// -----

// The widening cast keeps its other user.
// CHECK-LABEL: func @cast_chain_shared
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf16>)
// CHECK-NEXT: %[[W:.*]] = norm.cast %[[X]] : tensor<?x8xf16> to tensor<?x8xf32>
// CHECK-NEXT: return %[[X]], %[[W]]
func.func @cast_chain_shared(%x: tensor<?x8xf16>) -> (tensor<?x8xf16>, tensor<?x8xf32>) {
  %0 = norm.cast %x : tensor<?x8xf16> to tensor<?x8xf32>
  %1 = norm.cast %0 : tensor<?x8xf32> to tensor<?x8xf16>
  return %1, %0 : tensor<?x8xf16>, tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func @residual_add_zero_sublayer
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xbf16>)
// CHECK-NEXT: return %[[X]]
func.func @residual_add_zero_sublayer(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  %zero = arith.constant dense<0.0> : tensor<2x8xf32>
  %0 = norm.residual_add %x, %zero : tensor<?x8xbf16>, tensor<2x8xf32> -> tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// -----

// alpha * x + 0 is a multiply, and a non-zero sublayer an add: both stay.
// CHECK-LABEL: func @residual_add_kept
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xbf16>, %[[F:.*]]: tensor<?x8xbf16>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<4x8xbf16>
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<4x8xbf16>
// CHECK: norm.residual_add %[[X]], %[[ZERO]] alpha(2.0) :
// CHECK: norm.residual_add %[[X]], %[[ONE]] :
// CHECK: norm.residual_add %[[X]], %[[F]] :
func.func @residual_add_kept(%x: tensor<?x8xbf16>, %f: tensor<?x8xbf16>)
    -> (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %zero = arith.constant dense<0.0> : tensor<4x8xbf16>
  %one = arith.constant dense<1.0> : tensor<4x8xbf16>
  %0 = norm.residual_add %x, %zero alpha(2.0) : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x8xbf16>
  %1 = norm.residual_add %x, %one : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x8xbf16>
  %2 = norm.residual_add %x, %f : tensor<?x8xbf16>, tensor<?x8xbf16> -> tensor<?x8xbf16>
  return %0, %1, %2 : tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>
}

// -----

// alpha * 0 + f is f when f has the result type; otherwise it is a cast.
// CHECK-LABEL: func @residual_add_zero_residual
// CHECK-SAME: (%[[F:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<4x8xbf16>)
// CHECK: %[[K:.*]] = norm.residual_add %{{.*}}, %[[G]] alpha(3.0) : tensor<4x8xf32>, tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[F]], %[[K]]
func.func @residual_add_zero_residual(%f: tensor<4x8xf32>, %g: tensor<4x8xbf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %0 = norm.residual_add %zero, %f alpha(3.0) : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = norm.residual_add %zero, %g alpha(3.0) : tensor<4x8xf32>, tensor<4x8xbf16> -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @rms_norm_unit_weight
// CHECK-NOT: arith.constant
// CHECK: norm.rms_norm %{{.*}} eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xbf16>
// Gemma's (1 + w) with zero weights: the offset goes too.
// CHECK-NEXT: norm.rms_norm %{{.*}} eps(1.0e-06) : tensor<?x8xbf16> -> tensor<?x8xbf16>
func.func @rms_norm_unit_weight(%x: tensor<?x8xbf16>) -> (tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %ones = arith.constant dense<1.0> : tensor<8xbf16>
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %0 = norm.rms_norm %x weight(%ones : tensor<8xbf16>) eps(1.0e-6) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  %1 = norm.rms_norm %x weight(%zeros : tensor<8xf32>) eps(1.0e-6) offset(1.0) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return %0, %1 : tensor<?x8xbf16>, tensor<?x8xbf16>
}

// -----

// Scales of 2, 1.5 and 0 are not the identity; nor are non-splat weights.
// CHECK-LABEL: func @rms_norm_weight_kept
// CHECK: norm.rms_norm %{{.*}} weight(%{{.*}}) eps(1.0e-06) offset(1.0)
// CHECK: norm.rms_norm %{{.*}} weight(%{{.*}}) eps(1.0e-06) offset(1.0)
// CHECK: norm.rms_norm %{{.*}} weight(%{{.*}}) eps(1.0e-06) :
// CHECK: norm.rms_norm %{{.*}} weight(%{{.*}}) eps(1.0e-06) :
func.func @rms_norm_weight_kept(%x: tensor<?x2xf32>)
    -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %ones = arith.constant dense<1.0> : tensor<2xf32>
  %half = arith.constant dense<0.5> : tensor<2xf32>
  %zeros = arith.constant dense<0.0> : tensor<2xf32>
  %mixed = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = norm.rms_norm %x weight(%ones : tensor<2xf32>) eps(1.0e-6) offset(1.0) : tensor<?x2xf32> -> tensor<?x2xf32>
  %1 = norm.rms_norm %x weight(%half : tensor<2xf32>) eps(1.0e-6) offset(1.0) : tensor<?x2xf32> -> tensor<?x2xf32>
  %2 = norm.rms_norm %x weight(%zeros : tensor<2xf32>) eps(1.0e-6) : tensor<?x2xf32> -> tensor<?x2xf32>
  %3 = norm.rms_norm %x weight(%mixed : tensor<2xf32>) eps(1.0e-6) : tensor<?x2xf32> -> tensor<?x2xf32>
  return %0, %1, %2, %3 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// A zero bias of either sign goes (signed zeros are not preserved).
// CHECK-LABEL: func @layer_norm_identity_params
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf16>, %[[B:.*]]: tensor<8xf16>)
// CHECK-NOT: arith.constant
// CHECK: norm.layer_norm %[[X]] eps(1.0e-05) : tensor<?x8xf16> -> tensor<?x8xf16>
// CHECK-NEXT: norm.layer_norm %[[X]] bias(%[[B]] : tensor<8xf16>) eps(1.0e-05) :
// CHECK-NEXT: norm.layer_norm %[[X]] eps(1.0e-05) : tensor<?x8xf16> -> tensor<?x8xf16>
func.func @layer_norm_identity_params(%x: tensor<?x8xf16>, %b: tensor<8xf16>)
    -> (tensor<?x8xf16>, tensor<?x8xf16>, tensor<?x8xf16>) {
  %ones = arith.constant dense<1.0> : tensor<8xf16>
  %zeros = arith.constant dense<0.0> : tensor<8xf16>
  %negzeros = arith.constant dense<-0.0> : tensor<8xf32>
  %0 = norm.layer_norm %x weight(%ones : tensor<8xf16>) bias(%zeros : tensor<8xf16>) eps(1.0e-5) : tensor<?x8xf16> -> tensor<?x8xf16>
  %1 = norm.layer_norm %x weight(%ones : tensor<8xf16>) bias(%b : tensor<8xf16>) eps(1.0e-5) : tensor<?x8xf16> -> tensor<?x8xf16>
  %2 = norm.layer_norm %x bias(%negzeros : tensor<8xf32>) eps(1.0e-5) : tensor<?x8xf16> -> tensor<?x8xf16>
  return %0, %1, %2 : tensor<?x8xf16>, tensor<?x8xf16>, tensor<?x8xf16>
}

// -----

// CHECK-LABEL: func @layer_norm_params_kept
// CHECK: %[[ONES:.*]] = arith.constant dense<1.000000e+00>
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00>
// A bias of ones is an add; a weight of zeros a multiply.
// CHECK: norm.layer_norm %{{.*}} weight(%[[ZEROS]] : tensor<8xf16>) bias(%[[ONES]] : tensor<8xf16>) eps(1.0e-05)
func.func @layer_norm_params_kept(%x: tensor<?x8xf16>) -> tensor<?x8xf16> {
  %ones = arith.constant dense<1.0> : tensor<8xf16>
  %zeros = arith.constant dense<0.0> : tensor<8xf16>
  %0 = norm.layer_norm %x weight(%zeros : tensor<8xf16>) bias(%ones : tensor<8xf16>) eps(1.0e-5) : tensor<?x8xf16> -> tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// -----

// CHECK-LABEL: func @group_norm_identity_params
// CHECK-NOT: arith.constant
// CHECK: norm.group_norm %{{.*}} eps(1.0e-05) {groups = 2 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
func.func @group_norm_identity_params(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %ones = arith.constant dense<1.0> : tensor<8xf32>
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %0 = norm.group_norm %x weight(%ones : tensor<8xf32>) bias(%zeros : tensor<8xf32>) eps(1.0e-5) {groups = 2 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func @batch_norm_identity_params
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[M:.*]]: tensor<8xf32>, %[[V:.*]]: tensor<8xf32>)
// CHECK-NOT: arith.constant
// CHECK: norm.batch_norm_inference %[[X]] mean(%[[M]] : tensor<8xf32>) variance(%[[V]] : tensor<8xf32>) eps(1.0e-05) :
// CHECK: norm.batch_norm_training %[[X]] eps(1.0e-05) :
func.func @batch_norm_identity_params(%x: tensor<?x8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %ones = arith.constant dense<1.0> : tensor<8xf32>
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %0 = norm.batch_norm_inference %x mean(%m : tensor<8xf32>) variance(%v : tensor<8xf32>) weight(%ones : tensor<8xf32>) bias(%zeros : tensor<8xf32>) eps(1.0e-5) : tensor<?x8xf32> -> tensor<?x8xf32>
  %1:3 = norm.batch_norm_training %x weight(%ones : tensor<8xf32>) bias(%zeros : tensor<8xf32>) eps(1.0e-5) : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %0, %1#0 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// The mean and variance of inference BatchNorm are not parameters to drop.
// CHECK-LABEL: func @batch_norm_stats_kept
// CHECK: norm.batch_norm_inference %{{.*}} mean(%{{.*}} : tensor<8xf32>) variance(%{{.*}} : tensor<8xf32>) eps(1.0e-05) :
func.func @batch_norm_stats_kept(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %ones = arith.constant dense<1.0> : tensor<8xf32>
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %0 = norm.batch_norm_inference %x mean(%zeros : tensor<8xf32>) variance(%ones : tensor<8xf32>) eps(1.0e-5) : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func @fused_row_identity_params
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xbf16>, %[[F:.*]]: tensor<?x8xbf16>)
// CHECK-NOT: arith.constant
// CHECK: norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x8xbf16>) eps(1.0e-06) alpha(2.0) {launch = #norm.launch<vector = 8, threads_per_row = 1, warps = 1, rows_per_cta = 32>} : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<?x8xbf16>
// CHECK: norm.fused_row <mean_var> %[[X]] eps(1.0e-05) : tensor<?x8xbf16> -> tensor<?x8xf32>
func.func @fused_row_identity_params(%x: tensor<?x8xbf16>, %f: tensor<?x8xbf16>)
    -> (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xf32>) {
  %ones = arith.constant dense<1.0> : tensor<8xbf16>
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %0:2 = norm.fused_row <rms> %x addend(%f : tensor<?x8xbf16>) weight(%zeros : tensor<8xf32>) eps(1.0e-6) alpha(2.0) offset(1.0)
      {launch = #norm.launch<vector = 8, threads_per_row = 1, warps = 1, rows_per_cta = 32>}
      : tensor<?x8xbf16> -> tensor<?x8xbf16>, tensor<?x8xbf16>
  %zeros16 = arith.constant dense<0.0> : tensor<8xbf16>
  %1 = norm.fused_row <mean_var> %x weight(%ones : tensor<8xbf16>) bias(%zeros16 : tensor<8xbf16>) eps(1.0e-5)
      : tensor<?x8xbf16> -> tensor<?x8xf32>
  return %0#0, %0#1, %1 : tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xf32>
}

// -----

// Ones with offset 1 scale by 2; per-channel statistics are not parameters.
// CHECK-LABEL: func @fused_row_params_kept
// CHECK: norm.fused_row <rms> %{{.*}} weight(%{{.*}} : tensor<8xbf16>) eps(1.0e-06) offset(1.0) :
// CHECK: norm.fused_row <none> %{{.*}} mean(%{{.*}} : tensor<8xf32>) variance(%{{.*}} : tensor<8xf32>) eps(1.0e-05) :
func.func @fused_row_params_kept(%x: tensor<?x8xbf16>) -> (tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %ones = arith.constant dense<1.0> : tensor<8xbf16>
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %0 = norm.fused_row <rms> %x weight(%ones : tensor<8xbf16>) eps(1.0e-6) offset(1.0) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  %1 = norm.fused_row <none> %x mean(%zeros : tensor<8xf32>) variance(%zeros : tensor<8xf32>) eps(1.0e-5) : tensor<?x8xbf16> -> tensor<?x8xbf16>
  return %0, %1 : tensor<?x8xbf16>, tensor<?x8xbf16>
}
