"""The planner's optional native core (C, in `csrc/`), reached through ctypes.

`pip install` compiles it when a C compiler is present (setup.py marks it optional); without
one, or with the environment variable USMP_NATIVE=0, `load()` returns None and the planners run
their numpy implementations, which give the same plans (tests compare the two bit for bit).
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

import numpy as np

INT = np.int64

_I64 = ctypes.c_int64
_PTR = ctypes.c_void_p

NATIVE_ABI = 3
"""USMP_NATIVE_ABI of csrc/native.h: a library reporting another one is not used."""

_SIGNATURES: dict[str, tuple[type, list[type]]] = {
    "usmp_native_abi": (ctypes.c_int32, []),
    "usmp_greedy_place": (_I64, [_I64, _PTR, _PTR, _PTR, _PTR, _I64, _PTR, _I64, _PTR, _PTR,
                                 _PTR, _PTR, _PTR, _PTR, _PTR, _I64, ctypes.c_int32, _PTR, _PTR]),
    "usmp_exact_search": (ctypes.c_int32, [_I64, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _I64, _PTR,
                                           _I64, _PTR, _PTR, _PTR, ctypes.c_char_p, _I64, _I64,
                                           ctypes.c_double, _PTR, _PTR]),
    "usmp_interval_graph": (_I64, [_I64, _I64, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR]),
}  # fmt: skip


@cache
def load() -> ctypes.CDLL | None:
    """The native library, or None when it is not built or USMP_NATIVE=0 turns it off."""
    if os.environ.get("USMP_NATIVE", "1") == "0":
        return None
    try:
        from usmp_dialect.planning import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    library = ctypes.CDLL(_native.__file__)
    for name, (result, arguments) in _SIGNATURES.items():
        function = getattr(library, name, None)
        if function is None:  # a build from other sources: use numpy
            return None
        function.restype = result
        function.argtypes = arguments
    if library.usmp_native_abi() != NATIVE_ABI:  # built from other sources: use numpy
        return None
    return library


def pointer(array: np.ndarray) -> int:
    """The address of a C-contiguous int64 array's data (the caller keeps the array alive)."""
    assert array.dtype == INT and array.flags.c_contiguous
    return array.ctypes.data


def int64_array(values: np.ndarray) -> np.ndarray:
    """`values` as a C-contiguous int64 array (no copy when it already is one)."""
    return np.ascontiguousarray(values, dtype=INT)
