// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(norm-expand-fp8-conversions))" | FileCheck %s --check-prefix=CVT
// RUN: sed 's/"sm_90"/"sm_80"/' %s | norm-opt --pass-pipeline="builtin.module(gpu.module(norm-expand-fp8-conversions))" | FileCheck %s --check-prefix=INT
// RUN: norm-opt %s --pass-pipeline="builtin.module(gpu.module(norm-expand-fp8-conversions{software}))" | FileCheck %s --check-prefix=INT

// f32 -> FP8. On sm_90 (cvt to FP8 from sm_89 on) one cvt.rn.satfinite per
// pair of elements: element 2i + 1 is the first operand (the upper byte),
// element 2i the second, so that the bytes of the pairs are the elements in
// order. On sm_80, and with `software` (the host path), integer code.

// CVT-LABEL: gpu.func @pairs(
// CVT-SAME: %[[Y:.*]]: vector<4xf32>
// CVT: %[[Y0:.*]] = vector.extract %[[Y]][0] : f32 from vector<4xf32>
// CVT: %[[Y1:.*]] = vector.extract %[[Y]][1] : f32 from vector<4xf32>
// CVT: %[[P0:.*]] = nvvm.convert.f32x2.to.f8x2 %[[Y1]], %[[Y0]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16(f8E4M3FN)
// CVT: %[[V0:.*]] = vector.insert %[[P0]], %{{.*}} [0] : i16 into vector<2xi16>
// CVT: %[[Y2:.*]] = vector.extract %[[Y]][2] : f32 from vector<4xf32>
// CVT: %[[Y3:.*]] = vector.extract %[[Y]][3] : f32 from vector<4xf32>
// CVT: %[[P1:.*]] = nvvm.convert.f32x2.to.f8x2 %[[Y3]], %[[Y2]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16(f8E4M3FN)
// CVT: %[[V1:.*]] = vector.insert %[[P1]], %[[V0]] [1] : i16 into vector<2xi16>
// CVT: %[[B:.*]] = vector.bitcast %[[V1]] : vector<2xi16> to vector<4xi8>
// CVT: %[[Q:.*]] = arith.bitcast %[[B]] : vector<4xi8> to vector<4xf8E4M3FN>
// CVT: vector.store %[[Q]]
// CVT-NOT: arith.truncf

// INT-LABEL: gpu.func @pairs(
// INT-NOT: nvvm.convert
// INT: arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// The subnormal range: |y| * 2^9 + 2^23 rounds in the addition.
// INT: arith.mulf %{{.*}}, %{{.*}} : vector<4xf32>
// INT: arith.addf %{{.*}}, %{{.*}} : vector<4xf32>
// INT: arith.select
// INT: %[[BYTE:.*]] = arith.trunci %{{.*}} : vector<4xi32> to vector<4xi8>
// INT: arith.bitcast %[[BYTE]] : vector<4xi8> to vector<4xf8E4M3FN>
// INT-NOT: arith.truncf

// A single element pairs with 0.0 and keeps the low byte.
// CVT-LABEL: gpu.func @single(
// CVT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CVT: %[[P:.*]] = nvvm.convert.f32x2.to.f8x2 %[[ZERO]], %{{.*}} {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16(f8E5M2)
// CVT: %[[LOW:.*]] = arith.trunci %[[P]] : i16 to i8
// CVT: arith.bitcast %[[LOW]] : i8 to f8E5M2
// INT-LABEL: gpu.func @single(
// INT-NOT: nvvm.convert
// INT: arith.trunci %{{.*}} : i32 to i8

// FP8 -> bf16 (an FP8 KV cache's tiles, exact): on sm_90 one cvt.rn.f16x2
// per pair of bytes, then f16 -> f32 -> bf16 (exact); on sm_80 and the
// host, integer code to f32 (the exponent rebiased, subnormals as their
// mantissa times 2^-9, the NaN code kept), then the exact truncation.
// CVT-LABEL: gpu.func @widen(
// CVT: %[[B:.*]] = arith.bitcast %{{.*}} : vector<4xf8E4M3FN> to vector<4xi8>
// CVT: %[[P0:.*]] = vector.extract_strided_slice %[[B]] {offsets = [0], sizes = [2], strides = [1]} : vector<4xi8> to vector<2xi8>
// CVT: nvvm.convert.f8x2.to.f16x2 %[[P0]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CVT: %[[P1:.*]] = vector.extract_strided_slice %[[B]] {offsets = [2], sizes = [2], strides = [1]} : vector<4xi8> to vector<2xi8>
// CVT: nvvm.convert.f8x2.to.f16x2 %[[P1]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CVT: arith.extf %{{.*}} : vector<4xf16> to vector<4xf32>
// CVT: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// INT-LABEL: gpu.func @widen(
// INT-NOT: nvvm.convert
// INT: arith.extui %{{.*}} : vector<4xi8> to vector<4xi32>
// INT: arith.uitofp %{{.*}} : vector<4xi32> to vector<4xf32>
// INT: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// A scalar widens in integer code on every chip.
// CVT-LABEL: gpu.func @widen_one(
// CVT-NOT: nvvm.convert
// CVT: arith.extui %{{.*}} : i8 to i32

// Other truncations are not the pass's.
// CVT-LABEL: gpu.func @bf16(
// CVT: arith.truncf %{{.*}} : f32 to bf16
module attributes {gpu.container_module, norm.target = #norm.target<chip = "sm_90", ptx_version = 80, max_shared_bytes = 0>} {
  gpu.module @k {
    gpu.func @pairs(%y: vector<4xf32>, %out: memref<16xf8E4M3FN>) kernel {
      %c0 = arith.constant 0 : index
      %q = arith.truncf %y : vector<4xf32> to vector<4xf8E4M3FN>
      vector.store %q, %out[%c0] : memref<16xf8E4M3FN>, vector<4xf8E4M3FN>
      gpu.return
    }
    gpu.func @single(%y: f32, %out: memref<16xf8E5M2>) kernel {
      %c0 = arith.constant 0 : index
      %q = arith.truncf %y : f32 to f8E5M2
      memref.store %q, %out[%c0] : memref<16xf8E5M2>
      gpu.return
    }
    gpu.func @widen(%q: vector<4xf8E4M3FN>, %out: memref<16xbf16>) kernel {
      %c0 = arith.constant 0 : index
      %y = arith.extf %q : vector<4xf8E4M3FN> to vector<4xbf16>
      vector.store %y, %out[%c0] : memref<16xbf16>, vector<4xbf16>
      gpu.return
    }
    gpu.func @widen_one(%q: f8E4M3FN, %out: memref<16xf32>) kernel {
      %c0 = arith.constant 0 : index
      %y = arith.extf %q : f8E4M3FN to f32
      memref.store %y, %out[%c0] : memref<16xf32>
      gpu.return
    }
    gpu.func @bf16(%y: f32, %out: memref<16xbf16>) kernel {
      %c0 = arith.constant 0 : index
      %q = arith.truncf %y : f32 to bf16
      memref.store %q, %out[%c0] : memref<16xbf16>
      gpu.return
    }
  }
}
