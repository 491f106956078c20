"""A boolean-mask selection ``a[m]`` of a vector (and the positions: ``np.flatnonzero(m)``,
``np.nonzero(m)[0]``, ``np.where(m)[0]``), computed by kernels: a prefix sum of the mask and an
in-order scatter, instead of NumPy's call between kernels.

The selection's length depends on the data, so capture gates it (``shape_gated``: the op graph
refuses such a value otherwise): every call a version runs has ``N`` true elements in ``m``, ``N``
being the length capture saw, either checked before the call (a replayed gate) or by the program
itself (its gate compares the mask's count, ``gate_checks.counted_shape``, once the steps ran).
In the second case a call with another count runs these kernels before it is declined, so they
never store outside their buffer whatever the count:

    p = cumsum(m)                                  # int64, in order (a Scan)
    out = zeros(N + 1)                             # element N takes what does not fit
    for i in range(n):                             # in order (a scatter, ``store_offset``)
        out[p[i] - 1 if m[i] and p[i] <= N else N] = a[i]
    a[m] is out[:N]

Every element is visited without a branch, so a random mask costs no mispredictions (NumPy's
selection of half of 200,000 float32 took 0.8 ms on an Intel Xeon VM). Elements past a short
count stay 0, which no later step (a gather by the selected values, say) can read out of bounds
with. Only vectors: a mask over more dimensions selects in C order, which a loop index is not
affinely.
"""

from __future__ import annotations

from stax.ir import Node

from .context import Lazy, Loader, LoopLowering
from .expr import Binary, Cast, Const, Expr, Index, Select
from .index import Affine
from .ir import ComputedBuffer, Pointwise, Scan, rvar, xvar

#: calls whose result is a tuple of position arrays, one per dimension of their mask
_POSITIONS = ("numpy.nonzero", "numpy.where")


def _vector_mask(ctx: LoopLowering, mask: object) -> Lazy | None:
    """``mask``'s value when it is a non-empty boolean vector of real lanes, else None."""
    meta = mask.tensor if isinstance(mask, Node) else None
    if meta is None or meta.dtype != "bool" or len(meta.shape) != 1 or meta.shape[0] == 0:
        return None
    m = ctx.values[mask]
    return None if m.parts else m


def _position(at: tuple[Affine, ...]) -> Expr:
    """The selected element's position: what ``np.flatnonzero`` and ``np.nonzero`` select."""
    return Index(at[0], "int64")


def _positions_of(ctx: LoopLowering, node: Node) -> Node | None:
    """The 1-D boolean mask of ``np.nonzero(m)`` or one-argument ``np.where(m)`` (an ``extern``
    node) whose only reads are ``[0]`` (each an int64 vector), else None: such a call is
    computed where it is read."""
    attrs = node.kwargs
    if node.target != "extern" or attrs.get("fn") not in _POSITIONS or attrs["method"] or \
            attrs["call_kwargs"] or len(node.args) != 1 or not ctx.options.update_in_place or \
            _vector_mask(ctx, node.args[0]) is None or not node.users:
        return None
    (n,) = node.args[0].tensor.shape
    if not all(u.target == "extern" and u.kwargs.get("fn") == "operator.getitem" and
               u.args == (node, 0) and u.tensor is not None and u.tensor.dtype == "int64" and
               len(u.tensor.shape) == 1 and u.tensor.shape[0] <= n for u in node.users):
        return None
    return node.args[0]


def _unread(index: tuple[Affine, ...]) -> Expr:
    raise AssertionError("the tuple of positions is read only through its item 0")


def selection(ctx: LoopLowering, node: Node) -> Lazy | None:
    """``a[m]`` (or ``np.flatnonzero(m)``, ``np.nonzero(m)[0]``: the positions) of an ``extern``
    node as kernels, or None where this does not apply (the extern then runs as NumPy's call)."""
    attrs, meta = node.kwargs, node.tensor
    if _positions_of(ctx, node) is not None:
        return Lazy((), "object", _unread)  # its item 0 is computed below, where it is read
    mask = _positions_of(ctx, node.args[0]) if attrs["fn"] == "operator.getitem" and \
        len(node.args) == 2 and isinstance(node.args[0], Node) else None
    if mask is not None:  # the conditions hold: the tuple was not computed
        (n,), (count,) = mask.tensor.shape, meta.shape
        return _compacted(ctx, node, ctx.values[mask], _position, n, count, "int64")
    if attrs["method"] or attrs["call_kwargs"] or not ctx.options.update_in_place or \
            meta is None or len(meta.shape) != 1 or not ctx.native(meta.dtype) or \
            not all(isinstance(a, Node) and a.tensor is not None for a in node.args):
        return None
    if attrs["fn"] == "operator.getitem" and len(node.args) == 2:
        array, mask = node.args
        if meta.dtype != array.tensor.dtype or array.tensor.shape != mask.tensor.shape:
            return None
        a = ctx.values[array]
        if a.parts:
            return None
        value = a.loader
    elif attrs["fn"] == "numpy.flatnonzero" and len(node.args) == 1 and meta.dtype == "int64":
        mask, value = node.args[0], _position
    else:
        return None
    m = _vector_mask(ctx, mask)
    (count,) = meta.shape
    if m is None or count > m.shape[0]:
        return None
    return _compacted(ctx, node, m, value, m.shape[0], count, meta.dtype)


def _compacted(ctx: LoopLowering, node: Node, m: Lazy, value: Loader, n: int, count: int,
               dtype: str) -> Lazy:
    """The ``count`` elements of ``value`` (over ``n``) where ``m`` holds, in order."""
    at = (Affine.var(xvar(0)),)
    positions = f"buf{len(ctx.buffers)}"
    ctx.buffers.append(ComputedBuffer(
        positions, (n,), "int64", (1,), Affine.var(rvar(0)),
        Scan((), n, "sum", Cast(m.loader((Affine.var(rvar(0)),)), "int64"))))
    ctx.made_by[positions] = node
    # the length is gated by the caller (the program outputs the mask's count, which a check
    # against the planned one declines); checked here too, so that a selection whose gate was
    # missed declines instead of coming back padded or cut
    last = ctx.stored(positions, (n,), "int64", (1,)).loader((Affine.of(n - 1),))
    check = ctx.reduce_values(lambda i: Binary("ne", last, Const(count, "int64"), "bool"),
                              (1,), (0,), False, "max", "bool")
    ctx.checks[check.buffer] = "a selection's length is not the one planned"
    zeros = f"buf{len(ctx.buffers)}"
    ctx.buffers.append(ComputedBuffer(zeros, (count + 1,), dtype, (1,), at[0],
                                      Pointwise((count + 1,), Const(False if dtype == "bool"
                                                                    else 0, dtype))))
    ctx.made_by[zeros] = node
    p = ctx.stored(positions, (n,), "int64", (1,)).loader(at)
    spill = Const(count, "int64")
    fits = Binary("and", m.loader(at), Binary("le", p, spill, "bool"), "bool")
    where = Select(fits, Binary("sub", p, Const(1, "int64"), "int64"), spill, "int64")
    out = f"buf{len(ctx.buffers)}"
    ctx.buffers.append(ComputedBuffer(out, (count + 1,), dtype, (1,), Affine(),
                                      Pointwise((n,), value(at)), updates=zeros,
                                      store_offset=where))
    ctx.made_by[out] = node
    whole = ctx.stored(out, (count + 1,), dtype, (1,))
    return Lazy((count,), dtype, whole.loader, None, (out, 0, (1,)))
