"""libnormjit's C API (runtime/normjit.h) through ctypes.

Plain Python, no torch: device buffers are integer addresses and streams are
integer CUstream handles. Every failing call raises NormJitError carrying
the status and normjit_last_error(), read on the calling thread right after
the call. ctypes releases the GIL during calls, so several threads can build
kernels at once (libnormjit is thread-safe).
"""

import ctypes
import ctypes.util
import os
import threading
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

# normjit_status
SUCCESS = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_MISALIGNED = 2
ERROR_UNSUPPORTED = 3
ERROR_NO_DRIVER = 4
ERROR_NO_DEVICE = 5
ERROR_DRIVER = 6
ERROR_COMPILE = 7
ERROR_NOT_FOUND = 8
ERROR_IO = 9
ERROR_INTERNAL = 10
ERROR_OUT_OF_MEMORY = 11

# normjit_dtype (I32: attention's cu_seqlens only, API 3)
F32, F16, BF16, I32 = 0, 1, 2, 3
F8E4M3FN, F8E5M2 = 4, 5  # API 8: FP8 outputs of row norms only
DTYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16", I32: "i32",
               F8E4M3FN: "f8E4M3FN", F8E5M2: "f8E5M2"}
DTYPE_BYTES = {F32: 4, F16: 2, BF16: 2, I32: 4}

# normjit_op_kind
OP_RMS_NORM = 0
OP_LAYER_NORM = 1
OP_L2_NORM = 2
OP_GROUP_NORM = 3
OP_BATCH_NORM_INFERENCE = 4
OP_ELEMENTWISE = 5
OP_BATCH_NORM_STATS = 6
OP_QK_NORM = 7
OP_ATTENTION = 8  # API 3
OP_ATTENTION_DECODE = 9  # API 4
OP_K_PREPARE = 10  # API 10: the k heads normalized and rotated once

# normjit_rope: normjit_op_desc.rope of attention (API 3)
ROPE_NONE, ROPE_NEOX, ROPE_GPTJ = 0, 1, 2

# normjit_op_desc.flags
OP_WEIGHT = 1 << 0
OP_BIAS = 1 << 1
OP_ADDEND = 1 << 2
OP_RESIDUAL_OUT = 1 << 3
OP_F32_RESIDUAL = 1 << 4
OP_SKIP = 1 << 5
OP_QK_L2 = 1 << 6
OP_QK_MEAN_VAR = 1 << 7
OP_QK_RMS = 1 << 8  # API 3
OP_CAUSAL = 1 << 9
OP_WRITE_LSE = 1 << 10
OP_ROPE_POSITIONS = 1 << 11  # API 5: positions from the POSITIONS buffer
OP_ROPE_TABLE = 1 << 12  # API 5: angles from the ROPE_TABLE buffer
# API 6, training: a forward row norm or QK-Norm that also writes its saved
# statistics (SAVED_RSTD, SAVED_MEAN); its backward (from
# normjit_op_desc_get_backward, see backward_descs); heads sharing one
# weight in a backward (QK-Norm's).
OP_SAVE_STATS = 1 << 13
OP_BACKWARD = 1 << 14
OP_PER_HEAD_WEIGHT = 1 << 15
# API 7, in place: a forward row norm whose launch may pass the same buffer
# for its output (or residual_out) and that row input.
OP_OUTPUT_OVER_INPUT = 1 << 16
OP_OUTPUT_OVER_ADDEND = 1 << 17
OP_RESIDUAL_OVER_INPUT = 1 << 18
OP_RESIDUAL_OVER_ADDEND = 1 << 19
# API 8, FP8 outputs: a static scale (OUTPUT_SCALE) or per-token scales
# written to OUTPUT_SCALES, their amax bounded by SCALE_UB.
OP_OUTPUT_SCALE_STATIC = 1 << 20
OP_OUTPUT_SCALE_PER_TOKEN = 1 << 21
OP_SCALE_UB = 1 << 22
# API 9, attention: rotate q and k before the QK-Norm (Llama 4); a QK-Norm
# weight row per head (Command R+).
OP_ROPE_FIRST = 1 << 23
OP_QK_WEIGHT_PER_HEAD = 1 << 24
# API 10: prefill attention over keys that K-prepare normalized and rotated
# (the QK-Norm and rope are q's alone); K-prepare also copying v.
OP_PREPARED_K = 1 << 25
OP_COPY_V = 1 << 26
OP_WRITE_CACHE = 1 << 27
# API 12: FP8 KV caches with k_scale and v_scale (one, or one per kv head).
OP_FP8_CACHE = 1 << 28
OP_CACHE_SCALE_PER_HEAD = 1 << 29
OP_PAGE_INDPTR = 1 << 30

