// RUN: norm-opt %s --norm-lower-to-ptx -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80 ptx-version=78" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefix=SM80

// Fused add + RMSNorm, bf16, hidden 4096 (heuristic: 512 threads x 8).
// CHECK: .version 8.0
// CHECK: .target sm_90
// CHECK-NOT: .extern
// CHECK-NOT: .local
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK: .param .u64 .ptr .align 16
// CHECK: .maxntid 512, 1, 1
// Weights and both inputs: 16-byte loads through the read-only cache.
// CHECK-COUNT-3: ld.global.nc.v4.b32
// h is stored before the exchange, y after it.
// CHECK: st.global.v4.b32
// CHECK: shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// CHECK: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK: bar.sync 0;
// CHECK-NOT: bar.sync
// CHECK: rsqrt.approx.f32
// CHECK: st.global.v4.b32
// The scalar fallback: 2-byte accesses only.
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v1_t512_w16_r1(
// CHECK: .param .u64 .ptr .align 2
// CHECK-NOT: .global{{(.nc)?}}.v4
// CHECK: ld.global.nc.b16
// CHECK-NOT: .global{{(.nc)?}}.v4
// CHECK: st.global.b16
// CHECK-NOT: .global{{(.nc)?}}.v4
// CHECK-NOT: .extern
// CHECK-NOT: .local

// SM80: .version 7.8
// SM80: .target sm_80
// SM80-NOT: .extern

// The bundle's signatures: the vector kernel names its scalar fallback.
// JSON: "name": "norm_rms_add_h4096_bf16_bf16_[[HASH:[0-9a-f]+]]_v8_t512_w16_r1", "kind": "fused_row", "hidden": 4096,
// JSON-SAME: "block_threads": 512, "grid": "ceil(rows / 1)"
// JSON-SAME: "fallback": "norm_rms_add_h4096_bf16_bf16_[[HASH]]_v1_t512_w16_r1"
// JSON-SAME: {"name": "input", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": true, "alignment": 16}
// JSON-SAME: {"name": "rows", "kind": "rows", "type": "i64"}, {"name": "input_stride", "kind": "row_stride", "type": "i64"}
// JSON: "name": "norm_rms_add_h4096_bf16_bf16_[[HASH]]_v1_t512_w16_r1"
// JSON-SAME: "alignment": 2
func.func @fused_add_rms(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>,
                         %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%r : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
