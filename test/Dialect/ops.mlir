// Every norm op and attribute, printed and parsed back in the custom and in
// the generic form, with the optional operands that change the printed form.
// RUN: norm-opt %s | norm-opt | FileCheck %s
// RUN: norm-opt %s --mlir-print-op-generic | norm-opt | FileCheck %s
// RUN: norm-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x4096xbf16>, %[[W:[a-z0-9]+]]: tensor<4096xbf16>, %[[S:[a-z0-9]+]]: tensor<8x64xf32>, %[[WS:[a-z0-9]+]]: tensor<64xf16>)
func.func @rms_norm(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>,
                    %s: tensor<8x64xf32>, %ws: tensor<64xf16>) {
  // CHECK: norm.rms_norm %[[X]] eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %0 = norm.rms_norm %x eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.rms_norm %[[X]] weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %1 = norm.rms_norm %x weight(%w : tensor<4096xbf16>) eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // Gemma's (1 + w).
  // CHECK: norm.rms_norm %[[X]] weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) offset(1.0) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %2 = norm.rms_norm %x weight(%w : tensor<4096xbf16>) eps(1.0e-6) offset(1.0) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // Static rows, a weight of another element type, a negative offset.
  // CHECK: norm.rms_norm %[[S]] weight(%[[WS]] : tensor<64xf16>) eps(0.1) offset(-0.5) : tensor<8x64xf32> -> tensor<8x64xf32>
  %3 = norm.rms_norm %s weight(%ws : tensor<64xf16>) eps(0.1) offset(-0.5) : tensor<8x64xf32> -> tensor<8x64xf32>
  // The default offset is not printed.
  // CHECK: norm.rms_norm %[[X]] eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %4 = norm.rms_norm %x eps(1.0e-6) offset(0.0) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return
}

// Reals print in the shortest form that parses back to the same double.
// CHECK-LABEL: func @reals
func.func @reals(%x: tensor<?x128xf32>, %y: tensor<?x128xf32>) {
  // CHECK: norm.l2_norm %{{.*}} eps(1.0e-12)
  %0 = norm.l2_norm %x eps(0.000000000001) : tensor<?x128xf32> -> tensor<?x128xf32>
  // CHECK: norm.l2_norm %{{.*}} eps(1.0e-05)
  %1 = norm.l2_norm %x eps(9.99999999999999999e-6) : tensor<?x128xf32> -> tensor<?x128xf32>
  // CHECK: norm.l2_norm %{{.*}} eps(1.0e+20)
  %2 = norm.l2_norm %x eps(100000000000000000000.0) : tensor<?x128xf32> -> tensor<?x128xf32>
  // CHECK: norm.l2_norm %{{.*}} eps(0.30000000000000004)
  %3 = norm.l2_norm %x eps(0.30000000000000004) : tensor<?x128xf32> -> tensor<?x128xf32>
  // CHECK: norm.l2_norm %{{.*}} eps(5.0e-324)
  %4 = norm.l2_norm %x eps(4.9406564584124654e-324) : tensor<?x128xf32> -> tensor<?x128xf32>
  // CHECK: norm.l2_norm %{{.*}} eps(1.7976931348623157e+308)
  %5 = norm.l2_norm %x eps(1.7976931348623157e308) : tensor<?x128xf32> -> tensor<?x128xf32>
  // Hexadecimal bit patterns parse too: 0x3FB999999999999A is 0.1.
  // CHECK: norm.l2_norm %{{.*}} eps(0.1)
  %6 = norm.l2_norm %x eps(0x3FB999999999999A) : tensor<?x128xf32> -> tensor<?x128xf32>
  // DeepNorm's alpha for N = 512 layers, (2N)^(1/4).
  // CHECK: norm.residual_add %{{.*}}, %{{.*}} alpha(5.656854249492381) :
  %7 = norm.residual_add %x, %y alpha(5.65685424949238058) : tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x128xf32>
  return
}