# normjit_buffer (V, CU_SEQLENS, LSE: API 3; K_CACHE .. SEMAPHORES: API 4,
# decode attention, whose WORKSPACE and SEMAPHORES are libnormjit's own)
INPUT, ADDEND, SKIP, WEIGHT, BIAS, MEAN, VARIANCE, OUTPUT = range(8)
RESIDUAL_OUT, QKV, Q_WEIGHT, K_WEIGHT, Q, K = range(8, 14)
V, CU_SEQLENS, LSE = range(14, 17)
K_CACHE, V_CACHE, CACHE_SEQLENS, WORKSPACE, SEMAPHORES = range(17, 22)
POSITIONS, ROPE_TABLE = 22, 23  # API 5: rotary positions and cos/sin table
# API 6, training (the gradient partials are libnormjit's own: absent).
GRAD_OUTPUT, RESIDUAL_GRAD, SAVED_MEAN, SAVED_RSTD = range(24, 28)
GRAD_INPUT, ADDEND_GRAD = 28, 29
WEIGHT_GRAD_PARTIALS, BIAS_GRAD_PARTIALS = 30, 31
WEIGHT_GRAD, BIAS_GRAD = 32, 33
# API 8: FP8 outputs' scales.
OUTPUT_SCALE, SCALE_UB, OUTPUT_SCALES = 34, 35, 36
# API 10: K-prepare's outputs.
K_OUT, V_OUT = 37, 38
# API 12: a paged KV cache's block table, an FP8 cache's scales.
BLOCK_TABLES = 39
K_SCALE, V_SCALE = 40, 41
PAGE_INDPTR = 42
NUM_BUFFERS = 43
# The tensors of an API 1 / 2 normjit_launch_args: launch arguments of row
# kernels keep that size, so they work with older libraries too; those of
# prefill attention the API 3 size (17 tensors), those of decode and rope
# tables API 5's (24 tensors, then cache_rows and rope_table_rows), those
# of training API 6's (34 tensors, then the same two counts), those of FP8
# scales API 8's (37 tensors, then the two counts), K-prepare's API 10's
# (39), paged caches' API 12's (40).
NUM_BUFFERS_V1 = 14
NUM_BUFFERS_V3 = 17
NUM_BUFFERS_V5 = 24
NUM_BUFFERS_V6 = 34
NUM_BUFFERS_V8 = 37
NUM_BUFFERS_V10 = 39
NUM_BUFFERS_V12 = 42

# normjit_context_options.flags and normjit_kernel_create flags
CONTEXT_NO_TUNING = 1 << 0
CONTEXT_NO_DISK_CACHE = 1 << 1
CONTEXT_PDL = 1 << 2  # API 7: programmatic dependent launch (sm_90 on)
KERNEL_NO_TUNING = 1 << 0
KERNEL_REFUSE_MISALIGNED = 1 << 1

# normjit_plan_source
PLAN_SOURCES = {0: "tuned", 1: "tuning cache", 2: "bundle", 3: "heuristic",
                4: "fixed"}


class NormJitError(RuntimeError):
    """A libnormjit call failed: `status` (None when the library itself
    could not be loaded), `status_name` and libnormjit's message."""

    def __init__(self, status: Optional[int], status_name: str, message: str):
        self.status = status
        self.status_name = status_name
        self.message = message
        super().__init__(f"{status_name}: {message}" if message else status_name)


#===------------------------------------------------------------------------===#
# The structures of normjit.h
#===------------------------------------------------------------------------===#


