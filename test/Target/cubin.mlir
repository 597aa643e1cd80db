// `-o file.cubin`: ptxas assembles the PTX for the chip it targets.
// REQUIRES: ptxas
// RUN: rm -f %t.cubin %t.json
// RUN: norm-opt %s --norm-lower-to-ptx="chip=sm_80" -o %t.cubin
// RUN: od -A n -t x1 -N 4 %t.cubin | FileCheck %s --check-prefix=ELF
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON

// ELF: 7f 45 4c 46
// JSON: "name": "norm_l2_h64_f32_f32_{{[0-9a-f]+}}_v4_t8_w4_r16"
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = norm.fused_row <l2> %x eps(1.0e-12) : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
