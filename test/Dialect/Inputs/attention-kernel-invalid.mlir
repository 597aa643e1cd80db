// Diagnostics of norm.attention_kernel (RUN line in ../attention-kernel.mlir):
// the kernel model's rules, stated once in compiler/model, and the op's own.

func.func @head_dim(%q: tensor<?x288xbf16>, %k: tensor<?x72xbf16>, %cu: tensor<?xi32>) -> tensor<?x288xbf16> {
  // expected-error @below {{attention needs a head dim that is a multiple of 16 from 16 to 256, got 72}}
  %o = norm.attention_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 72 : i64}
      : tensor<?x288xbf16>, tensor<?x72xbf16>, tensor<?x72xbf16> -> tensor<?x288xbf16>
  return %o : tensor<?x288xbf16>
}

// -----

func.func @f32(%q: tensor<?x128xf32>, %cu: tensor<?xi32>) -> tensor<?x128xf32> {
  // expected-error @below {{attention reads and writes bf16 or f16}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x128xf32>
  return %o : tensor<?x128xf32>
}

// -----

func.func @one_weight(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %w: tensor<128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{'q_norm_weight' and 'k_norm_weight' go together}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) q_norm_weight(%w : tensor<128xbf16>)
      scale(0.1) qk_norm_eps(1.0e-06)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @lse_shape(%q: tensor<?x256xbf16>, %cu: tensor<?xi32>) -> tensor<?x256xbf16> {
  // expected-error @below {{'lse' must be tokens x num_heads (2), got 'tensor<?x1xf32>'}}
  %o, %lse = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64}
      : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x256xbf16>, tensor<?x1xf32>
  return %o : tensor<?x256xbf16>
}

// -----

