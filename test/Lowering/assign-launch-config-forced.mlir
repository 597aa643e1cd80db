// Forced fields replace the heuristic's; the CTA widens for wide rows.
// RUN: norm-opt %s --norm-assign-launch-config="threads-per-row=64" | FileCheck %s --check-prefix=T64
// RUN: norm-opt %s --norm-assign-launch-config="vector=2 threads-per-row=512" | FileCheck %s --check-prefix=T512
// RUN: norm-opt %s --norm-assign-launch-config="vector=2 warps=8 rows-per-cta=16" | FileCheck %s --check-prefix=MIXED

// T64: launch = #norm.launch<vector = 8, threads_per_row = 64, warps = 4, rows_per_cta = 2>
// T512: launch = #norm.launch<vector = 2, threads_per_row = 512, warps = 16, rows_per_cta = 1>
// MIXED: launch = #norm.launch<vector = 2, threads_per_row = 32, warps = 8, rows_per_cta = 16>
func.func @f(%x: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  %0 = norm.fused_row <rms> %x eps(1.0e-06) : tensor<?x1024xbf16> -> tensor<?x1024xbf16>
  return %0 : tensor<?x1024xbf16>
}
