"""Loop lowering of an assignment ``x[key] = value`` (the op graph's ``setitem``, spec §4.9).

Two forms, both exact:

- a *select* over x's whole index: inside the key's region the value, elsewhere x. It is a
  loader like any other, so one assignment fuses into whatever reads its result and costs no
  memory of its own;
- a *region update* (§7's in-place reuse): when x already lies in a buffer of its own that
  nothing else reads, a kernel over the region alone overwrites that buffer's elements
  (``ComputedBuffer.updates``). A chain ``out[0, :] = a; out[1, :] = b; ...`` then costs one
  pass to build ``out`` and one per region, where selects cost a pass over the whole array per
  assignment. A chain of a few assignments stays selects (one kernel); a longer one is written
  to memory once and updated from then on.

The value may read x itself (``V[:, k] = V[:, k - 1] * x``): reads of the element being written
are safe in place; any other read of the updated buffer is computed into its own buffer first,
so the update never reads an element it has already overwritten.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stax.ir import Node, Opcode, contiguous_strides
from stax.ir.sizes import hint, product, same_size
from stax.ir.view_sizes import slice_length

from .complex_values import (
    as_parts,
    complex_lowers,
    complex_native,
    from_parts,
    is_complex,
    parts_of,
)
from .context import (
    PARTS_OF,
    Lazy,
    Loader,
    LoopLowering,
    all_of,
    guarded,
    index_compare,
    output_strides,
    scalar_constant,
)
from .expr import Binary, Cast, Const, Expr, Index, IndirectLoad, Load, Select, loads, postorder
from .externs import op_as_extern
from .index import Affine, linear_index
from .ir import ComputedBuffer, ExternCall, Pointwise, xvar
from .registry import lowers


@lowers("setitem")
def lower_setitem(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    dtype, key = meta.dtype, node.kwargs["key"]
    region = tuple(slice_length(*e[1:]) for e in key if e[0] == "slice")
    if len(node.args) > 1:
        value = ctx.operand(node.args[1], region, dtype)
    else:
        fill = scalar_constant(node.kwargs["scalar"], dtype)
        value = lambda i: fill  # noqa: E731
    base = _updatable(ctx, node)
    if base is None and any(e[0] == "slice" and abs(e[3]) > 1 for e in key):
        # every step-th element (x[j::40]): no select addresses it, a region update does
        if not ctx.options.update_in_place or not ctx.native(dtype):
            return op_as_extern(ctx, node)
        base = _scatter_base(ctx, node, node.args[0])
    if base is not None:
        return _region_update(ctx, node, base, value, region)
    x = node.args[0]
    ctx.select_chain[node] = 1 + (ctx.select_chain.get(x, 0) if isinstance(x, Node) else 0)
    return _select(ctx, node, value)


def _select(ctx: LoopLowering, node: Node, value: Loader) -> Lazy:
    """x with x[key] = value: inside the key's region (slices with step +-1, integers) the value,
    read at the position within the region (guarded), elsewhere x."""
    meta = node.tensor
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, selected(node.kwargs["key"], meta.shape, meta.dtype,
                                                 value, x))


def selected(key: tuple[Any, ...], shape: tuple[int, ...], dtype: str, value: Loader,
             x: Loader) -> Loader:
    """The loader of ``x`` (over ``shape``) with ``x[key] = value`` (over the key's region),
    as ``_select`` makes it (a complex array's parts each: ``complex_updates``)."""

    def load(i: tuple[Affine, ...]) -> Expr:
        conditions: list[Expr] = []
        inner: list[Affine] = []
        for d, entry in enumerate(key):
            if entry[0] == "int":
                conditions.append(index_compare("eq", i[d], entry[1]))
                continue
            _, start, stop, step = entry
            count = slice_length(start, stop, step)
            if same_size(count, shape[d]):  # the whole axis, in order or reversed
                inner.append(i[d] if step == 1 else i[d] * -1 + (shape[d] - 1))
                continue
            low, high = (start, start + count) if step == 1 else (start - count + 1, start + 1)
            conditions += [index_compare("ge", i[d], low), index_compare("lt", i[d], high)]
            inner.append(i[d] + (-start) if step == 1 else i[d] * -1 + start)
        if not conditions:
            return value(tuple(inner))
        inside = all_of(conditions)
        return Select(inside, guarded(value(tuple(inner)), inside), x(i), dtype)
    return load


def _updatable(ctx: LoopLowering, node: Node) -> Lazy | None:
    """x's value in a buffer this assignment may overwrite, or None (then it is a select).

    x must be read on the way to this assignment alone (``_read_only_on_the_way``) and either
    lie whole in a buffer its own lowering made (a buffer that exists anyway: updating it costs
    the region alone), or be earlier assignments' selects, written to a buffer now when the
    chain is ``options.select_chain`` long or this region is small beside the array: a few
    selects cost less than a kernel each (``out[:, 0] = x; out[:, 1] = 2 * x`` is one kernel), a
    long chain costs a select per element per assignment."""
    x = node.args[0]
    if not ctx.options.update_in_place or not isinstance(x, Node) or \
            x.op is not Opcode.CALL_FUNCTION or not ctx.native(node.tensor.dtype) or \
            not _read_only_on_the_way(x, node):
        return None
    if not any(e[0] == "int" or not same_size(slice_length(*e[1:]), n)
               for e, n in zip(node.kwargs["key"], node.tensor.shape)):
        return None  # the whole array: a select is the value itself, nothing to keep
    owned = ctx.owned(x)
    if owned is not None:
        return owned
    lazy = ctx.values[x]
    if lazy.memory is not None:
        return None
    # the whole chain: a long one (a loop's assignments) is written to memory at its first
    # assignment, so every iteration is an update (and rerolls with the others)
    total = ctx.select_chain.get(x, 0) + _chain_ahead(ctx, node)
    if x.target != "setitem":
        if total <= ctx.options.select_chain:
            return None
    else:
        region = product(slice_length(*e[1:]) for e in node.kwargs["key"] if e[0] == "slice")
        if total <= ctx.options.select_chain and \
                hint(product(node.tensor.shape)) < SMALL_REGION * (hint(region) + KERNEL_ELEMENTS):
            return None  # a short chain of selects: one kernel, no buffer of its own
    ctx.values[x] = ctx.realize(lazy, output_strides(x.tensor), x)
    return ctx.values[x]


def _chain_ahead(ctx: LoopLowering, node: Node) -> int:
    """How many assignments the chain makes from ``node`` on: each the only reader of the one
    before (memoized along the chain)."""
    chain: list[Node] = []
    at: Node | None = node
    while at is not None and at not in ctx.chain_ahead:
        chain.append(at)
        at = _next_assignment(at)
    after = ctx.chain_ahead[at] if at is not None else 0
    for k, n in enumerate(chain):
        ctx.chain_ahead[n] = len(chain) - k + after
    return ctx.chain_ahead[node]


def _next_assignment(node: Node) -> Node | None:
    """The assignment into ``node``'s value that is its only reader, if any."""
    if len(node.users) != 1:
        return None
    (user,) = node.users
    return user if user.target == "setitem" and user.args[0] is node else None


def _region_update(ctx: LoopLowering, node: Node, base: Lazy, value: Loader,
                   region: tuple[int, ...]) -> Lazy:
    """A kernel over the key's region storing the value into ``base``'s buffer."""
    meta = node.tensor
    key = node.kwargs["key"]
    assert base.memory is not None
    buffer, _, strides = base.memory
    if any(n == 0 for n in region):
        return base  # nothing assigned
    sliced = [d for d, e in enumerate(key) if e[0] == "slice"]
    # loops in memory order, as ``realize`` runs them: x0 over the largest stride
    order = sorted(range(len(sliced)), key=lambda k: -abs(strides[sliced[k]]))
    inner: list[Affine] = [Affine()] * len(sliced)
    for position, k in enumerate(order):
        inner[k] = Affine.var(xvar(position))
    slices = iter(inner)
    position_in_x = [Affine.of(e[1]) if e[0] == "int" else next(slices) * e[3] + e[1]
                     for e in key]
    store = linear_index(position_in_x, strides)
    body = value(tuple(inner))
    ranges = tuple(region[k] for k in order)
    extents = {xvar(i): n for i, n in enumerate(ranges)}
    if _reads_elsewhere(body, buffer, store, meta.shape, strides, extents) or \
            _reads_a_step_of(ctx, body, buffer):
        staged = ctx.realize(Lazy(region, meta.dtype, value), contiguous_strides(region))
        body = staged.loader(tuple(inner))
    name = f"buf{len(ctx.buffers)}"
    ctx.buffers.append(ComputedBuffer(name, meta.shape, meta.dtype, strides, store,
                                      Pointwise(ranges, body), updates=buffer))
    ctx.made_by[name] = node
    return ctx.stored(name, meta.shape, meta.dtype, strides)


#: a region is small when the array has this many times its elements (and a kernel's cost):
#: one more select over the array then costs several times the region's update
SMALL_REGION = 4
#: what starting one more kernel costs, in elements computed (a plan's step on the CPU)
KERNEL_ELEMENTS = 256
#: how many nodes ``_read_only_on_the_way`` looks at before it answers no
CONE_LIMIT = 64


def _read_only_on_the_way(x: Node, node: Node) -> bool:
    """Whether every reader of ``x`` (and every reader of those, and so on) leads to ``node``
    without ever reaching the program's result otherwise: ``x[:, k] = x[:, k - 1] * y`` reads x
    only to compute the value assigned. Those readers come before ``node``, and everything that
    reads what they compute is among them or ``node``: no step after the update reads x's
    buffer. A bounded search: a larger cone is refused (a select, never a wrong result)."""
    seen = {x, node}
    frontier = [u for u in x.users if u is not node]
    while frontier:
        user = frontier.pop()
        if user in seen:
            continue
        if user.op is not Opcode.CALL_FUNCTION or len(seen) > CONE_LIMIT:
            return False  # the result (OUTPUT) or too far to tell
        if not user.users:  # a dead end kept for its floating-point events: it may run after
            return False  # the update (``c = out[29] + a``, a from the old x, inlined in it)
        seen.add(user)
        frontier += user.users
    return True


def _reads_elsewhere(body: Expr, buffer: str, store: Affine, shape: tuple[int, ...],
                     strides: tuple[int, ...], extents: dict[str, int]) -> bool:
    """Whether ``body`` may read an element of ``buffer`` other than the one it is stored to
    in the same iteration, within the region the update writes (an element it may already have
    overwritten). A read of a block of elements disjoint from the written block is safe."""
    written = _box(store, shape, strides, extents)
    for ld in loads(body):
        if ld.buffer != buffer or (isinstance(ld, Load) and ld.index == store):
            continue
        read = _box(ld.index, shape, strides, extents) if isinstance(ld, Load) else None
        if written is None or read is None or \
                not any(r[1] < w[0] or w[1] < r[0] for r, w in zip(read, written)):
            return True
    return False


def _reads_a_step_of(ctx: LoopLowering, body: Expr, buffer: str) -> bool:
    """Whether ``body`` reads the result of a NumPy step made from ``buffer`` (directly or
    through other steps): NumPy may have returned a view of it, the memory the update writes
    under another name at offsets the plan cannot see. ``U[1:] = swv(U, 2)[:, 0] +
    np.median(swv(U, 2), axis=1)`` (``swv`` NumPy's ``sliding_window_view``, a step because
    ``median`` is one) read ``U[i - 1]`` after writing it: a wrong result. The value is then
    computed into a buffer of its own first (a lifted loop's write-back of the view it updated,
    ``U[1:-1, 1:-1] = u``, too: one copy of the region a call)."""
    externs = {b.name: b for b in ctx.buffers if isinstance(b, ExternCall)}
    made_from: dict[str, bool] = {}

    def derived(name: str) -> bool:
        if name not in made_from:
            call = externs.get(name)
            made_from[name] = call is not None and any(r == buffer or derived(r)
                                                       for r in call.reads)
        return made_from[name]

    return any(derived(ld.buffer) for ld in loads(body))


def _box(index: Affine, shape: tuple[int, ...], strides: tuple[int, ...],
         extents: dict[str, int]) -> list[tuple[int, int]] | None:
    """The elements ``index`` reaches over ``extents`` as one interval per dimension of a dense
    layout, or None when it cannot tell (a coefficient that is no one dimension's stride)."""
    if sorted(strides, reverse=True) != list(contiguous_strides(
            tuple(shape[d] for d in sorted(range(len(shape)), key=lambda d: -strides[d])))):
        return None
    low, high = [0] * len(shape), [0] * len(shape)
    rest = index.const
    for d in sorted(range(len(shape)), key=lambda d: -strides[d]):
        low[d] = high[d] = rest // strides[d] if strides[d] else 0
        rest -= low[d] * strides[d]
    if rest:
        return None
    for var, c in index.terms:
        dims = [d for d in range(len(shape)) if abs(c) == strides[d] and shape[d] > 1]
        if len(dims) != 1:
            return None
        span = c // strides[dims[0]] * (extents[var] - 1)
        low[dims[0]] += min(0, span)
        high[dims[0]] += max(0, span)
    if any(lo < 0 or hi >= n for lo, hi, n in zip(low, high, shape)):
        return None
    return list(zip(low, high))


#: how each scatter op combines a value with what the positions before it left (None: the
#: value replaces it)
_COMBINE = {"scatter_maximum": "maximum", "scatter_minimum": "minimum"}


@lowers("scatter", "scatter_maximum", "scatter_minimum")
def lower_scatter(ctx: LoopLowering, node: Node) -> Lazy:
    """``x[i0, ..., ik] = value`` or ``np.add.at``: a kernel over the index arrays' broadcast
    shape (and x's other axes) storing into x's buffer at computed positions
    (``ComputedBuffer.store_offset``), in order: a repeated position takes the last value, or
    (``accumulate``) adds each value to what the positions before it left. x's buffer is
    updated in place when nothing after reads the old x (``_updatable``), else a copy first. An
    index out of bounds fails a check: the call runs eagerly and NumPy raises. With ``axes``
    (0-d indices), the indexed axes are those, the whole others the kernel's ranges."""
    meta = node.tensor
    dtype, count = meta.dtype, node.kwargs["count"]
    x, indices = node.args[0], node.args[1:1 + count]
    axes = tuple(node.kwargs.get("axes") or range(count))
    others = tuple(a for a in range(len(meta.shape)) if a not in axes)
    if not ctx.options.update_in_place or not ctx.native(dtype) or \
            not all(ctx.native(i.tensor.dtype) for i in indices):
        return op_as_extern(ctx, node)
    batch = tuple(np.broadcast_shapes(*(tuple(i.tensor.shape) for i in indices)))
    rest = tuple(meta.shape[a] for a in others)
    ranges = (*batch, *rest)
    if math.prod(ranges) == 0:
        return ctx.values[x]  # nothing assigned
    base = _scatter_base(ctx, node, x)
    buffer, _, strides = base.memory
    index = tuple(Affine.var(xvar(d)) for d in range(len(ranges)))
    at_batch, at_rest = index[:len(batch)], index[len(batch):]
    # positions computed from x: fixed before it changes; or computed at all, over many
    # elements: a parallel, vectorized kernel computes them, not the in-order scatter loop.
    # Each index apart: one computed does not copy another that is read as it is (one-hot's
    # ``out[np.arange(n), labels] = 1``: the labels were copied beside the arange)
    loaders = [ctx.realize(Lazy(batch, "int64", ld), contiguous_strides(batch)).loader
               if _reads(ld(at_batch), buffer) or _worth_computing_first(batch, [ld(at_batch)])
               else ld for ld in (ctx.operand(i, batch, "int64") for i in indices)]
    _bounds_check(ctx, batch, loaders, tuple(meta.shape[a] for a in axes))
    offset = _scatter_offset(loaders, at_batch, tuple(meta.shape[a] for a in axes),
                             tuple(strides[a] for a in axes))
    if len(node.args) > 1 + count:
        value = ctx.operand(node.args[1 + count], ranges, dtype)
    else:
        fill = scalar_constant(node.kwargs["scalar"], dtype)
        value = lambda i: fill  # noqa: E731
    if _reads(value(index), buffer) or _worth_computing_first(ranges, [value(index)]):
        # the value read from x: computed before x changes (or computed at all: see above)
        value = ctx.realize(Lazy(ranges, dtype, value), contiguous_strides(ranges)).loader
    store = linear_index(at_rest, tuple(strides[a] for a in others))
    body = value(index)
    combine = _COMBINE.get(node.target, "add" if node.kwargs.get("accumulate") else None)
    if combine is not None:  # in order: a repeated position combines with the one before
        position = Binary("add", offset, Index(store, "int64"), "int64") if store.terms else offset
        body = Binary(combine, IndirectLoad(buffer, dtype, position), body, dtype)
    name = f"buf{len(ctx.buffers)}"
    ctx.buffers.append(ComputedBuffer(name, meta.shape, dtype, strides, store,
                                      Pointwise(ranges, body), updates=buffer,
                                      store_offset=offset))
    ctx.made_by[name] = node
    return ctx.stored(name, meta.shape, dtype, strides)


def _scatter_offset(loaders: list[Loader], at: tuple[Affine, ...], extents: tuple[int, ...],
                    strides: tuple[int, ...]) -> Expr:
    """The element offset a scatter stores at: each index (negative ones from the end) times
    its axis' stride. Never a store outside the buffer: an index out of bounds gives element 0
    instead (the check then fails and the call's results are NumPy's, from its eager run)."""
    offset: Expr | None = None
    for loader, n, stride in zip(loaders, extents, strides):
        i = loader(at)
        wrapped = Select(Binary("lt", i, Const(0, "int64"), "bool"),
                         Binary("add", i, Const(n, "int64"), "int64"), i, "int64")
        inside = Binary("and", Binary("ge", wrapped, Const(0, "int64"), "bool"),
                        Binary("lt", wrapped, Const(n, "int64"), "bool"), "bool")
        safe = Select(inside, wrapped, Const(0, "int64"), "int64")
        term = Binary("mul", safe, Const(stride, "int64"), "int64")
        offset = term if offset is None else Binary("add", offset, term, "int64")
    assert offset is not None
    return offset


def _scatter_base(ctx: LoopLowering, node: Node, x: Node) -> Lazy:
    """x's value in a buffer the scatter (or a strided assignment) may overwrite: x's own when
    nothing after reads it, else a copy made for this node."""
    if _read_only_on_the_way(x, node) and x.op is Opcode.CALL_FUNCTION:
        owned = ctx.owned(x)
        if owned is not None:
            return owned
    lazy = ctx.values[x]
    return ctx.realize(Lazy(lazy.shape, lazy.dtype, lazy.loader), output_strides(x.tensor))


def _worth_computing_first(shape: tuple[int, ...], values: list[Expr]) -> bool:
    """Whether a scatter's positions or values are better computed by a kernel of their own:
    some arithmetic (not only reads and constants) over at least ``KERNEL_ELEMENTS``."""
    plain = (Load, Const, Index)
    return math.prod(shape) >= KERNEL_ELEMENTS and any(
        not isinstance(e, plain) and not _integer_widening(e) for v in values
        for e in postorder(v))


def _integer_widening(e: Expr) -> bool:
    """An integer value cast to a wider (or as wide) integer: ``np.arange(n)``'s positions as
    int64, an int32 index array's: no arithmetic to compute first."""
    if not isinstance(e, Cast):
        return False
    source, target = np.dtype(e.x.dtype), np.dtype(e.dtype)
    return source.kind in "iu" and target.kind in "iu" and \
        np.can_cast(source, target, "safe")


def _reads(e: Expr, buffer: str) -> bool:
    return any(ld.buffer == buffer for ld in loads(e))


def _bounds_check(ctx: LoopLowering, batch: tuple[int, ...], loaders: list[Loader],
                  extents: tuple[int, ...]) -> None:
    """A check that every index lies in [-n, n) of its axis: else the call runs as NumPy, which
    raises its IndexError."""
    def outside(i: tuple[Affine, ...]) -> Expr:
        found: Expr | None = None
        for loader, n in zip(loaders, extents):
            v = loader(i)
            bad = Binary("or", Binary("lt", v, Const(-n, "int64"), "bool"),
                         Binary("ge", v, Const(n, "int64"), "bool"), "bool")
            found = bad if found is None else Binary("or", found, bad, "bool")
        assert found is not None
        return found
    check = ctx.reduce_values(outside, batch, tuple(range(len(batch))), False, "max", "bool")
    ctx.checks[check.buffer] = "an index is out of bounds"


# -- complex arrays: each element's two parts (``complex_values``) ---------------------------------

@complex_lowers("setitem")
def _complex_setitem(ctx: LoopLowering, node: Node) -> Lazy:
    """``x[key] = value`` into a complex array: each part a select (``selected``), the value
    converted as NumPy's assignment does (a real one's imaginary part +0.0, a complex128 value
    rounded part by part into complex64). A chain past ``options.select_chain`` is written to
    memory first (each select reads the one before). A strided key, and a complex value stored
    into a real array (NumPy warns that it discards the imaginary part), stay NumPy's calls."""
    meta, key, x = node.tensor, node.kwargs["key"], node.args[0]
    if not is_complex(meta.dtype) or any(e[0] == "slice" and abs(e[3]) > 1 for e in key):
        return op_as_extern(ctx, node)
    dtype = PARTS_OF[meta.dtype]
    chain = 1 + (ctx.select_chain.get(x, 0) if isinstance(x, Node) else 0)
    if chain > ctx.options.select_chain and ctx.values[x].memory is None:
        ctx.values[x] = ctx.realize(ctx.values[x], output_strides(x.tensor), x)
        chain = 1
    ctx.select_chain[node] = chain
    region = tuple(slice_length(*e[1:]) for e in key if e[0] == "slice")
    real, imag = parts_of(ctx, x, meta.shape, dtype)
    value = node.args[1] if len(node.args) > 1 else node.kwargs["scalar"]
    value_real, value_imag = parts_of(ctx, value, region, dtype)
    return from_parts(meta.shape, dtype, selected(key, meta.shape, dtype, value_real, real),
                      selected(key, meta.shape, dtype, value_imag, imag))


@complex_lowers("scatter")
def _complex_scatter(ctx: LoopLowering, node: Node) -> Lazy:
    """``x[i] = value`` into a complex array at positions computed at run time (a lifted loop's
    item): ``lower_scatter``'s kernel with one more range, the part, storing both parts of each
    element (positions counted in parts). ``np.add.at`` stays NumPy's call."""
    meta, count = node.tensor, node.kwargs["count"]
    x, indices = node.args[0], node.args[1:1 + count]
    if not is_complex(meta.dtype) or node.kwargs.get("accumulate") or \
            not ctx.options.update_in_place or not complex_native(ctx, meta.dtype) or \
            not all(ctx.native(i.tensor.dtype) for i in indices):
        return op_as_extern(ctx, node)
    dtype = PARTS_OF[meta.dtype]
    axes = tuple(node.kwargs.get("axes") or range(count))
    others = tuple(a for a in range(len(meta.shape)) if a not in axes)
    batch = tuple(np.broadcast_shapes(*(tuple(i.tensor.shape) for i in indices)))
    ranges = (*batch, *(meta.shape[a] for a in others))
    if math.prod(ranges) == 0:
        return ctx.values[x]  # nothing assigned
    base = _complex_base(ctx, node, x)
    buffer, _, parts = base.memory  # strides counted in parts, the part's own last
    index = tuple(Affine.var(xvar(d)) for d in range(len(ranges) + 1))
    at_batch, at_rest, part = index[:len(batch)], index[len(batch):-1], index[-1]
    loaders = [ctx.realize(Lazy(batch, "int64", ld), contiguous_strides(batch)).loader
               if _reads(ld(at_batch), buffer) else ld
               for ld in (ctx.operand(i, batch, "int64") for i in indices)]
    _bounds_check(ctx, batch, loaders, tuple(meta.shape[a] for a in axes))
    offset = _scatter_offset(loaders, at_batch, tuple(meta.shape[a] for a in axes),
                             tuple(parts[a] for a in axes))
    value = node.args[1 + count] if len(node.args) > 1 + count else node.kwargs["scalar"]
    parts_value = from_parts(ranges, dtype, *parts_of(ctx, value, ranges, dtype))
    if _reads(parts_value.loader(index), buffer):  # computed before x changes
        parts_value = ctx.realize(parts_value, contiguous_strides(ranges))
    store = linear_index((*at_rest, part), (*(parts[a] for a in others), 1))
    name = f"buf{len(ctx.buffers)}"
    strides = tuple(s // 2 for s in parts[:-1])
    ctx.buffers.append(ComputedBuffer(name, meta.shape, meta.dtype, strides, store,
                                      Pointwise((*ranges, 2), parts_value.loader(index)),
                                      updates=buffer, store_offset=offset))
    ctx.made_by[name] = node
    return ctx.stored_parts(name, meta.shape, dtype, parts)


def _complex_base(ctx: LoopLowering, node: Node, x: Node) -> Lazy:
    """x's parts in a complex buffer the scatter may overwrite (``_scatter_base``): x's own
    when nothing after reads it, else a copy made for this node."""
    lazy = as_parts(ctx.values[x], x.tensor.dtype)
    if _read_only_on_the_way(x, node) and x.op is Opcode.CALL_FUNCTION and \
            lazy.memory is not None and lazy.memory[1] == 0 and \
            ctx.made_by.get(lazy.memory[0]) is x:
        made = ctx.buffers[int(lazy.memory[0][3:])] if lazy.memory[0].startswith("buf") else None
        if isinstance(made, ComputedBuffer) and made.name == lazy.memory[0] and \
                tuple(made.shape) == tuple(x.tensor.shape) and \
                tuple(made.strides) == tuple(s // 2 for s in lazy.memory[2][:-1]):
            return lazy
    return ctx.realize(Lazy(lazy.shape, lazy.dtype, lazy.loader, parts=True),
                       output_strides(x.tensor))
