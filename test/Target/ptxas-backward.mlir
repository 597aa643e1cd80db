// The training kernels through ptxas, for sm_90 and sm_80: backward row
// kernels at the edge of what the register rule keeps in registers
// (compiler/model/Launch.h: v, grad_output, the weight and the f32 column
// sums of each element live across the reduction), with the heuristic's
// configurations for model widths, forward kernels that save their
// statistics (row kernels and the QK-Norm prologue), per-head QK-Norm
// backward, the column sums of the partials, and backward rows beyond the
// registers, staged in shared memory with the column sums in registers at
// the edge of that rule (32 elements a thread in CTAs of 512), and
// GroupNorm backward. None may
// spill: a kernel the rules keep in registers that spilled would be a wrong
// prediction.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefix=PTX
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefix=STAGED
// RUN: FileCheck %s --input-file=%t.sm90.ptx --check-prefix=STAGED-LOADS
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK-NOT: .local
// CHECK-COUNT-47: .visible .entry
// CHECK-NOT: .visible .entry
// CHECK-NOT: .local

// PTXAS-NOT: bytes spill stores
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]* bytes spill}}

// Two chunks of 8 a thread: v, grad_output and the weight read once each
// as 16-byte vectors through the non-coherent cache, the saved rstd one
// f32, one exchange, then grad_input (2 stores) and the f32 partials (2
// chunks of two 16-byte quads); the CTA steps over the persistent grid's
// rows by its size (%nctaid.x).
// PTX-LABEL: .visible .entry norm_rms_bwd_h8192_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r16(
// PTX: mov.u32 %r{{[0-9]+}}, %nctaid.x;
// PTX-COUNT-6: ld.global.nc.v4.b32
// PTX-NOT: ld.global
// PTX: ld.global.nc.b32
// PTX-NOT: ld.global
// PTX: bar.sync
// PTX-NOT: ld.global
// PTX-COUNT-6: st.global.v4.b32
// PTX-NOT: st.global
// PTX: ret;