class _OpDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_int32),
                ("hidden", ctypes.c_int64), ("input_type", ctypes.c_int32),
                ("output_type", ctypes.c_int32), ("param_type", ctypes.c_int32),
                ("addend_type", ctypes.c_int32), ("skip_type", ctypes.c_int32),
                ("flags", ctypes.c_uint32), ("eps", ctypes.c_double),
                ("alpha", ctypes.c_double), ("weight_offset", ctypes.c_double),
                ("groups", ctypes.c_int64), ("num_q_heads", ctypes.c_int64),
                ("num_kv_heads", ctypes.c_int64),
                # API 3.
                ("scale", ctypes.c_double), ("rope", ctypes.c_int32),
                # API 12 (API 3's reserved field): a paged cache's page.
                ("cache_block_size", ctypes.c_int32),
                ("rotary_dim", ctypes.c_int64),
                ("rope_theta", ctypes.c_double)]


# sizeof normjit_op_desc without the API 3 fields (scale and after).
_OP_DESC_SIZE_V1 = 88


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("cols", ctypes.c_int64),
                ("row_stride", ctypes.c_int64)]


def _launch_args_fields(tensors: int):
    return [("struct_size", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
            ("tensors", _Tensor * tensors),
            # API 4: the rows of the KV caches (decode attention).
            ("cache_rows", ctypes.c_int64),
            # API 5: the rows of the rope table.
            ("rope_table_rows", ctypes.c_int64)]


class _LaunchArgs(ctypes.Structure):
    """normjit_launch_args of API 13 (43 tensors, cache_rows,
    rope_table_rows); its prefixes of 14 and 17 tensors are the API 1 and
    API 3 layouts."""
    _fields_ = _launch_args_fields(NUM_BUFFERS)


class _LaunchArgsV12(ctypes.Structure):
    """normjit_launch_args of API 12: 42 tensors, then cache_rows and
    rope_table_rows."""
    _fields_ = _launch_args_fields(NUM_BUFFERS_V12)


class _LaunchArgsV10(ctypes.Structure):
    """normjit_launch_args of API 10 and 11: 39 tensors, then cache_rows and
    rope_table_rows."""
    _fields_ = _launch_args_fields(NUM_BUFFERS_V10)


class _LaunchArgsV8(ctypes.Structure):
    """normjit_launch_args of API 8 and 9: 37 tensors, then cache_rows and
    rope_table_rows."""
    _fields_ = _launch_args_fields(NUM_BUFFERS_V8)


class _LaunchArgsV6(ctypes.Structure):
    """normjit_launch_args of API 6 and 7: 34 tensors, then cache_rows and
    rope_table_rows."""
    _fields_ = _launch_args_fields(NUM_BUFFERS_V6)


class _LaunchArgsV5(ctypes.Structure):
    """normjit_launch_args of API 5: 24 tensors, then cache_rows and
    rope_table_rows (which API 6 moved behind its 34 tensors, so this is no
    prefix of _LaunchArgs)."""
    _fields_ = _launch_args_fields(NUM_BUFFERS_V5)


class _ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("device", ctypes.c_int32),
                ("driver_library", ctypes.c_char_p),
                ("cache_dir", ctypes.c_char_p),
                ("bundles", ctypes.POINTER(ctypes.c_char_p)),
                ("num_bundles", ctypes.c_size_t), ("flags", ctypes.c_uint32),
                ("log_level", ctypes.c_int32)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("vector", ctypes.c_int64), ("threads_per_row", ctypes.c_int64),
                ("warps", ctypes.c_int64), ("rows_per_cta", ctypes.c_int64)]


class _LaunchConfig2(ctypes.Structure):
    """normjit_launch_config2 (API 3): with attention's block_n, stages."""
    _fields_ = _LaunchConfig._fields_ + [("block_n", ctypes.c_int64),
                                         ("stages", ctypes.c_int64)]


class _TuningInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("source", ctypes.c_int32),
                ("tuned_rows", ctypes.c_int64),
                ("num_candidates", ctypes.c_size_t),
                ("config", _LaunchConfig),
                # API 3: the rest of the winner.
                ("block_n", ctypes.c_int64), ("stages", ctypes.c_int64)]


_TUNING_INFO_SIZE_V1 = 56


