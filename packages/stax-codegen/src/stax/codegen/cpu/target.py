"""The host CPU as a ``Target``: LLVM kernels for this process's CPU, with the limits of this
package's float kernels and the CPU cost model (``costs.py``)."""

from __future__ import annotations

import functools

from stax.loop import LOWERINGS, OPERATORS

from ..diskcache import directory_from_environment
from ..target import NumericLimits, Target
from . import parallel_work, rules
from .costs import keep_in_memory, work
from .host import COMPILER_VERSION, host_identity, vector_choice
from .registry import emits
from .vmath.trig32 import TRIG32_LIMIT
from .vmath64.trig import TRIG_LIMIT

#: dtypes the CPU kernels compute in; float16 waits for a checked rounding story
LOOP_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float32", "float64"})
#: |a / b| below which the emitted fmod (``py_mod``/``py_floordiv``, ``division.py``: a truncated
#: quotient n, corrected by at most one, then fma(-n, b, a)) is exact
FMOD_EXACT_QUOTIENT = (("float32", 2.0 ** 22), ("float64", 2.0 ** 51))


def cpu_basis() -> frozenset[str]:
    """The ops the CPU kernels implement: every op the loop layer lowers, less an op that is a
    loop operator without a CPU emitter (``registry.emits``; ``rules`` registers them all). An op
    outside the basis is decomposed where it has a rule, else a NumPy step."""
    assert rules.EMITTER_MODULES  # the emitter tables are filled
    return frozenset(op for op in LOWERINGS if op not in OPERATORS or emits(op))


@functools.cache
def cpu_target() -> Target:
    """The target of this process's CPU, probed once on first use."""
    return Target(identity=host_identity(), basis=cpu_basis(), loop_dtypes=LOOP_DTYPES,
                  limits=NumericLimits(trig_reduction=(("float32", TRIG32_LIMIT),
                                                       ("float64", TRIG_LIMIT)),
                                       fmod_exact_quotient=FMOD_EXACT_QUOTIENT),
                  materialize=keep_in_memory, element_cost=work,
                  compiler_version=COMPILER_VERSION,
                  parallel_work=parallel_choice()[0],
                  phased_columns=True, overwrite_arguments=True,
                  # the fast kernels read the CPU's exception flags there (``fpevents.py``)
                  late_reports=host_identity().triple.startswith("x86_64"))


@functools.cache
def parallel_choice() -> tuple[int, str]:
    """(work, why): the cost units from which this host's kernels are split over the thread
    pool, and how it was decided (``parallel_work.threshold``: once per machine, recorded)."""
    return parallel_work.threshold(directory_from_environment())


def describe_host() -> str:
    """This host's decisions, with how each was made: a line for ``STAX_LOGS=kernels``."""
    identity = host_identity()
    bits, width_why = vector_choice()
    work, work_why = parallel_choice()
    width = f"{bits}-bit vectors ({width_why})" if bits else f"vectors: {width_why}"
    return (f"host {identity.cpu} ({identity.triple}): {width}; kernels of {work} cost units "
            f"and more split over the thread pool ({work_why})")
