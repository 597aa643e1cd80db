// RUN: norm-opt %s | norm-opt | FileCheck %s
// RUN: norm-opt %s --norm-fuse | FileCheck %s --check-prefix=FUSE
// RUN: rm -rf %t && mkdir -p %t
// RUN: norm-opt %s --norm-to-ptx -o %t/step.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/step.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t/step.json

// One decode step of the decoder block (decoder-block.mlir) of a Qwen3-like
// model (32 query heads, 8 key/value heads of 128, QK-Norm, RoPE at theta
// 1e6) against a KV cache: each sequence's new tokens at their positions.
// CHECK-LABEL: func.func @decode_step
// CHECK-COUNT-3: norm.rms_norm
// CHECK-COUNT-2: norm.rotary <neox>
// CHECK: norm.attention_decode

// norm-fuse: three kernels. The per-head norms and the rotations move into
// the decode kernel, which normalizes and rotates the new q and k, appends
// k and v to the caches and attends in one launch; the first norm and the
// residual add + norm are row kernels.
//  FUSE-LABEL: func.func @decode_step
//  FUSE-SAME: (%[[X:[^:]*]]: tensor<?x4096xbf16>, %[[CU:[^:]*]]: tensor<?xi32>, %[[POS:[^:]*]]: tensor<?xi32>, %[[KC:[^:]*]]: tensor<?x1024xbf16>, %[[VC:[^:]*]]: tensor<?x1024xbf16>, %[[LEN:[^:]*]]: tensor<?xi32>
//   FUSE-NOT: norm.rotary
//   FUSE-NOT: norm.rms_norm
//       FUSE: norm.fused_row <rms>
//       FUSE: %{{.*}}, %[[KC_OUT:.*]], %[[VC_OUT:.*]] = norm.attention_decode_kernel %{{.*}}, %{{.*}}, %{{.*}} seqlens(%[[CU]] : tensor<?xi32>) cache(%[[KC]], %[[VC]] lengths %[[LEN]] : tensor<?xi32>) q_norm_weight(%{{.*}} : tensor<128xbf16>) k_norm_weight(%{{.*}} : tensor<128xbf16>) positions(%[[POS]] : tensor<?xi32>) scale(0.08838834764831845) qk_norm_eps(1.0e-06)
//  FUSE-SAME: qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64
//       FUSE: norm.fused_row <rms>
//  FUSE-SAME: addend
//   FUSE-NOT: norm.rms_norm
//       FUSE: return %{{.*}}, %{{.*}}, %[[KC_OUT]], %[[VC_OUT]]

// PTX-NOT: .extern .func
// PTX-DAG: .visible .entry norm_decode_qkrms_ropeneox128_pos_d128_h32x8_bf16_{{[0-9a-f]+}}_
// PTX-DAG: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// PTX-DAG: fence.acq_rel.gpu
// PTX-DAG: atom.global.add.u32
// JSON: "kind": "attention_decode_kernel"
// JSON-SAME: {"name": "positions", "kind": "buffer", "type": "i32", "rows_x_hidden": false, "read_only": true, "alignment": 4}
// JSON-SAME: {"name": "kv_splits", "kind": "kv_splits", "type": "i64"}

func.func private @qkv_proj(tensor<?x4096xbf16>) -> tensor<?x6144xbf16>
func.func private @o_proj(tensor<?x4096xbf16>) -> tensor<?x4096xbf16>

func.func @decode_step(%x: tensor<?x4096xbf16>, %cu: tensor<?xi32>,
                       %positions: tensor<?xi32>,
                       %k_cache: tensor<?x1024xbf16>, %v_cache: tensor<?x1024xbf16>,
                       %cache_len: tensor<?xi32>,
                       %attn_norm_w: tensor<4096xbf16>,
                       %q_norm_w: tensor<128xbf16>, %k_norm_w: tensor<128xbf16>,
                       %mlp_norm_w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %tokens = tensor.dim %x, %c0 : tensor<?x4096xbf16>
  %n1 = norm.rms_norm %x weight(%attn_norm_w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %qkv = func.call @qkv_proj(%n1) : (tensor<?x4096xbf16>) -> tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%tokens, 4096] [1, 1]
      : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%tokens, 1024] [1, 1]
      : tensor<?x6144xbf16> to tensor<?x1024xbf16>
  %v = tensor.extract_slice %qkv[0, 5120] [%tokens, 1024] [1, 1]
      : tensor<?x6144xbf16> to tensor<?x1024xbf16>

  // QK-Norm over each head's 128 values.
  %q_heads = tensor.expand_shape %q [[0], [1, 2]] output_shape [%tokens, 32, 128]
      : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %q_rows = tensor.collapse_shape %q_heads [[0, 1], [2]]
      : tensor<?x32x128xbf16> into tensor<?x128xbf16>
  %qn_rows = norm.rms_norm %q_rows weight(%q_norm_w : tensor<128xbf16>) eps(1.0e-06)
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %qn_heads = tensor.expand_shape %qn_rows [[0, 1], [2]] output_shape [%tokens, 32, 128]
      : tensor<?x128xbf16> into tensor<?x32x128xbf16>
  %qn = tensor.collapse_shape %qn_heads [[0], [1, 2]]
      : tensor<?x32x128xbf16> into tensor<?x4096xbf16>
  %k_heads = tensor.expand_shape %k [[0], [1, 2]] output_shape [%tokens, 8, 128]
      : tensor<?x1024xbf16> into tensor<?x8x128xbf16>
  %k_rows = tensor.collapse_shape %k_heads [[0, 1], [2]]
      : tensor<?x8x128xbf16> into tensor<?x128xbf16>
  %kn_rows = norm.rms_norm %k_rows weight(%k_norm_w : tensor<128xbf16>) eps(1.0e-06)
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %kn_heads = tensor.expand_shape %kn_rows [[0, 1], [2]] output_shape [%tokens, 8, 128]
      : tensor<?x128xbf16> into tensor<?x8x128xbf16>
  %kn = tensor.collapse_shape %kn_heads [[0], [1, 2]]
      : tensor<?x8x128xbf16> into tensor<?x1024xbf16>

  // RoPE at each new token's position (its cache length plus its index).
  %qr = norm.rotary <neox> %qn positions(%positions : tensor<?xi32>)
      {num_heads = 32 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>
  %kr = norm.rotary <neox> %kn positions(%positions : tensor<?xi32>)
      {num_heads = 8 : i64, head_dim = 128 : i64, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16>

  // Append k and v to the cache and attend over it.
  %attn, %k_cache_out, %v_cache_out = norm.attention_decode %qr, %kr, %v
      seqlens(%cu : tensor<?xi32>)
      cache(%k_cache, %v_cache lengths %cache_len : tensor<?xi32>)
      scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>,
        tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  %o = func.call @o_proj(%attn) : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>

  // Residual add + the MLP's pre-norm.
  %h = norm.residual_add %x, %o : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %n2 = norm.rms_norm %h weight(%mlp_norm_w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %h, %n2, %k_cache_out, %v_cache_out
      : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}
