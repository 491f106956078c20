"""Whether an ordered update's iterations touch rows of their own (a legal loop interchange).

A rerolled loop that reads what an earlier iteration stored runs its iterations in order
(``ComputedBuffer.ordered``: the outermost loop in order, the loops inside it free):
``V[:, k] = V[:, k - 1] * x`` (a Vandermonde matrix, an IIR filter over many channels
``y[:, t] = a * y[:, t - 1] + u[:, t]``) runs ``for k: for i: V[i, k + 1] = V[i, k] * x[i]``, a
pass over every row per ``k`` at a stride of a row: as slow as NumPy's column-by-column steps
(0.94x NumPy on a 5000x9 Vandermonde matrix).

Where every access of the updated buffer, at a point of the inner loops, stays within a row of
its own, disjoint from every other point's, the iterations of one row depend only on each other:
the loop over them may run innermost, in order, with the rows outermost (``for i: for k:``), each
row written once, contiguously, and rows apart on different threads. A code generator may take
that order (``stax.codegen.nesting.plain_order``); the node means the same either way. The test,
on affine indices:

- every read of the updated buffer has the store's coefficients on the inner loops (so the inner
  loops move every access alike), and none is indirect;
- over the outer loop's range, the store and those reads span ``span`` elements; the inner
  loops' coefficients, sorted by magnitude, each exceed the span of the ones before, starting
  from ``span`` (a mixed-radix layout whose smallest step clears a row's accesses).

Dependences then join only points of one row, whose order the innermost loop keeps.
"""

from __future__ import annotations

from .expr import IndirectLoad, loads
from .ir import ComputedBuffer, Pointwise, xvar


def rows_apart(node: ComputedBuffer) -> bool:
    """Whether ``node``, an ordered pointwise update (its outermost loop over iterations), may run
    with that loop innermost: each point of the inner loops touches a row of the buffer it
    updates that no other point touches."""
    data = node.data
    if not node.ordered or node.updates is None or node.store_offset is not None or \
            not isinstance(data, Pointwise) or len(data.ranges) < 2 or \
            any(type(n) is not int or n == 0 for n in data.ranges):
        return False
    ranges = data.ranges
    reads = [r for r in loads(data.body) if r.buffer == node.updates]
    if any(type(r) is IndirectLoad for r in reads):
        return False
    store = node.store_index
    accesses = [store, *(r.index for r in reads)]
    inner = [xvar(d) for d in range(1, len(ranges))]
    if any(type(a.coefficient(v)) is not int or a.coefficient(v) != store.coefficient(v)
           for a in accesses for v in [xvar(0), *inner]) or \
            any(type(a.const) is not int for a in accesses):
        return False
    outer = {xvar(0): ranges[0]}
    bounds = [a.substitute({v: 0 for v in inner}).bounds(outer) for a in accesses]
    span = max(high for _, high in bounds) - min(low for low, _ in bounds)
    for step, n in sorted((abs(store.coefficient(v)), n) for v, n in zip(inner, ranges[1:])
                          if n > 1):
        if step <= span:
            return False
        span += step * (n - 1)
    return True
