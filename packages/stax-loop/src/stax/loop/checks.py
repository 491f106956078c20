"""Loop lowering of ``decline_if``: a precondition that only the data shows (``np.searchsorted``
needs a sorted array) becomes one of the program's checks (``LoopProgram.checks``), a bool
buffer that must come out False; when it does not, the executable declines the call and NumPy
runs it. The value passes through unchanged, whatever its dtype."""

from __future__ import annotations

from stax.ir import Node

from .context import Lazy, LoopLowering
from .externs import op_as_extern
from .registry import lowers


@lowers("decline_if", any_dtype=True)
def lower_decline_if(ctx: LoopLowering, node: Node) -> Lazy:
    value, bad = node.args
    if not ctx.native("bool"):  # no kernels: a NumPy step that raises, and so declines
        return op_as_extern(ctx, node)
    shape = tuple(bad.tensor.shape)
    if all(shape):  # an empty condition never declines
        flags = ctx.operand(bad, shape, "bool")
        check = ctx.reduce_values(flags, shape, tuple(range(len(shape))), False, "max", "bool")
        ctx.checks[check.buffer] = node.kwargs["why"]
    return ctx.values[value]
