// RUN: norm-opt %s --split-input-file --pass-pipeline="builtin.module(gpu.module(norm-lower-row-allreduce))" \
// RUN:   | FileCheck %s

// Groups of up to a warp: an XOR butterfly over the group's lanes only.
// CHECK-LABEL: gpu.func @group8
// CHECK-NOT: workgroup(
// CHECK: %[[W:.*]] = arith.constant 32 : i32
// CHECK: %[[O4:.*]] = arith.constant 4 : i32
// CHECK: %[[S4:.*]], %{{.*}} = gpu.shuffle  xor %[[V:.*]], %[[O4]], %[[W]] : f32
// CHECK: %[[A4:.*]] = arith.addf %[[V]], %[[S4]] : f32
// CHECK: %[[O2:.*]] = arith.constant 2 : i32
// CHECK: %[[S2:.*]], %{{.*}} = gpu.shuffle  xor %[[A4]], %[[O2]], %[[W]] : f32
// CHECK: %[[A2:.*]] = arith.addf %[[A4]], %[[S2]] : f32
// CHECK: %[[O1:.*]] = arith.constant 1 : i32
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle  xor %[[A2]], %[[O1]], %[[W]] : f32
// CHECK: %[[A1:.*]] = arith.addf %[[A2]], %[[S1]] : f32
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %[[A1]]
gpu.module @kernels {
  gpu.func @group8(%out: memref<128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %v = arith.index_cast %tid : index to i64
    %f = arith.sitofp %v : i64 to f32
    %s = norm.row_allreduce %f {group_size = 8 : i64} : f32
    memref.store %s, %out[%tid] : memref<128xf32>
    gpu.return
  }
}

// -----

// A whole warp: offsets 16 down to 1, for each value.
// CHECK-LABEL: gpu.func @group32
// CHECK-COUNT-10: gpu.shuffle  xor
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: gpu.barrier
gpu.module @kernels {
  gpu.func @group32(%out: memref<128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %v = arith.index_cast %tid : index to i64
    %f = arith.sitofp %v : i64 to f32
    %s:2 = norm.row_allreduce %f, %f {group_size = 32 : i64} : f32, f32
    %t = arith.addf %s#0, %s#1 : f32
    memref.store %t, %out[%tid] : memref<128xf32>
    gpu.return
  }
}

// -----

// Rows of 128 threads (4 warps) in CTAs of 256 threads, two sums: a warp
// butterfly per value, then lane 0 of each of the 8 warps writes its 2
// partials, one barrier for both, and each thread adds its row's 4 warps.
// CHECK-LABEL: gpu.func @group128
// CHECK-SAME: workgroup(%[[BUF:.*]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-10: gpu.shuffle  xor
// CHECK: %[[TID:.*]] = gpu.thread_id  x
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[SLOT:.*]] = arith.muli %[[WARP]], %c2
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[SLOT]]]
// CHECK: memref.store %{{.*}}, %[[BUF]][%{{.*}}]
// CHECK: }
// CHECK: gpu.barrier
// CHECK: %[[ROW:.*]] = arith.divui %[[TID]], %c128
// CHECK: %[[ROWWARP:.*]] = arith.muli %[[ROW]], %c4
// CHECK-COUNT-8: memref.load %[[BUF]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
gpu.module @kernels {
  gpu.func @group128(%out: memref<256xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    %tid = gpu.thread_id x
    %v = arith.index_cast %tid : index to i64
    %f = arith.sitofp %v : i64 to f32
    %s:2 = norm.row_allreduce %f, %f {group_size = 128 : i64} : f32, f32
    %t = arith.addf %s#0, %s#1 : f32
    memref.store %t, %out[%tid] : memref<256xf32>
    gpu.return
  }
}

// -----

// In a loop, a second barrier after the partials are read keeps the next
// iteration from overwriting them early.
// CHECK-LABEL: gpu.func @in_loop
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-COUNT-2: memref.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: gpu.barrier
// CHECK: scf.yield
gpu.module @kernels {
  gpu.func @in_loop(%out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      %v = arith.index_cast %i : index to i64
      %f = arith.sitofp %v : i64 to f32
      %s = norm.row_allreduce %f {group_size = 64 : i64} : f32
      %a = arith.addf %acc, %s : f32
      scf.yield %a : f32
    }
    memref.store %r, %out[%tid] : memref<64xf32>
    gpu.return
  }
}

// -----

// kind = max: the same butterfly and exchange, combining with maximumf.
// CHECK-LABEL: gpu.func @max64
// CHECK: gpu.shuffle  xor %[[V:.*]], %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf %[[V]], %{{.*}} : f32
// CHECK-COUNT-4: arith.maximumf
// CHECK-NOT: arith.addf
// CHECK: gpu.barrier
// CHECK: %[[P0:.*]] = memref.load
// CHECK: %[[P1:.*]] = memref.load
// CHECK: %[[M:.*]] = arith.maximumf %[[P0]], %[[P1]] : f32
// CHECK-NOT: arith.addf
// CHECK: memref.store %[[M]]
gpu.module @kernels {
  gpu.func @max64(%out: memref<128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %tid = gpu.thread_id x
    %v = arith.index_cast %tid : index to i64
    %f = arith.sitofp %v : i64 to f32
    %m = norm.row_allreduce %f {group_size = 64 : i64, kind = #norm.reduction<max>} : f32
    memref.store %m, %out[%tid] : memref<128xf32>
    gpu.return
  }
}
