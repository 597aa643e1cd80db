// RUN: norm-opt %s | norm-opt | FileCheck %s
// RUN: norm-opt %s --norm-fuse | FileCheck %s --check-prefix=FUSE
// RUN: norm-opt %s --norm-fuse | FileCheck %s --check-prefix=KERNELS
// RUN: norm-opt %s --norm-fuse=qk-norm=attention | FileCheck %s --check-prefix=ATTN
// RUN: rm -rf %t && mkdir -p %t
// RUN: norm-opt %s --norm-to-ptx -o %t/block.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/block.ptx
// RUN: FileCheck %s --check-prefix=JSON < %t/block.json
// RUN: not norm-opt %s --norm-to-ptx=qk-norm=attention -o %t/attn.ptx 2>&1 | FileCheck %s --check-prefix=NOKERNEL
// CHECK-LABEL: func.func @decoder_block
// CHECK-COUNT-5: norm.rms_norm

// norm-to-ptx: three kernels (the first norm, the QK-Norm prologue, fused
// add+RMSNorm twice with the same weights' shape), each with its scalar
// fallback; no libdevice calls.
// PTX-NOT: .extern
// PTX-DAG: .visible .entry norm_rms_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// PTX-DAG: .visible .entry norm_qk_rms_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8(
// PTX-DAG: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1(
// PTX-DAG: ld.global.nc.v4.b32
// PTX-DAG: shfl.sync.bfly
// PTX-DAG: rsqrt.approx
// JSON: "name": "norm_rms_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1"
// JSON-SAME: "grid": "ceil(rows / 1)"
// JSON: "kind": "qk_norm_prologue"
// JSON-SAME: "grid": "ceil(rows * 40 / 8)"
// JSON: "name": "norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1"
// JSON-SAME: {"name": "input", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": true, "alignment": 16}, {"name": "addend"
// JSON-SAME: {"name": "residual_out", "kind": "buffer", "type": "bf16", "rows_x_hidden": true, "read_only": false, "alignment": 16}, {"name": "rows", "kind": "rows", "type": "i64"}
// NOKERNEL: error: 'norm.attention' op with a fused QK-Norm needs an attention kernel

// Four kernels, in program order.
// FUSE-LABEL: func.func @decoder_block
//  FUSE-SAME: (%[[X:[^:]*]]: tensor<?x4096xbf16>, %[[ATTN_W:[^:]*]]: tensor<4096xbf16>, %[[Q_W:[^:]*]]: tensor<128xbf16>, %[[K_W:[^:]*]]: tensor<128xbf16>, %[[MLP_W:[^:]*]]: tensor<4096xbf16>, %[[FINAL_W:[^:]*]]: tensor<4096xbf16>)
//  FUSE-NOT: norm.rms_norm
//  FUSE-NOT: norm.residual_add
//      FUSE: %[[N1:.*]] = norm.fused_row <rms> %[[X]] weight(%[[ATTN_W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>{{$}}
//      FUSE: %[[QKV:.*]] = call @qkv_proj(%[[N1]])
//      FUSE: %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 5120]
//      FUSE: %[[ROWS:.*]] = tensor.extract_slice %[[QKV]][0, 0] [%{{.*}}, 6144] [1, 1]
//      FUSE: %[[Q:.*]], %[[K:.*]] = norm.qk_norm_prologue <rms> %[[ROWS]] q_weight(%[[Q_W]] : tensor<128xbf16>) k_weight(%[[K_W]] : tensor<128xbf16>) eps(1.0e-06)
// FUSE-SAME: {head_dim = 128 : i64, num_kv_heads = 8 : i64, num_q_heads = 32 : i64}
//      FUSE: %[[ATT:.*]] = norm.attention %[[Q]], %[[K]], %[[V]] scale(0.08838834764831845) {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64} :
//      FUSE: %[[O:.*]] = call @o_proj(%[[ATT]])
//      FUSE: %[[N2:.*]], %[[H1:.*]] = norm.fused_row <rms> %[[X]] addend(%[[O]] : tensor<?x4096xbf16>) weight(%[[MLP_W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
//      FUSE: %[[M:.*]] = call @mlp(%[[N2]])
//      FUSE: %[[OUT:.*]], %[[H2:.*]] = norm.fused_row <rms> %[[H1]] addend(%[[M]] : tensor<?x4096xbf16>) weight(%[[FINAL_W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
//      FUSE: return %[[OUT]], %[[H2]]

// Exactly four kernel ops, and no layer op left but attention.
// KERNELS-COUNT-4: norm.{{fused_row|qk_norm_prologue}}
//     KERNELS-NOT: norm.{{fused_row|qk_norm_prologue|column_stats|rms_norm|residual_add|cast}}

// QK-Norm into the attention op: three row kernels, attention reads q and k
// straight from the projection.
// ATTN-LABEL: func.func @decoder_block
//   ATTN-NOT: norm.qk_norm_prologue
//       ATTN: norm.fused_row <rms>
//       ATTN: %[[QKV:.*]] = call @qkv_proj
//       ATTN: %[[Q:.*]] = tensor.extract_slice %[[QKV]][0, 0] [%{{.*}}, 4096] [1, 1]
//       ATTN: %[[K:.*]] = tensor.extract_slice %[[QKV]][0, 4096] [%{{.*}}, 1024] [1, 1]
//       ATTN: %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 5120] [%{{.*}}, 1024] [1, 1]
//   ATTN-NOT: norm.rms_norm
//       ATTN: norm.attention %[[Q]], %[[K]], %[[V]] q_norm_weight(%{{.*}} : tensor<128xbf16>) k_norm_weight(%{{.*}} : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06)
//  ATTN-SAME: qk_norm = #norm.qk_norm<rms>
//       ATTN: norm.fused_row <rms> %{{.*}} addend
//       ATTN: norm.fused_row <rms> %{{.*}} addend
//   ATTN-NOT: norm.{{fused_row|qk_norm_prologue|rms_norm}}

// A pre-norm transformer decoder block with QK-Norm (as in Qwen3 and OLMo 2),
// followed by the final norm before the LM head: hidden 4096, 32 query heads
// and 8 key/value heads of 128, bf16 activations and weights.
//
// The projections, the MLP and attention itself are matrix work that runs
// elsewhere (external functions, `norm.attention`); norm-opt compiles the
// normalization layers around them into fused kernels:
//   - rms_norm(x)                              -> one row kernel
//   - per-head RMSNorm of q and k (packed qkv) -> one QK-Norm prologue kernel
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

  %attn = norm.attention %qn, %kn, %v scale(0.08838834764831845)
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
