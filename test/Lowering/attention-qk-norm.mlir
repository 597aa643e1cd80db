// RUN: norm-opt %s --split-input-file --verify-diagnostics --norm-generate-kernels
// RUN: not norm-opt %s --split-input-file --norm-lower-to-ptx 2>&1 | FileCheck %s
// RUN: not norm-opt %s --split-input-file --norm-to-ptx="qk-norm=attention" 2>&1 \
// RUN:   | FileCheck %s

// An attention with a fused QK-Norm needs an attention kernel, which is not
// generated: an error, never a silent drop of the normalization.
// The advice names the option, whichever pipeline set it.
// CHECK: error: 'norm.attention' op with a fused QK-Norm needs an attention kernel, which norm-opt does not generate yet; fuse with qk-norm=prologue instead (an option of norm-fuse and norm-to-ptx, and their default)
func.func @fused(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                 %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> tensor<?x512xbf16> {
  // expected-error @below {{with a fused QK-Norm needs an attention kernel, which norm-opt does not generate yet; fuse with qk-norm=prologue instead (an option of norm-fuse and norm-to-ptx, and their default)}}
  %o = norm.attention %q, %k, %v q_norm_weight(%wq : tensor<128xbf16>)
      k_norm_weight(%wk : tensor<128xbf16>) scale(0.08838834764831845)
      qk_norm_eps(1.0e-06)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       causal, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

// Attention without QK-Norm runs elsewhere: left alone.
func.func @plain(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>)
    -> tensor<?x512xbf16> {
  %o = norm.attention %q, %k, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}