// CHECK-LABEL: func @layer_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x1024xf16>, %[[W:[a-z0-9]+]]: tensor<1024xf16>, %[[B:[a-z0-9]+]]: tensor<1024xf16>)
func.func @layer_norm(%x: tensor<?x1024xf16>, %w: tensor<1024xf16>, %b: tensor<1024xf16>) {
  // CHECK: norm.layer_norm %[[X]] eps(1.0e-05) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  %0 = norm.layer_norm %x eps(1.0e-5) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  // CHECK: norm.layer_norm %[[X]] weight(%[[W]] : tensor<1024xf16>) eps(1.0e-05) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  %1 = norm.layer_norm %x weight(%w : tensor<1024xf16>) eps(1.0e-5) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  // CHECK: norm.layer_norm %[[X]] bias(%[[B]] : tensor<1024xf16>) eps(1.0e-05) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  %2 = norm.layer_norm %x bias(%b : tensor<1024xf16>) eps(1.0e-5) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  // CHECK: norm.layer_norm %[[X]] weight(%[[W]] : tensor<1024xf16>) bias(%[[B]] : tensor<1024xf16>) eps(1.0e-05) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  %3 = norm.layer_norm %x weight(%w : tensor<1024xf16>) bias(%b : tensor<1024xf16>) eps(1.0e-5) : tensor<?x1024xf16> -> tensor<?x1024xf16>
  return
}

// CHECK-LABEL: func @l2_norm
func.func @l2_norm(%q: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // CHECK: norm.l2_norm %{{.*}} eps(1.0e-12) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  %0 = norm.l2_norm %q eps(1.0e-12) : tensor<?x128xbf16> -> tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}

// CHECK-LABEL: func @group_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x512xf32>, %[[W:[a-z0-9]+]]: tensor<512xf32>, %[[B:[a-z0-9]+]]: tensor<512xf32>)
func.func @group_norm(%x: tensor<?x512xf32>, %w: tensor<512xf32>, %b: tensor<512xf32>) {
  // CHECK: norm.group_norm %[[X]] eps(1.0e-05) {groups = 32 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
  %0 = norm.group_norm %x eps(1.0e-5) {groups = 32 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
  // CHECK: norm.group_norm %[[X]] weight(%[[W]] : tensor<512xf32>) eps(1.0e-05) {groups = 1 : i64}
  %1 = norm.group_norm %x weight(%w : tensor<512xf32>) eps(1.0e-5) {groups = 1 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
  // CHECK: norm.group_norm %[[X]] bias(%[[B]] : tensor<512xf32>) eps(1.0e-05) {groups = 512 : i64}
  %2 = norm.group_norm %x bias(%b : tensor<512xf32>) eps(1.0e-5) {groups = 512 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
  // CHECK: norm.group_norm %[[X]] weight(%[[W]] : tensor<512xf32>) bias(%[[B]] : tensor<512xf32>) eps(1.0e-05) {groups = 32 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
  %3 = norm.group_norm %x weight(%w : tensor<512xf32>) bias(%b : tensor<512xf32>) eps(1.0e-5) {groups = 32 : i64} : tensor<?x512xf32> -> tensor<?x512xf32>
  return
}

// CHECK-LABEL: func @batch_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x256xf16>, %[[M:[a-z0-9]+]]: tensor<256xf32>, %[[V:[a-z0-9]+]]: tensor<256xf32>, %[[W:[a-z0-9]+]]: tensor<256xf16>, %[[B:[a-z0-9]+]]: tensor<256xf16>)
func.func @batch_norm(%x: tensor<?x256xf16>, %m: tensor<256xf32>, %v: tensor<256xf32>,
                      %w: tensor<256xf16>, %b: tensor<256xf16>) {
  // CHECK: norm.batch_norm_inference %[[X]] mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) eps(1.0e-05) : tensor<?x256xf16> -> tensor<?x256xf16>
  %0 = norm.batch_norm_inference %x mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>) eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>
  // CHECK: norm.batch_norm_inference %[[X]] mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) weight(%[[W]] : tensor<256xf16>) eps(1.0e-05)
  %1 = norm.batch_norm_inference %x mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>) weight(%w : tensor<256xf16>) eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>
  // CHECK: norm.batch_norm_inference %[[X]] mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) bias(%[[B]] : tensor<256xf16>) eps(1.0e-05)
  %2 = norm.batch_norm_inference %x mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>) bias(%b : tensor<256xf16>) eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>
  // CHECK: norm.batch_norm_inference %[[X]] mean(%[[M]] : tensor<256xf32>) variance(%[[V]] : tensor<256xf32>) weight(%[[W]] : tensor<256xf16>) bias(%[[B]] : tensor<256xf16>) eps(1.0e-05)
  %3 = norm.batch_norm_inference %x mean(%m : tensor<256xf32>) variance(%v : tensor<256xf32>) weight(%w : tensor<256xf16>) bias(%b : tensor<256xf16>) eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>
  // CHECK: norm.batch_norm_training %[[X]] eps(1.0e-05) : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<256xf32>, tensor<256xf32>
  %4:3 = norm.batch_norm_training %x eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<256xf32>, tensor<256xf32>
  // CHECK: norm.batch_norm_training %[[X]] weight(%[[W]] : tensor<256xf16>) bias(%[[B]] : tensor<256xf16>) eps(1.0e-05) : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<256xf32>, tensor<256xf32>
  %5:3 = norm.batch_norm_training %x weight(%w : tensor<256xf16>) bias(%b : tensor<256xf16>) eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<256xf32>, tensor<256xf32>
  // CHECK: norm.batch_norm_training %[[X]] bias(%[[B]] : tensor<256xf16>) eps(1.0e-05)
  %6:3 = norm.batch_norm_training %x bias(%b : tensor<256xf16>) eps(1.0e-5) : tensor<?x256xf16> -> tensor<?x256xf16>, tensor<256xf32>, tensor<256xf32>
  return
}

// CHECK-LABEL: func @residual_add_and_cast
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x4096xf32>, %[[F:[a-z0-9]+]]: tensor<?x4096xbf16>)
func.func @residual_add_and_cast(%x: tensor<?x4096xf32>, %f: tensor<?x4096xbf16>) {
  // The default alpha (1.0) is not printed.
  // CHECK: norm.residual_add %[[X]], %[[F]] : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %0 = norm.residual_add %x, %f : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  // CHECK: norm.residual_add %[[X]], %[[F]] : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %1 = norm.residual_add %x, %f alpha(1.0) : tensor<?x4096xf32>, tensor<?x4096xbf16> -> tensor<?x4096xf32>
  // CHECK: norm.residual_add %[[F]], %[[X]] alpha(2.0) : tensor<?x4096xbf16>, tensor<?x4096xf32> -> tensor<?x4096xbf16>
  %2 = norm.residual_add %f, %x alpha(2.0) : tensor<?x4096xbf16>, tensor<?x4096xf32> -> tensor<?x4096xbf16>
  // CHECK: norm.cast %[[X]] : tensor<?x4096xf32> to tensor<?x4096xbf16>
  %3 = norm.cast %x : tensor<?x4096xf32> to tensor<?x4096xbf16>
  // CHECK: norm.cast %[[F]] : tensor<?x4096xbf16> to tensor<?x4096xf16>
  %4 = norm.cast %f : tensor<?x4096xbf16> to tensor<?x4096xf16>
  return
}

