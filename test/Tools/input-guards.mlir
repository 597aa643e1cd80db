// Input an upstream verifier would crash on gets a diagnostic and exit
// status 1 (gpu.func's verifier indexes its block arguments with
// workgroup_attributions unchecked), in every chunk of a split input and
// before a kernel bundle is written.
// RUN: not norm-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: not norm-opt %s --split-input-file --norm-fuse 2>&1 | FileCheck %s
// CHECK: error: 'gpu.func' op 'workgroup_attributions' must be an i64 from 0 to the 0 block arguments after the function's inputs, got -1 : i64
// CHECK: error: 'gpu.func' op 'workgroup_attributions' must be an i64 from 0 to the 1 block arguments after the function's inputs, got 2 : i64

"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<128xf32>) -> ()}> ({
  ^bb0(%arg0: memref<128xf32>):
    "gpu.return"() : () -> ()
  }) {gpu.kernel, sym_name = "negative", workgroup_attributions = -1 : i64} : () -> ()
}) : () -> ()

// -----

"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<128xf32>) -> ()}> ({
  ^bb0(%arg0: memref<128xf32>, %arg1: memref<4xf32, #gpu.address_space<workgroup>>):
    "gpu.return"() : () -> ()
  }) {gpu.kernel, sym_name = "too_many", workgroup_attributions = 2 : i64} : () -> ()
}) : () -> ()
