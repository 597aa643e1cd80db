// RUN: norm-opt %s --norm-assign-launch-config --norm-generate-kernels="scalar-fallback=false" | FileCheck %s --check-prefix=SM90
// RUN: norm-opt %s --norm-set-target="chip=sm_80" --norm-assign-launch-config --norm-generate-kernels="scalar-fallback=false" | FileCheck %s --check-prefix=SM90
// RUN: not norm-opt %s --norm-set-target="chip=sm_89" --norm-assign-launch-config --norm-generate-kernels="scalar-fallback=false" 2>&1 | FileCheck %s --check-prefix=SM89

// A backward row of f32 LayerNorm with a bias at 16384 stages v and dy, 64
// KiB each: the CTAs of sm_90 (227 KiB) and sm_80 (163 KiB) hold them, and
// the column sums of 32 elements a thread in CTAs of 512 the registers.
// sm_89's 99 KiB do not: such a kernel has no other way to keep its rows
// (a streamed backward would read them twice), so it is refused, not
// generated to fail at launch.

// SM90: gpu.func @norm_layer_bwd_h16384_f32_f32_{{[0-9a-f]+}}_v4_t512_w16_r1_smem(
// SM90: gpu.dynamic_shared_memory
// SM90: memref.view %{{.*}}[%c65536][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4096xvector<4xf32>, #gpu.address_space<workgroup>>

// SM89: error: 'norm.fused_row_grad' op cannot use the launch configuration v4_t512_w16_r1: a backward row of 16384 elements takes 131072 bytes of shared memory staged (v and grad_output), more than the 100352 a CTA of the target may use; such rows are not supported there

func.func @layer_norm_grad(%x: tensor<?x16384xf32>, %dy: tensor<?x16384xf32>, %w: tensor<16384xf32>, %m: tensor<?x1xf32>, %r: tensor<?x1xf32>) -> (tensor<?x16384xf32>, tensor<?x16384xf32>, tensor<?x16384xf32>) {
  %dx, %dw, %db = norm.fused_row_grad <mean_var> %x grad(%dy : tensor<?x16384xf32>) weight(%w : tensor<16384xf32>) saved_mean(%m : tensor<?x1xf32>) saved_rstd(%r : tensor<?x1xf32>) : tensor<?x16384xf32> -> tensor<?x16384xf32> weight_grad_partials(tensor<?x16384xf32>) bias_grad_partials(tensor<?x16384xf32>)
  return %dx, %dw, %db : tensor<?x16384xf32>, tensor<?x16384xf32>, tensor<?x16384xf32>
}