class _Candidate(ctypes.Structure):
    _fields_ = [("config", _LaunchConfig), ("microseconds", ctypes.c_double)]


class _Candidate2(ctypes.Structure):
    _fields_ = [("config", _LaunchConfig2), ("microseconds", ctypes.c_double)]


class LaunchConfig(NamedTuple):
    """#norm.launch: elements per access, threads per row, warps per CTA,
    rows per CTA; attention also keys per tile (block_n) and tiles in
    flight (stages), 0 for row kernels."""
    vector: int
    threads_per_row: int
    warps: int
    rows_per_cta: int
    block_n: int = 0
    stages: int = 0

    @property
    def suffix(self) -> str:
        """The kernel name suffix, "v8_t128_w4_r1" (attention:
        "v8_t16_w4_r64_n64_s2")."""
        suffix = (f"v{self.vector}_t{self.threads_per_row}_w{self.warps}"
                  f"_r{self.rows_per_cta}")
        if self.block_n:
            suffix += f"_n{self.block_n}_s{self.stages}"
        return suffix

    @staticmethod
    def _from_c(config, block_n: int = 0, stages: int = 0) -> "LaunchConfig":
        if isinstance(config, _LaunchConfig2):
            block_n, stages = config.block_n, config.stages
        return LaunchConfig(config.vector, config.threads_per_row,
                            config.warps, config.rows_per_cta, block_n, stages)

    def _to_c(self) -> _LaunchConfig:
        return _LaunchConfig(*self[:4])

    def _to_c2(self) -> _LaunchConfig2:
        return _LaunchConfig2(*self)


class Candidate(NamedTuple):
    config: LaunchConfig
    microseconds: float  # the tuner's time per launch; < 0: it failed


class TuningInfo(NamedTuple):
    source: str          # "tuned", "tuning cache", "bundle", ...
    tuned_rows: int      # the rows the bucket was tuned at; 0: not tuned
    config: LaunchConfig  # what launches of this bucket run
    candidates: Tuple[Candidate, ...]  # timed in this process


class OpDesc(NamedTuple):
    """normjit_op_desc as a hashable value (the key of kernel caches)."""
    kind: int = OP_RMS_NORM
    hidden: int = 0
    input_type: int = BF16
    output_type: int = BF16
    param_type: int = BF16
    addend_type: int = BF16
    skip_type: int = BF16
    flags: int = 0
    eps: float = 1e-6
    alpha: float = 1.0
    weight_offset: float = 0.0
    groups: int = 1
    num_q_heads: int = 0
    num_kv_heads: int = 0
    scale: float = 0.0  # attention (API 3); 0: 1 / sqrt(head dim)
    rope: int = ROPE_NONE  # attention's rotary embeddings (API 3)
    rotary_dim: int = 0  # 0: the head dim
    rope_theta: float = 0.0  # 0: 10000
    cache_block_size: int = 0  # API 12: a paged KV cache's rows per page

    def _to_c(self) -> _OpDesc:
        # Up to the last field that differs from its default (at least the
        # API 1 layout), so that every library that has the fields used
        # reads the desc: row kernels work with API 1 libraries too.
        size = _OP_DESC_SIZE_V1
        for name, value in self._asdict().items():
            if value != self._field_defaults[name]:
                field = getattr(_OpDesc, name)
                size = max(size, field.offset + field.size)
        return _OpDesc(struct_size=size, **self._asdict())

    @staticmethod
    def _from_c(desc: _OpDesc) -> "OpDesc":
        return OpDesc(**{name: getattr(desc, name) for name in OpDesc._fields})


#===------------------------------------------------------------------------===#
# The library
#===------------------------------------------------------------------------===#

