"""Running a corpus program with each implementation: eager NumPy, Stax, Numba (``njit`` on the
unmodified function) and JAX (the program's faithful port under ``jax.jit``). A runner is a
zero-argument callable; a peer that is not installed, does not compile or has no port gives None
and the reason. Stax is imported only by the functions that use it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from . import Program

Runner = Callable[[], Any]


def copies(args: tuple) -> tuple:
    """The arguments with every array copied (a program must not see another's writes)."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def how_it_runs(compiled: Any, args: tuple) -> tuple[str, str, int]:
    """``(runs_as, detail, gates)`` of the Stax version ``compiled.explain(*args)`` selects:
    ``native`` (LLVM kernels only), ``steps`` (native, with the NumPy calls named in ``detail``
    between the kernels) or ``fallback`` (eager, for the reason in ``detail``); ``gates`` counts
    the data gates replayed on every call."""
    matching = [report for report in compiled.explain(*args) if report.matches]
    if not matching:
        return "fallback", "no cached version applies to these arguments", 0
    version = compiled.versions()[matching[0].index]
    if not version.native:
        return "fallback", version.reason or "", 0
    gates = len(version.gates.kinds) if version.gates is not None else 0
    externs = sorted({e.target for e in version.artifact.externs}) if version.artifact else []
    return ("steps" if externs else "native"), ", ".join(externs), gates


def numpy_runner(program: Program, args: tuple) -> tuple[Runner, str]:
    return (lambda: program.fn(*args)), "eager"


class StaxRun:
    """``stax.runtime.compile(program.fn)`` called on the arguments; it compiles on the first
    call, after which :func:`how_it_runs` of ``compiled`` says how it ran."""

    def __init__(self, program: Program, args: tuple) -> None:
        import stax.runtime as stax

        self.compiled = stax.compile(program.fn)
        self.args = args

    def __call__(self) -> Any:
        return self.compiled(*self.args)

    def how(self) -> str:
        runs_as, detail, gates = how_it_runs(self.compiled, self.args)
        return runs_as + (f" ({detail})" if detail else "") + (f", {gates} gates" if gates else "")


def stax_runner(program: Program, args: tuple) -> tuple[Runner, str]:
    """Not compiled yet: the first call compiles (``StaxRun.how`` says how it runs after it)."""
    return StaxRun(program, args), ""


def numba_runner(program: Program, args: tuple) -> tuple[Runner | None, str]:
    """``numba.njit`` on the unmodified function, compiled by a first call here."""
    try:
        import numba
    except ImportError:
        return None, "numba is not installed"
    jitted = numba.njit(program.fn)
    try:
        jitted(*copies(args))
    except Exception as exc:  # Numba's typing and lowering errors have no common base
        return None, f"does not compile ({type(exc).__name__}: {_numba_reason(str(exc))})"
    return (lambda: jitted(*args)), "compiles"


_NUMBA_CAUSES = ("No implementation of function", "Unknown attribute", "Use of unsupported",
                 "Untyped global name", "Cannot", "Invalid use of", "not supported", "unsupported")


def _numba_reason(message: str) -> str:
    """The line of a Numba error that names the construct (its first line says only which
    pipeline stage failed)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for cause in _NUMBA_CAUSES:
        for line in lines:
            if cause in line:
                return line[:160]
    return lines[0][:160] if lines else "no message"


def jax_runner(program: Program, args: tuple) -> tuple[Runner | None, str]:
    """The port under ``jax.jit`` on the CPU with 64-bit types (the programs' float64 is NumPy's
    default); Python scalars are compile-time constants, as Stax specializes on them."""
    if program.jax_port is None:
        return None, "no JAX port written"
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
    except ImportError:
        return None, "jax is not installed"
    jax.config.update("jax_enable_x64", True)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def port(*values):
        full = list(args)
        for i, v in zip(arrays, values):
            full[i] = v
        return program.jax_port(*full)

    jitted = jax.jit(port)
    device = [jax.device_put(args[i]) for i in arrays]

    def run():
        return jax.block_until_ready(jitted(*device))

    run()
    return run, "port"


RUNNERS = {"numpy": numpy_runner, "stax": stax_runner, "numba": numba_runner, "jax": jax_runner}


def to_numpy(result: Any) -> Any:
    """A peer's result as NumPy values (JAX arrays to ndarrays, tuples kept)."""
    if isinstance(result, (tuple, list)):
        return type(result)(to_numpy(r) for r in result)
    return np.asarray(result) if not isinstance(result, (np.ndarray, np.generic, int, float, complex)) \
        else result
