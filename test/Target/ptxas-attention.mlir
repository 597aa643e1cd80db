// Attention kernels (QK-Norm in the prologue, tensor cores) at head dims
// 64, 96, 128 and 256, with and without QK-Norm, causal and not, GQA and
// one KV head, and the launch shapes the tuner picks from: ptxas must
// accept them for sm_90 and sm_80 with no stack frame and no spills. The
// PTX uses mma.sync for bf16 and f16, ldmatrix (transposed for V), cp.async
// with zero fill and the approximate exp2; rotary embeddings sin.approx and
// cos.approx on angles reduced by fma.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefix=ENTRY
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefix=PAIRS
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefix=ENTRY
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefix=PAIRS
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-NOT: .extern .func
// CHECK-NOT: .local
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: cp.async.cg.shared.global
// CHECK-DAG: cp.async.wait_group 1
// CHECK-DAG: ex2.approx
// CHECK-DAG: rsqrt.approx
// CHECK-DAG: sin.approx.f32
// CHECK-DAG: cos.approx.f32
// CHECK-DAG: fma.rn.f32
// ENTRY-COUNT-17: .visible .entry
// ENTRY-NOT: .visible .entry

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-17: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-NOT: error

func.func @attention(%q128: tensor<?x4096xbf16>, %kv128: tensor<?x1024xbf16>,
                     %w128: tensor<128xbf16>, %cu: tensor<?xi32>,
                     %q64: tensor<?x1024xf16>, %kv64: tensor<?x1024xf16>,
                     %q96: tensor<?x768xbf16>, %kv96: tensor<?x96xbf16>, %w96: tensor<96xbf16>,
                     %q256: tensor<?x2048xbf16>, %kv256: tensor<?x256xbf16>, %w256: tensor<256xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x1024xf16>,
        tensor<?x768xbf16>, tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x8xf32>,
        tensor<?x4096xbf16>) {
  // Qwen3-like: RMS QK-Norm, 32/8 heads, causal (the heuristic's launch).
  %a = norm.attention_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       qk_norm = #norm.qk_norm<rms>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  // The same, 8 warps and one stage; and no QK-Norm, block_n 64, 8 warps,
  // two stages (block_n 128 with 8 warps, 16 K/V copies a thread beside 128
  // accumulators, spilled 8 bytes: kMaxAttentionCopiesPerThreadAt8Warps;
  // with 2 or 4 warps, 32-64 copies: kMaxAttentionCopiesPerThread).
  %b = norm.attention_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       qk_norm = #norm.qk_norm<rms>,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 8, rows_per_cta = 128, block_n = 64, stages = 1>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  %c = norm.attention_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 8, rows_per_cta = 128, block_n = 64, stages = 2>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  // f16, head dim 64, L2 QK-Norm without weights, no GQA.
  %d = norm.attention_kernel %q64, %kv64, %kv64 seqlens(%cu : tensor<?xi32>)
      scale(0.125) qk_norm_eps(1.0e-06)
      {num_heads = 16 : i64, num_kv_heads = 16 : i64, head_dim = 64 : i64, causal,
       qk_norm = #norm.qk_norm<l2>}
      : tensor<?x1024xf16>, tensor<?x1024xf16>, tensor<?x1024xf16> -> tensor<?x1024xf16>
  // Head dim 96, LayerNorm QK-Norm, one KV head.
  %e = norm.attention_kernel %q96, %kv96, %kv96 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w96 : tensor<96xbf16>) k_norm_weight(%w96 : tensor<96xbf16>)
      scale(0.10206207261596575) qk_norm_eps(1.0e-05)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64, causal,
       qk_norm = #norm.qk_norm<mean_var>}
      : tensor<?x768xbf16>, tensor<?x96xbf16>, tensor<?x96xbf16> -> tensor<?x768xbf16>
  // Gemma 3: head dim 256, (1 + w), one KV head; with the log-sum-exp and
  // one stage (144 accumulators, the most that do not spill).
  %f = norm.attention_kernel %q256, %kv256, %kv256 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w256 : tensor<256xbf16>) k_norm_weight(%w256 : tensor<256xbf16>)
      scale(0.0625) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64, causal,
       qk_norm = #norm.qk_norm<rms>}
      : tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x2048xbf16>
  %g, %lse = norm.attention_kernel %q256, %kv256, %kv256 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w256 : tensor<256xbf16>) k_norm_weight(%w256 : tensor<256xbf16>)
      scale(0.0625) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       qk_norm = #norm.qk_norm<rms>,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 64, block_n = 32, stages = 1>}
      : tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x2048xbf16>, tensor<?x8xf32>
  // block_n 16, 1 warp.
  %h = norm.attention_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       qk_norm = #norm.qk_norm<rms>,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 1, rows_per_cta = 16, block_n = 16, stages = 2>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return %a, %b, %c, %d, %e, %f, %g, %lse, %h : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x1024xf16>,
      tensor<?x768xbf16>, tensor<?x2048xbf16>, tensor<?x2048xbf16>, tensor<?x8xf32>, tensor<?x4096xbf16>
}

