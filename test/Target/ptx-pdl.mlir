// RUN: norm-opt %s --norm-lower-to-ptx="pdl" -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON
// RUN: norm-opt %s --norm-set-target="pdl" | FileCheck %s --check-prefix=TARGET
// RUN: norm-opt %s --norm-set-target="pdl" --norm-set-target="chip=sm_90a" \
// RUN:   | FileCheck %s --check-prefix=KEEP
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.plain.ptx
// RUN: FileCheck %s --input-file=%t.plain.ptx --check-prefix=PLAIN
// RUN: not norm-opt %s --norm-lower-to-ptx="pdl chip=sm_80" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SM80
// RUN: norm-opt %s --norm-set-target="pdl" --norm-assign-launch-config --norm-generate-kernels \
// RUN:   --norm-kernels-to-host | FileCheck %s --check-prefix=HOST

// Programmatic dependent launch: a row kernel loads its weight (through
// the non-coherent cache: no kernel before it writes the weights), then
// waits for the grid before it and lets the next one start, then reads its
// rows coherently (the grid before may have been writing them as this one
// started).
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1_pdl(
// CHECK: ld.global.nc.v4.b32
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.wait;
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: ld.global.nc
// CHECK: ld.global.v4.b32
// CHECK: ld.global.v4.b32
// CHECK: bar.sync 0;
// CHECK-NOT: griddepcontrol
// CHECK: ret;
// The QK-Norm prologue alike: both weights, the wait, then the heads.
// CHECK-LABEL: .visible .entry norm_qk_rms_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8_pdl(
// CHECK: ld.global.nc.v4.b32
// CHECK: ld.global.nc.v4.b32
// CHECK-NOT: ld.global
// CHECK: griddepcontrol.wait;
// CHECK: griddepcontrol.launch_dependents;
// CHECK-NOT: ld.global.nc
// CHECK: ld.global.v4.b32

// JSON: "name": "norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1_pdl"
// JSON-SAME: "pdl": true

// TARGET: norm.target = #norm.target<chip = "sm_90", ptx_version = 80, max_shared_bytes = 0, pdl = true>
// KEEP: norm.target = #norm.target<chip = "sm_90a", ptx_version = 80, max_shared_bytes = 0, pdl = true>

// Without pdl: neither the ops nor the suffix.
// PLAIN-NOT: griddepcontrol
// PLAIN-NOT: _pdl

// SM80: error: pdl needs griddepcontrol, which sm_80 lacks (sm_90 and sm_90a have it)

// The host runs grids one after another: nothing to wait for.
// HOST-LABEL: func.func @norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1_pdl_host(
// HOST-NOT: norm.grid_dependency_wait
// HOST-NOT: norm.launch_dependents
// HOST: return
func.func @pdl(%x: tensor<?x4096xbf16>, %r: tensor<?x4096xbf16>,
               %w: tensor<4096xbf16>, %qkv: tensor<?x6144xbf16>,
               %qw: tensor<128xbf16>, %kw: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>,
        tensor<?x1024xbf16>) {
  %y, %h = norm.fused_row <rms> %x addend(%r : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %q, %k = norm.qk_norm_prologue <rms> %qkv q_weight(%qw : tensor<128xbf16>)
      k_weight(%kw : tensor<128xbf16>) eps(1.0e-06)
      {head_dim = 128 : i64, num_kv_heads = 8 : i64, num_q_heads = 32 : i64}
      : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  return %y, %h, %q, %k : tensor<?x4096xbf16>, tensor<?x4096xbf16>,
      tensor<?x4096xbf16>, tensor<?x1024xbf16>
}