_SIGNATURES = {
    "normjit_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "normjit_last_error": (ctypes.c_char_p, []),
    "normjit_context_options_init": (None, [ctypes.POINTER(_ContextOptions)]),
    "normjit_context_create": (ctypes.c_int, [
        ctypes.POINTER(_ContextOptions), ctypes.POINTER(ctypes.c_void_p)]),
    "normjit_context_destroy": (None, [ctypes.c_void_p]),
    "normjit_kernel_create": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.POINTER(_OpDesc), ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_void_p)]),
    "normjit_kernel_destroy": (None, [ctypes.c_void_p]),
    # The launch arguments are a _LaunchArgs, _LaunchArgsV12, _LaunchArgsV10,
    # _LaunchArgsV8, _LaunchArgsV6 or _LaunchArgsV5.
    "normjit_kernel_launch": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]),
    "normjit_kernel_get_config": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(_LaunchConfig)]),
    "normjit_context_write_bundle": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.POINTER(_OpDesc), ctypes.c_size_t,
        ctypes.c_char_p]),
}
# Newer entry points: a library without them still serves everything else.
_OPTIONAL_SIGNATURES = {
    "normjit_kernel_create_with_config": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.POINTER(_OpDesc),
        ctypes.POINTER(_LaunchConfig), ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_void_p)]),
    "normjit_kernel_get_tuning": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(_TuningInfo),
        ctypes.POINTER(_Candidate), ctypes.c_size_t]),
    "normjit_get_version": (None, [ctypes.POINTER(ctypes.c_uint32)] * 4),
    # API 3.
    "normjit_kernel_get_config2": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(_LaunchConfig2)]),
    "normjit_kernel_create_with_config2": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.POINTER(_OpDesc),
        ctypes.POINTER(_LaunchConfig2), ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_void_p)]),
    "normjit_kernel_get_tuning2": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(_TuningInfo),
        ctypes.POINTER(_Candidate2), ctypes.c_size_t]),
    # API 6.
    "normjit_op_desc_get_backward": (ctypes.c_int, [
        ctypes.POINTER(_OpDesc), ctypes.POINTER(_OpDesc), ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t)]),
}


class Library:
    """A loaded libnormjit.so with its entry points declared."""

    def __init__(self, path: str):
        try:
            self.dll = ctypes.CDLL(path)
        except OSError as error:
            raise NormJitError(None, "cannot load libnormjit",
                               f"{path}: {error}") from None
        self.path = path
        missing = [name for name in _SIGNATURES if not hasattr(self.dll, name)]
        if missing:
            raise NormJitError(None, "not libnormjit",
                               f"{path} lacks {', '.join(missing)}")
        for table in (_SIGNATURES, _OPTIONAL_SIGNATURES):
            for name, (restype, argtypes) in table.items():
                if hasattr(self.dll, name):
                    function = getattr(self.dll, name)
                    function.restype = restype
                    function.argtypes = argtypes

    def has(self, name: str) -> bool:
        return hasattr(self.dll, name)

    @property
    def api_version(self) -> int:
        """The C API version the library implements (1 before
        normjit_get_version)."""
        if not self.has("normjit_get_version"):
            return 1
        api = ctypes.c_uint32()
        self.dll.normjit_get_version(None, None, None, ctypes.byref(api))
        return api.value

    def status_name(self, status: int) -> str:
        return self.dll.normjit_status_name(status).decode()

    def check(self, status: int) -> None:
        """Raises NormJitError for a failed status, with the thread's last
        error message."""
        if status != SUCCESS:
            message = self.dll.normjit_last_error().decode(errors="replace")
            raise NormJitError(status, self.status_name(status), message)

    def require(self, name: str):
        if not self.has(name):
            raise NormJitError(
                ERROR_UNSUPPORTED, "unsupported",
                f"{self.path} has no {name}: build a newer libnormjit")
        return getattr(self.dll, name)

    def backward_descs(self, forward: OpDesc) -> Tuple[OpDesc, ...]:
        """The backward operations of the forward operation `forward`, in
        launch order, as libnormjit derives them
        (normjit_op_desc_get_backward, API 6): a row norm's one, the
        QK-Norm prologue's q heads' then k heads' (OP_PER_HEAD_WEIGHT where
        several heads share a weight). NormJitError (INVALID_ARGUMENT, with
        the library's reason) when it has none."""
        get = self.require("normjit_op_desc_get_backward")
        c_forward = forward._to_c()
        # The backward descs are written at forward.struct_size strides:
        # the whole struct, so that an array of _OpDesc steps right.
        c_forward.struct_size = ctypes.sizeof(_OpDesc)
        capacity = 4
        while True:
            descs = (_OpDesc * capacity)()
            count = ctypes.c_size_t()
            self.check(get(ctypes.byref(c_forward), descs, capacity,
                           ctypes.byref(count)))
            if count.value <= capacity:
                return tuple(OpDesc._from_c(d) for d in descs[:count.value])
            capacity = count.value


