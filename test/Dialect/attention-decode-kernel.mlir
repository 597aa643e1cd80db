// RUN: norm-opt %s --split-input-file | norm-opt --split-input-file | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics --verify-roundtrip > /dev/null
// RUN: norm-opt %S/Inputs/attention-decode-kernel-invalid.mlir --split-input-file --verify-diagnostics

// The decode kernel op: the new tokens' q, k, v and offsets, the caches and
// their lengths, QK-Norm and RoPE; the results are the output and the
// caches updated in place.
// CHECK-LABEL: func.func @decode
// CHECK: norm.attention_decode_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xi32>) q_norm_weight(%{{.*}} : tensor<128xbf16>) k_norm_weight(%{{.*}} : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
// CHECK-SAME: rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64
// CHECK-SAME: -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
func.func @decode(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
                  %cu: tensor<?xi32>, %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>,
                  %len: tensor<?xi32>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>)
      q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %o, %kc2, %vc2 : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// -----

// Without QK-Norm or RoPE, head dim 64, one KV head.
// CHECK-LABEL: func.func @plain
// CHECK: norm.attention_decode_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<3xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<2xi32>) scale(0.125)
// CHECK-SAME: -> tensor<?x512xf16>, tensor<?x64xf16>, tensor<?x64xf16>{{$}}
func.func @plain(%q: tensor<?x512xf16>, %k: tensor<?x64xf16>, %cu: tensor<3xi32>,
                 %kc: tensor<?x64xf16>, %len: tensor<2xi32>)
    -> (tensor<?x512xf16>, tensor<?x64xf16>, tensor<?x64xf16>) {
  %o, %kc2, %vc2 = norm.attention_decode_kernel %q, %k, %k seqlens(%cu : tensor<3xi32>)
      cache(%kc, %kc lengths %len : tensor<2xi32>) scale(0.125)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64}
      : tensor<?x512xf16>, tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>, tensor<?x64xf16>
     -> tensor<?x512xf16>, tensor<?x64xf16>, tensor<?x64xf16>
  return %o, %kc2, %vc2 : tensor<?x512xf16>, tensor<?x64xf16>, tensor<?x64xf16>
}
