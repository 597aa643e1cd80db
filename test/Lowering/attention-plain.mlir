// RUN: norm-opt %s --norm-lower-to-ptx | FileCheck %s

// A program whose only norm op is a plain attention: nothing to generate,
// the IR is unchanged (no kernel module).
// CHECK-NOT: gpu.module
// CHECK-NOT: gpu.binary
// CHECK: norm.attention %{{.*}}, %{{.*}}, %{{.*}} scale(0.08838834764831845)
// CHECK-NOT: gpu.binary
func.func @plain(%q: tensor<?x512xbf16>, %k: tensor<?x128xbf16>, %v: tensor<?x128xbf16>)
    -> tensor<?x512xbf16> {
  %o = norm.attention %q, %k, %v scale(0.08838834764831845)
      {num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 128 : i64, causal}
      : tensor<?x512xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16> -> tensor<?x512xbf16>
  return %o : tensor<?x512xbf16>
}
