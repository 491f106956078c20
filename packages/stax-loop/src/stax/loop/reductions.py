"""Loop lowerings of reductions and scans: sum, prod, max, min, any, all, mean, var, std,
argmax, argmin, cumsum, cumprod, and layer_norm (two reductions and an element-wise pass)."""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir import Node, contiguous_strides
from stax.ir.ops import CostClass, ops_of_cost
from stax.ir.sizes import is_symbolic

from .context import Lazy, Loader, LoopLowering, float_predicate, output_strides
from .expr import Binary, Cast, Const, Expr, Index, IndirectLoad, Select, Unary, postorder
from .externs import library_call, op_as_extern
from .index import Affine, linear_index
from .ir import ComputedBuffer, Scan, rvar, xvar
from .registry import lowers


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    count = 1
    for d in axes:
        count *= shape[d]
    return count


def count_value(count: Any, dtype: str) -> Expr:
    """An element count as a value of ``dtype``, as NumPy divides by it (the Python int
    converted to the dtype): a constant, or, for a size expression (a size-generic program,
    issue 15), the size converted at run time (int64 to float rounds as NumPy's conversion)."""
    if is_symbolic(count):
        return Cast(Index(Affine((), count), "int64"), dtype)
    return Const(np.dtype(dtype).type(count).item(), dtype)


@lowers("sum", "prod", "max", "min")
def lower_reduction(ctx: LoopLowering, node: Node) -> Lazy:
    x = ctx.values[node.args[0]]
    return ctx.reduce(node, x, tuple(node.kwargs["axis"]), node.kwargs["keepdims"], node.target)


@lowers("any", "all")
def lower_any_all(ctx: LoopLowering, node: Node) -> Lazy:
    """any/all: the max/min of the values as bools (logical or/and)."""
    kind = "max" if node.target == "any" else "min"
    x = ctx.values[node.args[0]]
    loader = ctx.operand(node.args[0], x.shape, "bool")
    return ctx.reduce_values(loader, x.shape, tuple(node.kwargs["axis"]),
                             node.kwargs["keepdims"], kind, "bool", output_strides(node.tensor))


@lowers("mean")
def lower_mean(ctx: LoopLowering, node: Node) -> Lazy:
    """The sum, accumulated in the result dtype as NumPy does, divided by the count."""
    x = ctx.values[node.args[0]]
    axes = tuple(node.kwargs["axis"])
    total = ctx.reduce(node, x, axes, node.kwargs["keepdims"], "sum")
    dtype = node.tensor.dtype
    n = count_value(_count(x.shape, axes), dtype)
    return Lazy(total.shape, dtype, lambda i: Binary("truediv", total.loader(i), n, dtype))


@lowers("var", "std")
def lower_var(ctx: LoopLowering, node: Node) -> Lazy:
    """var/std as NumPy computes them: the mean (sum / n), then the sum of squared deviations
    divided by n - ddof, in the result dtype; std is its square root."""
    meta = node.tensor
    dtype = meta.dtype
    x_lazy = ctx.values[node.args[0]]
    if dtype not in ("float32", "float64"):
        return op_as_extern(ctx, node)
    shape, axes = x_lazy.shape, tuple(node.kwargs["axis"])
    count = _count(shape, axes)
    x = ctx.operand(node.args[0], shape, dtype)
    squares = _welford_merge(ctx, x, shape, dtype) if _long_full_reduction(ctx, shape, axes) \
        else _squared_deviations(ctx, x, shape, axes, dtype)
    dof = count_value(max(count - node.kwargs["ddof"], 0), dtype)
    keep = node.kwargs["keepdims"]
    std = node.target == "std"

    def value(i: tuple[Affine, ...]) -> Expr:
        full = list(i) if keep else _insert_axes(i, axes, len(shape))
        v: Expr = Binary("truediv", squares.loader(tuple(full)), dof, dtype)
        return Unary("sqrt", v, dtype) if std else v
    return Lazy(meta.shape, dtype, value)


def _squared_deviations(ctx: LoopLowering, x: Loader, shape: tuple[int, ...],
                        axes: tuple[int, ...], dtype: str) -> Lazy:
    """sum((x - mean)^2) over ``axes`` (kept as size 1), the mean from a first reduction: NumPy's
    two passes. In a row kernel both passes read the row while it is in cache."""
    total = ctx.reduce_values(x, shape, axes, True, "sum", dtype)
    n = count_value(_count(shape, axes), dtype)
    mean = ctx.operand_of(total, shape, lambda i: Binary("truediv", total.loader(i), n, dtype))

    def squared(i: tuple[Affine, ...]) -> Expr:
        d = Binary("sub", x(i), mean(i), dtype)
        return Binary("mul", d, d, dtype)
    return ctx.reduce_values(squared, shape, axes, True, "sum", dtype)


