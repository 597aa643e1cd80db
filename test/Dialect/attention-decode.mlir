// RUN: norm-opt %s --split-input-file | norm-opt --split-input-file | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics --verify-roundtrip > /dev/null
// RUN: norm-opt %S/Inputs/attention-decode-invalid.mlir --split-input-file --verify-diagnostics
// RUN: not norm-opt %s --split-input-file --norm-generate-kernels 2>&1 | FileCheck %s --check-prefix=LEFT
// RUN: norm-opt %s --split-input-file --norm-fuse-rotary-into-attention | FileCheck %s --check-prefix=ROT
// RUN: norm-opt %s --split-input-file --norm-fuse | FileCheck %s --check-prefix=FORM

// The layer op of a decode step: new tokens, their sequences' caches, the
// QK-Norm and rotary fields of norm.attention.
// CHECK-LABEL: func.func @decode
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = norm.attention_decode %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xi32>) q_norm_weight(%{{.*}} : tensor<128xbf16>) k_norm_weight(%{{.*}} : tensor<128xbf16>) positions(%{{.*}} : tensor<?xi32>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) {head_dim = 128 : i64, num_heads = 8 : i64, num_kv_heads = 2 : i64, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
// LEFT: error: 'norm.attention_decode' op is not a kernel op; norm-form-attention-kernels (part of norm-fuse and norm-to-ptx) turns it into norm.attention_decode_kernel
func.func @decode(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
                  %cu: tensor<?xi32>, %kc: tensor<?x256xbf16>, %vc: tensor<?x256xbf16>,
                  %len: tensor<?xi32>, %p: tensor<?xi32>,
                  %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) -> tensor<?x1024xbf16> {
  %o, %kc2, %vc2 = norm.attention_decode %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>)
      q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
      positions(%p : tensor<?xi32>) scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %o : tensor<?x1024xbf16>
}

// -----

