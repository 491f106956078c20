"""NumPy's own BLAS, called from machine code: a matrix product between kernels without the
interpreter (``entry_blas.py``).

A program with a matrix product ran it as a NumPy step, so it had no machine-code entry: every
call went through the written-out Python call (about 5 us more than a plan of kernels alone,
and a NumPy call per product). NumPy's ``matmul`` of two 2-D float matrices whose sizes are all
above 1 is one ``cblas_?gemm`` call of the BLAS NumPy was built with (``matmul.c.src``:
row-major, each operand transposed or not by which of its axes is contiguous, ``alpha`` 1,
``beta`` 0), except a matrix times its own transpose (``syrk``). The entry makes that same call,
on the same library NumPy loaded, so the product is NumPy's bit for bit.

The library is the one among the process's mappings whose name says OpenBLAS (NumPy's wheels
load ``scipy_openblas``), its ``cblas_?gemm`` found by the symbol names such builds export
(``scipy_cblas_dgemm64_``: 64-bit integers). Anything else — another BLAS, symbols not found,
or a product that differs in one bit from ``np.matmul`` on the probe matrices — leaves such
plans without an entry, as before.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: (symbol prefix, suffix, 64-bit integers): the names OpenBLAS builds export, NumPy's first
_NAMES = (("scipy_cblas_", "64_", True), ("cblas_", "64_", True), ("scipy_cblas_", "", False),
          ("cblas_", "", False))
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


@dataclass(frozen=True)
class Gemm:
    """``cblas_?gemm`` of NumPy's BLAS: its address per float dtype, and whether its integers
    are 64-bit."""

    address: dict[str, int]
    ilp64: bool


def _library() -> ctypes.CDLL | None:
    """The OpenBLAS library this process mapped for NumPy, opened again (no second copy): the
    one NumPy's wheel ships beside it (``numpy.libs``) first, then any other (SciPy's may be
    mapped too: the probe in ``numpys_gemm`` must then tell NumPy's products from it)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None
    home = str(Path(np.__file__).resolve().parent.parent / "numpy.libs")
    for path in sorted((p for p in paths if p.startswith("/") and ".so" in p),
                       key=lambda p: (not p.startswith(home), p)):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _call(gemm: Gemm, dtype: np.dtype, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` through ``gemm`` with NumPy's arguments (the probe; ``entry_blas`` emits the
    same call in machine code)."""
    integer = ctypes.c_int64 if gemm.ilp64 else ctypes.c_int32
    real = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer,
                          integer, real, ctypes.c_void_p, integer, ctypes.c_void_p, integer,
                          real, ctypes.c_void_p, integer)(gemm.address[dtype.name])
    out = np.empty((a.shape[0], b.shape[1]), dtype)
    (ta, lda), (tb, ldb) = operand(a.strides, a.shape, dtype.itemsize), \
        operand(b.strides, b.shape, dtype.itemsize)
    fn(ROW_MAJOR, ta, tb, a.shape[0], b.shape[1], a.shape[1], 1.0, a.ctypes.data, lda,
       b.ctypes.data, ldb, 0.0, out.ctypes.data, out.strides[0] // dtype.itemsize)
    return out


def operand(strides: tuple[int, ...], shape: tuple[int, ...], itemsize: int
            ) -> tuple[int, int] | None:
    """(transpose, leading dimension) of a 2-D operand as NumPy's ``matmul`` passes it: not
    transposed when its rows are contiguous, transposed when its columns are; None when
    neither (NumPy copies it first)."""
    (s0, s1), (n0, n1) = strides, shape
    if s1 == itemsize and s0 % itemsize == 0 and s0 // itemsize >= n1:
        return NO_TRANS, s0 // itemsize
    if s0 == itemsize and s1 % itemsize == 0 and s1 // itemsize >= n0:
        return TRANS, s1 // itemsize
    return None


@functools.cache
def numpys_gemm() -> Gemm | None:
    """NumPy's ``cblas_sgemm``/``cblas_dgemm``, checked bit for bit against ``np.matmul`` on
    probe matrices of both orders; None where it cannot be found or differs."""
    library = _library()
    if library is None:
        return None
    for prefix, suffix, ilp64 in _NAMES:
        try:
            address = {dtype: ctypes.cast(getattr(library, f"{prefix}{kind}gemm{suffix}"),
                                          ctypes.c_void_p).value
                       for dtype, kind in (("float32", "s"), ("float64", "d"))}
        except AttributeError:
            continue
        gemm = Gemm(address, ilp64)  # type: ignore[arg-type]
        return gemm if _agrees(gemm) else None
    return None


def _agrees(gemm: Gemm) -> bool:
    rng = np.random.default_rng(0)
    for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
        for m, n, p in ((5, 7, 3), (64, 64, 64), (33, 130, 17), (260, 96, 300)):
            a = rng.standard_normal((m, n)).astype(dtype)
            b = rng.standard_normal((n, p)).astype(dtype)
            for x, y in ((a, b), (np.asfortranarray(a), b), (a, np.asfortranarray(b))):
                if not np.array_equal(_call(gemm, dtype, x, y).view(np.uint8),
                                      np.matmul(x, y).view(np.uint8)):
                    return False
    return True
