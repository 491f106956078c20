"""Scalars an unrolled loop's iteration reads from the array it updates, inlined into the update.

An Euler step written on a trajectory, ``s, i, r = traj[k]; traj[k + 1] = traj[k] + dt *
np.array([-beta * s * i / n, ...])``, unrolls into iterations of two kinds of buffer: 0-d values
computed from row ``k`` (the new row's elements that are not plain copies) and the region
update of row ``k + 1`` that reads them. Such a value reads what the run writes (the update
before it), so rerolling (``reroll.py``) cannot compute every iteration's value first as one
buffer: the order of the iterations matters, and the run stayed unrolled. 20 steps were 41
kernels and a second of compiling on a first call.

Where such a value is read by that one update only, and reads none of the positions the update
writes (it would see what the update wrote before it: a row normalized by its own sum), it is
inlined there: the update computes
it where it reads it (under the same guard, so once, with the same floating-point events), the
iteration is its update alone, and the run rerolls into one loop run in order. Only 0-d
element-wise values are inlined, and only small ones (``MAX_NODES``): a value the update read
at every element would be computed at every element.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

from .context import guarded
from .expr import Const, Expr, GuardedLoad, Load, Select, loads, postorder, rewrite
from .ir import ComputedBuffer, ExternCall, Pointwise, node_loads, xvar

Buffer = ComputedBuffer | ExternCall

#: the largest expression inlined (a few dozen operations: an ODE right-hand side's element)
MAX_NODES = 64
#: the most elements of an update that reads the value unguarded (computed at each of them)
MAX_UNGUARDED = 16
#: the most elements of an update whose written positions are enumerated (``_reads_apart``)
MAX_WRITTEN = 4096


def inline_order_bound_scalars(buffers: Sequence[Buffer], readers: dict[str, set[str]]
                               ) -> list[Buffer]:
    """``buffers`` with each 0-d element-wise value that only one region update reads, and
    that reads the array that update updates, inlined into it (and dropped). ``readers``: each
    buffer's readers by name (``reroll._readers``: a program output or a check among them keeps
    the value)."""
    by_name = {b.name: b for b in buffers}
    inlined: dict[str, ComputedBuffer] = {}
    for s in buffers:
        if not _scalar(s):
            continue
        assert isinstance(s, ComputedBuffer)
        found = readers.get(s.name, set())
        update = by_name.get(next(iter(found))) if len(found) == 1 else None
        if not isinstance(update, ComputedBuffer) or update.updates is None or \
                not isinstance(update.data, Pointwise) or update.store_offset is not None or \
                update.ordered:
            continue
        if not _reads_apart(s, update):
            continue  # computed inside the update, it would read what the update wrote
        reads = [ld for ld in node_loads(update) if ld.buffer == s.name]
        once = all(type(ld) is GuardedLoad for ld in reads) or \
            math.prod(update.ranges) <= MAX_UNGUARDED  # (else computed at every element)
        if once and any(ld.buffer == update.updates for ld in node_loads(s)) and \
                sum(1 for _ in postorder(s.data.body)) <= MAX_NODES and \
                all(ld.buffer not in inlined for ld in node_loads(s)):
            inlined[s.name] = s
    if not inlined:
        return list(buffers)
    out: list[Buffer] = []
    for b in buffers:
        if b.name in inlined:
            continue
        if isinstance(b, ComputedBuffer) and any(ld.buffer in inlined for ld in node_loads(b)):
            b = replace(b, data=replace(b.data, body=_inlined(b.data.body, inlined)))
        out.append(b)
    return out


def _reads_apart(s: ComputedBuffer, update: ComputedBuffer) -> bool:
    """Whether every read ``s`` makes of the array ``update`` updates lies outside the region
    the update writes (``s, i, r = out[k]; out[k] = out[k] / (s + i + r)`` reads the row it
    writes: inside the update, a later element would see an earlier one's new value)."""
    reads = [ld for ld in loads(s.data.body) if ld.buffer == update.updates]
    if any(not isinstance(ld, Load) or ld.index.terms for ld in reads):
        return False  # computed positions, or a loop's (a 0-d value has none)
    if math.prod(update.ranges) > MAX_WRITTEN:
        return False
    index = update.store_index
    written = {index.const + sum(c * point[v] for v, c in index.terms)
               for point in (dict(zip([xvar(d) for d in range(len(update.ranges))], at))
                             for at in itertools.product(*(range(n) for n in update.ranges)))}
    return all(ld.index.const not in written for ld in reads)


def _scalar(b: Buffer) -> bool:
    """A 0-d element-wise value stored plainly (a candidate to inline)."""
    return isinstance(b, ComputedBuffer) and isinstance(b.data, Pointwise) and b.shape == () \
        and b.ranges == () and b.updates is None and b.store_offset is None and not b.ordered


def _inlined(body: Expr, inlined: dict[str, ComputedBuffer]) -> Expr:
    """``body`` with each load of an ``inlined`` value replaced by its expression (a guarded
    load by the expression where the guard holds, zero elsewhere, as the load reads)."""
    def swap(e: Expr) -> Expr | None:
        if isinstance(e, Load) and e.buffer in inlined:
            value = inlined[e.buffer].data.body
            if type(e) is GuardedLoad:
                zero = Const(False if e.dtype == "bool" else 0, e.dtype)
                return Select(e.guard, guarded(value, e.guard), zero, e.dtype)
            return value
        return None
    return rewrite(body, swap)
