"""The loop-IR reference interpreter: evaluates bodies with NumPy over whole index grids.

It defines what a loop program means independently of any code generator (STYLE.md habit 6), so
loop lowering is tested against eager NumPy without compiling, and generated kernels are tested
against it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .expr import (
    Binary,
    Cast,
    Const,
    Expr,
    GuardedLoad,
    Index,
    IndirectLoad,
    KindTable,
    Load,
    Select,
    Ternary,
    Unary,
    postorder,
)
from .index import Affine
from .ir import BufferRef, ExternCall, LoopProgram, Reduction, Scan, map_buffer_refs, rvar, xvar
from .operators import OPERATORS, LoopOperator

Memory = dict[str, tuple[np.ndarray, int]]  # buffer -> (its memory span, position of element 0)
Grid = dict[str, np.ndarray]  # loop variable -> its values, broadcastable against the others
Values = dict[int, Any]  # id of a node -> its value over the grid


def _function(operator: LoopOperator) -> Callable[..., Any]:
    """The operator's value from its operands' values and the node (an operator whose result
    dtype its operands do not fix, ``bitcast``, gets the node's dtype too)."""
    reference = operator.reference
    if operator.result == "U":
        return lambda *args: reference(*args[:-1], args[-1].dtype)
    return lambda *args: reference(*args[:-1])


#: per loop operator (``BINARY_OPS``, ``COMPARISON_OPS``): the result from the operands' values
#: and the node; the operator's NumPy reference (``operators.OPERATORS``)
BINARY_FUNCTIONS: dict[str, Callable[[Any, Any, Binary], Any]] = {
    name: _function(op) for name, op in OPERATORS.items() if op.arity == 2}
#: per loop operator of three operands (``TERNARY_OPS``): the result from their values and node
TERNARY_FUNCTIONS: dict[str, Callable[[Any, Any, Any, Ternary], Any]] = {
    name: _function(op) for name, op in OPERATORS.items() if op.arity == 3}
#: per loop operator (``UNARY_OPS``): the result from the operand's value and the node
UNARY_FUNCTIONS: dict[str, Callable[[Any, Unary], Any]] = {
    name: _function(op) for name, op in OPERATORS.items() if op.arity == 1}


def _reduction(reduce: Callable[..., Any], accumulate: bool) -> Callable[[np.ndarray, int, str], Any]:
    """A reduction over every axis after the first ``kept`` ones, in ``dtype``: accumulated in it
    (sum, prod) or converted to it (max, min)."""
    def run(values: np.ndarray, kept: int, dtype: str) -> Any:
        axes = tuple(range(kept, values.ndim))
        if accumulate:
            return reduce(values, axis=axes, dtype=dtype)
        return reduce(values, axis=axes).astype(dtype)
    return run


def _arg_reduction(reduce: Callable[..., Any]) -> Callable[[np.ndarray, int, str], Any]:
    """argmax/argmin over the reduction axes flattened, in C order."""
    def run(values: np.ndarray, kept: int, dtype: str) -> Any:
        flat = values.reshape(values.shape[:kept] + (-1,))
        return reduce(flat, axis=-1).astype(dtype)
    return run


#: per ``Reduction.reduction_type``: the reduction of a grid's values over its reduction axes
REDUCTIONS = {"sum": _reduction(np.sum, True), "prod": _reduction(np.prod, True),
              "max": _reduction(np.max, False), "min": _reduction(np.min, False),
              "argmax": _arg_reduction(np.argmax), "argmin": _arg_reduction(np.argmin)}
#: per ``Scan.scan_type``: the running reduction, in order along the scanned axis
SCANS = {"sum": np.cumsum, "prod": np.cumprod, "max": np.maximum.accumulate,
         "min": np.minimum.accumulate}



def _grid(ranges: tuple[int, ...], rranges: tuple[int, ...]) -> Grid:
    dims = len(ranges) + len(rranges)
    grid = {}
    for i, n in enumerate((*ranges, *rranges)):
        shape = [1] * dims
        shape[i] = n
        name = xvar(i) if i < len(ranges) else rvar(i - len(ranges))
        grid[name] = np.arange(n, dtype=np.int64).reshape(shape)
    return grid


def _index(expr: Affine, grid: Grid) -> Any:
    total: Any = np.int64(expr.const)
    for var, coeff in expr.terms:
        total = total + grid[var] * coeff
    return total


def _read(e: Load, flat: np.ndarray, at: Any) -> Any:
    """``flat[at]``, where a position outside the buffer is an error: a kernel would read memory
    that is not the buffer's (NumPy would wrap a negative position around instead)."""
    at = np.asarray(at)
    if at.size and (at.min() < 0 or at.max() >= len(flat)):
        raise IndexError(f"{e.kind} of {e.buffer} at {int(at.min())}..{int(at.max())}, outside "
                         f"its {len(flat)} elements")
    return flat[at]


def _load(e: Load, values: Values, grid: Grid, memory: Memory) -> Any:
    flat, origin = memory[e.buffer]
    return _read(e, flat, origin + _index(e.index, grid))


def _guarded_load(e: GuardedLoad, values: Values, grid: Grid, memory: Memory) -> Any:
    flat, origin = memory[e.buffer]
    where = np.asarray(values[id(e.guard)], dtype=bool)
    at = np.clip(origin + _index(e.index, grid), 0, len(flat) - 1)  # unread where false
    return np.where(where, flat[at], np.zeros((), flat.dtype))


def _indirect_load(e: IndirectLoad, values: Values, grid: Grid, memory: Memory) -> Any:
    flat, origin = memory[e.buffer]
    return _read(e, flat, origin + np.asarray(values[id(e.offset)], dtype=np.int64))


def _unary(e: Unary, values: Values, grid: Grid, memory: Memory) -> Any:
    with np.errstate(all="ignore"):
        return UNARY_FUNCTIONS[e.op](values[id(e.x)], e)


def _binary(e: Binary, values: Values, grid: Grid, memory: Memory) -> Any:
    with np.errstate(all="ignore"):
        return BINARY_FUNCTIONS[e.op](values[id(e.a)], values[id(e.b)], e)


def _ternary(e: Ternary, values: Values, grid: Grid, memory: Memory) -> Any:
    with np.errstate(all="ignore"):
        return TERNARY_FUNCTIONS[e.op](values[id(e.a)], values[id(e.b)], values[id(e.c)], e)


#: the value of one node over the whole grid, from its operands' values
_EVALUATE: KindTable[Callable[[Any, Values, Grid, Memory], Any]] = KindTable("evaluate", {
    Load: _load,
    GuardedLoad: _guarded_load,
    IndirectLoad: _indirect_load,
    Index: lambda e, values, grid, memory: np.asarray(_index(e.index, grid)).astype(e.dtype),
    Const: lambda e, values, grid, memory: np.dtype(e.dtype).type(e.value),
    Cast: lambda e, values, grid, memory: np.asarray(values[id(e.x)]).astype(e.dtype),
    Unary: _unary,
    Binary: _binary,
    Ternary: _ternary,
    Select: lambda e, values, grid, memory: np.where(values[id(e.cond)], values[id(e.a)],
                                                     values[id(e.b)]),
})


def evaluate(body: Expr, grid: Grid, memory: Memory) -> Any:
    values: Values = {}
    for e in postorder(body):
        values[id(e)] = _EVALUATE(e, values, grid, memory)
    return values[id(body)]


@dataclass
class LoopRun:
    """What running a loop program gave: the flat output leaves, every buffer's value (arrays in
    their layout; an extern call's result as NumPy returned it), and the reasons of the checks
    that failed (``LoopProgram.checks``: a compiled call runs as NumPy then)."""

    outputs: list[Any]
    buffers: dict[str, Any]
    failed_checks: list[str]


def run_loop_program(program: LoopProgram, arrays: list[np.ndarray]) -> list[Any]:
    """Run ``program`` on arrays in input-buffer order; the flat output leaves."""
    return interpret(program, arrays).outputs


def interpret(program: LoopProgram, arrays: list[np.ndarray]) -> LoopRun:
    """Run ``program`` on arrays in input-buffer order."""
    memory: Memory = {}
    objects: dict[str, Any] = {}
    for buf, array in zip(program.inputs, arrays):
        objects[buf.name] = array
        if isinstance(array, np.ndarray):
            memory[buf.name] = _memory_of(array)
    computed = set()
    for cb in program.buffers:
        if isinstance(cb, ExternCall):
            objects[cb.name] = _call_extern(cb, objects)
            memory[cb.name] = _memory_of(np.asarray(objects[cb.name]))
            continue
        computed.add(cb.name)
        if cb.updates is not None:  # the updated buffer's memory, its other elements kept
            out = memory[cb.updates][0]
        else:  # a complex buffer holds its parts (``complex_values``)
            parts = 2 if np.dtype(cb.dtype).kind == "c" else 1
            out = np.zeros(parts * max(1, math.prod(cb.shape) if cb.shape else 1),
                           dtype=np.dtype(cb.dtype).type(0).real.dtype if parts == 2 else cb.dtype)
        if cb.store_offset is not None:
            _scatter(cb, out, memory)
        elif cb.ordered:  # one iteration of the outermost loop after another
            for at in range(cb.ranges[0]):
                _store(cb, out, memory, at)
        else:
            _store(cb, out, memory)
        memory[cb.name] = (out, 0)
        itemsize = np.dtype(cb.dtype).itemsize
        objects[cb.name] = np.lib.stride_tricks.as_strided(
            out.view(cb.dtype), shape=cb.shape, strides=tuple(s * itemsize for s in cb.strides))
    results = []
    for ref in program.outputs:
        if ref.buffer is None:
            results.append(ref.const)
        else:
            value = objects[ref.buffer]
            value = value.copy() if ref.buffer in computed else value
            results.append(value[()] if ref.scalar and isinstance(value, np.ndarray) else value)
    failed = [why for name, why in program.checks.items() if np.any(objects[name])]
    return LoopRun(results, objects, failed)


def _scatter(cb: Any, out: np.ndarray, memory: Memory) -> None:
    """A scatter (``store_offset``), one position after another in the loops' order: a later
    position reads what an earlier one stored (``np.add.at``'s sums), the last store wins."""
    for point in np.ndindex(*cb.ranges):
        grid = {xvar(d): np.int64(v) for d, v in enumerate(point)}
        value = evaluate(cb.data.body, grid, memory)
        at = _index(cb.store_index, grid) + np.int64(evaluate(cb.store_offset, grid, memory))
        out[at] = value


def _store(cb: Any, out: np.ndarray, memory: Memory, at: int | None = None) -> None:
    """Every element of ``cb`` computed over its whole grid at once (or, ``at``, over the grid
    with the outermost loop variable at that value), stored into ``out``."""
    grid = _grid(cb.ranges, cb.reduction_ranges)
    if at is not None:
        grid[xvar(0)] = np.full((1,) * grid[xvar(0)].ndim, at, dtype=np.int64)
    value = np.asarray(evaluate(cb.data.body, grid, memory))
    full = np.broadcast_to(value, tuple(np.broadcast_shapes(*(g.shape for g in grid.values())))
                           if grid else ())
    if isinstance(cb.data, Scan):  # in order along the scanned axis, as NumPy
        full = SCANS[cb.data.scan_type](np.array(full), axis=len(cb.ranges), dtype=cb.dtype)
    elif isinstance(cb.data, Reduction):
        full = REDUCTIONS[cb.data.reduction_type](full, len(cb.ranges), cb.dtype)
        grid = _grid(cb.ranges, ())
    full = np.broadcast_to(full, tuple(len(g.reshape(-1)) for g in grid.values()))
    out[_index(cb.store_index, grid)] = full


def _memory_of(array: np.ndarray) -> tuple[np.ndarray, int]:
    """The array's memory span as a flat array, and where element 0 lies in it; a complex
    array's as its parts (``complex_values``), counted in parts."""
    if array.dtype.kind == "c":
        array = array[..., np.newaxis].view(array.real.dtype)
    itemsize = array.itemsize
    if not array.size:
        return np.zeros(1, array.dtype), 0
    strides = [s // itemsize for s in array.strides]
    low = sum(s * (d - 1) for s, d in zip(strides, array.shape) if s < 0)
    high = sum(s * (d - 1) for s, d in zip(strides, array.shape) if s > 0)
    # flipping the axes with negative strides puts element 0 at the lowest address
    lowest = array[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in strides)]
    flat = np.lib.stride_tricks.as_strided(lowest, shape=(high - low + 1,), strides=(itemsize,))
    return flat, -low


def _call_extern(call: ExternCall, objects: dict[str, Any]) -> Any:
    from stax.ir.interpreter import call_method, resolve_function

    def fetch(ref: BufferRef) -> Any:
        return objects[ref.name]
    args, kwargs = map_buffer_refs(call.args, fetch), map_buffer_refs(call.kwargs, fetch)
    if call.method:
        return call_method(args[0], call.target, args[1:], kwargs)
    return resolve_function(call.target)(*args, **kwargs)
