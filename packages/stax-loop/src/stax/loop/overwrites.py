"""Arguments the function updates in place, written over by the call's last kernels.

A function that updates an argument (``np.clip(x, -2, 2, out=x)``, ``x[x < 0] = 0``) leaves the
argument's final value to its caller (``GraphProgram.writeback``). Computed into a buffer of its
own and copied into the argument after the call, that value crosses memory four times (read the
argument, write the buffer, read it again, write the argument) where NumPy's in-place step
crosses it twice: ``x[x < 0] = 0; return x.mean()`` ran at 0.87x NumPy.

With ``LoopOptions.overwrite_arguments`` each final value is a buffer the code generator writes
over the argument itself (``LoopProgram.overwrites``), in kernels that run after every other
step, once the call stands: its checks, floating-point events and NumPy steps decided, so a call
that declines leaves the argument as the caller gave it (the eager run then updates it once).

Such a late buffer recomputes the value from the argument when the value is element-wise, reads
the argument only at the element it writes and reads no other updated argument (late kernels may
run in any order): the program's own readers then inline the expression like any value read
once, the late kernel counting as one more reader, not as an output
(``lowering._consider_materializing``). Where the value may raise a floating-point event
(``x *= s``), a twin of it is computed with the program for its events only (never stored:
``LoopProgram.events_only``), so the call's events are decided before any argument is written:
``x *= s`` reads x twice and writes it once, where a buffer copied back wrote a fresh array
(page faults included) and copied it (200,000 float32: 46 us, NumPy 12 us). The materialization
policy weighs the twin as one more reader: an expensive value (a transcendental function) is
computed by the program as before and the late kernel copies it over the argument. A value read
from a NumPy step's result (which may be a view of the argument itself) is left to the caller's
copy, which handles overlap.

A twin costs a pass over the argument that NumPy's in-place ufunc does not make (``x -= m`` on
200,000 float64: 36 us, NumPy 18). Where the value is that ufunc itself — one float ``+ - * /``
whose first operand is the argument and whose other reads buffers the program decided before, the
op graph's value of ``x -= m`` or ``np.subtract(x, m, out=x)`` (``x[...] = x - m`` is a
``setitem`` and keeps its twin: NumPy raises there before it writes) — and the backend's kernels
know one operation's events exactly (``LoopOptions.late_reports``), the late kernel reports its
own events after it wrote, as NumPy does (``LoopProgram.late_reports``). One such value a
program, and the program's only other effect: with another argument written, a NumPy step
(a generator's draw, a Python warning) or an ``np.errstate`` block of the function's own (capture
``info["sets_errstate"]``), what eager NumPy does after the ufunc raises would have happened
before the report.
"""

from __future__ import annotations

import numpy as np

from stax.ir import Node
from stax.ir.meta import elements_overlap
from stax.ir.ops import op_info

from .context import Lazy, LoopLowering, output_strides, pointwise_buffer
from .expr import Binary, Const, GuardedLoad, Load, loads
from .ir import ComputedBuffer, ExternCall, InputBuffer
from .unused import reports


def finals(ctx: LoopLowering) -> dict[Node, str]:
    """The op-graph values that are an updated argument's final value, with that argument's
    input name; none unless the backend writes over arguments (``overwrite_arguments``)."""
    program = ctx.program
    if not ctx.options.overwrite_arguments or not program.writeback:
        return {}
    # after the user's outputs (more may follow: gate values checked in the program)
    first = program.output_tree.num_leaves
    values = program.outputs[first:first + len(program.writeback)]
    return {v: name for v, name in zip(values, program.writeback) if isinstance(v, Node)}


def _input(ctx: LoopLowering, name: str) -> InputBuffer | None:
    """The input ``name`` when kernels may write over it: a dtype they compute in, and a layout
    whose elements each have memory of their own, reached by non-negative strides."""
    x = next((b for b in ctx.inputs if b.name == name), None)
    if x is None or not ctx.native(x.dtype) or 0 in x.shape:
        return None
    if any(s < 0 for s, n in zip(x.strides, x.shape) if n != 1) or \
            elements_overlap(x.shape, x.strides):
        return None
    return x


def _reads_a_numpy_result(ctx: LoopLowering, late: ComputedBuffer) -> bool:
    """Whether ``late`` reads what a NumPy step returned: possibly a view of the very argument
    it writes (``np.flip(x)`` as NumPy's call), read elsewhere than at the element written.
    The caller's ``np.copyto`` copies such a value back, overlaps and all."""
    externs = {b.name for b in ctx.buffers if isinstance(b, ExternCall)}
    return any(read.buffer in externs for read in loads(late.data.body))