def _candidate_paths() -> List[str]:
    paths = []
    if os.environ.get("NORMJIT_LIBRARY"):
        paths.append(os.environ["NORMJIT_LIBRARY"])
    here = os.path.dirname(os.path.abspath(__file__))
    paths.append(os.path.join(here, "libnormjit.so"))
    found = ctypes.util.find_library("normjit")
    paths.append(found or "libnormjit.so")
    return paths


_library: Optional[Library] = None
_library_lock = threading.Lock()


def load_library(path: Optional[str] = None) -> Library:
    """The libnormjit to use: `path`, else $NORMJIT_LIBRARY, else a
    libnormjit.so beside this package, else the dynamic loader's. The first
    one loaded stays loaded; a different `path` afterwards loads that too."""
    global _library
    with _library_lock:
        if path is not None:
            library = Library(path)
            if _library is None:
                _library = library
            return library
        if _library is not None:
            return _library
        errors = []
        for candidate in _candidate_paths():
            if os.path.sep in candidate and not os.path.exists(candidate):
                errors.append(f"{candidate}: no such file")
                continue
            try:
                _library = Library(candidate)
                return _library
            except NormJitError as error:
                errors.append(error.message)
        raise NormJitError(None, "cannot load libnormjit",
                           "; ".join(errors) +
                           " (set NORMJIT_LIBRARY to libnormjit.so)")


#===------------------------------------------------------------------------===#
# Contexts, kernels, launches
#===------------------------------------------------------------------------===#


class Buffer(NamedTuple):
    """One buffer of a launch: a device address, an element type, elements
    per row and elements between rows (0: contiguous; 1-D buffers: 0)."""
    address: int
    dtype: int
    cols: int
    row_stride: int = 0


def make_launch_args(buffers: Dict[int, Buffer], cache_rows: int = 0,
                     rope_table_rows: int = 0):
    """normjit_launch_args for {slot: Buffer}; reusable across launches.
    Its struct_size is the oldest layout that holds the buffers: API 1's (14
    tensors) for row kernels, API 3's (17) for attention, API 5's (24
    tensors, cache_rows, the rows of decode's KV caches, and
    rope_table_rows; a _LaunchArgsV5) for decode and rope tables, API 6's
    (34 tensors, then the two counts; a _LaunchArgsV6) for the training
    buffers (slots 24 to 33), API 8's (37 tensors; a _LaunchArgsV8) for FP8
    scales (slots 34 to 36), API 10's (39; a _LaunchArgsV10) for
    K-prepare's outputs, API 12's (42; a _LaunchArgsV12) for a paged cache's
    block table and an FP8 cache's scales, API 13's (43; a _LaunchArgs) only
    for a ragged table's page_indptr, so that every libnormjit that has the
    buffers reads it (API 4's decode layout is the C header's business:
    this layer ships with its library)."""
    for name, count in (("cache_rows", cache_rows),
                        ("rope_table_rows", rope_table_rows)):
        if count < 0:
            raise ValueError(f"{name}: expected a row count, got {count}")
    for slot in buffers:
        if not 0 <= slot < NUM_BUFFERS:
            raise ValueError(f"unknown buffer slot {slot}")
    if any(slot >= NUM_BUFFERS_V12 for slot in buffers):
        args = _LaunchArgs()
        args.struct_size = ctypes.sizeof(_LaunchArgs)
    elif any(slot >= NUM_BUFFERS_V10 for slot in buffers):
        args = _LaunchArgsV12()
        args.struct_size = ctypes.sizeof(_LaunchArgsV12)
    elif any(slot >= NUM_BUFFERS_V8 for slot in buffers):
        args = _LaunchArgsV10()
        args.struct_size = ctypes.sizeof(_LaunchArgsV10)
    elif any(slot >= NUM_BUFFERS_V6 for slot in buffers):
        args = _LaunchArgsV8()
        args.struct_size = ctypes.sizeof(_LaunchArgsV8)
    elif any(slot >= NUM_BUFFERS_V5 for slot in buffers):
        args = _LaunchArgsV6()
        args.struct_size = ctypes.sizeof(_LaunchArgsV6)
    elif (cache_rows or rope_table_rows or
            any(slot >= NUM_BUFFERS_V3 for slot in buffers)):
        args = _LaunchArgsV5()
        args.struct_size = ctypes.sizeof(_LaunchArgsV5)
    else:
        args = _LaunchArgs()
        tensors = (NUM_BUFFERS_V3 if any(slot >= NUM_BUFFERS_V1
                                         for slot in buffers)
                   else NUM_BUFFERS_V1)
        args.struct_size = (_LaunchArgs.tensors.offset +
                            tensors * ctypes.sizeof(_Tensor))
    args.cache_rows = cache_rows
    args.rope_table_rows = rope_table_rows
    for slot, buffer in buffers.items():
        if buffer.dtype not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {buffer.dtype}")
        args.tensors[slot] = _Tensor(buffer.address or None, buffer.dtype, 0,
                                     buffer.cols, buffer.row_stride)
    return args


