// RUN: norm-opt %s --split-input-file --norm-to-ptx=keys-in-loop=true 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: norm-opt %s --split-input-file --norm-fuse=keys-in-loop=true --norm-assign-launch-config --norm-generate-kernels | FileCheck %s --check-prefix=IR

// Rotary embeddings after the QK-Norm, the keys in the loop (keys-in-loop;
// norm-fuse prepares them once by default: attention-prepared-keys.mlir):
// the q tile and each key tile are turned in shared memory by constants
// chosen per lane, with the angle
// reduced to [-pi, pi] by two fmas before sin.approx and cos.approx (no
// libdevice call), and a barrier after each rotation.
// PTX: .visible .entry norm_attn_qkrms_causal_ropeneox128_d128_h4x1_bf16_{{[0-9a-f]+}}_v8_t16_w4_r64_n64_s2(
// PTX-NOT: __nv_
// PTX: fma.rn.f32
// PTX: fma.rn.f32
// PTX: cos.approx.f32
// PTX: sin.approx.f32
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: __nv_

// IR-LABEL: gpu.func @norm_attn_qkrms_causal_ropeneox128
// The frequencies of pair 8 lane + j: pair 0 turns at 1 rad per position,
// pair 8 at 1e6^(-16/128).
// IR: arith.constant dense<[1.000000e+00, {{.*}}]> : vector<8xf32>
// IR: arith.constant dense<[0.177827{{[0-9]*}}, {{.*}}]> : vector<8xf32>
// IR: arith.constant 0x4B400000 : f32
// IR: math.fma
// IR: math.fma
// IR: math.cos {{.*}} fastmath<afn>
// IR: math.sin {{.*}} fastmath<afn>
// IR: gpu.barrier
func.func @neox(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> tensor<?x512xbf16> {
  %o = norm.attention %q, %k, %v q_norm_weight(%wq : tensor<128xbf16>)
      k_norm_weight(%wk : tensor<128xbf16>) scale(0.08838834764831845)
      qk_norm_eps(1.0e-06)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       causal, qk_norm = #norm.qk_norm<rms>,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

// gptj pairs lie inside a chunk: the even and odd elements are split, turned
// and interleaved again.
// PTX: .visible .entry norm_attn_ropegptj64_d128_h2x2_f16_{{[0-9a-f]+}}_
// PTX: sin.approx.f32
// IR-LABEL: gpu.func @norm_attn_ropegptj64
// IR: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6] : vector<8xf32>, vector<8xf32>
// IR: vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7] : vector<8xf32>, vector<8xf32>
// IR: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5, 2, 6, 3, 7] : vector<4xf32>, vector<4xf32>
func.func @gptj(%q: tensor<?x256xf16>, %k: tensor<?x256xf16>, %v: tensor<?x256xf16>) -> tensor<?x256xf16> {
  %o = norm.attention %q, %k, %v scale(0.08838834764831845)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       rope = #norm.rope<gptj>, rotary_dim = 64 : i64, rope_theta = 1.0e+04 : f64}
      : tensor<?x256xf16>, tensor<?x256xf16>, tensor<?x256xf16> -> tensor<?x256xf16>
  return %o : tensor<?x256xf16>
}

// -----

// Angles from a table at explicit positions: the lane's 8 cosines and 8
// sines are two f32 vector loads of the table row at the token's position
// (NaN outside the table), and no sin/cos is computed.
// PTX: .visible .entry norm_attn_causal_ropeneox128_table_pos_d128_h2x1_bf16_{{[0-9a-f]+}}_
// PTX-NOT: sin.approx
// PTX: ld.global.nc.s32
// PTX: 0f7FC00000
// PTX: ld.global.nc.v4.b32
// PTX-NOT: sin.approx
// PTX: ret;
// IR-LABEL: gpu.func @norm_attn_causal_ropeneox128_table_pos
// IR-SAME: %[[POS:[^:]*]]: memref<{{[0-9]+}}xi32> {llvm.align = 4 : i64, llvm.noalias, llvm.readonly}, %[[TABLE:[^:]*]]: memref<{{[0-9]+}}xf32> {llvm.align = 16 : i64, llvm.noalias, llvm.readonly}
// IR-NOT: math.sin
// IR: memref.load %[[POS]]
// IR: vector.load %[[TABLE]][%{{.*}}] {alignment = 16 : i64} : memref<{{[0-9]+}}xf32>, vector<8xf32>
// IR-NEXT: vector.load %[[TABLE]][%{{.*}}] {alignment = 16 : i64} : memref<{{[0-9]+}}xf32>, vector<8xf32>
// IR: arith.constant 0x7FC00000 : f32
// IR-NOT: math.sin
// IR: gpu.barrier
func.func @table(%q: tensor<?x256xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                 %p: tensor<?xi32>, %t: tensor<?x128xf32>) -> tensor<?x256xbf16> {
  %o = norm.attention %q, %k, %v positions(%p : tensor<?xi32>) rope_table(%t : tensor<?x128xf32>)
      scale(0.08838834764831845)
      {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       causal, rope = #norm.rope<neox>}
      : tensor<?x256xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x256xbf16>
  return %o : tensor<?x256xbf16>
}