def recomputed(ctx: LoopLowering, lazy: Lazy, name: str) -> ComputedBuffer | None:
    """The late buffer computing the element-wise value ``lazy`` over input ``name`` from the
    inputs themselves (see the module's text), or None where it may not."""
    x = _input(ctx, name)
    if x is None or lazy.buffer is not None or lazy.parts or \
            (lazy.shape, lazy.dtype) != (x.shape, x.dtype):
        return None
    late = pointwise_buffer(f"buf{len(ctx.buffers)}", lazy, x.strides)
    updated = set(ctx.program.writeback)
    for read in loads(late.data.body):
        if read.buffer == x.name:
            if type(read) not in (Load, GuardedLoad) or read.index != late.store_index:
                return None
        elif read.buffer in updated:
            return None
    return None if _reads_a_numpy_result(ctx, late) else late


#: the op graph's arithmetic whose in-place ufunc may report after it wrote (one IEEE operation)
IN_PLACE_UFUNCS = frozenset({"add", "sub", "mul", "truediv"})


def _in_place_ufunc(ctx: LoopLowering, v: Node, name: str, late: ComputedBuffer) -> str | None:
    """The NumPy ufunc whose in-place call computed ``v``, the final value of input ``name``
    that ``late`` recomputes, when the late kernel may report its events itself (see the
    module's text); else None."""
    body = late.data.body
    first = v.args[0] if v.args else None
    if not ctx.options.late_reports or v.target not in IN_PLACE_UFUNCS or v.source is None or \
            not isinstance(first, Node) or first.op != "placeholder" or first.target != name:
        return None
    if type(body) is not Binary or body.op != v.target or \
            any(type(c) not in (Load, Const) for c in (body.a, body.b)) or \
            np.dtype(body.dtype).kind != "f":
        return None
    lhs = body.a
    if type(lhs) is not Load or lhs.buffer != name or lhs.index != late.store_index:
        return None
    return op_info(v.target).reference.__name__  # NumPy's name, as its warnings give it


def write_over(ctx: LoopLowering, values: dict[Node, str]
               ) -> tuple[dict[str, str], list[str], dict[str, list[str]]]:
    """A late buffer for each final value in ``values`` whose argument kernels may write over,
    made the value the outputs return; the late buffers with their inputs
    (``LoopProgram.overwrites``), the twins computed for their events
    (``LoopProgram.events_only``), and the late buffers that report their own events
    (``LoopProgram.late_reports``)."""
    overwrites: dict[str, str] = {}
    reporting: list[tuple[Node, Lazy, InputBuffer, ComputedBuffer]] = []
    for v, name in values.items():
        x = _input(ctx, name)
        lazy = ctx.values.get(v)
        if x is None or lazy is None or lazy.parts or v.tensor is None or \
                (lazy.shape, lazy.dtype) != (x.shape, x.dtype):
            continue
        ctx.node = v
        late = recomputed(ctx, lazy, name)
        if late is None:  # the program computes it; the late kernel copies it
            if lazy.buffer is None:
                lazy = ctx.values[v] = ctx.realize(lazy, output_strides(v.tensor))
            late = pointwise_buffer(f"buf{len(ctx.buffers)}", lazy, x.strides)
            body = late.data.body
            if type(body) is Load and body.buffer == x.name and body.index == late.store_index:
                continue  # the argument unchanged: nothing to write
            if _reads_a_numpy_result(ctx, late):
                continue
        elif reports(late):  # its events: reported by itself, or decided by a twin (below)
            reporting.append((v, lazy, x, late))
        ctx.buffers.append(late)
        ctx.made_by[late.name] = v
        overwrites[late.name] = x.name
        ctx.values[v] = ctx.stored(late.name, x.shape, x.dtype, x.strides)
    late_reports: dict[str, list[str]] = {}
    # the call's only side effect besides the write, so nothing eager does after the ufunc (a
    # raise stops it there) happens before the report: no other argument written, no NumPy
    # step (a draw, a Python warning), no np.errstate block of the function's own
    alone = len(overwrites) == 1 and not ctx.program.info.get("sets_errstate") and \
        not any(isinstance(b, ExternCall) for b in ctx.buffers)
    if len(reporting) == 1 and alone:
        v, _, x, late = reporting[0]
        ufunc = _in_place_ufunc(ctx, v, x.name, late)
        if ufunc is not None:
            late_reports[late.name] = [ufunc, v.source]
            reporting = []
    twins: list[str] = []
    for v, lazy, x, _ in reporting:  # its events decided with the program's
        twin = pointwise_buffer(f"buf{len(ctx.buffers)}", lazy, x.strides)
        ctx.buffers.append(twin)
        ctx.made_by[twin.name] = v
        twins.append(twin.name)
    return overwrites, twins, late_reports
