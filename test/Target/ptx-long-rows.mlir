// Rows too long for registers: staged in dynamic shared memory (`_smem`) or
// streamed (`_stream`), with the heuristic's configuration (1024 threads)
// unless the op fixes one. 8 ops, 15 kernels with the scalar fallbacks of the 7 vector ones.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm90.json --check-prefix=JSON
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx --check-prefix=SM80
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// The dynamic shared memory is one extern array, placed by the driver after
// every static shared buffer; no kernel demotes it to a static variable of
// its own (which would overlap the exchange buffer of the reduction).
// CHECK: .target sm_90
// CHECK-NOT: __dynamic_shmem__0;
// CHECK: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// CHECK-NOT: .extern
// CHECK-NOT: .local
// CHECK-NOT: __dynamic_shmem__0;

// bf16 add + RMSNorm, 100000 values: a 200000-byte region. Input and addend
// are read once, two 16-byte loads each per iteration (what 64 registers a
// thread hold beside the loop's sums: norm::getChunksInFlight; the loop is
// marked for ptxas not to unroll it further, which spilled), v goes to
// shared memory as 16-byte stores, one exchange (through the static
// buffer), v comes back as 16-byte loads.
// CHECK-LABEL: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// CHECK: .maxntid 1024, 1, 1
// CHECK-NEXT: .minnctapersm 1
// CHECK: .shared .align 4 .b8 [[EXCHANGE:__wg_norm_rms_add_h100000_bf16_bf16_[0-9a-f]+_v8_t1024_w32_r1_smem_0]][128];
// CHECK: mov.b64 %rd{{[0-9]+}}, __dynamic_shmem__0;
// CHECK: .pragma "nounroll";
// CHECK-COUNT-4: ld.global.nc.v4.b32
// CHECK-NOT: ld.global
// CHECK-COUNT-2: st.shared.v4.b32 [%rd
// CHECK: st.shared.b32 [%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK-NEXT: $L
// CHECK-NEXT: bar.sync 0;
// CHECK-NOT: bar.sync
// CHECK: ld.shared.v4.b32 {{.*}}, [[[EXCHANGE]]];
// CHECK: rsqrt.approx.f32
// CHECK: .pragma "nounroll";
// CHECK-COUNT-2: ld.shared.v4.b32 {{.*}}, [%rd
// CHECK: st.global.v4.b32
// CHECK-LABEL: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// CHECK: st.shared.b16
// CHECK: ld.shared.b16

// f32 add + RMSNorm, 100000 values (400000 bytes): streamed. v is stored to
// residual_out in the first pass and read back from there, by the thread
// that stored it, through the coherent path (ld.global, not .nc).
// CHECK-LABEL: .visible .entry norm_rms_add_h100000_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1_stream(
// CHECK-NOT: __dynamic_shmem__0
// CHECK-NOT: ld.global.v4
// CHECK: st.global.v4.b32
// CHECK: bar.sync 0;
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK-LABEL: .visible .entry norm_rms_add_h100000_f32_f32_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(

// DeepNorm with an f32 residual stream: v is not in residual_out (bf16), so
// the second pass reads input and addend again.
// CHECK-LABEL: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// CHECK: bar.sync 0;
// CHECK-NOT: ld.global.v4
// CHECK: ld.global.nc.v4.b32
// CHECK-NOT: ld.global.v4
// CHECK: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(

// LayerNorm of 65537 f16 values: scalar accesses, staged (131088 bytes).
// CHECK-LABEL: .visible .entry norm_layer_h65537_f16_f16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// CHECK: st.shared.b16
// CHECK: bar.sync 0;
// CHECK: ld.shared.b16

// LayerNorm + skip of 262144 bf16 values (512 KiB): streamed from the input.
// CHECK-LABEL: .visible .entry norm_layer_skip_h262144_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// CHECK-NOT: __dynamic_shmem__0
// CHECK: bar.sync 0;
// CHECK: ld.global.nc.v4.b32
// CHECK-LABEL: .visible .entry norm_layer_skip_h262144_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(

// GroupNorm, 2 groups of 131072 bf16 values: streamed.
// CHECK-LABEL: .visible .entry norm_group_h262144_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// CHECK-LABEL: .visible .entry norm_group_h262144_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(

// A residual add without a statistic: one pass, no barrier.
// CHECK-LABEL: .visible .entry norm_ew_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// CHECK-NOT: bar.sync
// CHECK: ld.global.nc.v4.b32
// CHECK: st.global.v4.b32
// CHECK-NOT: bar.sync
// CHECK-LABEL: .visible .entry norm_ew_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(

// 4096 values forced onto 32 threads (128 per thread), 4 rows at a time:
// four 8192-byte regions; warp shuffles only, no static buffer, no barrier.
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r8_smem(
// CHECK-NOT: .shared .align 4
// CHECK-NOT: bar.sync
// CHECK: st.shared.v4.b32
// CHECK: shfl.sync.bfly.b32
// CHECK: ld.shared.v4.b32
// CHECK-NOT: bar.sync
// CHECK-LABEL: .visible .entry norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v1_t32_w4_r8_smem(
// CHECK-NOT: .visible .entry

// SM80: .target sm_80
// SM80: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// SM80-NOT: .local
// SM80-COUNT-15: .visible .entry
// SM80-NOT: .visible .entry
// SM80-NOT: .local

// The launch asks for exactly the staged rows the CTA holds at once.
// JSON: "name": "norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem", {{.*}}, "shared_bytes": 200000,
// JSON: "name": "norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem", {{.*}}, "shared_bytes": 200000,
// JSON: "name": "norm_rms_add_h100000_f32_f32_{{[0-9a-f]+}}_v4_t1024_w32_r1_stream", {{.*}}, "shared_bytes": 0,
// JSON: "name": "norm_layer_h65537_f16_f16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem", {{.*}}, "shared_bytes": 131088,
// JSON: "name": "norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r8_smem", {{.*}}, "shared_bytes": 32768,
// JSON: "name": "norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v1_t32_w4_r8_smem", {{.*}}, "shared_bytes": 32768,

// PTXAS-NOT: error
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-COUNT-15: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[1-9][0-9]*}} bytes spill
// PTXAS-NOT: error

