"""The test suite's fake CUDA driver (test/Unit/Runtime/FakeCudaDriver.cpp)
seen from Python: its record of launches."""

import ctypes


class FakeLaunch(ctypes.Structure):
    """struct fakecuda_launch of test/Unit/Runtime/FakeCuda.h."""
    _fields_ = [("kernel", ctypes.c_char * 128), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("num_params", ctypes.c_int),
                ("params", ctypes.c_uint64 * 32),
                ("programmatic", ctypes.c_int)]


def load_fake(path: str) -> ctypes.CDLL:
    """The fake driver at `path`, its fakecuda_* calls typed."""
    fake = ctypes.CDLL(path)
    fake.fakecuda_get_launch.argtypes = [ctypes.c_int,
                                         ctypes.POINTER(FakeLaunch)]
    return fake
