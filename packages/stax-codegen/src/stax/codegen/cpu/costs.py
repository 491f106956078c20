"""What work costs on this backend: operations per element, and when a value shared by several
readers is worth keeping in memory instead of recomputing it in each (spec §6.6).

The loop layer inlines every pointwise value into its readers (lowering is fusion); for a value
read several times (several users, or a broadcast that reads each element many times) it asks
the backend's policy. The model compares, per element of the value: recomputing it in every
read (its operations and the loads of its operands) against computing it once, writing it and
reading it back. Constants measured on the 2-core AVX-512 bench machine: a float32 operation
lane costs about 0.025 ns (16 lanes a vector; tanh's 30 operations about 0.75 ns per element),
float64 twice that, and a byte streamed 0.1 ns on one thread.
"""

from __future__ import annotations

import numpy as np

from stax.loop import GuardedLoad, IndirectLoad, Load, Reuse, postorder

#: operations per element by operator (a load or an add counts 1)
OP_COST = {"exp": 20, "log": 20, "tanh": 30, "sin": 45, "cos": 45, "sqrt": 4, "truediv": 4,
           "pow": 45, "log2": 25, "log10": 25, "log1p": 25, "expm1": 25, "exp2": 25, "sinh": 30,
           "cosh": 30, "cbrt": 45, "hypot": 6, "arctan": 30, "arcsin": 35, "arccos": 35,
           "arcsinh": 30, "arccosh": 30, "arctanh": 30, "tan": 50, "arctan2": 35}
NS_PER_OPERATION = {"float64": 0.05, "int64": 0.05, "uint64": 0.05}   # else 0.025
NS_PER_BYTE = 0.1
#: recomputation must cost this much more than the memory round trip before a value is kept:
#: a kept value also costs a kernel launch and loses fusion of its readers with its operands
MARGIN = 1.25


def operations(expr: object) -> int:
    """Operations to compute one element of ``expr`` (its loads included)."""
    return sum(OP_COST.get(getattr(e, "op", ""), 1) for e in postorder(expr))


def loaded_bytes(expr: object) -> int:
    return sum(np.dtype(e.dtype).itemsize for e in postorder(expr)
               if isinstance(e, (Load, IndirectLoad, GuardedLoad)))


def keep_in_memory(reuse: Reuse) -> bool:
    """The CPU backend's materialization policy (``stax.loop.lower_opgraph(materialize=...)``).
    A function result others read is always kept (its buffer is written anyway: readers load
    it instead of recomputing it); another value when recomputing it in every read costs
    ``MARGIN`` times more than writing it once and reading it back."""
    per_element = operations(reuse.expr) * NS_PER_OPERATION.get(reuse.dtype, 0.025) + \
        loaded_bytes(reuse.expr) * NS_PER_BYTE
    item = np.dtype(reuse.dtype).itemsize * NS_PER_BYTE
    if reuse.output:
        return per_element > item
    factor = reuse.reads / reuse.numel
    return (factor - 1) * per_element > MARGIN * (1 + factor) * item