class _Handle:
    """Owns one libnormjit object: destroyed by close() or collection."""
    _handle = None

    def _destroy(self, handle) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._handle:
            handle, self._handle = self._handle, None
            self._destroy(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class Kernel(_Handle):
    """A loaded kernel of one operation (normjit_kernel)."""

    def __init__(self, library: Library, handle: ctypes.c_void_p,
                 desc: OpDesc):
        # Valid after its context is closed: it keeps what it uses.
        self._library = library
        self._handle = handle
        self._launch = library.dll.normjit_kernel_launch
        self.desc = desc

    def launch(self, args: _LaunchArgs, rows: int, stream: int = 0) -> None:
        """Enqueues the kernel on `stream` (a CUstream handle; 0: the legacy
        default stream). Asynchronous; capturable in CUDA graphs."""
        if not isinstance(args, (_LaunchArgs, _LaunchArgsV12, _LaunchArgsV10,
                                 _LaunchArgsV8, _LaunchArgsV6, _LaunchArgsV5)):
            raise TypeError("launch arguments come from make_launch_args, "
                            f"got {type(args).__name__}")
        status = self._launch(self._handle, ctypes.addressof(args), rows,
                              stream or None)
        if status != SUCCESS:
            self._library.check(status)

    def config(self, rows: int) -> LaunchConfig:
        """The configuration launches of `rows` rows run (aligned buffers)."""
        dll = self._library.dll
        if self._library.has("normjit_kernel_get_config2"):
            config = _LaunchConfig2()
            get = dll.normjit_kernel_get_config2
        else:
            config = _LaunchConfig()
            get = dll.normjit_kernel_get_config
        self._library.check(get(self._handle, rows, ctypes.byref(config)))
        return LaunchConfig._from_c(config)

    def tuning(self, rows: int) -> TuningInfo:
        """Where the plan of `rows` rows came from and the candidates the
        tuner timed for its bucket in this process."""
        whole = self._library.has("normjit_kernel_get_tuning2")
        get = self._library.require("normjit_kernel_get_tuning2" if whole else
                                    "normjit_kernel_get_tuning")
        info = _TuningInfo()
        info.struct_size = (ctypes.sizeof(_TuningInfo) if whole else
                            _TUNING_INFO_SIZE_V1)
        self._library.check(get(self._handle, rows, ctypes.byref(info), None, 0))
        count = info.num_candidates
        buffer = ((_Candidate2 if whole else _Candidate) * max(count, 1))()
        self._library.check(get(self._handle, rows, ctypes.byref(info), buffer,
                                count))
        candidates = tuple(
            Candidate(LaunchConfig._from_c(c.config), c.microseconds)
            for c in buffer[:count])
        winner = LaunchConfig._from_c(info.config,
                                      info.block_n if whole else 0,
                                      info.stages if whole else 0)
        return TuningInfo(PLAN_SOURCES.get(info.source, str(info.source)),
                          info.tuned_rows, winner, candidates)

    def _destroy(self, handle) -> None:
        self._library.dll.normjit_kernel_destroy(handle)


class Context(_Handle):
    """A libnormjit context on one CUDA device (normjit_context): kernels,
    their tuning and caches. Raises NormJitError (NO_DRIVER, NO_DEVICE, ...)
    when the device cannot be opened. pdl: programmatic dependent launch
    (NORMJIT_CONTEXT_PDL, compute capability 9.0 on)."""

    def __init__(self, device: int = 0, *, bundles: Sequence[str] = (),
                 cache_dir: Optional[str] = None, tuning: bool = True,
                 disk_cache: bool = True, driver_library: Optional[str] = None,
                 log_level: int = -1, library: Optional[Library] = None,
                 pdl: bool = False):
        self.library = library or load_library()
        dll = self.library.dll
        options = _ContextOptions()
        dll.normjit_context_options_init(ctypes.byref(options))
        options.device = device
        # Kept alive with the context: the C strings must outlive the call.
        self._strings = [s.encode() for s in bundles]
        self._bundles = (ctypes.c_char_p * max(len(bundles), 1))(*self._strings)
        options.bundles = self._bundles if bundles else None
        options.num_bundles = len(bundles)
        options.cache_dir = cache_dir.encode() if cache_dir else None
        options.driver_library = (driver_library.encode()
                                  if driver_library else None)
        options.flags = ((0 if tuning else CONTEXT_NO_TUNING) |
                         (0 if disk_cache else CONTEXT_NO_DISK_CACHE) |
                         (CONTEXT_PDL if pdl else 0))
        options.log_level = log_level
        handle = ctypes.c_void_p()
        self._handle = None
        self.library.check(dll.normjit_context_create(ctypes.byref(options),
                                                      ctypes.byref(handle)))
        self._handle = handle
        self.device = device

    def kernel(self, desc: OpDesc, *, tune: bool = True,
               refuse_misaligned: bool = False,
               config: Optional[LaunchConfig] = None) -> Kernel:
        """Builds (compiles, tunes, loads) or finds the kernel of `desc`.
        With `config`, launches of every row count run that configuration."""
        if self._handle is None:
            raise NormJitError(ERROR_INVALID_ARGUMENT, "invalid argument",
                               "the context is closed")
        flags = ((0 if tune else KERNEL_NO_TUNING) |
                 (KERNEL_REFUSE_MISALIGNED if refuse_misaligned else 0))
        c_desc = desc._to_c()
        handle = ctypes.c_void_p()
        dll = self.library.dll
        if config is None:
            status = dll.normjit_kernel_create(self._handle, ctypes.byref(c_desc),
                                               flags, ctypes.byref(handle))
        elif self.library.has("normjit_kernel_create_with_config2"):
            c_config = LaunchConfig(*config)._to_c2()
            status = dll.normjit_kernel_create_with_config2(
                self._handle, ctypes.byref(c_desc), ctypes.byref(c_config),
                flags, ctypes.byref(handle))
        else:
            create = self.library.require("normjit_kernel_create_with_config")
            c_config = LaunchConfig(*config)._to_c()
            status = create(self._handle, ctypes.byref(c_desc),
                            ctypes.byref(c_config), flags, ctypes.byref(handle))
        self.library.check(status)
        return Kernel(self.library, handle, desc)

    def backward_descs(self, forward: OpDesc) -> Tuple[OpDesc, ...]:
        """The backward operations of `forward` (Library.backward_descs)."""
        return self.library.backward_descs(forward)

    def write_bundle(self, descs: Iterable[OpDesc], path: str) -> None:
        """Writes a kernel bundle of the operations (tuning them first)."""
        descs = [d._to_c() for d in descs]
        # The array steps by sizeof(_OpDesc): every element says so.
        for desc in descs:
            desc.struct_size = ctypes.sizeof(_OpDesc)
        array = (_OpDesc * max(len(descs), 1))(*descs)
        self.library.check(self.library.dll.normjit_context_write_bundle(
            self._handle, array, len(descs), path.encode()))

    def _destroy(self, handle) -> None:
        # Kernels made from the context stay valid.
        self.library.dll.normjit_context_destroy(handle)
