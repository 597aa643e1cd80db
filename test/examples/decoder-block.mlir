// RUN: norm-opt %s | norm-opt | FileCheck %s
// RUN: norm-opt %s --norm-fuse | FileCheck %s --check-prefix=FUSE
// RUN: norm-opt %s --norm-fuse | FileCheck %s --check-prefix=KERNELS
// RUN: norm-opt %s --norm-fuse=qk-norm=prologue | FileCheck %s --check-prefix=PROLOGUE
// RUN: rm -rf %t && mkdir -p %t
// RUN: norm-opt %s --norm-to-ptx -o %t/block.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/block.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t/block.json
// CHECK-LABEL: func.func @decoder_block
// CHECK-COUNT-3: norm.rms_norm
// CHECK-COUNT-2: norm.rotary <neox>
// CHECK-COUNT-2: norm.rms_norm

// norm-to-ptx: the first norm, the keys normalized and rotated once
// (K-prepare), attention with q's QK-Norm in its prologue, fused add+RMSNorm
// twice with the same weights' shape; the row kernels with their scalar
// fallbacks; no libdevice calls.
// PTX-NOT: .extern .func
// PTX-DAG: .visible .entry norm_rms_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// PTX-DAG: .visible .entry norm_kprep_rms_ropeneox128_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8(
// PTX-DAG: .visible .entry norm_attn_qkrms_causal_kprep_ropeneox128_d128_h32x8_bf16_{{[0-9a-f]+}}_v8_t16_w4_r64_n64_s2(
// PTX-DAG: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// PTX-DAG: ld.global.nc.v4.b32
// PTX-DAG: shfl.sync.bfly
// PTX-DAG: rsqrt.approx
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: sin.approx.f32
// JSON: "name": "norm_rms_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1"
// JSON-SAME: "grid": "ceil(rows / 1)"
// JSON: "kind": "attention_kernel"
// JSON-SAME: "grid": "32 * (ceil(rows / 64) + batch)"
// JSON-SAME: {"name": "cu_seqlens", "kind": "buffer", "type": "i32", "rows_x_hidden": false, "read_only": true, "alignment": 4}
// JSON-SAME: {"name": "rows", "kind": "rows", "type": "i64"}, {"name": "batch", "kind": "batch", "type": "i64"}
// JSON: "name": "norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1"
// JSON-SAME: {"name": "input", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": true, "alignment": 16}, {"name": "addend"
// JSON-SAME: {"name": "residual_out", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": false, "alignment": 16}, {"name": "rows", "kind": "rows", "type": "i64"}

// Five kernels, in program order: K-prepare normalizes and rotates k
// (Qwen3's RoPE, theta 1e6) once, straight from the packed projection; the
// attention kernel reads q and v from it (views with its row stride) and
// the prepared keys, and normalizes and rotates q as it loads it.
// FUSE-LABEL: func.func @decoder_block
//  FUSE-SAME: (%[[X:[^:]*]]: tensor<?x4096xbf16>, %[[ATTN_W:[^:]*]]: tensor<4096xbf16>, %[[Q_W:[^:]*]]: tensor<128xbf16>, %[[K_W:[^:]*]]: tensor<128xbf16>, %[[MLP_W:[^:]*]]: tensor<4096xbf16>, %[[FINAL_W:[^:]*]]: tensor<4096xbf16>)
//  FUSE-NOT: norm.rms_norm
//  FUSE-NOT: norm.residual_add
//      FUSE: %[[N1:.*]] = norm.fused_row <rms> %[[X]] weight(%[[ATTN_W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//      FUSE: %[[QKV:.*]] = call @qkv_proj(%[[N1]])
//      FUSE: %[[Q:.*]] = tensor.extract_slice %[[QKV]][0, 0] [%{{.*}}, 4096] [1, 1]
//      FUSE: %[[K:.*]] = tensor.extract_slice %[[QKV]][0, 4096] [%{{.*}}, 1024] [1, 1]
//      FUSE: %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 5120] [%{{.*}}, 1024] [1, 1]
//      FUSE: %[[CU:.*]] = tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xi32>
//      FUSE: %[[KP:.*]] = norm.k_prepare %[[K]] seqlens(%[[CU]] : tensor<2xi32>) k_weight(%[[K_W]] : tensor<128xbf16>) eps(1.0e-06) {head_dim = 128 : i64, num_kv_heads = 8 : i64, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
//      FUSE: %[[ATT:.*]] = norm.attention_kernel %[[Q]], %[[KP]], %[[V]] seqlens(%[[CU]] : tensor<2xi32>) q_norm_weight(%[[Q_W]] : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06)
// FUSE-SAME: {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, prepared_k, qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
//      FUSE: %[[O:.*]] = call @o_proj(%[[ATT]])
//      FUSE: %[[N2:.*]], %[[H1:.*]] = norm.fused_row <rms> %[[X]] addend(%[[O]] : tensor<?x4096xbf16>) weight(%[[MLP_W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
//      FUSE: %[[M:.*]] = call @mlp(%[[N2]])
//      FUSE: %[[OUT:.*]], %[[H2:.*]] = norm.fused_row <rms> %[[H1]] addend(%[[M]] : tensor<?x4096xbf16>) weight(%[[FINAL_W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
//      FUSE: return %[[OUT]], %[[H2]]