// Rotary embeddings after the QK-Norm: Qwen3 (neox, theta 1e6), Gemma 3's
// heaviest launch (head dim 256, block_n 32, lse), ChatGLM's interleaved
// half in f16. Measured: sm_90 208 / 251 / 197 registers, sm_80 213 / 242 /
// 197, no spills (the tightest rope launch, head dim 256 with 2 warps and 2
// stages, takes 255 on both without spilling).
func.func @rope(%q128: tensor<?x4096xbf16>, %kv128: tensor<?x1024xbf16>,
                %w128: tensor<128xbf16>, %cu: tensor<?xi32>,
                %q256: tensor<?x2048xbf16>, %kv256: tensor<?x256xbf16>, %w256: tensor<256xbf16>,
                %h128: tensor<?x4096xf16>, %hkv128: tensor<?x256xf16>)
    -> (tensor<?x4096xbf16>, tensor<?x2048xbf16>, tensor<?x8xf32>, tensor<?x4096xf16>) {
  %a = norm.attention_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  %b, %lse = norm.attention_kernel %q256, %kv256, %kv256 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w256 : tensor<256xbf16>) k_norm_weight(%w256 : tensor<256xbf16>)
      scale(0.0625) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64, causal,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+04 : f64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 64, block_n = 32, stages = 1>}
      : tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x2048xbf16>, tensor<?x8xf32>
  %c = norm.attention_kernel %h128, %hkv128, %hkv128 seqlens(%cu : tensor<?xi32>)
      scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, causal,
       rope = #norm.rope<gptj>, rotary_dim = 64 : i64, rope_theta = 1.0e+04 : f64}
      : tensor<?x4096xf16>, tensor<?x256xf16>, tensor<?x256xf16> -> tensor<?x4096xf16>
  return %a, %b, %lse, %c : tensor<?x4096xbf16>, tensor<?x2048xbf16>, tensor<?x8xf32>, tensor<?x4096xf16>
}

// Decode (QK-Norm + RoPE + cache append + split-KV attention in one
// launch): Qwen3 (GQA 4, head dim 128) and Gemma 3 (one KV head for 8,
// head dim 256, (1 + w)) with the heuristic's 4 warps. Measured: sm_90
// 244 / 255 registers, sm_80 244 / 248, no spills (one warp would spill
// at head dim 128: 255 registers and 68 bytes).
func.func @decode(%q128: tensor<?x4096xbf16>, %kv128: tensor<?x1024xbf16>,
                  %w128: tensor<128xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>,
                  %q256: tensor<?x2048xbf16>, %kv256: tensor<?x256xbf16>, %w256: tensor<256xbf16>)
    -> (tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>,
        tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %a, %ak, %av = norm.attention_decode_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      cache(%kv128, %kv128 lengths %len : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  %b, %bk, %bv = norm.attention_decode_kernel %q256, %kv256, %kv256 seqlens(%cu : tensor<?xi32>)
      cache(%kv256, %kv256 lengths %len : tensor<?xi32>)
      q_norm_weight(%w256 : tensor<256xbf16>) k_norm_weight(%w256 : tensor<256xbf16>)
      scale(0.0625) qk_norm_eps(1.0e-06) qk_norm_offset(1.0)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>, rope_theta = 1.0e+04 : f64}
      : tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %a, %ak, %av, %b, %bk, %bv : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>,
      tensor<?x2048xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
}