func.func @k_type(%q: tensor<?x128xbf16>, %k: tensor<?x128xf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{'k' must have the element type of 'q' ('bf16'), got 'tensor<?x128xf16>'}}
  %o = norm.attention_kernel %q, %k, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @threads_per_row(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{attention at head dim 128 maps 16 threads onto a head row, got threads_per_row 32}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 64, block_n = 64, stages = 2>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @rows(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{attention gives each of at most 8 warps 16 or 32 query rows: rows_per_cta must be 64 or 128, got 96}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 96, block_n = 64, stages = 2>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @accumulators(%q: tensor<?x256xbf16>, %cu: tensor<?xi32>) -> tensor<?x256xbf16> {
  // expected-error @below {{attention at head dim 256 with block_n 128 and 16 query rows a warp keeps 192 f32 accumulators per thread, more than the 144 that registers hold; use a smaller block_n}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 64, block_n = 128, stages = 1>}
      : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x256xbf16>
  return %o : tensor<?x256xbf16>
}

// -----

// 8 warps issue at most 12 K/V copies a thread: block_n 128 at head dim 128
// takes 16 (ptxas spilled 8 bytes beside the 128 accumulators).
func.func @eight_warps_copies(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{attention at head dim 128 with block_n 128 and 8 warps issues 16 16-byte copies of K and V per thread and key tile, more than the 12 whose addresses registers hold beside the accumulators; use 4 warps or a smaller block_n}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 8, rows_per_cta = 128, block_n = 128, stages = 2>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

// 32 query rows a warp (FlashAttention-2's) double the accumulators and keep
// at most 128: at head dim 128 with 64 keys, 192 (ptxas spilled 8-88 bytes
// there, sm_90).
func.func @accumulators_32_rows(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{attention at head dim 128 with block_n 64 and 32 query rows a warp keeps 192 f32 accumulators per thread, more than the 128 that registers hold; use a smaller block_n or 16 query rows a warp}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 128, block_n = 64, stages = 2>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

// sm_89 CTAs have 99 KiB of shared memory: 8 warps of 16 rows plus two
// stages of 64-key tiles at head dim 192 take 144 KiB.
module attributes {norm.target = #norm.target<chip = "sm_89", ptx_version = 80, max_shared_bytes = 0>} {
func.func @shared(%q: tensor<?x192xbf16>, %cu: tensor<?xi32>) -> tensor<?x192xbf16> {
  // expected-error @below {{attention tiles take 147456 bytes of shared memory, more than the target's 101376; use fewer warps, a smaller block_n or one stage}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 192 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 8, rows_per_cta = 128, block_n = 64, stages = 2>}
      : tensor<?x192xbf16>, tensor<?x192xbf16>, tensor<?x192xbf16> -> tensor<?x192xbf16>
  return %o : tensor<?x192xbf16>
}
}

// -----

// 8 warps keep at most 128 accumulators (ptxas spilled 144 at head dim
// 224 on sm_90).
func.func @eight_warps(%q: tensor<?x256xbf16>, %cu: tensor<?xi32>) -> tensor<?x256xbf16> {
  // expected-error @below {{attention at head dim 256 with block_n 32 and 16 query rows a warp keeps 144 f32 accumulators per thread, more than the 128 that registers hold beside 8 warps' copies; use 4 warps or a smaller block_n}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 8, rows_per_cta = 128, block_n = 32, stages = 2>}
      : tensor<?x256xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x256xbf16>
  return %o : tensor<?x256xbf16>
}

// -----

func.func @launch_fields(%x: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error @below {{block_n and stages apply to attention only}}
  %0 = norm.fused_row <rms> %x eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 1, rows_per_cta = 2, block_n = 64, stages = 2>} : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}

// -----

// expected-error @below {{block_n must be 16, 32, 64 or 128 (multiples of 16 up to 256 in the sm_90a family), got 48}}
func.func @block_n() attributes {l = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 64, block_n = 48, stages = 2>} {
  return
}

// -----

// The sm_90a family (warpgroups): its shape, then its rules for the op.
// expected-error @below {{the sm_90a attention family's 2 consumer warpgroups of 64 query rows and a producer warpgroup need warps = 12 and rows_per_cta = 128, got 8 and 128}}
func.func @warpgroup_shape() attributes {l = #norm.launch<vector = 8, threads_per_row = 16, warps = 8, rows_per_cta = 128, block_n = 128, stages = 2, warpgroups = 2>} {
  return
}

// -----

// expected-error @below {{warpgroups must be 1 to 3, got 4}}
func.func @warpgroup_count() attributes {l = #norm.launch<vector = 8, threads_per_row = 16, warps = 20, rows_per_cta = 256, block_n = 64, stages = 2, warpgroups = 4>} {
  return
}

// -----

// expected-error @below {{the sm_90a attention family keeps 2 to 4 stages of key/value tiles in its ring, got 1}}
func.func @warpgroup_stages() attributes {l = #norm.launch<vector = 8, threads_per_row = 16, warps = 12, rows_per_cta = 128, block_n = 64, stages = 1, warpgroups = 2>} {
  return
}

// -----

// expected-error @below {{overlap applies to the sm_90a attention family (warpgroups) only}}
func.func @overlap_without_warpgroups() attributes {l = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 64, block_n = 64, stages = 2, overlap = 1>} {
  return
}

// -----

func.func @warpgroup_keys_in_loop(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %w: tensor<128xbf16>, %cu: tensor<?xi32>) -> tensor<?x512xbf16> {
  // expected-error @below {{the sm_90a attention family reads K as TMA brings it: its keys must be prepared (norm.k_prepare) where they are normalized or rotated}}
  %o = norm.attention_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>)
      q_norm_weight(%w : tensor<128xbf16>) k_norm_weight(%w : tensor<128xbf16>)
      scale(0.1) qk_norm_eps(1.0e-06)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       qk_norm = #norm.qk_norm<rms>,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 12, rows_per_cta = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}

// -----

func.func @warpgroup_head_dim(%q: tensor<?x384xbf16>, %k: tensor<?x96xbf16>, %cu: tensor<?xi32>) -> tensor<?x384xbf16> {
  // expected-error @below {{the sm_90a attention family reads 64-column TMA boxes: its head dim must be a multiple of 64, got 96}}
  %o = norm.attention_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 96 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 12, rows_per_cta = 128, block_n = 64, stages = 2, warpgroups = 2>}
      : tensor<?x384xbf16>, tensor<?x96xbf16>, tensor<?x96xbf16> -> tensor<?x384xbf16>
  return %o : tensor<?x384xbf16>
}

// -----

func.func @warpgroup_registers(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %cu: tensor<?xi32>) -> tensor<?x1024xbf16> {
  // expected-error @below {{the sm_90a attention family at head dim 256 with block_n 64 and the softmax overlapped keeps 192 f32 accumulators per thread of 2 consumer warpgroups, more than the 160 that its registers hold; use a smaller block_n or no overlap}}
  %o = norm.attention_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 12, rows_per_cta = 128, block_n = 64, stages = 2, warpgroups = 2, overlap = 1>}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %o : tensor<?x1024xbf16>
}

// -----

func.func @warpgroup_registers_at_3(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %cu: tensor<?xi32>) -> tensor<?x1024xbf16> {
  // expected-error @below {{the sm_90a attention family at head dim 64 with block_n 96 and the softmax overlapped keeps 128 f32 accumulators per thread of 3 consumer warpgroups, more than the 120 that its registers hold; use a smaller block_n or no overlap}}
  %o = norm.attention_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 16 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 8, warps = 16, rows_per_cta = 192, block_n = 96, stages = 4, warpgroups = 3, overlap = 1>}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %o : tensor<?x1024xbf16>
}

