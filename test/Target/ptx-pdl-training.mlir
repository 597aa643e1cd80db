// RUN: norm-opt %s --norm-lower-to-ptx="pdl" -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx

// Programmatic dependent launch of the training kernels. A backward row
// kernel loads its weight, then waits for the grid before it (the forward
// or the next layer's backward, which wrote v and dy) and reads those
// coherently; the column sum of its partials, which the row kernel just
// before it wrote, waits before any load.
// CHECK-LABEL: .visible .entry norm_rms_bwd_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1_pdl(
// CHECK: ld.global.nc.v4.b32
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.wait;
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: ld.global.nc
// CHECK: ld.global.v4.b32
// CHECK-LABEL: .visible .entry norm_colsum_h4096_f32_bf16_{{[0-9a-f]+}}_v4_t16_w4_r8_pdl(
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.wait;
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: ld.global.nc
// CHECK: ld.global.v4.b32
func.func @backward(%x: tensor<?x4096xbf16>, %dy: tensor<?x4096xbf16>, %w: tensor<4096xbf16>, %r: tensor<?x1xf32>, %p: tensor<?x4096xf32>) -> (tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<4096xbf16>) {
  %dx, %dw = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x4096xbf16> -> tensor<?x4096xbf16> weight_grad_partials(tensor<?x4096xf32>)
  %s = norm.column_sum %p : tensor<?x4096xf32> -> tensor<4096xbf16>
  return %dx, %dw, %s : tensor<?x4096xbf16>, tensor<?x4096xf32>, tensor<4096xbf16>
}