// Exactly five kernel ops, and no layer op left.
// KERNELS-COUNT-5: norm.{{fused_row|k_prepare|attention_kernel}}
//     KERNELS-NOT: norm.{{fused_row|qk_norm_prologue|column_stats|rms_norm|residual_add|cast|rotary|attention }}

// qk-norm=prologue: the stand-alone QK-Norm kernel writes q and k, K-prepare
// rotates k once, and the attention kernel rotates q as it loads it.
// PROLOGUE-LABEL: func.func @decoder_block
//       PROLOGUE: norm.fused_row <rms>
//       PROLOGUE: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms>
//       PROLOGUE: %[[KP:.*]] = norm.k_prepare %[[K]] seqlens(%{{.*}} : tensor<2xi32>) {head_dim = 128 : i64, num_kv_heads = 8 : i64, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
//       PROLOGUE: norm.attention_kernel %[[Q]], %[[KP]], %{{.*}} seqlens(%{{.*}} : tensor<2xi32>) scale(0.08838834764831845) {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, prepared_k, rope = #norm.rope<neox>, rope_theta = 1.000000e+06 : f64}
//       PROLOGUE: norm.fused_row <rms> %{{.*}} addend
//       PROLOGUE: norm.fused_row <rms> %{{.*}} addend

// A pre-norm transformer decoder block with QK-Norm (as in Qwen3 and OLMo 2),
// followed by the final norm before the LM head: hidden 4096, 32 query heads
// and 8 key/value heads of 128, bf16 activations and weights.
//
// The projections and the MLP are matrix work that runs elsewhere
// (external functions); norm-opt compiles the normalization layers and the
// attention into fused kernels:
//   - rms_norm(x)                              -> one row kernel
//   - per-head RMSNorm of q and k, RoPE,       -> one attention kernel, the
//     attention                                   QK-Norm and RoPE in its
//                                                 prologue
//   - x + o, rms_norm(x + o)                   -> one fused add+RMSNorm kernel
//   - h + m, final rms_norm(h + m)             -> one fused add+RMSNorm kernel

func.func private @qkv_proj(tensor<?x4096xbf16>) -> tensor<?x6144xbf16>
func.func private @o_proj(tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
func.func private @mlp(tensor<?x4096xbf16>) -> tensor<?x4096xbf16>

func.func @decoder_block(%x: tensor<?x4096xbf16>,
                         %attn_norm_w: tensor<4096xbf16>,
                         %q_norm_w: tensor<128xbf16>,
                         %k_norm_w: tensor<128xbf16>,
                         %mlp_norm_w: tensor<4096xbf16>,
                         %final_norm_w: tensor<4096xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %c0 = arith.constant 0 : index
  %tokens = tensor.dim %x, %c0 : tensor<?x4096xbf16>

  // Attention sublayer (pre-norm).
  %n1 = norm.rms_norm %x weight(%attn_norm_w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %qkv = func.call @qkv_proj(%n1) : (tensor<?x4096xbf16>) -> tensor<?x6144xbf16>
  %q = tensor.extract_slice %qkv[0, 0] [%tokens, 4096] [1, 1]
      : tensor<?x6144xbf16> to tensor<?x4096xbf16>
  %k = tensor.extract_slice %qkv[0, 4096] [%tokens, 1024] [1, 1]
      : tensor<?x6144xbf16> to tensor<?x1024xbf16>
  %v = tensor.extract_slice %qkv[0, 5120] [%tokens, 1024] [1, 1]
      : tensor<?x6144xbf16> to tensor<?x1024xbf16>

  // QK-Norm: RMSNorm over each head's 128 values.
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

  // RoPE (rotate_half, theta 1e6) of the normalized q and k.
  %qr = norm.rotary <neox> %qn {num_heads = 32 : i64, head_dim = 128 : i64,
                                rope_theta = 1.0e+06 : f64} : tensor<?x4096xbf16>
  %kr = norm.rotary <neox> %kn {num_heads = 8 : i64, head_dim = 128 : i64,
                                rope_theta = 1.0e+06 : f64} : tensor<?x1024xbf16>

  %attn = norm.attention %qr, %kr, %v scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  %o = func.call @o_proj(%attn) : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  %h1 = norm.residual_add %x, %o : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>

  // MLP sublayer (pre-norm).
  %n2 = norm.rms_norm %h1 weight(%mlp_norm_w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %m = func.call @mlp(%n2) : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  %h2 = norm.residual_add %h1, %m : tensor<?x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>

  // Final norm before the LM head; the residual stream is returned too.
  %out = norm.rms_norm %h2 weight(%final_norm_w : tensor<4096xbf16>) eps(1.0e-06)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return %out, %h2 : tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
