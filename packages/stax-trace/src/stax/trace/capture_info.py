"""What a capture records about the function's Python decisions (``GraphProgram.info``): which
shapes, dimensions and scalar arguments Python read, and the comparisons of scalar arguments it
branched on (``stax.ir.scalar_predicates``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .event_sources import event_sources

if TYPE_CHECKING:
    from .tracer import Tracer


def capture_info(fn: Any, tracer: Tracer) -> dict[str, Any]:
    info: dict[str, Any] = {"function": getattr(fn, "__qualname__", repr(fn)),
                            "module": getattr(fn, "__module__", None)}
    read = sorted(n.name for n in tracer.shape_read if n.graph is tracer.graph)
    if read:  # values whose shape Python read: a size-generic version keeps them exact
        info["shape_read"] = read
        dims = tracer.sizes.dims_table(tracer.graph)
        if dims:  # of those read only in some dimensions, which
            info["dims_read"] = dims
    if tracer.scalar_read:  # scalar arguments Python decided something from
        info["scalar_read"] = sorted(tracer.scalar_read)
    if tracer.scalar_used:  # ... and those operands of traced calls (``scalar_inputs`` checks
        info["scalar_used"] = sorted(tracer.scalar_used)  # that the graph still says where)
    if tracer.scalar_predicates:  # comparisons of them Python branched on, with their outcomes
        info["scalar_predicates"] = tracer.scalar_predicates
    if tracer.own_error_state:  # an operation ran under the function's own np.errstate
        info["sets_errstate"] = True
        if tracer.heeds_underflow:  # ... which heeded underflow, or may have (``UNCLEAR``:
            info["heeds_underflow"] = tracer.heeds_underflow  # ``error_state.py``)
    else:  # the operation NumPy names for each category of events, where only one may raise it
        sources = event_sources(list(tracer.graph.nodes))
        if sources:
            info["event_sources"] = sources
    symbols = tracer.sizes.table(tracer.graph)
    if symbols:
        info["size_symbols"] = symbols
    return info
