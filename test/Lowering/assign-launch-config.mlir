// RUN: norm-opt %s --norm-assign-launch-config | FileCheck %s

// Short rows: the threads-per-row ladder, several rows per 128-thread CTA.
// CHECK-LABEL: func.func @short_rows
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 8, warps = 4, rows_per_cta = 16>
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 32, warps = 4, rows_per_cta = 4>
func.func @short_rows(%a: tensor<?x64xbf16>, %b: tensor<?x128xbf16>,
                      %c: tensor<?x1024xbf16>)
    -> (tensor<?x64xbf16>, tensor<?x128xbf16>, tensor<?x1024xbf16>) {
  %0 = norm.fused_row <rms> %a eps(1.0e-06) : tensor<?x64xbf16> -> tensor<?x64xbf16>
  %1 = norm.fused_row <rms> %b eps(1.0e-06) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %2 = norm.fused_row <rms> %c eps(1.0e-06) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  return %0, %1, %2 : tensor<?x64xbf16>, tensor<?x128xbf16>, tensor<?x1024xbf16>
}

// Long rows: about 8 elements per thread (16 above 8192), one row per CTA:
// 256 threads for 2048, 896 for 7168, 1024 for 16384 (the H200 probe's
// best). f32 rows take 4-wide vectors.
// CHECK-LABEL: func.func @long_rows
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 256, warps = 8, rows_per_cta = 1>
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 896, warps = 28, rows_per_cta = 1>
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 1024, warps = 32, rows_per_cta = 1>
// CHECK: launch = #norm.launch<vector = 4, threads_per_row = 512, warps = 16, rows_per_cta = 1>
func.func @long_rows(%a: tensor<?x2048xbf16>, %b: tensor<?x7168xbf16>,
                     %c: tensor<?x16384xbf16>, %d: tensor<?x4096xf32>)
    -> (tensor<?x2048xbf16>, tensor<?x7168xbf16>, tensor<?x16384xbf16>, tensor<?x4096xf32>) {
  %0 = norm.fused_row <rms> %a eps(1.0e-06) : tensor<?x2048xbf16> -> tensor<?x2048xbf16>
  %1 = norm.fused_row <rms> %b eps(1.0e-06) : tensor<?x7168xbf16> -> tensor<?x7168xbf16>
  %2 = norm.fused_row <rms> %c eps(1.0e-06) : tensor<?x16384xbf16> -> tensor<?x16384xbf16>
  %3 = norm.fused_row <mean_var> %d eps(1.0e-05) : tensor<?x4096xf32> -> tensor<?x4096xf32>
  return %0, %1, %2, %3 : tensor<?x2048xbf16>, tensor<?x7168xbf16>, tensor<?x16384xbf16>, tensor<?x4096xf32>
}

// Odd row lengths keep consecutive rows aligned only element by element;
// the widest element type decides the vector.
// CHECK-LABEL: func.func @vectors
// CHECK: launch = #norm.launch<vector = 1, threads_per_row = 32, warps = 4, rows_per_cta = 4>
// CHECK: launch = #norm.launch<vector = 1, threads_per_row = 2, warps = 4, rows_per_cta = 64>
// CHECK: launch = #norm.launch<vector = 4, threads_per_row = 32, warps = 4, rows_per_cta = 4>
func.func @vectors(%a: tensor<?x769xbf16>, %b: tensor<?x3xf16>,
                   %c: tensor<?x1000xbf16>, %r: tensor<?x1000xf32>)
    -> (tensor<?x769xbf16>, tensor<?x3xf16>, tensor<?x1000xbf16>, tensor<?x1000xbf16>) {
  %0 = norm.fused_row <rms> %a eps(1.0e-06) : tensor<?x769xbf16> -> tensor<?x769xbf16>
  %1 = norm.fused_row <rms> %b eps(1.0e-06) : tensor<?x3xf16> -> tensor<?x3xf16>
  %2, %3 = norm.fused_row <rms> %c addend(%r : tensor<?x1000xf32>) eps(1.0e-06)
      : tensor<?x1000xbf16> -> tensor<?x1000xbf16>, tensor<?x1000xbf16>
  return %0, %1, %2, %3 : tensor<?x769xbf16>, tensor<?x3xf16>, tensor<?x1000xbf16>, tensor<?x1000xbf16>
}

// Many static short rows: a CTA loops over several groups of rows. Long
// rows keep one row per CTA. A launch that is already there stays.
// CHECK-LABEL: func.func @row_loops
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 64>
// CHECK: launch = #norm.launch<vector = 8, threads_per_row = 512, warps = 16, rows_per_cta = 1>
// CHECK: launch = #norm.launch<vector = 2, threads_per_row = 32, warps = 1, rows_per_cta = 1>
func.func @row_loops(%a: tensor<524288x128xbf16>, %l: tensor<1048576x4096xbf16>,
                     %b: tensor<?x128xbf16>)
    -> (tensor<524288x128xbf16>, tensor<1048576x4096xbf16>, tensor<?x128xbf16>) {
  %0 = norm.fused_row <rms> %a eps(1.0e-06) : tensor<524288x128xbf16> -> tensor<524288x128xbf16>
  %1 = norm.fused_row <rms> %l eps(1.0e-06) : tensor<1048576x4096xbf16> -> tensor<1048576x4096xbf16>
  %2 = norm.fused_row <rms> %b eps(1.0e-06)
      {launch = #norm.launch<vector = 2, threads_per_row = 32, warps = 1, rows_per_cta = 1>}
      : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %0, %1, %2 : tensor<524288x128xbf16>, tensor<1048576x4096xbf16>, tensor<?x128xbf16>
}

// Groups and heads are rows of their own; column statistics tile columns.
// CHECK-LABEL: func.func @other_kernels
// CHECK: norm.fused_row <mean_var>{{.*}}launch = #norm.launch<vector = 4, threads_per_row = 4, warps = 4, rows_per_cta = 32>
// CHECK: norm.qk_norm_prologue{{.*}}launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>
// CHECK: norm.column_stats{{.*}}launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>
func.func @other_kernels(%x: tensor<?x512xf32>, %qkv: tensor<?x6144xbf16>,
                         %y: tensor<?x256xbf16>) {
  %0 = norm.fused_row <mean_var> %x eps(1.0e-05) {groups = 32 : i64}
      : tensor<?x512xf32> -> tensor<?x512xf32>
  %q, %k = norm.qk_norm_prologue <rms> %qkv eps(1.0e-06)
      {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64}
      : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  %m, %v = norm.column_stats %y : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
  return
}
