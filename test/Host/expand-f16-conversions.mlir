// RUN: norm-opt %s --norm-host-expand-f16-conversions | FileCheck %s
// f16 conversions become integer code on the bit patterns: no truncf or
// extf between f16 and f32 is left for LLVM, which would lower it with F16C
// instructions or a compiler-runtime call depending on the CPU.

// CHECK-LABEL: func.func @trunc(
// CHECK-NOT:     arith.truncf
// CHECK:         %[[BITS:.*]] = arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK:         arith.addf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         arith.shrui
// CHECK:         %[[HALF:.*]] = arith.trunci %{{.*}} : vector<4xi32> to vector<4xi16>
// CHECK:         %[[R:.*]] = arith.bitcast %[[HALF]] : vector<4xi16> to vector<4xf16>
// CHECK-NOT:     arith.truncf
// CHECK:         return %[[R]]
func.func @trunc(%x: vector<4xf32>) -> vector<4xf16> {
  %h = arith.truncf %x : vector<4xf32> to vector<4xf16>
  return %h : vector<4xf16>
}

// CHECK-LABEL: func.func @ext(
// CHECK-NOT:     arith.extf
// CHECK:         arith.bitcast %{{.*}} : f16 to i16
// CHECK:         arith.extui %{{.*}} : i16 to i32
// CHECK:         arith.subf
// CHECK:         %[[R:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT:     arith.extf
// CHECK:         return %[[R]]
func.func @ext(%h: f16) -> f32 {
  %x = arith.extf %h : f16 to f32
  return %x : f32
}

// Other conversions are not this pass's: bf16 has arith-expand.
// CHECK-LABEL: func.func @bf16(
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
func.func @bf16(%x: f32) -> bf16 {
  %h = arith.truncf %x : f32 to bf16
  return %h : bf16
}

