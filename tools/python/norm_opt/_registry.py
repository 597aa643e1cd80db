"""The libnormjit contexts and kernels of this process: one context per CUDA
device, made at first use with the options of configure(); kernels cached
per (device, operation, fixed configuration). Needs no torch."""

import threading
from typing import Dict, Optional, Sequence, Tuple

from norm_opt import _capi
from norm_opt._capi import LaunchConfig, OpDesc

_lock = threading.Lock()
_settings = {"bundles": (), "cache_dir": None, "tuning": True,
             "library": None, "log_level": -1, "driver_library": None,
             "pdl": False}
_contexts: Dict[int, _capi.Context] = {}
_kernels: Dict[tuple, _capi.Kernel] = {}
_backward_descs: Dict[tuple, Tuple[OpDesc, ...]] = {}


def configure(*, bundles: Optional[Sequence[str]] = None,
              cache_dir: Optional[str] = None, tuning: Optional[bool] = None,
              library: Optional[str] = None, log_level: Optional[int] = None,
              driver_library: Optional[str] = None,
              pdl: Optional[bool] = None) -> None:
    """Options of the contexts made from now on (kernel bundles to serve
    from, the disk cache directory, autotuning, the libnormjit path, the log
    level 0..3, the CUDA driver library, programmatic dependent launch);
    closes the existing contexts and forgets their kernels."""
    with _lock:
        if bundles is not None:
            _settings["bundles"] = tuple(bundles)
        if cache_dir is not None:
            _settings["cache_dir"] = cache_dir
        if tuning is not None:
            _settings["tuning"] = tuning
        if library is not None:
            _settings["library"] = library
        if log_level is not None:
            _settings["log_level"] = log_level
        if driver_library is not None:
            _settings["driver_library"] = driver_library
        if pdl is not None:
            _settings["pdl"] = pdl
        _kernels.clear()
        _backward_descs.clear()
        for context in _contexts.values():
            context.close()
        _contexts.clear()


def get_context(device: int) -> _capi.Context:
    """The libnormjit context of CUDA device `device` (made on first use)."""
    with _lock:
        context = _contexts.get(device)
        if context is None:
            library = (_capi.load_library(_settings["library"])
                       if _settings["library"] else None)
            context = _capi.Context(
                device, bundles=_settings["bundles"],
                cache_dir=_settings["cache_dir"], tuning=_settings["tuning"],
                log_level=_settings["log_level"],
                driver_library=_settings["driver_library"], library=library,
                pdl=_settings["pdl"])
            _contexts[device] = context
        return context


def get_kernel(device: int, desc: OpDesc,
               config: Optional[LaunchConfig] = None) -> _capi.Kernel:
    """The kernel of `desc` on `device`; with `config`, one that runs that
    configuration at every row count (and refuses misaligned buffers)."""
    key = (device, desc, config)
    kernel = _kernels.get(key)
    if kernel is None:
        context = get_context(device)
        # Built outside the lock: other threads may build other kernels.
        kernel = context.kernel(desc, config=config,
                                refuse_misaligned=config is not None)
        with _lock:
            kernel = _kernels.setdefault(key, kernel)
    return kernel


def get_backward_descs(device: int, forward: OpDesc) -> Tuple[OpDesc, ...]:
    """The backward operations of `forward` as the library of `device`'s
    context derives them (normjit_op_desc_get_backward), cached."""
    key = (device, forward)
    descs = _backward_descs.get(key)
    if descs is None:
        descs = get_context(device).backward_descs(forward)
        with _lock:
            descs = _backward_descs.setdefault(key, descs)
    return descs
