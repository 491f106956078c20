"""What a backend tells the loop layer about itself (issue 11: the loop layer owns no backend
limits). ``lower_opgraph`` takes a ``LoopOptions``; its defaults are the CPU backend's values,
until a ``Target`` of the code generator supplies them.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

import numpy as np

#: dtypes the CPU kernels compute in; float16 waits for a checked rounding story in codegen
LOOP_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float32", "float64"})
#: sin, cos and tan (float32 and float64) are computed natively for |x| below this (2^23 pi/2,
#: the range of the CPU kernels' fast argument reductions, ARCHITECTURE.md §4)
TRIG_REDUCTION_LIMIT = 2.0 ** 23 * np.pi / 2
#: |a / b| below which the CPU kernels' quotient truncation is off by at most one (then
#: corrected), so fmod(a, b) = fma(-n, b, a) is exact
FMOD_EXACT_QUOTIENT = {"float32": 2.0 ** 22, "float64": 2.0 ** 51}


@dataclass(frozen=True)
class FloatLimits:
    """A bound per float dtype; ``None`` where the backend has none for that dtype."""

    float32: float | None = None
    float64: float | None = None

    def get(self, dtype: str) -> float | None:
        return getattr(self, dtype, None) if dtype in ("float32", "float64") else None


@dataclass(frozen=True)
class LoopOptions:
    """The backend's side of lowering an op graph to loops. Frozen and hashable, so a backend's
    target can hold one and a cache can key on it.

    ``dtypes``: the dtypes kernels compute in; an op whose result or array operands have another
    dtype runs as its NumPy reference (an extern call), unless its rule handles every dtype.
    ``trig_reduction_limit``: per float dtype, the |x| from which a sin/cos/tan argument is
    beyond the kernels' argument reduction; a check buffer flags such an argument and the call
    runs as NumPy (``None``: no check, the kernels are good everywhere).
    ``fmod_exact_quotient``: per float dtype, the |a / b| below which the kernels' fmod is exact;
    a check buffer flags larger quotients (``None``: float // and % run as NumPy).
    ``ops``: the ops the backend's kernels implement (its basis); another op runs as its NumPy
    reference (``None``: every op the loop layer lowers).
    ``max_depth``: an element-wise value more than this many ops deep (counted from the last
    value in memory) is realized into a buffer: a 2,000-op chain otherwise becomes one expression
    tree whose recursive walks overflow Python's stack, and whose kernel compiles slowly.
    ``split_min``, ``split_chunks``: a reduction of every axis over at least ``split_min``
    elements is split into partial reductions over chunks (a 1-D one into at most
    ``split_chunks`` chunks that divide it, of a multiple of ``split_align`` elements where at
    least a quarter as many chunks have one), which the backend's threads share.
    ``update_in_place``: an assignment into a value in memory that nothing else reads
    (``out[i, :] = ...`` after ``out[i - 1, :] = ...``) is a region update of that buffer (a
    kernel over the region only, ``ComputedBuffer.updates``); otherwise every assignment is a
    select over the whole array, fused into its readers — cheaper where a kernel launch costs
    more than a pass over the array. ``select_chain``: how many assignments in a row stay
    selects before the chain is written to memory and updated in place. ``complex_parts``:
    complex values are computed as pairs of floats (``complex_values``); otherwise a program
    with a complex value is refused (the function runs eagerly). ``overwrite_arguments``: the
    final value of an argument the function updates in place is computed by a buffer the backend
    writes over that argument once the call stands (``LoopProgram.overwrites``); otherwise it is
    an output the caller copies into the argument. ``late_reports``: such a value that is one
    float ``+ - * /`` applied in place (``x -= m``) may report its floating-point events after
    it wrote the argument, as NumPy's in-place ufunc does (``LoopProgram.late_reports``; the
    backend's kernels must know a single operation's events exactly, from the CPU's flags);
    otherwise a twin computes its events with the program, before anything is written.
    """

    dtypes: frozenset[str] = LOOP_DTYPES
    trig_reduction_limit: FloatLimits = field(
        default_factory=lambda: FloatLimits(float32=TRIG_REDUCTION_LIMIT,
                                            float64=TRIG_REDUCTION_LIMIT))
    fmod_exact_quotient: FloatLimits = field(
        default_factory=lambda: FloatLimits(**FMOD_EXACT_QUOTIENT))
    ops: frozenset[str] | None = None
    max_depth: int = 128
    split_min: int = 1 << 16
    split_chunks: int = 64
    split_align: int = 16
    update_in_place: bool = True
    select_chain: int = 8
    complex_parts: bool = True
    overwrite_arguments: bool = True
    #: the CPU target's on x86-64 (its kernels read the CPU's flags), so code that lowers with
    #: the defaults and generates for this host's CPU gets what the runtime gets
    late_reports: bool = platform.machine() in ("x86_64", "AMD64")

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtypes", frozenset(self.dtypes))
        if self.ops is not None:
            object.__setattr__(self, "ops", frozenset(self.ops))
        for name in self.dtypes:
            if np.dtype(name).kind not in "biuf" or np.dtype(name).name != name:
                raise ValueError(f"LoopOptions.dtypes: {name!r} is not a bool, integer or float "
                                 "dtype name")


DEFAULT_OPTIONS = LoopOptions()
