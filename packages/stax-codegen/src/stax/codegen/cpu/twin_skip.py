"""An events twin that cannot report this call: skipped at its start.

An argument updated in place whose new value may raise a floating-point event (``x /= s``) is
computed twice: a twin for its events with the program (never stored), then the late kernel
writing over the argument once the call stands (``stax.loop.overwrites``). Where the possible
event comes only from a product or quotient by a value known at run time alone — a 0-d buffer
the program computed, as ``np.linalg.norm(x)`` — the twin can tell before its loop whether any
event is possible: a quotient by a finite value of magnitude at least 1, or a product with a
finite nonzero one of magnitude at most 1, only underflows (``stax.loop.unused._shrinks`` says
the same of constants), and no call meets underflow heeded. Then the twin returns at once and
the call makes one pass over the argument: ``x /= np.linalg.norm(x)``, 200,000 float32, did two
vector divisions an element (131 us, NumPy 50, Intel Xeon)."""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from stax.loop import ComputedBuffer, Pointwise
from stax.loop.expr import Binary, Load, postorder
from stax.loop.unused import may_report

from .types import I64

_FLOATS = ("float32", "float64")


def scalar_factors(nodes: Sequence[ComputedBuffer], discard: frozenset[str] | set[str]
                   ) -> list[tuple[Load, str]] | None:
    """For a kernel of events-only twins each ``f(x) / s`` or ``f(x) * s`` (``s`` one element
    the kernel loads at a fixed place, ``f`` reporting nothing): each ``(s, op)``; else None."""
    found = []
    for node in nodes:
        body = node.data.body if isinstance(node.data, Pointwise) else None
        if node.name not in discard or not isinstance(body, Binary) or \
                body.op not in ("mul", "truediv") or body.dtype not in _FLOATS:
            return None
        candidates = [body.b] if body.op == "truediv" else [body.b, body.a]
        scalar = next((c for c in candidates if isinstance(c, Load) and not c.index.terms and
                       c.dtype == body.dtype), None)
        if scalar is None:
            return None
        other = body.a if scalar is body.b else body.b
        if any(may_report(e) for e in postorder(other)):
            return None
        found.append((scalar, body.op))
    return found or None


def return_if_shrinking(fn: ir.Function, builder: ir.IRBuilder,
                        pointers: dict[str, ir.Value], factors: list[tuple[Load, str]]) -> None:
    """At the kernel's start: return when every factor is one no event can come from."""
    b = builder
    harmless: ir.Value = ir.Constant(ir.IntType(1), 1)
    for load, op in factors:
        value = b.load(b.gep(pointers[load.buffer], [ir.Constant(I64, load.index.const)]))
        fabs = fn.module.declare_intrinsic("llvm.fabs", [value.type])
        size = b.call(fabs, [value])
        finite = b.fcmp_ordered("<", size, ir.Constant(value.type, float("inf")))  # NaN: no
        one = ir.Constant(value.type, 1.0)
        if op == "truediv":
            bounded = b.fcmp_ordered(">=", size, one)
        else:
            bounded = b.and_(b.fcmp_ordered("<=", size, one),
                             b.fcmp_ordered("!=", size, ir.Constant(value.type, 0.0)))
        harmless = b.and_(harmless, b.and_(finite, bounded))
    skipped, runs = fn.append_basic_block("twin_skipped"), fn.append_basic_block("twin_runs")
    b.cbranch(harmless, skipped, runs)
    b.position_at_end(skipped)
    b.ret_void()
    b.position_at_end(runs)
