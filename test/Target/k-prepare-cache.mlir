// K-prepare into a KV cache (#32): QK-Norm + RoPE + the cache write of a
// prefill step in one launch. Claims on the PTX, sm_90 and sm_80:
// - the kernel takes the caches, each sequence's cached length and the
//   capacity (14 parameters);
// - the key is normalized and rotated, then stored with its value row:
//   the caches are written, never read;
// - ptxas: no stack frame, no spills.
//
// REQUIRES: ptxas
// RUN: norm-opt %s --norm-lower-to-ptx -o %t.sm90.ptx
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --input-file=%t.sm90.ptx
// RUN: FileCheck %s --input-file=%t.sm80.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm90.ptx -o %t.sm90.cubin > %t.sm90.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.sm90.log
// RUN: %ptxas -arch=sm_80 -v %t.sm80.ptx -o %t.sm80.cubin > %t.sm80.log 2>&1
// RUN: FileCheck %s --check-prefix=PTXAS < %t.sm80.log

// Parameters: k, v, k_weight, cu_seqlens, cache_seqlens, k_cache,
// v_cache, rows, batch, cache_capacity and four row strides.
// CHECK-LABEL: .visible .entry norm_kprep_rms_ropeneox128_cache_d128_bf16_bf16_{{[0-9a-f]+}}_v8_t16_w4_r8(
//       CHECK: _param_13{{$}}
//   CHECK-NOT: _param_14
//       CHECK: rsqrt.approx.f32
//       CHECK: sin.approx.f32
//       CHECK: st.global.v4.b32
//       CHECK: st.global.v4.b32
//       CHECK: ld.global.nc.v4.b32
//       CHECK: st.global.v4.b32
//       CHECK: st.global.v4.b32
//       CHECK: ret;

// Both variants (scalar v1, vector v8); registers 40 and 56 on sm_90.
// PTXAS: Compiling entry function 'norm_kprep_rms_ropeneox128_cache_d128_bf16_bf16_{{[0-9a-f]+}}_v1_
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'norm_kprep_rms_ropeneox128_cache_d128_bf16_bf16_{{[0-9a-f]+}}_v8_
// PTXAS-NEXT: Function properties
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @into_cache(%k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>, %cu: tensor<?xi32>,
                      %kc: tensor<?x1024xbf16>, %vc: tensor<?x1024xbf16>, %len: tensor<?xi32>,
                      %wk: tensor<128xbf16>) -> (tensor<?x1024xbf16>, tensor<?x1024xbf16>) {
  %kc2, %vc2 = norm.k_prepare %k values(%v : tensor<?x1024xbf16>) seqlens(%cu : tensor<?xi32>)
      cache(%kc, %vc lengths %len : tensor<?x1024xbf16>, tensor<?x1024xbf16>, tensor<?xi32>)
      k_weight(%wk : tensor<128xbf16>) eps(1.0e-06)
      {qk_norm = #norm.qk_norm<rms>, num_kv_heads = 8 : i64, head_dim = 128 : i64,
       rope = #norm.rope<neox>, rope_theta = 1.0e+06 : f64}
      : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?x1024xbf16>
  return %kc2, %vc2 : tensor<?x1024xbf16>, tensor<?x1024xbf16>
}