func.func @edges(%x: tensor<?x8192xbf16>, %dy: tensor<?x8192xbf16>,
                 %w: tensor<8192xbf16>, %r: tensor<?x1xf32>,
                 %xf: tensor<?x6144xf32>, %dyf: tensor<?x6144xf32>,
                 %wf: tensor<6144xf32>, %mf: tensor<?x1xf32>) {
  // bf16 RMSNorm: 16 elements a thread at 512 threads (CTAs of 1024 hold
  // none: training-invalid.mlir).
  %a:2 = norm.fused_row_grad <rms> %x grad(%dy : tensor<?x8192xbf16>) weight(%w : tensor<8192xbf16>) saved_rstd(%r : tensor<?x1xf32>) {launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 16>} : tensor<?x8192xbf16> -> tensor<?x8192xbf16> weight_grad_partials(tensor<?x8192xf32>)
  // f32 LayerNorm with weight and bias: 12 elements a thread at 512.
  %c:3 = norm.fused_row_grad <mean_var> %xf grad(%dyf : tensor<?x6144xf32>) weight(%wf : tensor<6144xf32>) saved_mean(%mf : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) {launch = #norm.launch<vector = 4, threads_per_row = 512, warps = 16, rows_per_cta = 16>} : tensor<?x6144xf32> -> tensor<?x6144xf32> weight_grad_partials(tensor<?x6144xf32>) bias_grad_partials(tensor<?x6144xf32>)
  return
}

// The heuristic's configurations (norm-lower-to-ptx assigns them) for the
// widths of models: Llama 3 8B, Qwen 2.5 7B (3584), GPT-2 (768), Gemma 2
// 9B (3584, 1 + w), a DeepNorm addend, L2 norm without a weight; each with
// its scalar fallback.
func.func @models(%x4: tensor<?x4096xbf16>, %w4: tensor<4096xbf16>,
                  %x3: tensor<?x3584xbf16>, %w3: tensor<3584xbf16>,
                  %x7: tensor<?x768xf16>, %w7: tensor<768xf32>,
                  %xl: tensor<?x2880xf32>, %r: tensor<?x1xf32>) {
  %a:2 = norm.fused_row_grad <rms> %x4 grad(%x4 : tensor<?x4096xbf16>) weight(%w4 : tensor<4096xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x4096xbf16> -> tensor<?x4096xbf16> weight_grad_partials(tensor<?x4096xf32>)
  %b:3 = norm.fused_row_grad <rms> %x3 grad(%x3 : tensor<?x3584xbf16>) weight(%w3 : tensor<3584xbf16>) saved_rstd(%r : tensor<?x1xf32>) alpha(2.0) offset(1.0) : tensor<?x3584xbf16> -> tensor<?x3584xbf16> addend_grad(tensor<?x3584xbf16>) weight_grad_partials(tensor<?x3584xf32>)
  %c:3 = norm.fused_row_grad <mean_var> %x7 grad(%x7 : tensor<?x768xf16>) weight(%w7 : tensor<768xf32>) saved_mean(%r : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x768xf16> -> tensor<?x768xf16> weight_grad_partials(tensor<?x768xf32>) bias_grad_partials(tensor<?x768xf32>)
  %d = norm.fused_row_grad <l2> %xl grad(%xl : tensor<?x2880xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x2880xf32> -> tensor<?x2880xf32>
  return
}

// Forward kernels that save their statistics, and the column sums.
func.func @forward_and_sums(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>,
                            %w: tensor<4096xbf16>, %x5: tensor<?x5120xf16>,
                            %p: tensor<?x4096xf32>) {
  %a:3 = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16> saved_rstd(tensor<?x1xf32>)
  %b:3 = norm.fused_row <mean_var> %x5 eps(1.0e-05) : tensor<?x5120xf16> -> tensor<?x5120xf16> saved_mean(tensor<?x1xf32>) saved_rstd(tensor<?x1xf32>)
  %c = norm.column_sum %p : tensor<?x4096xf32> -> tensor<4096xbf16>
  return
}

// QK-Norm for training: Qwen 3's heads (32 q / 8 kv of 128) saving one rstd
// per head, ViT-22B's LayerNorm heads saving mean and rstd, and the
// per-head backward of the q heads (128 and 256, Gemma's 1 + w).
func.func @qk_norm(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>,
                   %wk: tensor<128xbf16>, %q: tensor<?x4096xbf16>,
                   %rq: tensor<?x32xf32>, %q256: tensor<?x2048xbf16>,
                   %w256: tensor<256xbf16>, %r8: tensor<?x8xf32>) {
  %a:3 = norm.qk_norm_prologue <rms> %qkv q_weight(%wq : tensor<128xbf16>) k_weight(%wk : tensor<128xbf16>) eps(1.0e-06) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64} : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16> saved_rstd(tensor<?x40xf32>)
  %b:4 = norm.qk_norm_prologue <mean_var> %qkv q_weight(%wq : tensor<128xbf16>) k_weight(%wk : tensor<128xbf16>) eps(1.0e-05) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64} : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16> saved_mean(tensor<?x40xf32>) saved_rstd(tensor<?x40xf32>)
  %c:2 = norm.fused_row_grad <rms> %q grad(%q : tensor<?x4096xbf16>) weight(%wq : tensor<128xbf16>) saved_rstd(%rq : tensor<?x32xf32>) {groups = 32 : i64, per_head_weight} : tensor<?x4096xbf16> -> tensor<?x4096xbf16> weight_grad_partials(tensor<?x128xf32>)
  %d:2 = norm.fused_row_grad <rms> %q256 grad(%q256 : tensor<?x2048xbf16>) weight(%w256 : tensor<256xbf16>) saved_rstd(%r8 : tensor<?x8xf32>) offset(1.0) {groups = 8 : i64, per_head_weight} : tensor<?x2048xbf16> -> tensor<?x2048xbf16> weight_grad_partials(tensor<?x256xf32>)
  return
}

// Rows beyond the registers (norm-lower-to-ptx assigns the heuristic's
// configurations): bf16 RMSNorm at Llama 3 405B's 16384, GPT-3's 12288 and
// an odd 16383 (scalar accesses only), f32 and weightless RMSNorm, bf16 and
// f32 LayerNorm with a bias (two column sums an element), DeepNorm with the
// residual stream's gradient and Gemma's 1 + w; each with its scalar
// fallback.
//
// Staged, bf16 RMSNorm at 16384: 4 chunks of 8 a thread; step 1 reads v and
// dy (8 loads) and stages them (8 stores to the dynamic shared memory), the
// weight read per chunk; the exchange (its own two barriers); step 3 reads
// them back (8 loads) and stores grad_input (4), then the f32 partials (4
// chunks of two quads). v and dy come from global memory once: 16 loads of
// 16 bytes in all, 8 of them the weight's (twice per row, from the cache).
// STAGED-LABEL: .visible .entry norm_rms_bwd_h16384_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1_smem(
// STAGED: mov.u32 %r{{[0-9]+}}, %nctaid.x;
// STAGED: mov.b64 %rd{{[0-9]+}}, __dynamic_shmem__0;
// STAGED: ld.global.nc.b32
// STAGED-COUNT-8: st.shared.v4.b32
// STAGED-NOT: ld.shared
// STAGED: bar.sync
// STAGED: bar.sync
// STAGED-NOT: st.shared
// STAGED: ld.shared.v4.b32
// STAGED-NOT: st.shared
// STAGED: st.global.v4.b32
// STAGED-NOT: st.shared
// STAGED: ret;
// STAGED-LOADS-LABEL: .visible .entry norm_rms_bwd_h16384_bf16_bf16_{{[0-9a-f]+}}_v8_t512_w16_r1_smem(
// STAGED-LOADS-COUNT-16: ld.global.nc.v4.b32
// STAGED-LOADS-NOT: ld.global
// STAGED-LOADS: ret;
// STAGED-LABEL: .visible .entry norm_rms_bwd_h16384_bf16_bf16_{{[0-9a-f]+}}_v1_t512_w16_r1_smem(
func.func @staged(%x: tensor<?x16384xbf16>, %w: tensor<16384xbf16>,
                  %xf: tensor<?x16384xf32>, %wf: tensor<16384xf32>,
                  %x12: tensor<?x12288xbf16>, %w12: tensor<12288xbf16>,
                  %xo: tensor<?x16383xbf16>, %wo: tensor<16383xbf16>,
                  %r: tensor<?x1xf32>) {
  %a:2 = norm.fused_row_grad <rms> %x grad(%x : tensor<?x16384xbf16>) weight(%w : tensor<16384xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16384xbf16> -> tensor<?x16384xbf16> weight_grad_partials(tensor<?x16384xf32>)
  %b:2 = norm.fused_row_grad <rms> %x12 grad(%x12 : tensor<?x12288xbf16>) weight(%w12 : tensor<12288xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x12288xbf16> -> tensor<?x12288xbf16> weight_grad_partials(tensor<?x12288xf32>)
  %c:2 = norm.fused_row_grad <rms> %xo grad(%xo : tensor<?x16383xbf16>) weight(%wo : tensor<16383xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16383xbf16> -> tensor<?x16383xbf16> weight_grad_partials(tensor<?x16383xf32>)
  %d:2 = norm.fused_row_grad <rms> %xf grad(%xf : tensor<?x16384xf32>) weight(%wf : tensor<16384xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16384xf32> -> tensor<?x16384xf32> weight_grad_partials(tensor<?x16384xf32>)
  %e = norm.fused_row_grad <rms> %x grad(%x : tensor<?x16384xbf16>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %f:3 = norm.fused_row_grad <mean_var> %x grad(%x : tensor<?x16384xbf16>) weight(%w : tensor<16384xbf16>) saved_mean(%r : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16384xbf16> -> tensor<?x16384xbf16> weight_grad_partials(tensor<?x16384xf32>) bias_grad_partials(tensor<?x16384xf32>)
  %g:3 = norm.fused_row_grad <mean_var> %xf grad(%xf : tensor<?x16384xf32>) weight(%wf : tensor<16384xf32>) saved_mean(%r : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16384xf32> -> tensor<?x16384xf32> weight_grad_partials(tensor<?x16384xf32>) bias_grad_partials(tensor<?x16384xf32>)
  %h:3 = norm.fused_row_grad <rms> %x grad(%x : tensor<?x16384xbf16>) residual_grad(%x : tensor<?x16384xbf16>) weight(%w : tensor<16384xbf16>) saved_rstd(%r : tensor<?x1xf32>) alpha(1.86) offset(1.0) : tensor<?x16384xbf16> -> tensor<?x16384xbf16> addend_grad(tensor<?x16384xbf16>) weight_grad_partials(tensor<?x16384xf32>)
  return
}

// GroupNorm backward at the widths of diffusion U-Nets (32 groups of 1280
// and 2560 channels, bf16 and f32 parameters) and two wide groups of 8192:
// the heuristic's configurations (groups of 40 and 80 take 4-element
// vectors, 8 elements a thread: with 16-byte vectors, the threads that do
// not idle would hold 16, beyond the register rule). Each thread group's weight and
// partials start at its group's channels, a multiple of the vector: 8-byte
// loads of v, dy and the weight, 16-byte stores of the f32 partials.
// PTX-LABEL: .visible .entry norm_group_bwd_h1280_bf16_bf16_{{[0-9a-f]+}}_v4_t8_w4_r16(
// PTX: ld.global.nc.v2.b32
// PTX: st.global.v4.b32
// PTX: ret;
func.func @group(%x: tensor<?x1280xbf16>, %w: tensor<1280xbf16>,
                 %x2: tensor<?x2560xbf16>, %wf: tensor<2560xf32>,
                 %x8: tensor<?x8192xbf16>, %w8: tensor<8192xbf16>,
                 %r: tensor<?x32xf32>, %r2: tensor<?x2xf32>) {
  %a:3 = norm.fused_row_grad <mean_var> %x grad(%x : tensor<?x1280xbf16>) weight(%w : tensor<1280xbf16>) saved_mean(%r : tensor<?x32xf32>) saved_rstd(%r : tensor<?x32xf32>) {groups = 32 : i64} : tensor<?x1280xbf16> -> tensor<?x1280xbf16> weight_grad_partials(tensor<?x1280xf32>) bias_grad_partials(tensor<?x1280xf32>)
  %b:3 = norm.fused_row_grad <mean_var> %x2 grad(%x2 : tensor<?x2560xbf16>) weight(%wf : tensor<2560xf32>) saved_mean(%r : tensor<?x32xf32>) saved_rstd(%r : tensor<?x32xf32>) {groups = 32 : i64} : tensor<?x2560xbf16> -> tensor<?x2560xbf16> weight_grad_partials(tensor<?x2560xf32>) bias_grad_partials(tensor<?x2560xf32>)
  %c:3 = norm.fused_row_grad <mean_var> %x8 grad(%x8 : tensor<?x8192xbf16>) weight(%w8 : tensor<8192xbf16>) saved_mean(%r2 : tensor<?x2xf32>) saved_rstd(%r2 : tensor<?x2xf32>) {groups = 2 : i64} : tensor<?x8192xbf16> -> tensor<?x8192xbf16> weight_grad_partials(tensor<?x8192xf32>) bias_grad_partials(tensor<?x8192xf32>)
  return
}
