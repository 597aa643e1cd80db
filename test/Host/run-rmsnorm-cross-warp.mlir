// A hand-written RMSNorm kernel whose rows span two warps (a cross-warp
// row_allreduce), two rows per CTA and a partial last CTA, executed on the
// CPU. Row strides larger than the hidden size leave gaps: the input gaps
// hold -9 (read by mistake, they would change the sums), the output buffer
// starts as -7 everywhere and must keep -7 outside the rows.
//
// RUN: norm-opt %s --norm-kernels-to-host --norm-host-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void -O2 \
// RUN:       -shared-libs=%mlir_c_runner_utils \
// RUN:   | FileCheck %s

// Row 0 [1, 2, 3, 4]:  rms = sqrt(7.5), row 1 [-1, 0, 1, 2]: sqrt(1.5),
// row 2 [2, 2, 2, 2]: 2; weight [1, 0.5, 2, 1].
// CHECK: ( 0.365148, 0.365148, 2.19089, 1.46059, -7, -7,
// CHECK-SAME: -0.816497, 0, 1.63299, 1.63299, -7, -7,
// CHECK-SAME: 1, 0.5, 2, 1, -7, -7, -7, -7, -7, -7, -7, -7 )

module attributes {gpu.container_module} {
  gpu.module @norm_kernels {
    // 128 threads: two rows at a time, 64 threads (two warps) per row.
    gpu.func @rms(%x: memref<1099511627776xf32>, %w: memref<1099511627776xf32>,
                  %y: memref<1099511627776xf32>, %rows: i64, %xs: i64,
                  %ys: i64)
        kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %hidden = arith.constant 4 : index
      %hiddenf = arith.constant 4.0 : f32
      %zero = arith.constant 0.0 : f32
      %lane = arith.remui %tid, %c64 : index
      %slot = arith.divui %tid, %c64 : index
      %base = arith.muli %bid, %c2 : index
      %row = arith.addi %base, %slot : index
      %rowsi = arith.index_cast %rows : i64 to index
      %xsi = arith.index_cast %xs : i64 to index
      %ysi = arith.index_cast %ys : i64 to index
      %valid = arith.cmpi ult, %row, %rowsi : index
      %xrow = arith.muli %row, %xsi : index
      %yrow = arith.muli %row, %ysi : index
      %partial = scf.if %valid -> f32 {
        %s = scf.for %j = %lane to %hidden step %c64 iter_args(%acc = %zero) -> f32 {
          %i = arith.addi %xrow, %j : index
          %v = memref.load %x[%i] : memref<1099511627776xf32>
          %sq = arith.mulf %v, %v : f32
          %a = arith.addf %acc, %sq : f32
          scf.yield %a : f32
        }
        scf.yield %s : f32
      } else {
        scf.yield %zero : f32
      }
      %sum = norm.row_allreduce %partial {group_size = 64 : i64} : f32
      %mean = arith.divf %sum, %hiddenf : f32
      %r = math.rsqrt %mean : f32
      scf.if %valid {
        scf.for %j = %lane to %hidden step %c64 {
          %i = arith.addi %xrow, %j : index
          %v = memref.load %x[%i] : memref<1099511627776xf32>
          %wv = memref.load %w[%j] : memref<1099511627776xf32>
          %n = arith.mulf %v, %r : f32
          %o = arith.mulf %n, %wv : f32
          %k = arith.addi %yrow, %j : index
          memref.store %o, %y[%k] : memref<1099511627776xf32>
        }
      }
      gpu.return
    }
  }

  func.func private @rms_host(memref<1099511627776xf32>, memref<1099511627776xf32>,
                              memref<1099511627776xf32>, i64, i64, i64, index)

  func.func @main() {
    %c0 = arith.constant 0 : index
    %x = memref.alloc() : memref<15xf32>
    %xv = arith.constant dense<[1.0, 2.0, 3.0, 4.0, -9.0, -1.0, 0.0, 1.0, 2.0, -9.0,
                                2.0, 2.0, 2.0, 2.0, -9.0]> : vector<15xf32>
    vector.store %xv, %x[%c0] : memref<15xf32>, vector<15xf32>
    %w = memref.alloc() : memref<4xf32>
    %wv = arith.constant dense<[1.0, 0.5, 2.0, 1.0]> : vector<4xf32>
    vector.store %wv, %w[%c0] : memref<4xf32>, vector<4xf32>
    %y = memref.alloc() : memref<24xf32>
    %poison = arith.constant dense<-7.0> : vector<24xf32>
    vector.store %poison, %y[%c0] : memref<24xf32>, vector<24xf32>

    %xb = memref.reinterpret_cast %x to offset: [0], sizes: [1099511627776], strides: [1]
        : memref<15xf32> to memref<1099511627776xf32>
    %wb = memref.reinterpret_cast %w to offset: [0], sizes: [1099511627776], strides: [1]
        : memref<4xf32> to memref<1099511627776xf32>
    %yb = memref.reinterpret_cast %y to offset: [0], sizes: [1099511627776], strides: [1]
        : memref<24xf32> to memref<1099511627776xf32>
    %rows = arith.constant 3 : i64
    %xs = arith.constant 5 : i64
    %ys = arith.constant 6 : i64
    %grid = arith.constant 2 : index
    func.call @rms_host(%xb, %wb, %yb, %rows, %xs, %ys, %grid)
        : (memref<1099511627776xf32>, memref<1099511627776xf32>,
           memref<1099511627776xf32>, i64, i64, i64, index) -> ()

    %out = vector.load %y[%c0] : memref<24xf32>, vector<24xf32>
    vector.print %out : vector<24xf32>
    memref.dealloc %x : memref<15xf32>
    memref.dealloc %w : memref<4xf32>
    memref.dealloc %y : memref<24xf32>
    return
  }
}
