// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" | FileCheck %s

// A staged row is a run of whole vectors from a 16-byte aligned region of
// the dynamic shared memory: each vector is aligned to its own size, up to
// 16 bytes, and to no more. The accesses claim exactly that (a vector<4xf16>
// of 8 bytes starts 8 bytes into the region every other chunk; a claim of
// 16 would be undefined behaviour).

// CHECK-LABEL: gpu.func @norm_rms_h2880_f16_f32_{{[0-9a-f]+}}_v4_t32_w4_r8_smem(
// CHECK: memref.view {{.*}} to memref<2880xvector<4xf16>, #gpu.address_space<workgroup>>
// CHECK: memref.store %{{.*}} {alignment = 8 : i64} : memref<2880xvector<4xf16>
// CHECK-NOT: alignment = 16 : i64} : memref<{{.*}}workgroup
// CHECK: memref.load %{{.*}} {alignment = 8 : i64} : memref<2880xvector<4xf16>

// CHECK-LABEL: gpu.func @norm_rms_h2880_f32_f32_{{[0-9a-f]+}}_v2_t32_w4_r8_smem(
// CHECK: memref.store %{{.*}} {alignment = 8 : i64} : memref<5760xvector<2xf32>
// CHECK: memref.load %{{.*}} {alignment = 8 : i64} : memref<5760xvector<2xf32>

// CHECK-LABEL: gpu.func @norm_rms_h4544_bf16_bf16_{{[0-9a-f]+}}_v1_t32_w4_r8_smem(
// CHECK: memref.store %{{.*}} {alignment = 2 : i64} : memref<18176xvector<1xbf16>
// CHECK: memref.load %{{.*}} {alignment = 2 : i64} : memref<18176xvector<1xbf16>

// 16-byte vectors: 16.
// CHECK-LABEL: gpu.func @norm_rms_h4544_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r8_smem(
// CHECK: memref.store %{{.*}} {alignment = 16 : i64} : memref<2272xvector<8xbf16>
// CHECK: memref.load %{{.*}} {alignment = 16 : i64} : memref<2272xvector<8xbf16>

// An f32 residual stream staged in 32-byte vectors: still 16, what the
// region guarantees.
// CHECK-LABEL: gpu.func @norm_rms_add_h4096_bf16_bf16_{{[0-9a-f]+}}_v8_t32_w4_r8_smem(
// CHECK: memref.store %{{.*}} {alignment = 16 : i64} : memref<2048xvector<8xf32>
// CHECK: memref.load %{{.*}} {alignment = 16 : i64} : memref<2048xvector<8xf32>

func.func @staged(%h2880: tensor<?x2880xf16>, %f2880: tensor<?x2880xf32>,
                  %b4544: tensor<?x4544xbf16>, %b4096: tensor<?x4096xbf16>)
    -> (tensor<?x2880xf32>, tensor<?x2880xf32>, tensor<?x4544xbf16>,
        tensor<?x4544xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>) {
  %0 = norm.fused_row <rms> %h2880 eps(1.0e-06) {launch = #norm.launch<vector = 4, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x2880xf16> -> tensor<?x2880xf32>
  %1 = norm.fused_row <rms> %f2880 eps(1.0e-06) {launch = #norm.launch<vector = 2, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x2880xf32> -> tensor<?x2880xf32>
  %2 = norm.fused_row <rms> %b4544 eps(1.0e-06) {launch = #norm.launch<vector = 1, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x4544xbf16> -> tensor<?x4544xbf16>
  %3 = norm.fused_row <rms> %b4544 eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x4544xbf16> -> tensor<?x4544xbf16>
  %4:2 = norm.fused_row <rms> %b4096 addend(%b4096 : tensor<?x4096xbf16>) eps(1.0e-06) {f32_residual, launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 8>} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  return %0, %1, %2, %3, %4#0, %4#1 : tensor<?x2880xf32>, tensor<?x2880xf32>, tensor<?x4544xbf16>, tensor<?x4544xbf16>, tensor<?x4096xbf16>, tensor<?x4096xbf16>
}
