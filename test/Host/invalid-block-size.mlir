// RUN: norm-opt %s --verify-diagnostics --norm-kernels-to-host="block-size=64"

gpu.module @norm_kernels {
  // expected-error @below {{known_block_size (128) disagrees with the block-size option (64)}}
  gpu.func @sized(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    gpu.return
  }
}
