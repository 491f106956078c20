"""Masked assignment without counting: ``x[m] = f(x[m])`` as ``x = where(m, f(x), x)``.

``d[d > h] = d[d > h] - L`` (and ``x[m] += 1``, which Python runs as ``t = x[m]; t += 1;
x[m] = t``) reads the selected elements, computes on them and writes them back in order. When the
value written is element-wise work on reads ``a[m]`` with the same mask ``m`` (each ``a`` of the
mask's shape) and on scalars, the same work on the whole arrays, selected by ``m``, puts the same
value at each selected place: no element count, so no data gate on it, and the update fuses like
any select.

The reads ``a[m]`` were recorded with a data gate on their count (their shape depends on the
data). Once such a read is used by nothing but a lifted assignment and Python never looked at its
shape, the gate means nothing for the result: ``_program`` drops it (``unused_shape_gates``).

The element-selected computations themselves are erased when nothing else uses them
(``drop_superseded``). The whole-array work is computed at capture with NumPy's floating-point
reports off: eager NumPy computes only the selected elements, so a report from the others
(``log`` of the unselected negatives) is not the user's. Each lifted operation that may report
one reads a quiet operand on the unselected elements (``_quiet_unselected``), so the kernels
report events of the selected elements only, and a call where one happens runs eagerly (NumPy
then decides what to report).
"""

from __future__ import annotations

import operator
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir import Node, Opcode, TensorMeta, ancestors

from .traced_sizes import argument_records

if TYPE_CHECKING:
    from .proxy import Proxy
    from .tracer import Tracer

_OPERATORS = {f"operator.{name}": getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "lt", "le", "eq",
    "ne", "gt", "ge", "and_", "or_", "xor", "invert")}


def elementwise_function(target: str) -> Any:
    """The function of an element-wise capture target, or None."""
    if target in _OPERATORS:
        return _OPERATORS[target]
    if target.startswith("numpy.") and target.count(".") == 1:
        fn = getattr(np, target[len("numpy."):], None)
        if isinstance(fn, np.ufunc) and fn.nout == 1:
            return fn
    return None


def lift(tracer: Tracer, value: Proxy, mask: Proxy) -> tuple[Node, Any] | None:
    """``value`` computed on whole arrays instead of on their elements selected by ``mask`` (its
    node and concrete value); None when it is not element-wise work on reads ``a[mask]`` and
    scalars."""
    shape = mask.value.shape
    lifted: dict[Node, tuple[Node, Any]] = {}

    def visit(node: Node) -> tuple[Node, Any] | None:
        if node in lifted:
            return lifted[node]
        read = tracer.masked_reads.get(node)
        if read is not None:
            base, read_mask = read
            if not same_value(read_mask, mask.node) or base[1].shape != shape:
                return None
            result = base
        else:
            fn = elementwise_function(node.target) if node.op is Opcode.CALL_FUNCTION else None
            if fn is None or node.kwargs or node.tensor is None:
                return None
            args, values, arrays = [], [], []
            for a in node.args:
                if isinstance(a, Node):
                    whole = a.tensor is not None and a.tensor.ndim
                    operand = visit(a) if whole else _scalar(tracer, a)
                    if operand is None:
                        return None
                    if whole:
                        arrays.append(len(args))
                    args.append(operand[0])
                    values.append(operand[1])
                else:
                    args.append(a)
                    values.append(a)
            _quiet_unselected(tracer, fn, mask, args, values, arrays, node.source)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                concrete = fn(*values)
            if np.shape(concrete) != shape:
                return None
            new = tracer.graph.create_node(
                Opcode.CALL_FUNCTION, node.target, tuple(args), {},
                meta={"tensor": TensorMeta.of(np.asarray(concrete)), "source": node.source,
                      **argument_records(node)})  # (the scalar operands at their places)
            tracer.adopt(new, concrete)
            result = (new, concrete)
        lifted[node] = result
        return result

    top = visit(value.node)
    if top is not None:
        tracer.superseded.extend(lifted)
    return top


#: element-wise functions that report no floating-point event on any real operand
_QUIET = frozenset({
    operator.neg, operator.pos, operator.abs, operator.lt, operator.le, operator.eq, operator.ne,
    operator.gt, operator.ge, operator.and_, operator.or_, operator.xor, operator.invert,
    np.negative, np.positive, np.absolute, np.fabs, np.less, np.less_equal, np.equal,
    np.not_equal, np.greater, np.greater_equal, np.logical_and, np.logical_or, np.logical_xor,
    np.logical_not, np.isnan, np.isinf, np.isfinite, np.signbit, np.copysign, np.bitwise_and,
    np.bitwise_or, np.bitwise_xor, np.invert, np.maximum, np.minimum, np.fmax, np.fmin, np.sign,
    np.floor, np.ceil, np.trunc, np.rint})
