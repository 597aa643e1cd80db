"""norm_bench.py's control flow without a GPU: host torch stands in for CUDA
(tensors made "on cuda" are host tensors, events read the host clock, a
"graph" runs its calls once) and libnormjit runs on the fake driver, which
records launches and computes nothing. Every step runs: building and tuning
our kernels, the buffer sets, every anchor, the comparison with eager (which
must fail: no output was written), the re-timing of the tuner's candidates
with fixed configurations, the torch.compile pass, the JSON and the tables.
Times are meaningless here.

    NORMJIT_LIBRARY=... NORMJIT_FAKE_CUDA=... python3 bench_on_fake.py ARGS
"""

import os
import sys
import time
import types

import torch
import torch.nn.functional as F


class Event:
    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1000.0


class Stream:
    cuda_stream = 0  # the legacy default stream of the fake driver

    def wait_stream(self, other):
        pass


class Scope:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def on_host(make):
    """torch's tensor factory `make` with device= dropped."""
    def made(*args, **kwargs):
        kwargs.pop("device", None)
        return make(*args, **kwargs)
    return made


def fake_cuda():
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.current_device = lambda: 0
    cuda.get_device_properties = lambda device: types.SimpleNamespace(
        name="fake (host)", multi_processor_count=132, L2_cache_size=1 << 20)
    cuda.Event, cuda.Stream, cuda.stream = Event, Stream, Scope
    cuda.current_stream = lambda device=None: Stream()
    cuda.synchronize = lambda *args: None
    torch.compile = lambda fn, dynamic=False: fn
    for name in ("rand", "empty", "full", "randn", "zeros", "ones"):
        setattr(torch, name, on_host(getattr(torch, name)))
    empty_like = torch.empty_like
    torch.empty_like = lambda tensor, **kwargs: empty_like(tensor)

    def rms_norm(x, shape, weight=None, eps=None):  # torch < 2.4 lacks it
        eps = torch.finfo(x.dtype).eps if eps is None else eps
        y = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) +
                                    eps)
        return (y * weight.float() if weight is not None else y).to(x.dtype)
    F.rms_norm = rms_norm


def use_tools():
    """norm_opt and norm-bench importable; timing.measure runs each call once
    (nothing is timed); norm_opt's CUDA-device check off."""
    here = os.path.dirname(os.path.abspath(__file__))
    tools = os.path.join(here, "..", "..", "..", "tools")
    sys.path[:0] = [os.path.join(tools, "python"),
                    os.path.join(tools, "norm-bench")]
    import timing
    from norm_opt import _torch

    def measure(calls, **kwargs):
        start = time.perf_counter()
        for call in calls:
            call()
        return timing.Timing((time.perf_counter() - start) * 1e6 / len(calls),
                             0.0, len(calls), "graph")
    timing.measure = measure
    _torch._device = lambda *tensors: 0


def main():
    fake_cuda()
    use_tools()
    from norm_opt import _registry
    _registry.configure(driver_library=os.environ["NORMJIT_FAKE_CUDA"])
    import norm_bench
    return norm_bench.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
