"""Reductions of a masked selection without selecting: ``x[m].sum()`` as ``where(m, x, 0).sum()``.

A selection ``a[m]`` (or the gather ``a[np.where(m)[0]]``, ``a[np.nonzero(m)]``,
``a[np.flatnonzero(m)]``, and the positions ``np.where(m)[k]`` themselves) has as many elements as
``m`` has true ones: its shape depends on the data, so capture records a data gate on it (or a
NumPy step whose result is checked), and a call with another count declines. When such
selections, of one mask, are used by nothing but element-wise work among themselves and with
scalars, ending in reductions over everything, each reduction is the same reduction of the whole
arrays with the unselected elements replaced by its identity:

- ``sum``, ``any``, ``count_nonzero``: ``where(m, v, 0)``; ``prod``, ``all``: ``where(m, v, 1)``
- ``max``/``min``: ``where(m, v, -inf/+inf)`` (a float) or the dtype's minimum/maximum; a NaN
  among the selected elements still wins, the unselected ones are gone
- ``mean``: ``sum(where(m, v, 0)) / m.sum()``, computed as NumPy's ``_mean`` does (a sum in
  float64 for integers, the quotient of the sum and the count in float64, cast back)
- the positions along axis ``k``: an ``arange`` along that axis (``np.flatnonzero``: of the size)

NumPy's ``mean`` of an empty selection warns and returns NaN, its ``max``/``min`` raise: where the
count is 0 the compiled call declines (``declines.decline_if``) and NumPy runs it. The float sums
differ from NumPy's pairwise order within rounding, as every float sum here does.

The whole-array work also computes the unselected elements; they are first replaced by a value
that raises no floating-point event (NaN for floats, 1 for integers: no division by zero), so
``np.log(p[p > 0]).sum()`` does not decline on the zeros it skips. Selections used in any other
way (returned, their shape read by Python, a data gate on them) keep today's recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir import Node, Opcode, TensorMeta, ancestors, contiguous_strides
from stax.ir.ops import reduction_identity

from .declines import decline_if
from .masked import elementwise_function, same_value
from .selection_counts import POSITIONS, call_key
from .traced_sizes import argument_records

#: reduction targets (``method:`` for methods) -> the reduction they are
_REDUCTIONS = {
    **{f"method:{name}": name for name in ("sum", "mean", "max", "min", "prod", "any", "all")},
    "numpy.sum": "sum", "numpy.mean": "mean", "numpy.max": "max", "numpy.amax": "max",
    "numpy.min": "min", "numpy.amin": "min", "numpy.prod": "prod", "numpy.any": "any",
    "numpy.all": "all", "numpy.count_nonzero": "count_nonzero",
}
_SCALARS = (bool, int, float, np.generic)
_EMPTY = "a reduction without identity (mean, max, min) of an empty masked selection"


@dataclass
class _Group:
    """The selections of one mask (masks computed the same way are one: ``same_value``)."""

    mask: Node
    leaves: dict[Node, Any] = field(default_factory=dict)  # -> a whole array, or ("axis", k)
    work: list[Node] = field(default_factory=list)  # element-wise nodes on selections
    reductions: list[Node] = field(default_factory=list)
    extra: list[Node] = field(default_factory=list)  # position tuples, erased with the rest

    @property
    def selected(self) -> list[Node]:
        return [*self.leaves, *self.work]


def rewrite(graph: Any, gates: list[Any], shape_read: set[Node]) -> list[Node]:
    """Rewrite every group of selections used only by reductions; returns the nodes replaced (to
    erase with ``erase_unused`` once the gates of the values nothing uses are gone)."""
    groups: dict[Any, list[_Group]] = {}  # by the masks' (op, target)
    member: dict[Node, _Group] = {}
    for node in list(graph.nodes):
        found = _selection(node, member, groups)
        if found is not None:
            member[node] = found
    for node in graph.nodes:
        reduced = _reduced(node)
        if reduced is not None and reduced in member:
            member[reduced].reductions.append(node)
    gated = {g.node for g in gates if g.kind not in ("shape", "shapes")}
    index = {n: i for i, n in enumerate(graph.nodes)}
    # nested operands too: ``np.stack([x[m].sum(), c])``
    decided = ancestors([n for n in graph.nodes if n.name in gated])
    replaced: list[Node] = []
    lifted: dict[Node, Node] = {}  # reductions rewritten: their replacements
    for group in sorted({id(g): g for g in member.values()}.values(),
                        key=lambda g: index[g.mask]):
        if group.reductions and _only_reduced(group, member, gated, shape_read) and \
                not any(r in decided and not _exact(r) for r in group.reductions):
            replaced += _lift(graph, group, lifted)
    return replaced


def _exact(reduction: Node) -> bool:
    """Whether the whole-array form of ``reduction`` gives NumPy's value of the selection's to
    the bit: counts and booleans, and integer sums, products and extremes. A float sum adds
    other elements in another order (``x[x > 0].sum() == s`` as a branch took the other way
    than NumPy's), a float extreme may differ in the sign of a zero, a mean is a float sum:
    where a data gate reads one, the selection keeps its recording (NumPy's own sum of it)."""
    kind = _REDUCTIONS[call_key(reduction)]
    if kind in ("any", "all", "count_nonzero"):
        return True
    return kind != "mean" and np.dtype(reduction.args[0].tensor.dtype).kind in "biu"


def erase_unused(graph: Any, nodes: list[Node], gated: set[str]) -> None:
    """Erase the replaced nodes nothing uses any more, the last first."""
    index = {n: i for i, n in enumerate(graph.nodes)}
    for node in sorted({n for n in nodes if n in index}, key=index.__getitem__, reverse=True):
        if not node.users and node.name not in gated:
            graph.erase_node(node)


# -- finding the selections -------------------------------------------------------------------

def _shape(node: Any) -> tuple[int, ...] | None:
    return tuple(node.tensor.shape) if isinstance(node, Node) and node.tensor is not None else None


def _group_of(mask: Any, groups: dict[Any, list[_Group]]) -> _Group | None:
    """The group of a bool mask, a new one unless another computes the same value (looked for
    among the masks of the same call only: a long unrolled loop makes many groups)."""
    if not isinstance(mask, Node) or mask.tensor is None or mask.tensor.dtype != "bool" or \
            not mask.tensor.ndim:
        return None
    alike = groups.setdefault((mask.op, mask.target), [])
    for group in alike:
        if same_value(group.mask, mask):
            return group
    alike.append(_Group(mask))
    return alike[-1]


def _selection(node: Node, member: dict[Node, _Group],
               groups: dict[Any, list[_Group]]) -> _Group | None:
    """The group of ``node`` when it is a selection (a leaf, or element-wise work on them)."""
    if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or node.meta.get("random"):
        return None
    key = call_key(node)
    if key == "numpy.flatnonzero" and len(node.args) == 1 and not node.kwargs:
        group = _group_of(node.args[0], groups)
        if group is not None:
            group.leaves[node] = ("flat",)
        return group
    if key != "operator.getitem" or len(node.args) != 2 or node.kwargs:
        return _work(node, member)
    base, index = node.args
    if isinstance(base, Node) and call_key(base) in POSITIONS and len(base.args) == 1 and \
            not base.kwargs and isinstance(index, int) and not isinstance(index, bool):
        group = _group_of(base.args[0], groups)  # np.where(m)[k]: positions along axis k
        if group is not None and 0 <= index < group.mask.tensor.ndim:
            group.leaves[node] = ("axis", index)
            group.extra.append(base)
            return group
        return None
    shape = _shape(base)
    if not shape:
        return None
    group = _gathered(index, shape, member)
    if group is None and isinstance(index, Node) and _shape(index) == shape:
        group = _group_of(index, groups)  # a[m]
    if group is not None and _shape(group.mask) == shape:
        group.leaves[node] = base
        return group
    return None


def _gathered(index: Any, shape: tuple[int, ...], member: dict[Node, _Group]) -> _Group | None:
    """The group when ``a[index]`` gathers the selected elements of ``a`` (of ``shape``) in
    order: every position array of ``m`` (``np.nonzero(m)``), or a 1-D ``m``'s one."""
    items = index if isinstance(index, tuple) else (index,)
    groups = {id(member.get(i)) for i in items if isinstance(i, Node)}
    group = member.get(items[0]) if items and isinstance(items[0], Node) else None
    if group is None or len(groups) != 1 or len(items) != len(shape):
        return None
    if len(items) == 1 and group.leaves.get(items[0]) == ("flat",) and len(shape) == 1:
        return group
    if all(group.leaves.get(i) == ("axis", k) for k, i in enumerate(items)):
        return group
    return None


def _work(node: Node, member: dict[Node, _Group]) -> _Group | None:
    """Element-wise work on selections of one group and scalars (``astype`` included)."""
    if node.tensor is None or node.tensor.ndim != 1:
        return None
    method = node.op is Opcode.CALL_METHOD
    if method:  # x[m].astype(t): its dtype argument is a constant of any type
        if node.target != "astype" or len(node.args) != 2 or node.kwargs or \
                isinstance(node.args[1], Node):
            return None
    elif elementwise_function(node.target) is None or node.kwargs:
        return None
    found: set[int] = set()
    group = None
    for a in () if method else node.args:
        if isinstance(a, Node):
            if a in member:
                group = member[a]
                found.add(id(group))
            elif a.tensor is None or a.tensor.ndim:
                return None
        elif not isinstance(a, _SCALARS):
            return None
    if method:
        group = member.get(node.args[0])
        found.add(id(group))
    if group is None or len(found) != 1:
        return None
    group.work.append(node)
    return group


def _reduced(node: Node) -> Node | None:
    """The array ``node`` reduces over everything, when it is a reduction of ``_REDUCTIONS``
    with no argument but the axis of a 1-D operand (None, 0 or -1)."""
    if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or \
            call_key(node) not in _REDUCTIONS or not node.args or not isinstance(node.args[0], Node):
        return None
    rest = dict(node.kwargs)
    if len(node.args) > 2 or (len(node.args) == 2 and "axis" in rest):
        return None
    if len(node.args) == 2:
        rest["axis"] = node.args[1]
    if set(rest) - {"axis"} or rest.get("axis") not in (None, 0, -1) or \
            isinstance(rest.get("axis"), bool) or _shape(node) != ():
        return None
    return node.args[0]


def _only_reduced(group: _Group, member: dict[Node, _Group], gated: set[str],
                  shape_read: set[Node]) -> bool:
    """Whether the group's selections are used by its own work and reductions alone."""
    reductions = set(group.reductions)
    if any(np.dtype(r.args[0].tensor.dtype).kind not in "biuf" or
           r.args[0].tensor.dtype == "float16" for r in reductions):
        return False  # complex and half values keep their recording
    for node in group.selected:
        if node in shape_read or node.name in gated:
            return False
        for user in node.users:
            if member.get(user) is not group and user not in reductions:
                return False
    return not any(r.name in gated or r in shape_read for r in reductions)


# -- the rewrite --------------------------------------------------------------------------------

def _meta(shape: tuple[int, ...], dtype: str, source: Any, scalar: bool = False) -> dict[str, Any]:
    return {"tensor": TensorMeta(shape, dtype, contiguous_strides(shape), scalar=scalar),
            "source": source}


class _Builder:
    """Creates the whole-array nodes of one group, before the reduction being rewritten."""

    def __init__(self, graph: Any, group: _Group, lifted: dict[Node, Node]) -> None:
        self.graph, self.group, self.lifted = graph, group, lifted
        self.mask = group.mask
        self.shape = tuple(group.mask.tensor.shape)
        self.whole: dict[tuple[Node, bool], Node] = {}
        self.count: Node | None = None
        self.casts = any(n.op is Opcode.CALL_METHOD for n in group.work)

    def call(self, target: str, args: tuple[Any, ...], meta: dict[str, Any],
             kwargs: dict[str, Any] | None = None, method: bool = False) -> Node:
        op = Opcode.CALL_METHOD if method else Opcode.CALL_FUNCTION
        return self.graph.create_node(op, target, args, kwargs or {}, meta=meta)

    def of(self, node: Node, filled: bool = False) -> Node:
        """The whole-array twin of a selection (of ``mask``'s shape, or broadcast to it); a leaf
        ``filled`` where work computes on it (module doc)."""
        if (node, filled) in self.whole:
            return self.whole[node, filled]
        leaf = self.group.leaves.get(node)
        if leaf is not None:
            new = self._leaf(node, leaf, filled)
        else:
            args = tuple(self.of(a, True) if a in self.group.leaves or a in self.group.work else
                         self.lifted.get(a, a) if isinstance(a, Node) else a for a in node.args)
            shape = np.broadcast_shapes(*(_shape(a) or () for a in args if isinstance(a, Node)))
            new = self.call(node.target, args, {**_meta(tuple(shape), node.tensor.dtype,
                                                        node.source), **argument_records(node)},
                            method=node.op is Opcode.CALL_METHOD)
        self.whole[node, filled] = new
        return new

    def _leaf(self, node: Node, leaf: Any, filled: bool) -> Node:
        dtype = node.tensor.dtype
        kind = np.dtype(dtype).kind
        fill = float("nan") if kind == "f" and not self.casts else 1 if kind in "iu" else None
        if filled and fill is not None:
            return self.call("numpy.where", (self.mask, self.of(node), fill),
                             _meta(self.shape, dtype, node.source))
        if isinstance(leaf, Node):
            return leaf
        # positions: np.arange along an axis, shaped to broadcast against the mask
        size = int(np.prod(self.shape)) if leaf[0] == "flat" else self.shape[leaf[1]]
        whole = self.call("numpy.arange", (size,), _meta((size,), dtype, node.source),
                          {"dtype": dtype})
        if len(self.shape) > 1:
            shape = self.shape if leaf[0] == "flat" else tuple(
                size if k == leaf[1] else 1 for k in range(len(self.shape)))
            whole = self.call("reshape", (whole, shape), _meta(shape, dtype, node.source),
                              method=True)
        return whole

    def counted(self) -> Node:
        if self.count is None:
            self.count = self.call("sum", (self.mask,), _meta((), "int64", None, True),
                                   method=True)
        return self.count

    def reduction(self, node: Node) -> Node:
        """The replacement of the reduction ``node``."""
        kind = _REDUCTIONS[call_key(node)]
        value = self.of(node.args[0])
        dtype = np.dtype(value.tensor.dtype)
        identity = reduction_identity(kind, dtype)
        selected = self.call("numpy.where", (self.mask, value, identity),
                             _meta(self.shape, dtype.name, node.source))
        meta = dict(node.meta)
        if kind != "mean":
            result = self.call(node.target, (selected,), meta,
                               method=node.op is Opcode.CALL_METHOD)
            return result if kind not in ("max", "min") else self._checked(result)
        # NumPy's _mean: the sum (in float64 for integers and bools) over the count, in float64
        wide = dtype.kind in "biu"
        total = self.call("sum", (selected,), _meta((), "float64" if wide else dtype.name,
                                                    node.source, True),
                          {"dtype": "float64"} if wide else None, method=True)
        quotient = self.call("operator.truediv", (total, self.counted()),
                             _meta((), "float64", node.source, True))
        if node.tensor.dtype != "float64":
            quotient = self.call("astype", (quotient, node.tensor.dtype), meta, method=True)
        return self._checked(quotient)

    def _checked(self, value: Node) -> Node:
        empty = self.call("operator.eq", (self.counted(), 0), _meta((), "bool", None, True))
        return decline_if(self.graph, value, empty, _EMPTY)


def _lift(graph: Any, group: _Group, lifted: dict[Node, Node]) -> list[Node]:
    builder = _Builder(graph, group, lifted)
    for node in group.reductions:
        with graph.inserting_before(node):
            new = builder.reduction(node)
        node.replace_all_uses_with(new)
        lifted[node] = new
    return [*group.reductions, *group.selected, *group.extra]
