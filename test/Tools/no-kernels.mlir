// A kernel file from a program that computes nothing used: every norm op's
// result is unused, so no kernel is formed; norm-opt says that, not "run
// --norm-lower-to-ptx". Without the lowering, it says to run it.
// RUN: not norm-opt %s --norm-to-ptx -o %t.ptx 2>&1 | FileCheck %s --check-prefix=UNUSED
// UNUSED: error: no kernel to write: no result of the program depends on a norm op
// RUN: not norm-opt %s -o %t.ptx 2>&1 | FileCheck %s --check-prefix=LOWER
// LOWER: error: no kernel binary: expected 'gpu.binary @norm_kernels' (run --norm-lower-to-ptx)
func.func @unused(%x: tensor<?x4096xbf16>) {
  %y = norm.rms_norm %x eps(1.0e-06) : tensor<?x4096xbf16> -> tensor<?x4096xbf16>
  return
}
