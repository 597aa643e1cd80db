// Kernel bundles need the kernels lowered, and one input.
// RUN: not norm-opt %s -o %t.ptx 2>&1 | FileCheck %s --check-prefix=NOBINARY
// RUN: not norm-opt %s --norm-lower-to-ptx --split-input-file -o %t.ptx 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not norm-opt %s --norm-lower-to-ptx="chip=sm_75" -o %t.ptx 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not norm-opt %s --norm-lower-to-ptx="ptx-version=60" -o %t.ptx 2>&1 | FileCheck %s --check-prefix=PTXVERSION
// RUN: not norm-opt %s --norm-lower-to-ptx -o %t.missing/out.ptx 2>&1 | FileCheck %s --check-prefix=OUTPUT

// NOBINARY: error: no kernel binary: expected 'gpu.binary @norm_kernels' (run --norm-lower-to-ptx)
// SPLIT: error: --split-input-file cannot write a kernel bundle ({{.*}}.ptx): one input makes one bundle
// CHIP: error: unsupported chip 'sm_75' (expected sm_80, sm_89, sm_90 or sm_90a)
// PTXVERSION: error: unsupported ptx-version 60 (expected 78 to 90, i.e. PTX 7.8 to 9.0)
// OUTPUT: error: cannot open output file
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