def _long_full_reduction(ctx: LoopLowering, shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    count = _count(shape, axes)
    return len(axes) == len(shape) and count >= ctx.options.split_min and (
        len(shape) >= 2 or ctx.split_chunks(count) is not None)


def _welford_merge(ctx: LoopLowering, x: Loader, shape: tuple[int, ...], dtype: str) -> Lazy:
    """sum((x - mean)^2) over all of a long array in one pass over memory (spec §6.5): the
    array as rows (the first axis, or chunks of a 1-D array), each row's sum, its mean ``m_c``
    and its deviations' sum ``D_c`` and squares ``M2_c`` in one row kernel while the row is in
    cache, then the rows merged about the rounded global mean ``a`` (Chan's combination):

        T = sum_c M2_c + 2 (m_c - a) D_c + n_c (m_c - a)^2     (= sum (x - a)^2)
        C = sum_c D_c + n_c (m_c - a)                          (= sum (x - a))
        M2 = T - C^2 / n

    Every term is a small quantity (deviations from means near the data), so nothing cancels.
    The rounded row means are exact where they are used: ``D_c`` carries each row's own
    rounding, which Chan's textbook form ``M2_c + n_c (m_c - mean)^2`` drops (float32
    ``3e5 + randn(70000)``: relative error 1.4e-3 that way; NumPy's two passes 2.4e-8)."""
    count = _count(shape, tuple(range(len(shape))))
    if len(shape) >= 2:
        rows_shape, inner = shape, tuple(range(1, len(shape)))
        rows = x
    else:
        chunks = ctx.split_chunks(count)
        assert chunks is not None  # _long_full_reduction
        rows_shape, inner = (chunks, count // chunks), (1,)

        def rows(index: tuple[Affine, ...]) -> Expr:
            return x((index[0] * rows_shape[1] + index[1],))
    per_row = count // rows_shape[0]
    n_row = Const(float(per_row), dtype)
    sums = ctx.reduce_values(rows, rows_shape, inner, True, "sum", dtype)  # (rows, 1, ...)
    row_mean = ctx.operand_of(sums, rows_shape, lambda i: Binary("truediv", sums.loader(i),
                                                                  n_row, dtype))

    def deviation(i: tuple[Affine, ...]) -> Expr:
        return Binary("sub", rows(i), row_mean(i), dtype)
    deviations = ctx.reduce_values(deviation, rows_shape, inner, True, "sum", dtype)
    m2_rows = ctx.reduce_values(lambda i: _square(deviation(i), dtype), rows_shape, inner, True,
                                "sum", dtype)
    ones = (Affine(),) * (len(rows_shape) - 1)
    total = ctx.reduce_values(lambda i: sums.loader((i[0], *ones)), (rows_shape[0],), (0,), True,
                              "sum", dtype)  # (1,)
    mean = Binary("truediv", total.loader((Affine(),)), Const(float(count), dtype), dtype)

    def spread(i: tuple[Affine, ...]) -> Expr:  # m_c - a
        row = (i[0], *ones)
        return Binary("sub", Binary("truediv", sums.loader(row), n_row, dtype), mean, dtype)

    def about_mean(i: tuple[Affine, ...]) -> Expr:  # M2_c + 2 e D_c + n_c e^2
        row, e = (i[0], *ones), spread(i)
        # where the mean overflowed (e infinite) the cross term is left out: inf * 0 made the
        # variance NaN where NumPy's two passes give inf
        cross = Select(float_predicate("isfinite", e), Binary(
            "mul", Binary("add", e, e, dtype), deviations.loader(row), dtype), Const(0.0, dtype),
            dtype)
        return Binary("add", Binary("add", m2_rows.loader(row), cross, dtype),
                      Binary("mul", n_row, _square(e, dtype), dtype), dtype)

    def offset(i: tuple[Affine, ...]) -> Expr:  # D_c + n_c e
        row = (i[0], *ones)
        return Binary("add", deviations.loader(row), Binary("mul", n_row, spread(i), dtype),
                      dtype)
    squares = ctx.reduce_values(about_mean, (rows_shape[0],), (0,), False, "sum", dtype)  # ()
    offsets = ctx.reduce_values(offset, (rows_shape[0],), (0,), False, "sum", dtype)  # ()
    rows_m2 = ctx.reduce_values(lambda i: m2_rows.loader((i[0], *ones)), (rows_shape[0],),
                                (0,), False, "sum", dtype)  # ()

    def merged(i: tuple[Affine, ...]) -> Expr:  # T - C^2 / n; T where C overflowed
        c, t = offsets.loader(()), squares.loader(())
        moments = Select(float_predicate("isfinite", c), Binary(
            "sub", t, Binary("truediv", _square(c, dtype), Const(float(count), dtype), dtype),
            dtype), t, dtype)
        # a mean that overflowed: NumPy's deviations from it are infinite (inf), or NaN where an
        # element is infinite too (a row's own moments are NaN then); a NaN mean gives NaN
        infinite = Binary("add", rows_m2.loader(()), Const(float("inf"), dtype), dtype)
        return Select(float_predicate("isfinite", mean), moments,
                      Select(float_predicate("isnan", mean), mean, infinite, dtype), dtype)
    return Lazy((1,) * len(shape), dtype, merged)


def _insert_axes(index: tuple[Affine, ...], axes: tuple[int, ...], ndim: int) -> list[Affine]:
    """An index over a keepdims=False result, as an index of the keepdims=True shape."""
    it = iter(index)
    return [Affine() if d in axes else next(it) for d in range(ndim)]


@lowers("argmax", "argmin", any_dtype=True)
def lower_arg(ctx: LoopLowering, node: Node) -> Lazy:
    x = ctx.values[node.args[0]]
    if not ctx.native(x.dtype):
        return op_as_extern(ctx, node)
    loader = ctx.operand(node.args[0], x.shape, x.dtype)
    axes = tuple(node.kwargs["axis"])
    keepdims = node.kwargs["keepdims"]
    if len(axes) == len(x.shape):
        split = _split_arg(ctx, loader, x.shape, node.target, x.dtype)
        if split is not None:
            return split if not keepdims else \
                Lazy((1,) * len(x.shape), "int64", lambda index: split.loader(()))
    return ctx.reduce_values(loader, x.shape, axes, keepdims, node.target, "int64")


def _split_arg(ctx: LoopLowering, loader: Loader, shape: tuple[int, ...], kind: str,
               dtype: str) -> Lazy | None:
    """A long arg reduction to one index, split as sums are (``LoopLowering._split``): over rows
    (the first axis, or chunks of a 1-D array) each row's arg and extreme, an outer loop the
    threads share, the rows read again from cache by the arg's second pass; then the row of the
    first extreme (a NaN's, where one is: a row's extreme is NaN then) and its arg, offset. The
    first of equal extremes is in the first row holding one, at that row's first: NumPy's."""
    if any(is_symbolic(n) for n in shape):
        return None  # a size-generic version: its size is not decided here (int() pins it)
    total = int(np.prod(shape))
    if total < ctx.options.split_min:
        return None
    if len(shape) == 1:
        chunks = ctx.split_chunks(total)
        if chunks is None:
            return None
        size = total // chunks
        rows_shape: tuple[int, ...] = (chunks, size)

        def rows(index: tuple[Affine, ...]) -> Expr:
            return loader((index[0] * size + index[1],))
    else:
        rows_shape, rows, size = shape, loader, total // shape[0]
    rest = tuple(range(1, len(rows_shape)))
    where = ctx.reduce_values(rows, rows_shape, rest, False, kind, "int64")
    extreme = ctx.reduce_values(rows, rows_shape, rest, False,
                                "max" if kind == "argmax" else "min", dtype)
    row = ctx.reduce_values(extreme.loader, extreme.shape, (0,), False, kind, "int64")
    assert where.buffer is not None

    def flat(index: tuple[Affine, ...]) -> Expr:
        at = row.loader(())
        return Binary("add", Binary("mul", at, Const(size, "int64"), "int64"),
                      IndirectLoad(where.buffer, "int64", at), "int64")
    return Lazy((), "int64", flat)


#: the scan kind of each scan op
_SCAN_KINDS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}


@lowers(*_SCAN_KINDS)
def lower_scan(ctx: LoopLowering, node: Node) -> Lazy:
    """cumsum/cumprod (and ``np.maximum.accumulate``, ``np.minimum.accumulate``) along
    ``axis``: the other axes are x variables, the scanned one r0; the body (the operand,
    producers inlined) is cast to the result dtype first, as NumPy does."""
    kind = _SCAN_KINDS[node.target]
    meta = node.tensor
    axis, shape, dtype = node.kwargs["axis"], meta.shape, meta.dtype
    if dtype == "bool" or not ctx.native(dtype):
        return op_as_extern(ctx, node)
    _functions_computed_first(ctx, node.args[0])
    x = ctx.operand(node.args[0], shape, dtype)
    kept = [d for d in range(len(shape)) if d != axis]
    index = [Affine()] * len(shape)
    for i, d in enumerate(kept):
        index[d] = Affine.var(xvar(i))
    index[axis] = Affine.var(rvar(0))
    strides = output_strides(meta)
    name = f"buf{len(ctx.buffers)}"
    data = Scan(tuple(shape[d] for d in kept), shape[axis], kind, x(tuple(index)))
    ctx.buffers.append(ComputedBuffer(name, shape, dtype, strides,
                                      linear_index(index, strides), data))
    return ctx.stored(name, shape, dtype, strides)


@lowers("layer_norm")
def lower_layer_norm(ctx: LoopLowering, node: Node) -> Lazy:
    """layer_norm as loops: mean and variance reductions (kept two-pass, each summing in the
    dtype NumPy's mean uses) and one element-wise pass; a one-pass Welford kernel can replace the
    two reductions without changing the op."""
    meta = node.tensor
    x_node, w_node, b_node = node.args
    if meta.dtype not in ("float32", "float64") or not isinstance(x_node, Node):
        return library_call(ctx, node)
    dtype, shape = meta.dtype, meta.shape
    axes = tuple(range(len(shape) - node.kwargs["normalized_ndim"], len(shape)))
    n = count_value(_count(shape, axes), dtype)
    x = ctx.operand(x_node, shape, dtype)
    total = ctx.reduce_values(x, shape, axes, True, "sum", dtype)
    mean = ctx.operand_of(total, shape, lambda i: Binary("truediv", total.loader(i), n, dtype))

    def centered(i: tuple[Affine, ...]) -> Expr:
        return Binary("sub", x(i), mean(i), dtype)

    squares = ctx.reduce_values(lambda i: _square(centered(i), dtype), shape, axes, True, "sum",
                                dtype)
    var = ctx.operand_of(squares, shape, lambda i: Binary("truediv", squares.loader(i), n, dtype))
    eps = Const(float(np.dtype(dtype).type(node.kwargs["eps"])), dtype)
    w = ctx.operand(w_node, shape, dtype) if w_node is not None else None
    b = ctx.operand(b_node, shape, dtype) if b_node is not None else None

    def out(i: tuple[Affine, ...]) -> Expr:
        y: Expr = Binary("truediv", centered(i),
                         Unary("sqrt", Binary("add", var(i), eps, dtype), dtype), dtype)
        if w is not None:
            y = Binary("mul", y, w(i), dtype)
        if b is not None:
            y = Binary("add", y, b(i), dtype)
        return y
    return Lazy(shape, dtype, out)


def _square(e: Expr, dtype: str) -> Expr:
    return Binary("mul", e, e, dtype)


#: ops of a math routine (``log1p``, ``exp``, ``pow``): vectorized in a pointwise loop, one
#: element at a time in a scan's
_FUNCTIONS = ops_of_cost(CostClass.FUNCTION)


def _functions_computed_first(ctx: LoopLowering, operand: Any) -> None:
    """A scan's operand that calls a math routine (``np.log1p(r).cumsum()``) computed into a
    buffer of its own first: inlined into the scan's sequential loop the routine ran one element
    at a time (5000 float64: 65 us, NumPy 23; vectorized first: 13 us)."""
    if not isinstance(operand, Node):
        return
    lazy = ctx.values[operand]
    if lazy.buffer is not None or not lazy.shape or not ctx.native(lazy.dtype):
        return
    probe = lazy.loader(tuple(Affine.var(xvar(d)) for d in range(len(lazy.shape))))
    if any(isinstance(e, (Unary, Binary)) and e.op in _FUNCTIONS for e in postorder(probe)):
        ctx.values[operand] = ctx.realize(lazy, contiguous_strides(lazy.shape), owner=operand)
