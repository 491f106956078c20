"""The repository's corpus of ordinary NumPy programs (issue 13, item 7): the instrument that
measures how much of everyday NumPy code Stax compiles natively, correctly and fast.

Each program is a plain NumPy function written the way users write them (result buffers filled in
Python loops, masked corrections, stencils stepped in time, scalar-only generators, complex signal
code, distance matrices, tiny ODE right-hand sides, programs built around reductions: branches
on them, arguments updated in place then reduced, masks, column statistics, matrix-vector
steps, and iterations until a tolerance or a mask says stop), registered with its kind, a seeded input
maker, the tolerance its result is checked with against eager NumPy, and optionally a faithful
jax.numpy port. Numba is tried as ``numba.njit`` on the unmodified function.

Users: ``benchmarks/test_bench_corpus.py`` (``nox -s bench``), ``tools/corpus_report.py`` and
``packages/stax-runtime/tests/test_corpus_programs.py``. None of them needs more than NumPy to
import this package; the JAX ports look ``jax.numpy`` up when they run (``runners.py`` runs every
implementation).

Most Python-loop trip counts are modest: a short loop is unrolled at capture and rerolled into
kernels, and its compile time grows with its length. The ``*_long`` programs (and
``weighted_distances_70``, the issue's size) run loops long enough to be lifted whole: the body
compiled once and run per item (``stax.trace.loops``, ``stax.runtime.lifted_loops``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("buffers", "loops", "stencils", "masks", "scalars", "complex", "distances", "odes", "misc",
         "reductions", "iterations")


@dataclass(frozen=True)
class Program:
    """One corpus program. ``make_inputs(rng)`` returns the argument tuple; ``rtol``/``atol``
    bound the difference from eager NumPy's result (integers and booleans compare exactly)."""

    name: str
    kind: str
    fn: Callable[..., Any]
    make_inputs: Callable[[np.random.Generator], tuple]
    rtol: float = 1e-12
    atol: float = 0.0
    jax_port: Callable[..., Any] | None = None

    def inputs(self) -> tuple:
        """The program's arguments, the same in every process (seeded by the name)."""
        return self.make_inputs(np.random.default_rng(zlib.crc32(self.name.encode())))


def _load() -> dict[str, Program]:
    from . import (
        buffers,
        complex,
        distances,
        iterations,
        loops,
        masks,
        misc,
        odes,
        reductions,
        scalars,
        stencils,
    )

    programs: dict[str, Program] = {}
    for module in (buffers, loops, stencils, masks, scalars, complex, distances, odes, misc,
                   reductions, iterations):
        for program in module.PROGRAMS:
            if program.name in programs:
                raise ValueError(f"corpus program {program.name!r} is registered twice")
            if program.kind not in KINDS:
                raise ValueError(f"corpus program {program.name!r} has unknown kind {program.kind!r}")
            programs[program.name] = program
    return programs


#: every program by name, in kind order
PROGRAMS: dict[str, Program] = _load()


# -- checking a result against eager NumPy's -----------------------------------------------------

def mismatch(program: Program, got: Any, want: Any, *, exact_types: bool = True) -> str | None:
    """Why ``got`` is not eager NumPy's result ``want`` for ``program``, or None when it is.
    ``exact_types`` (Stax's contract) also requires the same dtype and the same kind of value
    (array or scalar); peers are held to values and shapes only."""
    return _mismatch(program, got, want, exact_types, "result")


def _mismatch(program: Program, got: Any, want: Any, exact: bool, where: str) -> str | None:
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{where}: expected a sequence of {len(want)}, got {type(got).__name__}"
        for i, (g, w) in enumerate(zip(got, want)):
            reason = _mismatch(program, g, w, exact, f"{where}[{i}]")
            if reason:
                return reason
        return None
    if exact and isinstance(want, np.ndarray) != isinstance(got, np.ndarray):
        return f"{where}: expected {type(want).__name__}, got {type(got).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return f"{where}: shape {g.shape} instead of {w.shape}"
    if exact and g.dtype != w.dtype:
        return f"{where}: dtype {g.dtype} instead of {w.dtype}"
    if w.dtype.kind in "biu":
        bad = g != w
    else:
        bad = ~_close(g, w, program.rtol, program.atol)
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0])
    gv, wv = np.atleast_1d(g)[first], np.atleast_1d(w)[first]
    return (f"{where}: {int(np.count_nonzero(bad))} of {w.size} elements differ beyond rtol="
            f"{program.rtol:g} atol={program.atol:g}; first at {first}: {gv!r} instead of {wv!r}")


def _close(g: np.ndarray, w: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    if w.dtype.kind == "c" or g.dtype.kind == "c":
        return _close(g.real, w.real, rtol, atol) & _close(g.imag, w.imag, rtol, atol)
    g, w = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(g - w) <= atol + rtol * np.abs(w)
    # NaN where NumPy has NaN, the same infinity where NumPy has it
    return near | (np.isnan(g) & np.isnan(w)) | (np.isinf(w) & (g == w))


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