// Angles from a cos/sin table at explicit positions (Llama 3.1-style
// scaled RoPE): prefill at head dim 128 and decode at 128 (GQA 4).
// Measured: sm_90 205 / 244 registers, sm_80 219 / 244, no spills.
func.func @rope_table(%q128: tensor<?x4096xbf16>, %kv128: tensor<?x1024xbf16>,
                      %w128: tensor<128xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>,
                      %pos: tensor<?xi32>, %table: tensor<?x128xf32>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %a = norm.attention_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      positions(%pos : tensor<?xi32>) rope_table(%table : tensor<?x128xf32>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  %b, %bk, %bv = norm.attention_decode_kernel %q128, %kv128, %kv128 seqlens(%cu : tensor<?xi32>)
      cache(%kv128, %kv128 lengths %len : tensor<?xi32>)
      q_norm_weight(%w128 : tensor<128xbf16>) k_norm_weight(%w128 : tensor<128xbf16>)
      positions(%pos : tensor<?xi32>) rope_table(%table : tensor<?x128xf32>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-06)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>, rope = #norm.rope<neox>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
     -> tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %a, %b, %bk, %bv : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16>
}

// Rotary dims whose pairs do not fill 16-byte chunks turn one pair at a
// time (2-byte shared accesses, 4-byte table loads): StableLM-3B (neox, 20
// of 80, per-head LayerNorm) in prefill, and decode turning 10 GPT-J pairs
// from a table.
// Measured: sm_90 199 / 199 registers, sm_80 201 / 194, no spills.
// PAIRS-LABEL: .visible .entry norm_attn_qkmean_var_causal_ropeneox20_d80
// PAIRS: ld.shared.b16
// PAIRS: st.shared.b16
// PAIRS-LABEL: .visible .entry norm_decode_ropegptj20_table_d64
// PAIRS: ld.global.nc.b32
// PAIRS: ld.shared.b16
// PAIRS: st.shared.b16
func.func @rope_pairs(%q80: tensor<?x2560xbf16>, %kv80: tensor<?x2560xbf16>,
                      %w80: tensor<80xbf16>, %cu: tensor<?xi32>, %len: tensor<?xi32>,
                      %q64: tensor<?x1024xbf16>, %kv64: tensor<?x256xbf16>,
                      %table: tensor<?x20xf32>)
    -> (tensor<?x2560xbf16>, tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>) {
  %a = norm.attention_kernel %q80, %kv80, %kv80 seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w80 : tensor<80xbf16>) k_norm_weight(%w80 : tensor<80xbf16>)
      scale(0.11180339887498948) qk_norm_eps(1.0e-05)
      {num_heads = 32 : i64, num_kv_heads = 32 : i64, head_dim = 80 : i64, causal,
       qk_norm = #norm.qk_norm<mean_var>, rope = #norm.rope<neox>, rotary_dim = 20 : i64,
       rope_theta = 1.0e+04 : f64}
      : tensor<?x2560xbf16>, tensor<?x2560xbf16>, tensor<?x2560xbf16> -> tensor<?x2560xbf16>
  %b, %bk, %bv = norm.attention_decode_kernel %q64, %kv64, %kv64 seqlens(%cu : tensor<?xi32>)
      cache(%kv64, %kv64 lengths %len : tensor<?xi32>)
      rope_table(%table : tensor<?x20xf32>)
      scale(0.125)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
       rope = #norm.rope<gptj>, rotary_dim = 20 : i64}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
     -> tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
  return %a, %b, %bk, %bv : tensor<?x2560xbf16>, tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16>
}