// CHECK-LABEL: func @attention
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<?x4096xbf16>, %[[K:[a-z0-9]+]]: tensor<?x1024xbf16>, %[[V:[a-z0-9]+]]: tensor<?x1024xbf16>, %[[WQ:[a-z0-9]+]]: tensor<128xbf16>, %[[WK:[a-z0-9]+]]: tensor<128xbf16>)
func.func @attention(%q: tensor<?x4096xbf16>, %k: tensor<?x1024xbf16>, %v: tensor<?x1024xbf16>,
                     %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) {
  // CHECK: norm.attention %[[Q]], %[[K]], %[[V]] scale(0.08838834764831845) {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64} : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  %0 = norm.attention %q, %k, %v scale(0.08838834764831845)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.attention %[[Q]], %[[K]], %[[V]] q_norm_weight(%[[WQ]] : tensor<128xbf16>) k_norm_weight(%[[WK]] : tensor<128xbf16>) scale(0.08838834764831845) qk_norm_eps(1.0e-06) {head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, qk_norm = #norm.qk_norm<rms>} :
  %1 = norm.attention %q, %k, %v q_norm_weight(%wq : tensor<128xbf16>) k_norm_weight(%wk : tensor<128xbf16>)
      scale(0.08838834764831845) qk_norm_eps(1.0e-6)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  // L2 QK-Norm without weights; only a key weight.
  // CHECK: norm.attention %[[Q]], %[[K]], %[[V]] scale(0.5) qk_norm_eps(1.0e-12) {causal, head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, qk_norm = #norm.qk_norm<l2>} :
  %2 = norm.attention %q, %k, %v scale(0.5) qk_norm_eps(1.0e-12)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, causal, qk_norm = #norm.qk_norm<l2>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.attention %[[Q]], %[[K]], %[[V]] k_norm_weight(%[[WK]] : tensor<128xbf16>) scale(1.0) qk_norm_eps(1.0e-06) {{{.*}}qk_norm = #norm.qk_norm<rms>} :
  %3 = norm.attention %q, %k, %v k_norm_weight(%wk : tensor<128xbf16>) scale(1.0) qk_norm_eps(1.0e-6)
      {num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, qk_norm = #norm.qk_norm<rms>}
      : tensor<?x4096xbf16>, tensor<?x1024xbf16>, tensor<?x1024xbf16> -> tensor<?x4096xbf16>
  return
}

// CHECK-LABEL: func @fused_row
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?x4096xbf16>, %[[F:[a-z0-9]+]]: tensor<?x4096xbf16>, %[[W:[a-z0-9]+]]: tensor<4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096xbf16>, %[[M:[a-z0-9]+]]: tensor<4096xf32>, %[[V:[a-z0-9]+]]: tensor<4096xf32>)
func.func @fused_row(%x: tensor<?x4096xbf16>, %f: tensor<?x4096xbf16>, %w: tensor<4096xbf16>,
                     %b: tensor<4096xbf16>, %m: tensor<4096xf32>, %v: tensor<4096xf32>) {
  // A plain RMSNorm kernel.
  // CHECK: norm.fused_row <rms> %[[X]] eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %0 = norm.fused_row <rms> %x eps(1.0e-6) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // Pre-norm: add + RMSNorm, storing the residual sum, with a launch configuration.
  // CHECK: norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %1:2 = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>)
      eps(1.0e-6) {launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?x4096xbf16>
  // DeepNorm post-norm: LayerNorm(alpha * x + f) with an f32 residual stream,
  // Gemma-style offset, a bias, a cast to f32 and a kernel reference.
  // CHECK: norm.fused_row <mean_var> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) bias(%[[B]] : tensor<4096xbf16>) eps(1.0e-05) alpha(2.0) offset(1.0) {f32_residual, kernel = @norm_kernels::@k0} : tensor<?x4096xbf16> -> tensor<?x4096xf32>
  %2 = norm.fused_row <mean_var> %x addend(%f : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>)
      bias(%b : tensor<4096xbf16>) eps(1.0e-5) alpha(2.0) offset(1.0) {f32_residual, kernel = @norm_kernels::@k0}
      : tensor<?x4096xbf16> -> tensor<?x4096xf32>
  // Sandwich-Norm: x + norm(f).
  // CHECK: norm.fused_row <rms> %[[F]] skip(%[[X]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %3 = norm.fused_row <rms> %f skip(%x : tensor<?x4096xbf16>) weight(%w : tensor<4096xbf16>) eps(1.0e-6)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // Inference BatchNorm: per-channel statistics.
  // CHECK: norm.fused_row <none> %[[X]] weight(%[[W]] : tensor<4096xbf16>) bias(%[[B]] : tensor<4096xbf16>) mean(%[[M]] : tensor<4096xf32>) variance(%[[V]] : tensor<4096xf32>) eps(1.0e-05) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %4 = norm.fused_row <none> %x weight(%w : tensor<4096xbf16>) bias(%b : tensor<4096xbf16>)
      mean(%m : tensor<4096xf32>) variance(%v : tensor<4096xf32>) eps(1.0e-5)
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // GroupNorm and L2 norm.
  // CHECK: norm.fused_row <mean_var> %[[X]] eps(1.0e-05) {groups = 32 : i64, launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %5 = norm.fused_row <mean_var> %x eps(1.0e-5)
      {groups = 32 : i64, launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>}
      : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // CHECK: norm.fused_row <l2> %[[X]] eps(1.0e-12) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  %6 = norm.fused_row <l2> %x eps(1.0e-12) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  // Everything at once.
  // CHECK: norm.fused_row <rms> %[[X]] addend(%[[F]] : tensor<?x4096xbf16>) skip(%[[F]] : tensor<?x4096xbf16>) weight(%[[W]] : tensor<4096xbf16>) bias(%[[B]] : tensor<4096xbf16>) eps(1.0e-06) alpha(1.5) offset(1.0) {f32_residual, groups = 2 : i64} : tensor<?x4096xbf16> -> tensor<?x4096xf16>, tensor<?x4096xbf16>
  %7:2 = norm.fused_row <rms> %x addend(%f : tensor<?x4096xbf16>) skip(%f : tensor<?x4096xbf16>)
      weight(%w : tensor<4096xbf16>) bias(%b : tensor<4096xbf16>) eps(1.0e-6) alpha(1.5) offset(1.0)
      {f32_residual, groups = 2 : i64}
      : tensor<?x4096xbf16> -> tensor<?x4096xf16>, tensor<?x4096xbf16>
  return
}

// CHECK-LABEL: func @qk_norm_prologue
// CHECK-SAME: (%[[QKV:[a-z0-9]+]]: tensor<?x6144xbf16>, %[[WQ:[a-z0-9]+]]: tensor<128xbf16>, %[[WK:[a-z0-9]+]]: tensor<128xbf16>)
func.func @qk_norm_prologue(%qkv: tensor<?x6144xbf16>, %wq: tensor<128xbf16>, %wk: tensor<128xbf16>) {
  // CHECK: norm.qk_norm_prologue <rms> %[[QKV]] q_weight(%[[WQ]] : tensor<128xbf16>) k_weight(%[[WK]] : tensor<128xbf16>) eps(1.0e-06) {head_dim = 128 : i64, launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>, num_kv_heads = 8 : i64, num_q_heads = 32 : i64} : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  %0:2 = norm.qk_norm_prologue <rms> %qkv q_weight(%wq : tensor<128xbf16>) k_weight(%wk : tensor<128xbf16>)
      eps(1.0e-6) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64,
                   launch = #norm.launch<vector = 8, threads_per_row = 16, warps = 4, rows_per_cta = 8>}
      : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  // CHECK: norm.qk_norm_prologue <l2> %[[QKV]] eps(1.0e-12) {head_dim = 128 : i64, kernel = @k1, num_kv_heads = 8 : i64, num_q_heads = 32 : i64} : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  %1:2 = norm.qk_norm_prologue <l2> %qkv eps(1.0e-12) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64, kernel = @k1}
      : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  // Gemma 3 (1 + w) weights with one key/value head, and a per-head
  // LayerNorm.
  // CHECK: norm.qk_norm_prologue <rms> %{{.*}} q_weight(%[[WQ]] : tensor<128xbf16>) k_weight(%[[WK]] : tensor<128xbf16>) eps(1.0e-06) offset(1.0) {head_dim = 128 : i64, num_kv_heads = 1 : i64, num_q_heads = 4 : i64} : tensor<?x768xbf16> -> tensor<?x512xbf16>, tensor<?x128xbf16>
  %slice = tensor.extract_slice %qkv[0, 0] [1, 768] [1, 1] : tensor<?x6144xbf16> to tensor<1x768xbf16>
  %cast = tensor.cast %slice : tensor<1x768xbf16> to tensor<?x768xbf16>
  %2:2 = norm.qk_norm_prologue <rms> %cast q_weight(%wq : tensor<128xbf16>) k_weight(%wk : tensor<128xbf16>)
      eps(1.0e-6) offset(1.0) {num_q_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64}
      : tensor<?x768xbf16> -> tensor<?x512xbf16>, tensor<?x128xbf16>
  // CHECK: norm.qk_norm_prologue <mean_var> %[[QKV]] q_weight(%[[WQ]] : tensor<128xbf16>) k_weight(%[[WK]] : tensor<128xbf16>) eps(1.0e-05) {head_dim = 128 : i64, num_kv_heads = 8 : i64, num_q_heads = 32 : i64}
  %3:2 = norm.qk_norm_prologue <mean_var> %qkv q_weight(%wq : tensor<128xbf16>) k_weight(%wk : tensor<128xbf16>)
      eps(1.0e-5) {num_q_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 128 : i64}
      : tensor<?x6144xbf16> -> tensor<?x4096xbf16>, tensor<?x1024xbf16>
  return
}

// CHECK-LABEL: func @column_stats
func.func @column_stats(%x: tensor<?x256xbf16>) {
  // CHECK: norm.column_stats %{{.*}} : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
  %0:2 = norm.column_stats %x : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
  // CHECK: norm.column_stats %{{.*}} {kernel = @stats, launch = #norm.launch<vector = 8, threads_per_row = 1, warps = 8, rows_per_cta = 256>} : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
  %1:2 = norm.column_stats %x {kernel = @stats, launch = #norm.launch<vector = 8, threads_per_row = 1, warps = 8, rows_per_cta = 256>}
      : tensor<?x256xbf16> -> tensor<256xf32>, tensor<256xf32>
  return
}

// CHECK-LABEL: func @row_allreduce
func.func @row_allreduce(%a: f32, %b: f32) -> (f32, f32, f32) {
  // CHECK: norm.row_allreduce %{{.*}} {group_size = 32 : i64} : f32
  %0 = norm.row_allreduce %a {group_size = 32 : i64} : f32
  // CHECK: norm.row_allreduce %{{.*}}, %{{.*}} {group_size = 256 : i64} : f32, f32
  %1:2 = norm.row_allreduce %a, %b {group_size = 256 : i64} : f32, f32
  return %0, %1#0, %1#1 : f32, f32, f32
}

// The default kind (add) is not printed; max is.
// CHECK-LABEL: func @row_allreduce_kind
func.func @row_allreduce_kind(%a: f32) -> (f32, f32) {
  // CHECK: norm.row_allreduce %{{.*}} {group_size = 4 : i64, kind = #norm.reduction<max>} : f32
  %0 = norm.row_allreduce %a {group_size = 4 : i64, kind = #norm.reduction<max>} : f32
  // CHECK: norm.row_allreduce %{{.*}} {group_size = 4 : i64} : f32
  %1 = norm.row_allreduce %a {group_size = 4 : i64, kind = #norm.reduction<add>} : f32
  return %0, %1 : f32, f32
}

// CHECK-LABEL: func @mma_sync
func.func @mma_sync(%a: vector<8xbf16>, %b: vector<4xbf16>, %c: vector<4xf32>,
                    %ha: vector<8xf16>, %hb: vector<4xf16>) -> (vector<4xf32>, vector<4xf32>) {
  // CHECK: norm.mma_sync %{{.*}}, %{{.*}}, %{{.*}} : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
  %0 = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
  // CHECK: norm.mma_sync %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf16>, vector<4xf16>, vector<4xf32> -> vector<4xf32>
  %1 = norm.mma_sync %ha, %hb, %c : vector<8xf16>, vector<4xf16>, vector<4xf32> -> vector<4xf32>
  return %0, %1 : vector<4xf32>, vector<4xf32>
}

// CHECK-LABEL: func @ldmatrix
func.func @ldmatrix(%tile: memref<64x64xbf16, #gpu.address_space<workgroup>>,
                    %flat: memref<256xf16, #gpu.address_space<workgroup>>,
                    %bytes: memref<512xf8E4M3FN, #gpu.address_space<workgroup>>, %i: index, %j: index)
    -> (vector<8xbf16>, vector<4xbf16>, vector<2xf16>, vector<16xf8E4M3FN>) {
  // CHECK: norm.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}] {count = 4 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<8xbf16>
  %0 = norm.ldmatrix %tile[%i, %j] {count = 4 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<8xbf16>
  // CHECK: norm.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}] {count = 2 : i64, transpose} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
  %1 = norm.ldmatrix %tile[%i, %j] {count = 2, transpose} : memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<4xbf16>
  // CHECK: norm.ldmatrix %{{.*}}[%{{.*}}] {count = 1 : i64} : memref<256xf16, #gpu.address_space<workgroup>> -> vector<2xf16>
  %2 = norm.ldmatrix %flat[%i] {count = 1 : i64} : memref<256xf16, #gpu.address_space<workgroup>> -> vector<2xf16>
  // Byte pairs: 4 e4m3 a matrix.
  // CHECK: norm.ldmatrix %{{.*}}[%{{.*}}] {count = 4 : i64, transpose} : memref<512xf8E4M3FN, #gpu.address_space<workgroup>> -> vector<16xf8E4M3FN>
  %3 = norm.ldmatrix %bytes[%i] {count = 4 : i64, transpose} : memref<512xf8E4M3FN, #gpu.address_space<workgroup>> -> vector<16xf8E4M3FN>
  return %0, %1, %2, %3 : vector<8xbf16>, vector<4xbf16>, vector<2xf16>, vector<16xf8E4M3FN>
}

// CHECK-LABEL: func @wgmma
func.func @wgmma(%tile: memref<8192xbf16, #gpu.address_space<workgroup>>,
                 %p: vector<8xbf16>, %c: vector<64xf32>, %i: index, %j: index)
    -> (vector<64xf32>, vector<8xbf16>) {
  // CHECK: norm.async_proxy_fence
  norm.async_proxy_fence
  // CHECK: norm.set_max_registers {count = 240 : i64, increase = true}
  norm.set_max_registers {count = 240 : i64, increase = true}
  // CHECK: norm.named_barrier {id = 1 : i64, threads = 128 : i64}
  norm.named_barrier {id = 1 : i64, threads = 128 : i64}
  // CHECK: %[[F:.*]]:2 = norm.wgmma_fence %{{.*}}, %{{.*}} : vector<64xf32>, vector<8xbf16>
  %f:2 = norm.wgmma_fence %c, %p : vector<64xf32>, vector<8xbf16>
  // CHECK: norm.wgmma %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %[[F]]#0 {a_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>, accumulate = false, b_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>} : memref<8192xbf16, #gpu.address_space<workgroup>>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<64xf32> -> vector<64xf32>
  %s = norm.wgmma %tile[%i], %tile[%j], %f#0 {a_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>, b_layout = #norm.shared_matrix<swizzle = 128, lbo = 16, sbo = 1024>, accumulate = false} : memref<8192xbf16, #gpu.address_space<workgroup>>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<64xf32> -> vector<64xf32>
  // CHECK: norm.wgmma %[[F]]#1, %{{.*}}[%{{.*}}], %{{.*}} {b_layout = #norm.shared_matrix<swizzle = 128, lbo = 8192, sbo = 1024, mn_major = true>} : vector<8xbf16>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<64xf32> -> vector<64xf32>
  %o = norm.wgmma %f#1, %tile[%j], %s {b_layout = #norm.shared_matrix<swizzle = 128, lbo = 8192, sbo = 1024, mn_major = true>} : vector<8xbf16>, memref<8192xbf16, #gpu.address_space<workgroup>>, vector<64xf32> -> vector<64xf32>
  // CHECK: norm.wgmma_commit
  norm.wgmma_commit
  // CHECK: norm.wgmma_wait %{{.*}}, %{{.*}} {pending = 0 : i64} : vector<64xf32>, vector<8xbf16>
  %r:2 = norm.wgmma_wait %o, %f#1 {pending = 0 : i64} : vector<64xf32>, vector<8xbf16>
  // CHECK: norm.wgmma_fence
  // CHECK: norm.wgmma_wait {pending = 1 : i64}
  norm.wgmma_fence
  norm.wgmma_wait {pending = 1 : i64}
  return %r#0, %r#1 : vector<64xf32>, vector<8xbf16>
}

// CHECK-LABEL: func @mbarrier
func.func @mbarrier(%src: memref<?xbf16>, %tile: memref<4096xbf16, #gpu.address_space<workgroup>>,
                    %bars: memref<4xi64, #gpu.address_space<workgroup>>, %i: index, %n: index,
                    %map: memref<16xi64>) {
  // CHECK: norm.mbarrier_init %{{.*}}[%{{.*}}] {count = 1 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
  norm.mbarrier_init %bars[%i] {count = 1 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
  // CHECK: norm.mbarrier_arrive %{{.*}}[%{{.*}}], %{{.*}} : memref<4xi64, #gpu.address_space<workgroup>>
  norm.mbarrier_arrive %bars[%i], %n : memref<4xi64, #gpu.address_space<workgroup>>
  // CHECK: norm.mbarrier_arrive %{{.*}}[%{{.*}}] : memref<4xi64, #gpu.address_space<workgroup>>
  norm.mbarrier_arrive %bars[%i] : memref<4xi64, #gpu.address_space<workgroup>>
  // CHECK: norm.bulk_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] {bytes = 256 : i64} : memref<?xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, memref<4xi64, #gpu.address_space<workgroup>>
  norm.bulk_copy %src[%n], %tile[%i], %bars[%i] {bytes = 256 : i64} : memref<?xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, memref<4xi64, #gpu.address_space<workgroup>>
  // CHECK: norm.mbarrier_wait %{{.*}}[%{{.*}}], %{{.*}} : memref<4xi64, #gpu.address_space<workgroup>>
  norm.mbarrier_wait %bars[%i], %n : memref<4xi64, #gpu.address_space<workgroup>>
  // CHECK: norm.mbarrier_wait %{{.*}}[%{{.*}}], %{{.*}} {max_tries = 100 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
  norm.mbarrier_wait %bars[%i], %n {max_tries = 100 : i64} : memref<4xi64, #gpu.address_space<workgroup>>
  // CHECK: norm.tma_load %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] at [%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] {box_columns = 64 : i64, box_rows = 64 : i64, swizzle = 128 : i64} : memref<16xi64>, memref<?xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, memref<4xi64, #gpu.address_space<workgroup>>
  norm.tma_load %map, %src[%n, %n, %n] at [%i, %i], %tile[%i], %bars[%i] {box_rows = 64 : i64, box_columns = 64 : i64, swizzle = 128 : i64} : memref<16xi64>, memref<?xbf16>, memref<4096xbf16, #gpu.address_space<workgroup>>, memref<4xi64, #gpu.address_space<workgroup>>
  return
}

// CHECK-LABEL: func @async_copy
func.func @async_copy(%src: memref<?xbf16>, %f: memref<16x16xf32>,
                      %dst: memref<64x64xbf16, #gpu.address_space<workgroup>>,
                      %fdst: memref<256xf32, #gpu.address_space<workgroup>>,
                      %flat: memref<16384xbf16, #gpu.address_space<workgroup>>,
                      %i: index, %j: index, %n: index) {
  // CHECK: norm.async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] {elements = 8 : i64} : memref<?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
  norm.async_copy %src[%i], %dst[%i, %j] {elements = 8 : i64} : memref<?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: norm.async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} {elements = 4 : i64} : memref<?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
  norm.async_copy %src[%i], %dst[%i, %j], %n {elements = 4 : i64} : memref<?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: norm.async_copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}] {elements = 1 : i64} : memref<16x16xf32>, memref<256xf32, #gpu.address_space<workgroup>>
  norm.async_copy %f[%i, %j], %fdst[%i] {elements = 1 : i64} : memref<16x16xf32>, memref<256xf32, #gpu.address_space<workgroup>>
  // CHECK: norm.async_copy_rows %{{.*}}[%{{.*}}] step %{{.*}}, %{{.*}}[%{{.*}}] step 1024 {elements = 8 : i64, rows = 8 : i64} : memref<?xbf16>, memref<16384xbf16, #gpu.address_space<workgroup>>
  norm.async_copy_rows %src[%i] step %n, %flat[%j] step 1024 {elements = 8 : i64, rows = 8 : i64} : memref<?xbf16>, memref<16384xbf16, #gpu.address_space<workgroup>>
  // CHECK: norm.async_commit
  norm.async_commit
  // CHECK: norm.async_wait {pending = 1 : i64}
  norm.async_wait {pending = 1 : i64}
  return
}

// The attributes on their own.
// CHECK-LABEL: func @attributes
// CHECK-SAME: launch = #norm.launch<vector = 1, threads_per_row = 1, warps = 1, rows_per_cta = 32>
// CHECK-SAME: qk_l2 = #norm.qk_norm<l2>, qk_rms = #norm.qk_norm<rms>
// CHECK-SAME: stat_l2 = #norm.statistic<l2>, stat_mean_var = #norm.statistic<mean_var>, stat_none = #norm.statistic<none>, stat_rms = #norm.statistic<rms>
func.func @attributes() attributes {
    launch = #norm.launch<vector = 1, threads_per_row = 1, warps = 1, rows_per_cta = 32>,
    stat_rms = #norm.statistic<rms>, stat_mean_var = #norm.statistic<mean_var>,
    stat_l2 = #norm.statistic<l2>, stat_none = #norm.statistic<none>,
    qk_rms = #norm.qk_norm<rms>, qk_l2 = #norm.qk_norm<l2>} {
  return
}

// The generic form keeps the properties other tools see.
// GENERIC: "norm.rms_norm"(%{{.*}}, %{{.*}}) <{eps = 9.9999999999999995E-7 : f64, weight_offset = 1.000000e+00 : f64}>
// GENERIC: "norm.layer_norm"(%{{.*}}, %{{.*}}) <{eps = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}>
// GENERIC: "norm.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{head_dim = 128 : i64, num_heads = 32 : i64, num_kv_heads = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, qk_norm = #norm.qk_norm<rms>, qk_norm_eps = 9.9999999999999995E-7 : f64, qk_norm_offset = 0.000000e+00 : f64, scale = 0.088388347648318447 : f64}>
// GENERIC: "norm.fused_row"(%{{.*}}, %{{.*}}, %{{.*}}) <{alpha = 1.000000e+00 : f64, eps = 9.9999999999999995E-7 : f64, groups = 1 : i64, launch = #norm.launch<vector = 8, threads_per_row = 128, warps = 4, rows_per_cta = 1>, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0>, statistic = #norm.statistic<rms>, weight_offset = 0.000000e+00 : f64}> : (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>)
// GENERIC: "norm.row_allreduce"(%{{.*}}, %{{.*}}) <{group_size = 256 : i64, kind = #norm.reduction<add>}> : (f32, f32) -> (f32, f32)
// GENERIC: "norm.row_allreduce"(%{{.*}}) <{group_size = 4 : i64, kind = #norm.reduction<max>}> : (f32) -> f32
// GENERIC: "norm.ldmatrix"(%{{.*}}, %{{.*}}, %{{.*}}) <{count = 2 : i64, transpose}> : (memref<64x64xbf16, #gpu.address_space<workgroup>>, index, index) -> vector<4xbf16>
// GENERIC: "norm.async_copy"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{elements = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 2, 1>}>