func.func @long_rows(%x100k_bf16: tensor<?x100000xbf16>,
    %w100k_bf16: tensor<100000xbf16>,
    %x100k_f32: tensor<?x100000xf32>,
    %w100k_f32: tensor<100000xf32>,
    %x262k_bf16: tensor<?x262144xbf16>,
    %w262k_bf16: tensor<262144xbf16>,
    %x65537_f16: tensor<?x65537xf16>,
    %w65537_f16: tensor<65537xf16>,
    %x4096_bf16: tensor<?x4096xbf16>,
    %w4096_bf16: tensor<4096xbf16>) {
  %r0:2 = norm.fused_row <rms> %x100k_bf16 addend(%x100k_bf16 : tensor<?x100000xbf16>) weight(%w100k_bf16 : tensor<100000xbf16>) eps(1.0e-06) : tensor<?x100000xbf16> -> tensor<?x100000xbf16>, tensor<?x100000xbf16>
  %r1:2 = norm.fused_row <rms> %x100k_f32 addend(%x100k_f32 : tensor<?x100000xf32>) weight(%w100k_f32 : tensor<100000xf32>) eps(1.0e-06) : tensor<?x100000xf32> -> tensor<?x100000xf32>, tensor<?x100000xf32>
  %r2:2 = norm.fused_row <rms> %x100k_bf16 addend(%x100k_bf16 : tensor<?x100000xbf16>) weight(%w100k_bf16 : tensor<100000xbf16>) eps(1.0e-06) alpha(2.0) {f32_residual} : tensor<?x100000xbf16> -> tensor<?x100000xbf16>, tensor<?x100000xbf16>
  %r3:1 = norm.fused_row <mean_var> %x65537_f16 weight(%w65537_f16 : tensor<65537xf16>) bias(%w65537_f16 : tensor<65537xf16>) eps(1.0e-05) : tensor<?x65537xf16> -> tensor<?x65537xf16>
  %r4:1 = norm.fused_row <mean_var> %x262k_bf16 skip(%x262k_bf16 : tensor<?x262144xbf16>) weight(%w262k_bf16 : tensor<262144xbf16>) bias(%w262k_bf16 : tensor<262144xbf16>) eps(1.0e-05) : tensor<?x262144xbf16> -> tensor<?x262144xbf16>
  %r5:1 = norm.fused_row <mean_var> %x262k_bf16 weight(%w262k_bf16 : tensor<262144xbf16>) bias(%w262k_bf16 : tensor<262144xbf16>) eps(1.0e-05) {groups = 2 : i64} : tensor<?x262144xbf16> -> tensor<?x262144xbf16>
  %r6:2 = norm.fused_row <none> %x100k_bf16 addend(%x100k_bf16 : tensor<?x100000xbf16>) : tensor<?x100000xbf16> -> tensor<?x100000xbf16>, tensor<?x100000xbf16>
  %r7:2 = norm.fused_row <rms> %x4096_bf16 addend(%x4096_bf16 : tensor<?x4096xbf16>) weight(%w4096_bf16 : tensor<4096xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return
}
