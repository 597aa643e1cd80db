"""Timing on the device: medians of CUDA-graph replays.

A measurement takes a list of zero-argument callables, one per buffer set
(rotating sets keeps a working set that fits in L2 from being timed at L2
speed). They are warmed up on a side stream (compiles, autotuning and lazy
initialization stay out of the numbers), then K launches cycling through
the sets are captured into one CUDA graph on that stream, so that launch
gaps and Python stay out too; the graph is replayed `replays` times, each
timed with CUDA events, and the median per launch is reported. Where
capture fails, the same launches are timed with events outside a graph
("events").
"""

import math
import statistics
from typing import Callable, List, NamedTuple

import torch


class Timing(NamedTuple):
    us: float        # median time per launch
    spread: float    # (max - min) / median over the replays
    launches: int    # per replay
    method: str      # "graph" or "events"


def _elapsed_ms(run: Callable[[], None]) -> float:
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def measure(calls: List[Callable[[], object]], *, target_us: float = 200.0,
            replays: int = 9, max_launches: int = 4096) -> Timing:
    """The median time of one call, in microseconds."""
    sets = len(calls)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls:
            call()
        for call in calls[:1] * 2:
            call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    # A first estimate, launch gaps included (an upper bound).
    probe = 3
    estimate_us = max(_elapsed_ms(lambda: [calls[i % sets]() for i in
                                           range(probe)]) * 1000 / probe, 0.5)
    launches = min(max(math.ceil(target_us / estimate_us), sets, 3),
                   max_launches)
    launches = math.ceil(launches / sets) * sets

    def sequence():
        for i in range(launches):
            calls[i % sets]()

    method = "graph"
    try:
        graph = torch.cuda.CUDAGraph()
        # Captured on the warm-up's stream: what a call sets up per stream
        # at its first launch there (libnormjit's decode workspace) is set up.
        with torch.cuda.graph(graph, stream=side):
            sequence()
        run = graph.replay
        run()
        torch.cuda.synchronize()
    except Exception:  # not capturable: time the launches as they are
        torch.cuda.synchronize()
        graph, run, method = None, sequence, "events"
        run()
    times = sorted(_elapsed_ms(run) * 1000 / launches for _ in range(replays))
    del graph
    median = statistics.median(times)
    return Timing(median, (times[-1] - times[0]) / median if median else 0.0,
                  launches, method)