// -----

func.func @warpgroup_shared_memory(%q: tensor<?x1024xbf16>, %k: tensor<?x256xbf16>, %cu: tensor<?xi32>) -> tensor<?x1024xbf16> {
  // expected-error @below {{attention tiles take 327744 bytes of shared memory, more than the target's 232448; use fewer warpgroups, a smaller block_n or fewer stages}}
  %o = norm.attention_kernel %q, %k, %k seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 256 : i64,
       launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 12, rows_per_cta = 128, block_n = 64, stages = 4, warpgroups = 2>}
      : tensor<?x1024xbf16>, tensor<?x256xbf16>, tensor<?x256xbf16> -> tensor<?x1024xbf16>
  return %o : tensor<?x1024xbf16>
}

// -----

func.func @rope_without_theta(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{'rope' needs 'rope_theta' or a 'rope_table'}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @rotary_dim_without_rope(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{'rotary_dim', 'rope_theta', 'positions' and 'rope_table' need a 'rope' style}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rotary_dim = 64 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @rotary_dim_neox(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{neox rotary embeddings need an even rotary dim from 2 to the head dim (128), got 41}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rotary_dim = 41 : i64, rope_theta = 1.0e+04 : f64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @rope_theta(%q: tensor<?x64xbf16>, %k: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  // expected-error @below {{rope_theta must be a positive finite number, got -1}}
  %o = norm.attention %q, %k, %k scale(0.125)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64,
       rope = #norm.rope<gptj>, rope_theta = -1.0 : f64}
      : tensor<?x64xbf16>, tensor<?x64xbf16>, tensor<?x64xbf16> -> tensor<?x64xbf16>
  return %o : tensor<?x64xbf16>
}

// -----

func.func @positions_without_rope(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %p: tensor<?xi32>) -> tensor<?x128xbf16> {
  // expected-error @below {{'rotary_dim', 'rope_theta', 'positions' and 'rope_table' need a 'rope' style}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) positions(%p : tensor<?xi32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}

// -----

func.func @table_and_theta(%q: tensor<?x128xbf16>, %cu: tensor<?xi32>, %t: tensor<?x128xf32>) -> tensor<?x128xbf16> {
  // expected-error @below {{the angles come from 'rope_table' or from 'rope_theta', not both}}
  %o = norm.attention_kernel %q, %q, %q seqlens(%cu : tensor<?xi32>) rope_table(%t : tensor<?x128xf32>) scale(0.1)
      {num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+04 : f64}
      : tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %o : tensor<?x128xbf16>
}
