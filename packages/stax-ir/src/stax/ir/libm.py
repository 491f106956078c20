"""C's ``pow``, the function CPython's float ``**`` computes with (``float_pow`` sorts out the
special operands first, exactly as C99's Annex F does, then calls ``pow``; a non-finite result
of finite operands is its ``OverflowError``, ``ZeroDivisionError`` or complex result).

glibc's ``pow`` is within 0.52 ulp, not correctly rounded: ``x ** 2`` differs from ``x * x`` for
about 0.09% of doubles, so Python's ``sigma ** 2`` is computed by this very function, found in
the process (CPython resolved its own from it), for the result to be CPython's bit for bit: the
reference here, and the compiled kernels' call (``stax.codegen.cpu.libm``), whose symbol LLVM
does not know, so it never rewrites it as ``x * x``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

import numpy as np


def _find_pow() -> Any:
    """The process's ``pow`` (the one CPython calls), else the C math library's."""
    for name in (None, ctypes.util.find_library("m")):
        try:
            found = ctypes.CDLL(name).pow
        except (OSError, AttributeError, TypeError):
            continue
        found.restype = ctypes.c_double
        found.argtypes = (ctypes.c_double, ctypes.c_double)
        return found
    raise ImportError("no C pow function found in this process or the C math library")


C_POW = _find_pow()
#: the address of ``C_POW``, for compiled code to call
C_POW_ADDRESS: int = ctypes.cast(C_POW, ctypes.c_void_p).value or 0


def python_pow_reference(a: Any, b: Any) -> Any:
    """``pow(a, b)`` element by element in double precision, rounded to the operands' float
    dtype: Python's ``a ** b`` of floats where that is a float, the non-finite value C gives
    where Python raises or returns a complex number (a compiled call then declines)."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.result_type(a, b)
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    wide_a, wide_b = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    out = np.empty(wide_a.shape, np.float64)
    for at in np.ndindex(out.shape):
        out[at] = C_POW(float(wide_a[at]), float(wide_b[at]))
    with np.errstate(all="ignore"):
        return out.astype(dtype)[()] if out.ndim == 0 else out.astype(dtype)
