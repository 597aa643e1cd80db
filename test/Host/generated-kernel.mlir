// RUN: norm-opt %s --norm-generate-kernels="scalar-fallback=false" \
// RUN:   --norm-kernels-to-host | FileCheck %s

// A generated RMSNorm kernel (bf16, 4-element vectors, 16 threads per row,
// two rows at a time, four per CTA) as a host function: the kernel's loop
// over the CTA's rows contains the allreduce, so it runs once per CTA with
// thread loops inside; the weight vector, loaded before that loop, and the
// row chunk, loaded before the allreduce, cross split points in per-thread
// vector buffers; the allreduce sums groups of 16 threads.

// CHECK-LABEL: func.func @rms(
// CHECK:         norm.fused_row <rms> {{.*}}kernel = @norm_kernels::@[[KERNEL:norm_rms_h64_bf16_bf16_[0-9a-f]+_v4_t16_w1_r4]]

// CHECK:       func.func @[[KERNEL]]_host(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: memref<1099511627776xbf16>, %[[W:[a-z0-9]+]]: memref<1099511627776xbf16>,
// CHECK-SAME:      %[[Y:[a-z0-9]+]]: memref<1099511627776xbf16>, %[[ROWS:[a-z0-9]+]]: i64,
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %[[GRID:[a-z0-9]+]]: index)
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[WEIGHT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32xvector<4xbf16>>
// CHECK-DAG:     %[[CHUNK:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32xvector<4xbf16>>
// CHECK:         scf.for %[[CTA:.*]] = %{{.*}} to %[[GRID]]
// CHECK:           scf.for %[[T:.*]] = %{{.*}} to %[[C32]]
// CHECK:             %[[WV:.*]] = vector.load %[[W]]
// CHECK:             memref.store %[[WV]], %[[WEIGHT]][%[[T]]]
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK:             scf.for %[[T1:.*]] = %{{.*}} to %[[C32]]
// CHECK:               vector.load %[[X]]
// CHECK:               vector.reduction <add>
// CHECK:             %[[C16:.*]] = arith.constant 16 : index
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[C32]] step %[[C16]]
// CHECK:             scf.for %[[T2:.*]] = %{{.*}} to %[[C32]]
// CHECK-DAG:           memref.load %[[CHUNK]][%[[T2]]]
// CHECK-DAG:           memref.load %[[WEIGHT]][%[[T2]]]
// CHECK:               vector.store %{{.*}}, %[[Y]]
// CHECK-NOT:   gpu.
// CHECK-NOT:   norm.row_allreduce

func.func @rms(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = norm.fused_row <rms> %x weight(%w : tensor<64xbf16>) eps(1.0e-06)
      {launch = #norm.launch<vector = 4, threads_per_row = 16, warps = 1, rows_per_cta = 4>}
      : tensor<?x64xbf16> -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
