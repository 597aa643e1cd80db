// RUN: norm-opt %s --norm-lower-to-ptx="scalar-fallback=false" -o %t.ptx
// RUN: FileCheck %s --input-file=%t.json

// One signature per kernel, in the ABI order of KernelSignature.h; without
// fallbacks, none is named.
// CHECK: [
// CHECK-NEXT: {"name": "norm_qk_rms_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8", "kind": "qk_norm_prologue", "hidden": 128,
// CHECK-SAME: "grid": "ceil(rows * 40 / 8)", "row_multiplier": 40, "fixed_grid_x": 0
// CHECK-NOT: "fallback"
// CHECK-SAME: "params": [{"name": "qkv", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": true, "alignment": 16},
// CHECK-SAME: {"name": "q_weight", "kind": "buffer", "type": "bf16", "rows_x_hidden": false, "read_only": true, "alignment": 16},
// CHECK-SAME: {"name": "k_weight", "kind": "buffer", "type": "bf16", "rows_x_hidden": false, "read_only": true, "alignment": 16},
// CHECK-SAME: {"name": "q", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": false, "alignment": 16},
// CHECK-SAME: {"name": "k", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": false, "alignment": 16},
// CHECK-SAME: {"name": "rows", "kind": "rows", "type": "i64"}, {"name": "qkv_stride", "kind": "row_stride", "type": "i64"}, {"name": "q_stride", "kind": "row_stride", "type": "i64"}, {"name": "k_stride", "kind": "row_stride", "type": "i64"}]},
// CHECK-NEXT: {"name": "norm_colstats_h300_f16_f32_{{[0-9a-f]+}}_v4_t16_w4_r8", "kind": "column_stats", "hidden": 300,
// CHECK-SAME: "block_threads": 128, "grid": "10", "row_multiplier": 1, "fixed_grid_x": 10
// CHECK-SAME: {"name": "mean", "kind": "buffer", "type": "f32", "rows_x_hidden": false, "read_only": false, "alignment": 16}
// CHECK-NEXT: {"name": "norm_group_h512_f32_f32_{{[0-9a-f]+}}_v4_t4_w4_r32", "kind": "fused_row", "hidden": 512,
// CHECK-SAME: "grid": "ceil(rows * 32 / 32)", "row_multiplier": 32
// CHECK-NEXT: {{^\]$}}
func.func @kernels(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>,
                   %x: tensor<?x300xf16>, %g: tensor<?x512xf32>) {
  %q, %k = norm.qk_norm_prologue <rms> %qkv q_weight(%wq : tensor<128xbf16>)
      k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64}
      : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  %m, %v = norm.column_stats %x : tensor<?x300xf16> -> tensor<300xf32>, tensor<300xf32>
  %y = norm.fused_row <mean_var> %g eps(1.0e-05) {groups = 32 : i64}
      : tensor<?x512xf32> -> tensor<?x512xf32>
  return
}