#: operand values tried, in order, for the unselected elements (``_quiet_unselected``)
_CANDIDATES = (1, 0, 2)


def _quiet_unselected(tracer: Tracer, fn: Any, mask: Proxy, args: list[Any], values: list[Any],
                      arrays: list[int], source: Any) -> None:
    """Give a lifted operation quiet operands on the elements ``mask`` does not select.

    Eager NumPy computes ``f(x[m])`` on the selected elements only; the whole-array twin computes
    every element, and an unselected one (``sqrt`` of the negatives that ``x[m] = -np.sqrt(
    -x[m])`` leaves alone) would report an event NumPy never sees: every call then ran again with
    the precise kernels and eagerly. Each array operand of an operation that may report becomes
    ``where(m, a, q)``, ``q`` the first of ``_CANDIDATES`` on which the operation (with the scalar
    operands it has) reports nothing: the selected elements compute exactly what they did, the
    others compute something quiet, which the final select discards. Edits ``args`` and
    ``values`` in place; leaves them when no candidate is quiet (the events stay possible)."""
    arrays = [i for i in arrays if values[i].dtype.kind in "iufc"]  # a bool reports nothing
    if not arrays or (fn in _QUIET and all(values[i].dtype.kind != "c" for i in arrays)):
        return
    for q in _CANDIDATES:
        probe = [np.asarray(q, v.dtype) if i in arrays else v
                 for i, v in enumerate(values)]
        try:
            with np.errstate(all="raise"), warnings.catch_warnings():
                warnings.simplefilter("error")
                fn(*probe)
        except Exception:  # FloatingPointError, ValueError (int ** -1), ...
            continue
        break
    else:
        return
    for i in arrays:
        value = np.where(mask.value, values[i], np.asarray(q, values[i].dtype))
        node = tracer.graph.create_node(
            Opcode.CALL_FUNCTION, "numpy.where", (mask.node, args[i], q), {},
            meta={"tensor": TensorMeta.of(value), "source": source})
        tracer.adopt(node, value)
        args[i], values[i] = node, value


def same_value(a: Any, b: Any, depth: int = 4) -> bool:
    """Whether two nodes compute the same value: the same node, or the same call on the same
    operands (``d > h`` written twice, as ``d[d > h] = d[d > h] - L`` does)."""
    if a is b:
        return True
    if not isinstance(a, Node) or not isinstance(b, Node):
        return type(a) is type(b) and not isinstance(a, Node) and _equal_constants(a, b)
    calls = (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD)
    if depth == 0 or a.op is not b.op or a.op not in calls or a.target != b.target or \
            a.meta.get("random") or len(a.args) != len(b.args) or a.kwargs != b.kwargs:
        return False
    return all(same_value(x, y, depth - 1) for x, y in zip(a.args, b.args))


def _equal_constants(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and (not isinstance(a, float) or np.signbit(a) == np.signbit(b))
    except (TypeError, ValueError):
        return False


def _scalar(tracer: Tracer, node: Node) -> tuple[Node, Any] | None:
    """A 0-d operand (``h = d.mean()``): itself, broadcast over the whole arrays."""
    value = tracer.scalar_values.get(node)
    return None if value is None else (node, value)


def drop_superseded(graph: Any, superseded: list[Node], gated: set[str]) -> None:
    """Erase the element-selected computations a lifted assignment replaced, where nothing else
    uses them: their whole-array twins compute every one of their elements again (so report every
    event they would), and a masked read left behind would still be a NumPy step."""
    for node in sorted(set(superseded), key=graph.nodes.index, reverse=True):
        if not node.users and node.op is Opcode.CALL_FUNCTION and node.name not in gated:
            graph.erase_node(node)


def live_shape_gates(graph: Any, gates: list[Any], shape_read: set[Node]) -> list[Any]:
    """``gates`` without the count gates of masked reads nothing uses any more (each replaced by a
    lifted assignment) and whose shape Python never read."""
    by_name = {n.name: n for n in graph.nodes}
    roots = [n for n in graph.nodes if n.op is Opcode.OUTPUT or n.meta.get("random")]
    roots += [by_name[g.node] for g in gates if g.kind not in ("shape", "shapes")]
    roots += list(shape_read)
    live = ancestors(roots)
    return [g for g in gates if g.kind not in ("shape", "shapes") or by_name[g.node] in live]
