"""attention_bench.py's control flow without a GPU: host torch stands in
for CUDA (bench_on_fake.py's stand-ins; SDPA written out where torch lacks
it), on small shapes. libnormjit is not used: "ours" is the float64
reference of attention_bench.py rounded to bf16, so its own check passes
and every later step runs (the comparison with eager, which checks the
eager anchor's QK-Norm, RoPE and layouts against the reference; the
timings, the torch.compile pass, the JSON and the tables). With
--unwritten, ours writes nothing: every check sees the poison, every point
is marked and none is timed. Times mean nothing.

    python3 attention_bench_on_fake.py [--unwritten] ARGS
"""

import sys
import types

import torch
import torch.nn.functional as F

import bench_on_fake


def sdpa(q, k, v, is_causal=False, enable_gqa=False):  # torch < 2.0
    if enable_gqa:
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    scores = q.float() @ k.float().transpose(-1, -2) / q.size(-1) ** 0.5
    if is_causal:  # torch's mask: aligned to the top left
        scores = scores.masked_fill(
            torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).triu(1),
            float("-inf"))
    return (scores.softmax(-1) @ v.float()).to(q.dtype)


def main():
    unwritten = "--unwritten" in sys.argv
    argv = [a for a in sys.argv[1:] if a != "--unwritten"]
    bench_on_fake.fake_cuda()
    for name in ("tensor", "arange"):
        setattr(torch, name, bench_on_fake.on_host(getattr(torch, name)))
    if not hasattr(F, "scaled_dot_product_attention"):
        F.scaled_dot_product_attention = sdpa
    bench_on_fake.use_tools()
    import attention_bench
    from norm_opt import _capi, _registry, _torch

    def run(call, config=None, stream=None):
        if not unwritten:
            # The attention call reads the keys its K-prepare call (k, then
            # the prepared keys, then k's weight) writes.
            q, _, v, cu, qw = call.keep[:5]
            k, _, kw = call.before[0].keep[:3]
            out, _ = attention_bench.reference(
                torch, q, k, v, qw, kw, cu, call.desc.num_q_heads,
                call.desc.num_kv_heads, call.desc.rope != _capi.ROPE_NONE)
            call.outputs[0].copy_(out.reshape(call.outputs[0].shape))
        return call.outputs
    _torch.run = run
    kernel = types.SimpleNamespace(
        config=lambda rows: _capi.LaunchConfig(8, 16, 4, 64, 64, 2),
        tuning=lambda rows: types.SimpleNamespace(source="fake"))
    _registry.get_kernel = lambda device, desc, config=None: kernel
    attention_bench.CHECK_SEQLENS = (40, 23)
    return attention_bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