// A rotation by row index is not a decode row's rotation: only rotations
// at explicit positions move into the decode op.
// ROT-LABEL: func.func @rotations
// ROT: norm.rotary <neox> %{{.*}} {head_dim
// ROT: norm.rotary <neox> %{{.*}} {head_dim
// ROT: norm.attention_decode %{{.*}}, %{{.*}}, %{{.*}} seqlens
// ROT-NOT: rope =
// ROT-NOT: norm.rotary
// ROT: norm.attention_decode %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xi32>) positions(%{{.*}} : tensor<?xi32>) scale
// ROT-SAME: rope = #norm.rope<gptj>, rope_theta = 1.000000e+04 : f64
func.func @rotations(%q: tensor<?x128xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>,
                     %cu: tensor<?xi32>, %kc: tensor<?x128xbf16>, %vc: tensor<?x128xbf16>,
                     %len: tensor<?xi32>, %p: tensor<?xi32>) -> (tensor<?x128xbf16>, tensor<?x128xbf16>) {
  %q1 = norm.rotary <neox> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  %k1 = norm.rotary <neox> %k {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  %o1, %a1, %b1 = norm.attention_decode %q1, %k1, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  %q2 = norm.rotary <gptj> %q positions(%p : tensor<?xi32>) {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  %k2 = norm.rotary <gptj> %k positions(%p : tensor<?xi32>) {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  %o2, %a2, %b2 = norm.attention_decode %q2, %k2, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
     -> tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>
  return %o1, %o2 : tensor<?x128xbf16>, tensor<?x128xbf16>
}

// -----

// vLLM's paged cache (pages of 16 rows, a block table per sequence): the
// kernel op norm-fuse forms keeps the table and the block size.
// CHECK-LABEL: func.func @paged
//       CHECK: norm.attention_decode %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xi32>) pages(%{{.*}} : tensor<?xi32>) scale(0.08838834764831845) {cache_block_size = 16 : i64, head_dim = 128 : i64
// FORM-LABEL: func.func @paged
//  FORM-SAME: %[[TABLE:[a-z0-9]+]]: tensor<?xi32>)
//       FORM: norm.attention_decode_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xi32>) pages(%[[TABLE]] : tensor<?xi32>) scale(0.08838834764831845) {cache_block_size = 16 : i64
func.func @paged(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
                 %cu: tensor<?xi32>, %kc: tensor<?x256xbf16>, %vc: tensor<?x256xbf16>,
                 %len: tensor<?xi32>, %table: tensor<?xi32>) -> tensor<?x1024xbf16> {
  %o, %kc2, %vc2 = norm.attention_decode %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%table : tensor<?xi32>)
      scale(0.08838834764831845)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %o : tensor<?x1024xbf16>
}

// -----

// FlashInfer's ragged table (kv_indices in pages, kv_indptr in
// page_indptr): the kernel op keeps both.
// CHECK-LABEL: func.func @ragged_pages
//       CHECK: pages(%{{.*}} : tensor<?xi32>) page_indptr(%{{.*}} : tensor<?xi32>) scale(0.08838834764831845) {cache_block_size = 16 : i64
// FORM-LABEL: func.func @ragged_pages
//  FORM-SAME: %[[INDICES:[a-z0-9]+]]: tensor<?xi32>, %[[INDPTR:[a-z0-9]+]]: tensor<?xi32>)
//       FORM: norm.attention_decode_kernel {{.*}} pages(%[[INDICES]] : tensor<?xi32>) page_indptr(%[[INDPTR]] : tensor<?xi32>) scale(0.08838834764831845) {cache_block_size = 16 : i64
func.func @ragged_pages(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
                        %cu: tensor<?xi32>, %kc: tensor<?x256xbf16>, %vc: tensor<?x256xbf16>,
                        %len: tensor<?xi32>, %indices: tensor<?xi32>, %indptr: tensor<?xi32>) -> tensor<?x1024xbf16> {
  %o, %kc2, %vc2 = norm.attention_decode %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) pages(%indices : tensor<?xi32>)
      page_indptr(%indptr : tensor<?xi32>) scale(0.08838834764831845)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, cache_block_size = 16 : i64}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %o : tensor<?x1024xbf16>
}

// -----

// An e4m3 cache with a scale per kv head (vLLM's k_scale, v_scale).
// CHECK-LABEL: func.func @fp8_cache
//       CHECK: norm.attention_decode %{{.*}}, %{{.*}}, %{{.*}} seqlens(%{{.*}} : tensor<?xi32>) cache(%{{.*}}, %{{.*}} lengths %{{.*}} : tensor<?xi32>) scales(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>) scale(0.08838834764831845)
//  CHECK-SAME: tensor<?x256xf8E4M3FN>, tensor<?x256xf8E4M3FN> -> tensor<?x1024xbf16>, tensor<?x256xf8E4M3FN>, tensor<?x256xf8E4M3FN>
// FORM-LABEL: func.func @fp8_cache
//       FORM: norm.attention_decode_kernel {{.*}} scales(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>)
func.func @fp8_cache(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %v: tensor<?x256xbf16>,
                     %cu: tensor<?xi32>, %kc: tensor<?x256xf8E4M3FN>, %vc: tensor<?x256xf8E4M3FN>,
                     %len: tensor<?xi32>, %ks: tensor<2xf32>, %vs: tensor<2xf32>) -> tensor<?x1024xbf16> {
  %o, %kc2, %vc2 = norm.attention_decode %q, %k, %v seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?xi32>) scales(%ks, %vs : tensor<2xf32>, tensor<2xf32>)
      scale(0.08838834764831845)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xf8E4M3FN>, tensor<?x256xf8E4M3FN>
     -> tensor<?x1024xbf16>, tensor<?x256xf8E4M3FN>, tensor<?x256xf8E4M3FN>
  return %o : tensor<?x1024xbf16>
}
