"""decode_bench.py's control flow without a GPU: host torch stands in for
CUDA (attention_bench_on_fake.py's stand-ins), on small shapes. libnormjit
is not used: "ours" is decode_bench.py's float64 reference of the step,
written as the kernel writes it (the output, the appended k and v rows at
each sequence's cache length), so its own check passes and every later
step runs (the comparison with eager, which checks the eager step's
QK-Norm, RoPE at the cache length, index_copy_ into the [B, Hkv, capacity,
D] caches and SDPA over them; the copy, the timings, the torch.compile
pass, the JSON and the tables). With --unwritten, ours writes nothing; with
--off-by-one, it appends the rows one position late: the float64 check
fails either way, every point is marked and none is timed. Times mean
nothing.

    python3 decode_bench_on_fake.py [--unwritten | --off-by-one] ARGS
"""

import sys
import types

import torch
import torch.nn.functional as F

import attention_bench_on_fake
import bench_on_fake


def main():
    mutation = next((a for a in sys.argv[1:]
                     if a in ("--unwritten", "--off-by-one")), None)
    argv = [a for a in sys.argv[1:] if a != mutation]
    bench_on_fake.fake_cuda()
    for name in ("tensor", "arange"):
        setattr(torch, name, bench_on_fake.on_host(getattr(torch, name)))
    if not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = attention_bench_on_fake.sdpa
    bench_on_fake.use_tools()
    import decode_bench
    from norm_opt import _capi, _registry, _torch

    def run(call, config=None, stream=None):
        if mutation == "--unwritten":
            return call.outputs
        q, k, v, cu, qw, kw, k_cache, v_cache, lengths = call.keep
        out, _, k_rows, _ = decode_bench.decode_reference(
            torch, q, k, v, qw, kw, k_cache, v_cache, lengths,
            call.desc.num_q_heads, call.desc.num_kv_heads)
        call.outputs[0].copy_(out.reshape(call.outputs[0].shape))
        rows = torch.arange(lengths.numel())
        positions = lengths.long() + (mutation == "--off-by-one")
        k_cache[rows, positions] = k_rows.to(k_cache.dtype)
        v_cache[rows, positions] = v.view_as(k_rows)
        return call.outputs
    _torch.run = run
    kernel = types.SimpleNamespace(
        config=lambda rows: _capi.LaunchConfig(8, 16, 4, 16, 64, 2),
        tuning=lambda rows: types.SimpleNamespace(source="fake"))
    _registry.get_kernel = lambda device, desc, config=None: kernel
    decode_bench.CHECK_LENGTHS = (0, 7, 45)
    decode_bench.CHECK_CAPACITY = 50
    return decode_bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
