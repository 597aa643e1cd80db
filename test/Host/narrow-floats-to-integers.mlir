// RUN: norm-opt %s --split-input-file --verify-diagnostics \
// RUN:   --norm-host-narrow-floats-to-integers | FileCheck %s
// RUN: norm-opt %s --split-input-file --verify-diagnostics --norm-assign-launch-config \
// RUN:   --norm-generate-kernels --norm-kernels-to-host --norm-host-to-llvm \
// RUN:   | FileCheck %s --check-prefix=HOST

// Values that are only moved become i16; bitcasts between the two fold
// away; constants keep their bit patterns (bf16 -2.0 is 0xc000).

// CHECK-LABEL: llvm.func @moves(
// CHECK-SAME:      %[[P:.*]]: !llvm.ptr, %[[C:.*]]: i1) -> vector<2xi16>
// CHECK:           %[[ZERO:.*]] = llvm.mlir.constant(dense<[0, -16384]> : vector<2xi16>) : vector<2xi16>
// CHECK:           %[[V:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<2xi16>
// CHECK:           llvm.cond_br %[[C]], ^bb1(%[[V]] : vector<2xi16>), ^bb1(%[[ZERO]] : vector<2xi16>)
// CHECK:         ^bb1(%[[X:.*]]: vector<2xi16>):
// CHECK:           %[[Q:.*]] = llvm.getelementptr %[[P]][1] : (!llvm.ptr) -> !llvm.ptr, vector<2xi16>
// CHECK:           llvm.store %[[X]], %[[Q]] : vector<2xi16>, !llvm.ptr
// CHECK:           %[[I:.*]] = llvm.add %[[X]], %[[X]] : vector<2xi16>
// CHECK:           llvm.return %[[X]] : vector<2xi16>
llvm.func @moves(%p: !llvm.ptr, %c: i1) -> vector<2xbf16> {
  %zero = llvm.mlir.constant(dense<[0.0, -2.0]> : vector<2xbf16>) : vector<2xbf16>
  %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> vector<2xbf16>
  llvm.cond_br %c, ^bb1(%v : vector<2xbf16>), ^bb1(%zero : vector<2xbf16>)
^bb1(%x: vector<2xbf16>):
  %q = llvm.getelementptr %p[1] : (!llvm.ptr) -> !llvm.ptr, vector<2xbf16>
  llvm.store %x, %q : vector<2xbf16>, !llvm.ptr
  %bits = llvm.bitcast %x : vector<2xbf16> to vector<2xi16>
  %i = llvm.add %bits, %bits : vector<2xi16>
  llvm.return %x : vector<2xbf16>
}

// -----

// Arithmetic on f16 must have been expanded before: the pass names the op.
llvm.func @arithmetic(%x: f16) -> f16 {
  // expected-error @below {{'llvm.fadd' op computes on f16 or bf16 in host code}}
  %y = llvm.fadd %x, %x : f16
  llvm.return %y : f16
}

// -----

// A whole bf16 -> f16 kernel and its scalar fallback lowered for the host:
// the host functions hold no f16 or bf16 value (only the kernel names say
// bf16_f16; the norm function that references them is left as it was).

// HOST:     llvm.func @norm_rms_h200_bf16_f16_{{[0-9a-f]+}}_v8_{{.*}}_host(
// HOST-NOT: {{[^_b]b?f16}}
// HOST:     llvm.func @norm_rms_h200_bf16_f16_{{[0-9a-f]+}}_v1_{{.*}}_host(
// HOST-NOT: {{[^_b]b?f16}}
func.func @cast(%x: tensor<?x200xbf16>, %w: tensor<200xf16>) -> tensor<?x200xf16> {
  %y = norm.fused_row <rms> %x weight(%w : tensor<200xf16>) eps(1.0e-06)
      : tensor<?x200xbf16> -> tensor<?x200xf16>
  return %y : tensor<?x200xf16>
}
