// RUN: norm-opt %s --norm-assign-launch-config \
// RUN:   --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// FP8 outputs: y * (1 / scale), clamped to the finite range with the
// NaN-keeping minimumf/maximumf, then arith.truncf (norm-expand-fp8-
// conversions lowers it). The scale buffers are 4-byte aligned scalars and
// parameters (noalias, readonly: nothing in the kernel writes them).

// A static scale: its reciprocal once per CTA, with the weight, before the
// rows.
// CHECK-LABEL: gpu.func @norm_rms_add_h4096_bf16_f8E4M3FN_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK-SAME: %[[S:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 4 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xf8E4M3FN> {llvm.align = 8 : i64, llvm.noalias},
// CHECK: %[[SCALE:.*]] = memref.load %[[S]][%{{.*}}]
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %[[SCALE]] : f32
// CHECK: norm.row_allreduce
// CHECK: %[[IB:.*]] = vector.broadcast %[[INV]] : f32 to vector<8xf32>
// CHECK: %[[Q:.*]] = arith.mulf %{{.*}}, %[[IB]] : vector<8xf32>
// CHECK: %[[HI:.*]] = arith.minimumf %[[Q]], %{{.*}} : vector<8xf32>
// CHECK: %[[LO:.*]] = arith.maximumf %[[HI]], %{{.*}} : vector<8xf32>
// CHECK: %[[B:.*]] = arith.truncf %[[LO]] : vector<8xf32> to vector<8xf8E4M3FN>
// CHECK: vector.store %[[B]], %[[Y]][%{{.*}}] {alignment = 8 : i64}
// CHECK: gpu.return
func.func @static_scale(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>,
                        %w: tensor<4096xbf16>, %s: tensor<1xf32>)
    -> (tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) output_scale(%s : tensor<1xf32>)
      eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xf8E4M3FN>, tensor<?x4096xbf16>
}

// Per-token scales: the row's sums, then |y| of the row's own elements
// reduced to its amax over the row's threads (every thread, outside the
// row's guard), then the scale, bounded by scale_ub and at least
// 1 / (57344 * 512); the row's first thread stores it.
// CHECK-LABEL: gpu.func @norm_rms_h4096_bf16_f8E5M2_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK-SAME: %[[UB:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 4 : i64, llvm.noalias, llvm.readonly},
// CHECK-SAME: %[[Y:arg[0-9]+]]: memref<1099511627776xf8E5M2> {llvm.align = 8 : i64, llvm.noalias},
// CHECK-SAME: %[[SC:arg[0-9]+]]: memref<1099511627776xf32> {llvm.align = 4 : i64, llvm.noalias},
// CHECK: norm.row_allreduce %{{.*}} {group_size = 512 : i64} : f32
// CHECK: scf.if
// CHECK: math.rsqrt
// CHECK: %[[ABS:.*]] = math.absf %{{.*}} : vector<8xf32>
// CHECK: arith.maximumf %{{.*}}, %[[ABS]] : vector<8xf32>
// CHECK: } else {
// CHECK: %[[LOCAL:.*]] = vector.reduction <maximumf>, %{{.*}} : vector<8xf32> into f32
// CHECK: %[[AMAX:.*]] = norm.row_allreduce %[[LOCAL]] {group_size = 512 : i64, kind = #norm.reduction<max>} : f32
// CHECK: scf.if
// CHECK: %[[BOUND:.*]] = memref.load %[[UB]]
// CHECK: %[[BOUNDED:.*]] = arith.minimumf %[[AMAX]], %[[BOUND]] : f32
// CHECK-DAG: %[[SMALLEST:.*]] = arith.constant 3.405980e-08 : f32
// CHECK-DAG: %[[MAX:.*]] = arith.constant 5.734400e+04 : f32
// CHECK: %[[RATIO:.*]] = arith.divf %[[BOUNDED]], %[[MAX]] : f32
// CHECK: %[[SCALE:.*]] = arith.maximumf %[[RATIO]], %[[SMALLEST]] : f32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.store %[[SCALE]], %[[SC]]
// CHECK: }
// CHECK: arith.divf %{{.*}}, %[[SCALE]] : f32
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf8E5M2>
// CHECK: vector.store %{{.*}}, %[[Y]]
func.func @per_token(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>,
                     %u: tensor<1xf32>)
    -> (tensor<?x4096xf8E5M2>, tensor<?x1xf32>) {
  %y, %s = norm.fused_row <rms> %x weight(%w : tensor<4096xbf16>)
      scale_ub(%u : tensor<1xf32>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xf8E5M2> output_scales(tensor<?x1xf32>)
  return %y, %s : tensor<?x4096xf8E5M2>, tensor<?x1xf32>
}
