// RUN: norm-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(gpu.module(norm-lower-row-allreduce))"

// The shared-memory exchange is sized by the CTA: it must be known.
gpu.module @kernels {
  gpu.func @unknown_block(%out: memref<64xf32>) kernel {
    %tid = gpu.thread_id x
    %f = arith.constant 1.0 : f32
    // expected-error @below {{needs a kernel with a known block size that is a multiple of the group size}}
    %s = norm.row_allreduce %f {group_size = 64 : i64} : f32
    memref.store %s, %out[%tid] : memref<64xf32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @ragged_block(%out: memref<96xf32>) kernel attributes {known_block_size = array<i32: 96, 1, 1>} {
    %tid = gpu.thread_id x
    %f = arith.constant 1.0 : f32
    // expected-error @below {{needs a kernel with a known block size that is a multiple of the group size}}
    %s = norm.row_allreduce %f {group_size = 64 : i64} : f32
    memref.store %s, %out[%tid] : memref<96xf32>
    gpu.return
  }
}
