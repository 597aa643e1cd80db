// RUN: norm-opt %s --norm-lower-to-ptx -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON

// vLLM's fused_add_rms_norm in place (residual_out over input, output over
// addend), bf16, hidden 4096. Only the weight, which no output aliases,
// loads through the non-coherent cache; the rows load coherently, and
// residual_out waits for the exchange.
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// CHECK: ld.global.nc.v4.b32
// CHECK-NOT: ld.global.nc
// CHECK: ld.global.v4.b32
// CHECK: ld.global.v4.b32
// CHECK-NOT: st.global
// CHECK: bar.sync 0;
// CHECK: st.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK-NOT: ld.global.nc
// The scalar fallback alike.
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v1_t512_w16_r1(
// CHECK-COUNT-8: ld.global.nc.b16
// CHECK-NOT: ld.global.nc
// CHECK: ld.global.b16
// CHECK-NOT: st.global
// CHECK: bar.sync 0;
// CHECK: st.global.b16
// CHECK-NOT: ld.global.nc

// The signature names the input each in-place output may take.
// JSON: {"name": "output", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": false, "alignment": 16, "over": "addend"}
// JSON-SAME: {"name": "residual_out", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": false, "alignment": 16, "over": "input"}
func.func @vllm(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>,
                %w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %y, %h = norm.fused_row <rms> %r addend(%x : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      output_over(addend) residual_over(input)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %y, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
