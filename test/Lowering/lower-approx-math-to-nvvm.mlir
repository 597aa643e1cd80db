// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(norm-lower-approx-math-to-nvvm))" | FileCheck %s

// With `afn`: the hardware approximation, no libdevice call.
// CHECK-LABEL: gpu.func @approximate
// CHECK: %[[R:.*]] = llvm.call_intrinsic "llvm.nvvm.rsqrt.approx.f"(%arg0) : (f32) -> f32
// CHECK: memref.store %[[R]]
// CHECK-NOT: math.rsqrt

// Without it: a correctly rounded square root and division.
// CHECK-LABEL: gpu.func @exact
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[S:.*]] = llvm.intr.sqrt(%arg0) : (f32) -> f32
// CHECK: %[[R:.*]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK: memref.store %[[R]]

// Vectors: element by element.
// CHECK-LABEL: gpu.func @vector
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.nvvm.rsqrt.approx.f"
// CHECK: vector.from_elements {{.*}} : vector<4xf32>

// Other types are not this pass's business.
// CHECK-LABEL: gpu.func @half
// CHECK: math.rsqrt %arg0 fastmath<afn> : f16
gpu.module @kernels {
  gpu.func @approximate(%x: f32, %out: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %r = math.rsqrt %x fastmath<afn> : f32
    memref.store %r, %out[%c0] : memref<1xf32>
    gpu.return
  }
  gpu.func @exact(%x: f32, %out: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %r = math.rsqrt %x : f32
    memref.store %r, %out[%c0] : memref<1xf32>
    gpu.return
  }
  gpu.func @vector(%x: vector<4xf32>, %out: memref<4xf32>) kernel {
    %c0 = arith.constant 0 : index
    %r = math.rsqrt %x fastmath<afn> : vector<4xf32>
    vector.store %r, %out[%c0] : memref<4xf32>, vector<4xf32>
    gpu.return
  }
  gpu.func @half(%x: f16, %out: memref<1xf16>) kernel {
    %c0 = arith.constant 0 : index
    %r = math.rsqrt %x fastmath<afn> : f16
    memref.store %r, %out[%c0] : memref<1xf16>
    gpu.return
  }
}

// exp2 and log2 with `afn` (the attention softmax): ex2.approx.ftz and
// lg2.approx per element; without `afn` they are left to the NVVM
// conversion.
// CHECK-LABEL: gpu.func @exp2_log2
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%arg0) : (f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%arg0) : (f32) -> f32
// CHECK-COUNT-2: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: math.exp2 %arg0 : f32
gpu.module @softmax {
  gpu.func @exp2_log2(%x: f32, %v: vector<2xf32>, %out: memref<4xf32>,
                      %vout: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %e = math.exp2 %x fastmath<afn> : f32
    %l = math.log2 %x fastmath<afn> : f32
    %ev = math.exp2 %v fastmath<afn> : vector<2xf32>
    %exact = math.exp2 %x : f32
    memref.store %e, %out[%c0] : memref<4xf32>
    memref.store %l, %out[%c1] : memref<4xf32>
    memref.store %exact, %out[%c2] : memref<4xf32>
    vector.store %ev, %vout[%c0] : memref<2xf32>, vector<2xf32>
    gpu.return
  }
}
