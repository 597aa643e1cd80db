// RUN: norm-opt %s --split-input-file --verify-diagnostics --norm-kernels-to-host

gpu.module @norm_kernels {
  gpu.func @divergent(%x: memref<64xf32>, %n: index)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %c = arith.cmpi ult, %t, %n : index
    // expected-note @below {{enclosing op}}
    scf.if %c {
      %v = memref.load %x[%t] : memref<64xf32>
      // expected-error @below {{'norm.row_allreduce' op inside 'scf.if': every thread of the CTA must reach a collective}}
      %s = norm.row_allreduce %v {group_size = 64 : i64} : f32
      memref.store %s, %x[%t] : memref<64xf32>
    }
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @thread_bounds(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @below {{'scf.for' op contains a collective but its bounds depend on the thread}}
    scf.for %i = %c0 to %t step %c1 {
      gpu.barrier
    }
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @shuffle(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    // expected-error @below {{'gpu.shuffle' op has no host execution}}
    %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
    memref.store %s, %x[%t] : memref<64xf32>
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  // expected-error @below {{has no known_block_size; the host execution needs the CTA size}}
  gpu.func @no_size(%x: memref<64xf32>) kernel {
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  // expected-error @below {{known_block_size must be [n, 1, 1] for the host execution, got array<i32: 32, 2, 1>}}
  gpu.func @two_d(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 2, 1>} {
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @wide_group(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = gpu.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    // expected-error @below {{group_size 64 does not divide the CTA size 32}}
    %s = norm.row_allreduce %v {group_size = 64 : i64} : f32
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  // expected-error @below {{has private attributions, which the host execution does not support}}
  gpu.func @private_memory(%x: memref<64xf32>)
      private(%p: memref<4xf32, #gpu.address_space<private>>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @memref_across(%x: memref<64xf32>, %y: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %t = gpu.thread_id x
    %c16 = arith.constant 16 : index
    %low = arith.cmpi ult, %t, %c16 : index
    // expected-error @below {{a value of type 'memref<64xf32>' lives across a collective}}
    %m = scf.if %low -> memref<64xf32> {
      scf.yield %x : memref<64xf32>
    } else {
      scf.yield %y : memref<64xf32>
    }
    gpu.barrier
    %v = memref.load %m[%t] : memref<64xf32>
    memref.store %v, %x[%t] : memref<64xf32>
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  func.func @helper() {
    return
  }
  gpu.func @calls(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    // expected-error @below {{'func.call' op is a call; the host execution runs self-contained kernels only}}
    func.call @helper() : () -> ()
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  // expected-error @below {{cannot be run on the host: the module already defines 'taken_host'}}
  gpu.func @taken(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    gpu.return
  }
}
func.func @taken_host(%x: memref<64xf32>, %grid: index) {
  return
}

// -----

gpu.module @norm_kernels {
  gpu.func @declared(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    gpu.return
  }
}
// expected-error @below {{declares the host function of 'declared' with type '(memref<64xf32>) -> ()'; expected '(memref<64xf32>, index) -> ()'}}
func.func private @declared_host(memref<64xf32>)

// -----

gpu.module @norm_kernels {
  gpu.func @scratch(%x: memref<64xf32>)
      kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    // expected-error @below {{'memref.alloca' op allocates memory in a kernel, which the host execution does not support}}
    %m = memref.alloca() : memref<4xf32>
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @dynamic_shared_offset(%x: memref<64xf32>, %offset: index)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %memory = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    // expected-error @below {{'memref.view' op uses dynamic shared memory in a way the host execution cannot size}}
    %view = memref.view %memory[%offset][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %view[%t] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @mma_partial_warp(%x: memref<64xf32>, %a: vector<8xbf16>, %b: vector<4xbf16>)
      kernel attributes {known_block_size = array<i32: 48, 1, 1>} {
    %c = arith.constant dense<0.0> : vector<4xf32>
    // expected-error @below {{'norm.mma_sync' op is a warp collective: the host execution needs a CTA size that is a multiple of 32 (whole warps), got 48}}
    %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @ldmatrix_partial_warp(%i: index)
      workgroup(%tile: memref<64x8xf16, #gpu.address_space<workgroup>>)
      kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
    %c0 = arith.constant 0 : index
    // expected-error @below {{'norm.ldmatrix' op is a warp collective: the host execution needs a CTA size that is a multiple of 32 (whole warps), got 16}}
    %v = norm.ldmatrix %tile[%i, %c0] {count = 1 : i64} : memref<64x8xf16, #gpu.address_space<workgroup>> -> vector<2xf16>
    gpu.return
  }
}

// -----

gpu.module @norm_kernels {
  gpu.func @mma_divergent(%x: memref<64xf32>, %a: vector<8xbf16>, %b: vector<4xbf16>, %n: index)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %c = arith.constant dense<0.0> : vector<4xf32>
    %p = arith.cmpi ult, %t, %n : index
    // expected-error @below {{'scf.if' op contains a warp collective but its condition may differ between the lanes of a warp}}
    scf.if %p {
      %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
    }
    gpu.return
  }
}

// -----

// Half warps: 16 lanes take one side, 16 the other.
gpu.module @norm_kernels {
  gpu.func @mma_half_warps(%x: memref<64xf32>, %a: vector<8xbf16>, %b: vector<4xbf16>)
      kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %t = gpu.thread_id x
    %c = arith.constant dense<0.0> : vector<4xf32>
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    %h = arith.divui %t, %c16 : index
    %p = arith.cmpi ult, %h, %c2 : index
    // expected-error @below {{'scf.if' op contains a warp collective but its condition may differ between the lanes of a warp}}
    scf.if %p {
      %d = norm.mma_sync %a, %b, %c : vector<8xbf16>, vector<4xbf16>, vector<4xf32> -> vector<4xf32>
    }
    gpu.return
  }
}
