// RUN: norm-opt %s --split-input-file --verify-diagnostics --norm-generate-kernels
// RUN: norm-opt %s --split-input-file --norm-to-ptx 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: norm-opt %s --split-input-file --norm-to-ptx=keys-in-loop=true 2>&1 | FileCheck %s --check-prefix=LOOP

// A norm.attention with a fused QK-Norm is not a kernel op: the kernel
// generator refuses it (its normalization would vanish) and names the pass
// that makes it one. norm-to-ptx runs that pass: the keys normalized once
// by a K-prepare kernel (and its scalar variant), then an attention kernel
// with q's QK-Norm in its prologue and none in its key loop: no rsqrt
// after the first mma.sync. With keys-in-loop, one attention kernel
// normalizes each key tile in its loop: a second rsqrt, before the
// mma.sync.
// PTX: .visible .entry norm_kprep_rms_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8(
// PTX: rsqrt.approx.f32
// PTX: .visible .entry norm_kprep_rms_d128_bf16_bf16_{{[0-9a-f]+}}_v1_t16_w4_r8(
// PTX: .visible .entry norm_attn_qkrms_causal_kprep_d128_h4x1_bf16_{{[0-9a-f]+}}_v8_t16_w4_r64_n64_s2(
// PTX: rsqrt.approx.f32
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: rsqrt.approx
// PTX: ret;
// LOOP-NOT: norm_kprep
// LOOP: .visible .entry norm_attn_qkrms_causal_d128_h4x1_bf16_{{[0-9a-f]+}}_v8_t16_w4_r64_n64_s2(
// LOOP: rsqrt.approx.f32
// LOOP: rsqrt.approx.f32
// LOOP: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
func.func @fused(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                 %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> tensor<?x512xbf16> {
  // expected-error @below {{with a fused QK-Norm or rotary embedding is not a kernel op; norm-form-attention-kernels (part of norm-fuse and norm-to-ptx) turns it into norm.attention_kernel}}
  %o = norm.attention %q, %k, %v q_norm_weight(%wq : tensor<128xbf16>)
      k_norm_weight(%wk : tensor<128xbf16>) scale(0.08838834764831845)
      qk_norm_eps(1.0e-06)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       causal, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

// Attention without QK-Norm is left alone by the kernel generator, and
// gets its kernel through norm-to-ptx.
// PTX: .visible .entry norm_attn_causal_d128_h4x1_bf16_{{[0-9a-f]+}}_v8_t16_w4_r64_n64_s2(
func.func @plain(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>)
    -> tensor<?x512xbf16> {
  %o = norm.attention %q, %k, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}
