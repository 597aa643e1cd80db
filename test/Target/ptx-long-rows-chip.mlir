// Whether a long row is staged in shared memory depends on the shared memory
// a CTA may use on the target chip (227 KiB on sm_90, 163 KiB on sm_80,
// 99 KiB on sm_89, 1 KiB of it kept for the reduction): a staged kernel that
// does not fit would be refused at load, so such rows stream instead.
//
// RUN: norm-opt %s --norm-to-ptx="chip=sm_90" -o %t.sm90.ptx
// RUN: FileCheck %s --check-prefix=SM90 --input-file=%t.sm90.ptx
// RUN: FileCheck %s --check-prefix=SM90-JSON --input-file=%t.sm90.json
// RUN: norm-opt %s --norm-to-ptx="chip=sm_80" -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80 --input-file=%t.sm80.ptx
// RUN: FileCheck %s --check-prefix=SM80-JSON --input-file=%t.sm80.json
// RUN: norm-opt %s --norm-to-ptx="chip=sm_89" -o %t.sm89.ptx
// RUN: FileCheck %s --check-prefix=SM89 --input-file=%t.sm89.ptx
// RUN: FileCheck %s --check-prefix=SM89-JSON --input-file=%t.sm89.json
//
// A device may allow less than its chip: max-shared-bytes overrides it.
// RUN: norm-opt %s --norm-to-ptx="chip=sm_90 max-shared-bytes=101376" | FileCheck %s --check-prefix=LIMIT
//
// A kernel bundle describes kernels for the shared memory they were
// generated for (the module records its target), not the chip's.
// RUN: norm-opt %s --norm-to-ptx="chip=sm_90 max-shared-bytes=101376" -o %t.limit.ptx
// RUN: FileCheck %s --check-prefix=LIMIT-JSON --input-file=%t.limit.json

// Fused add + RMSNorm of 100000 bf16 values: 200000 bytes a row.
// SM90: .target sm_90
// SM90: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// SM90: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM90: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// RMSNorm of 70000 bf16 values: 140000 bytes a row.
// SM90: .visible .entry norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM90: .visible .entry norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// SM90-NOT: .visible .entry

// SM90-JSON: "name": "norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem", {{.*}}, "shared_bytes": 200000,
// SM90-JSON: "name": "norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem", {{.*}}, "shared_bytes": 140000,

// SM80: .target sm_80
// SM80: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// SM80: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(
// SM80: .visible .entry norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem(
// SM80: .visible .entry norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_smem(
// SM80-NOT: .visible .entry

// SM80-JSON: "name": "norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream", {{.*}}, "shared_bytes": 0,
// SM80-JSON: "name": "norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_smem", {{.*}}, "shared_bytes": 140000,

// SM89: .target sm_89
// SM89-NOT: __dynamic_shmem__0
// SM89: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// SM89: .visible .entry norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(
// SM89: .visible .entry norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream(
// SM89: .visible .entry norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v1_t1024_w32_r1_stream(
// SM89-NOT: .visible .entry
// SM89-NOT: __dynamic_shmem__0

// SM89-JSON-NOT: "shared_bytes": {{[1-9]}}
// SM89-JSON: "name": "norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream", {{.*}}, "shared_bytes": 0,
// SM89-JSON-NOT: "shared_bytes": {{[1-9]}}

// LIMIT: module attributes {gpu.container_module, norm.target = #norm.target<chip = "sm_90", ptx_version = 80, max_shared_bytes = 101376>}
// LIMIT: norm.fused_row <rms> {{.*}}kernel = @norm_kernels::@norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream
// LIMIT: norm.fused_row <rms> {{.*}}kernel = @norm_kernels::@norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream

// LIMIT-JSON-NOT: "shared_bytes": {{[1-9]}}
// LIMIT-JSON: "name": "norm_rms_add_h100000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream", {{.*}}, "shared_bytes": 0,
// LIMIT-JSON: "name": "norm_rms_h70000_bf16_bf16_{{[0-9a-f]+}}_v8_t1024_w32_r1_stream", {{.*}}, "shared_bytes": 0,
// LIMIT-JSON-NOT: "shared_bytes": {{[1-9]}}

func.func @long_rows(%x: tensor<?x100000xbf16>, %f: tensor<?x100000xbf16>,
                     %w: tensor<100000xbf16>, %x70k: tensor<?x70000xbf16>,
                     %w70k: tensor<70000xbf16>)
    -> (tensor<?x100000xbf16>, tensor<?x100000xbf16>, tensor<?x70000xbf16>) {
  %h = norm.residual_add %x, %f : tensor<?x100000xbf16>, tensor<?x100000xbf16> -> tensor<?x100000xbf16>
  %y = norm.rms_norm %h weight(%w : tensor<100000xbf16>) eps(1.0e-06) : tensor<?x100000xbf16> -> tensor<?x100000xbf16>
  %z = norm.rms_norm %x70k weight(%w70k : tensor<70000xbf16>) eps(1.0e-06) : tensor<?x70000xbf16> -> tensor<?x70000xbf16>
  return %y, %h, %z : tensor<?x100000xbf16>, tensor<?x100000xbf16>, tensor<?x70000xbf16>
}
