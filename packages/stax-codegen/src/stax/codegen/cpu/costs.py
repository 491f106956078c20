"""What work costs on this backend: operations per element, and when a value shared by several
readers is worth keeping in memory instead of recomputing it in each (spec §6.6).

The loop layer inlines every pointwise value into its readers (lowering is fusion); for a value
read several times (several users, or a broadcast that reads each element many times) it asks
the backend's policy. The model compares, per element of the value: recomputing it in every
read (its operations and the loads of its operands) against computing it once, writing it and
reading it back. Constants measured on the 2-core AVX-512 bench machine: each function's time per
element (``FUNCTION_NS``), 0.025 ns for any other float32 operation (16 lanes a vector), twice
that for 8-byte types, and 0.1 ns per byte streamed on one thread.
"""

from __future__ import annotations

import numpy as np

from stax.loop import GuardedLoad, IndirectLoad, Load, Reuse, Select, postorder

#: single-thread nanoseconds per element (float32, float64) of this backend's functions,
#: measured on the bench machine (256K elements, one kernel each); every other operation costs
#: one unit (UNIT_NS), two for 8-byte types (half the lanes)
FUNCTION_NS = {
    "exp": (0.32, 2.06), "log": (0.52, 2.29), "tanh": (0.43, 3.88), "sin": (2.97, 2.54),
    "cos": (3.16, 2.59), "tan": (3.38, 3.25), "log2": (1.58, 2.55), "log10": (1.58, 2.55),
    "log1p": (2.18, 4.02), "expm1": (1.6, 4.17), "exp2": (1.42, 2.34), "sinh": (1.74, 2.91),
    "cosh": (1.6, 2.6), "cbrt": (3.57, 2.99), "arctan": (1.4, 2.83), "arcsin": (2.08, 3.15),
    "arccos": (1.94, 3.31), "arcsinh": (2.12, 5.61), "arccosh": (2.2, 5.49),
    "arctanh": (2.09, 4.89), "sqrt": (0.18, 0.55), "pow": (3.76, 6.89), "hypot": (0.55, 0.97),
    "arctan2": (1.68, 4.3), "logaddexp": (3.79, 6.98), "logaddexp2": (3.79, 6.98),
    "truediv": (0.1, 0.2), "python_pow": (3.76, 6.89),
}
UNIT_NS = 0.025
NS_PER_BYTE = 0.1
#: recomputation must cost this much more than the memory round trip before a value is kept:
#: a kept value also costs a kernel launch and loses fusion of its readers with its operands
MARGIN = 1.25


def units(op: str, dtype: str) -> int:
    """The cost of one element of ``op`` in ``dtype``, in units of UNIT_NS."""
    wide = np.dtype(dtype).itemsize == 8
    if op in FUNCTION_NS:
        return max(1, round(FUNCTION_NS[op][wide] / UNIT_NS))
    return 2 if wide else 1


def operations(expr: object) -> int:
    """Cost units to compute one element of ``expr`` (its loads included)."""
    return sum(units(getattr(e, "op", ""), e.dtype) for e in postorder(expr))


def work(expr: object, loads: bool = False) -> int:
    """Cost units one element of ``expr`` takes in a kernel (the parallel decision's measure):
    arithmetic on the loop indices alone costs nothing (constants, ``arange``, a block's bounds
    test: folded or hoisted by LLVM, and the short loops it branches on are unrolled; a function
    of them, ``exp`` of a ``linspace``, is charged), and a
    select on such a condition computes one of its branches per element, charged as the dearer
    one. ``operations`` charged all of them: a 6-block diagonal matrix's zero fill looked 8x
    dearer than measured and went to the thread pool. Nor are a kernel's loads along its loops
    (affine, guarded) work: what they cost is the memory they move, which the plan weighs apart
    (``generate.SPLIT_BYTES``). Counted as work, a stream of a megabyte or two in the caller's
    cache went to the pool and lost there (AMD EPYC, 2 vCPUs: ``X - m`` on (500, 400) float64
    80 us on one thread, 97 split); a gather still counts. ``loads``: count them (the emitter's
    interleaving measure, ``emit.py``)."""
    memo: dict[int, tuple[int, bool]] = {}

    def cost(e: object) -> tuple[int, bool]:  # (units, reads data)
        found = memo.get(id(e))
        if found is not None:  # computed once, read again
            return 0, found[1]
        parts = [cost(c) for c in e.children()]  # type: ignore[attr-defined]
        reads = isinstance(e, (Load, IndirectLoad, GuardedLoad)) or any(r for _, r in parts)
        op = getattr(e, "op", "")
        # index arithmetic folds or hoists; a function of the index (exp of an arange) does not
        own = units(op, e.dtype) if reads or op in FUNCTION_NS else 0  # type: ignore[attr-defined]
        if isinstance(e, (Load, GuardedLoad)) and not loads:  # memory, weighed apart
            own = 0
        if isinstance(e, Select) and not parts[0][1]:
            total = own + max(parts[1][0], parts[2][0])
        else:
            total = own + sum(u for u, _ in parts)
        memo[id(e)] = (total, reads)
        return total, reads
    return cost(expr)[0]


def loaded_bytes(expr: object) -> int:
    return sum(np.dtype(e.dtype).itemsize for e in postorder(expr)
               if isinstance(e, (Load, IndirectLoad, GuardedLoad)))


def keep_in_memory(reuse: Reuse) -> bool:
    """The CPU backend's materialization policy (``stax.loop.lower_opgraph(materialize=...)``).
    A function result others read is always kept (its buffer is written anyway: readers load
    it instead of recomputing it); another value when recomputing it in every read costs
    ``MARGIN`` times more than writing it once and reading it back."""
    per_element = operations(reuse.expr) * UNIT_NS + loaded_bytes(reuse.expr) * NS_PER_BYTE
    item = np.dtype(reuse.dtype).itemsize * NS_PER_BYTE
    if reuse.output:
        return per_element > item
    factor = reuse.reads / reuse.numel
    return (factor - 1) * per_element > MARGIN * (1 + factor) * item


#: functions whose inlined code is a few instructions: no weight in a compile's budget
_SHORT = frozenset({"sqrt", "truediv", "hypot"})


def inlined_functions(nodes: object) -> int:
    """Evaluations of this backend's longer functions (``FUNCTION_NS``: ``sin``, ``exp``,
    ``pow``...) in the bodies of a kernel's buffers: what its compile costs beyond the
    arithmetic (``program_plan.FUNCTION_BUDGET``)."""
    count = 0
    for node in nodes:  # type: ignore[attr-defined]
        data = getattr(node, "data", None)
        body = getattr(data, "body", None)
        if body is None:
            continue
        count += sum(1 for e in postorder(body)
                     if getattr(e, "op", None) in FUNCTION_NS and e.op not in _SHORT)
    return count

