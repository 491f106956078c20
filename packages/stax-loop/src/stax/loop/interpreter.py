"""The loop-IR reference interpreter: evaluates bodies with NumPy over whole index grids.

It defines what a loop program means independently of any code generator (STYLE.md habit 6), so
loop lowering is tested against eager NumPy without compiling, and generated kernels are tested
against it.
"""

from __future__ import annotations

import math
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
    Load,
    Select,
    Unary,
    postorder,
)
from .index import Affine
from .ir import BufferRef, ExternCall, LoopProgram, Reduction, Scan, map_buffer_refs, rvar, xvar

_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
           "maximum": np.maximum, "minimum": np.minimum, "or": np.bitwise_or,
           "and": np.bitwise_and, "xor": np.bitwise_xor, "shl": np.left_shift,
           "shr": np.right_shift, "copysign": np.copysign, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
           "floordiv": np.floor_divide, "mod": np.remainder, "hypot": np.hypot, "pow": np.power,
           "arctan2": np.arctan2, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
           "ldexp": np.ldexp, "py_floordiv": np.floor_divide, "py_mod": np.remainder}


def _grid(ranges: tuple[int, ...], rranges: tuple[int, ...]) -> dict[str, np.ndarray]:
    dims = len(ranges) + len(rranges)
    grid = {}
    for i, n in enumerate((*ranges, *rranges)):
        shape = [1] * dims
        shape[i] = n
        name = xvar(i) if i < len(ranges) else rvar(i - len(ranges))
        grid[name] = np.arange(n, dtype=np.int64).reshape(shape)
    return grid


def _index(expr: Affine, grid: dict[str, np.ndarray]) -> Any:
    total: Any = np.int64(expr.const)
    for var, coeff in expr.terms:
        total = total + grid[var] * coeff
    return total


_UNARY = {"neg": np.negative, "abs": np.absolute, "sqrt": np.sqrt, "floor": np.floor,
          "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "exp": np.exp, "log": np.log,
          "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "signbit": np.signbit, "log2": np.log2,
          "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1, "exp2": np.exp2,
          "sinh": np.sinh, "cosh": np.cosh, "cbrt": np.cbrt, "arctan": np.arctan,
          "arcsin": np.arcsin, "arccos": np.arccos, "arcsinh": np.arcsinh,
          "arccosh": np.arccosh, "arctanh": np.arctanh, "tan": np.tan,
          "popcount": np.bitwise_count}
_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}

Memory = dict[str, tuple[np.ndarray, int]]  # buffer -> (its memory span, position of element 0)


def evaluate(body: Expr, grid: dict[str, np.ndarray], memory: Memory) -> Any:
    values: dict[int, Any] = {}
    for e in postorder(body):
        if isinstance(e, IndirectLoad):
            flat, origin = memory[e.buffer]
            v = flat[origin + np.asarray(values[id(e.offset)], dtype=np.int64)]
        elif isinstance(e, GuardedLoad):
            flat, origin = memory[e.buffer]
            where = np.asarray(values[id(e.guard)], dtype=bool)
            at = np.clip(origin + _index(e.index, grid), 0, len(flat) - 1)  # unread where false
            v = np.where(where, flat[at], np.zeros((), flat.dtype))
        elif isinstance(e, Load):
            flat, origin = memory[e.buffer]
            v = flat[origin + _index(e.index, grid)]
        elif isinstance(e, Index):
            v = np.asarray(_index(e.index, grid)).astype(e.dtype)
        elif isinstance(e, Const):
            v = np.dtype(e.dtype).type(e.value)
        elif isinstance(e, Cast):
            v = np.asarray(values[id(e.x)]).astype(e.dtype)
        elif isinstance(e, Unary):
            with np.errstate(all="ignore"):
                v = np.asarray(values[id(e.x)], dtype=e.x.dtype).view(e.dtype) \
                    if e.op == "bitcast" else _UNARY[e.op](values[id(e.x)])
        elif isinstance(e, Select):
            v = np.where(values[id(e.cond)], values[id(e.a)], values[id(e.b)])
        elif isinstance(e, Binary):
            with np.errstate(all="ignore"):
                v = _BINARY[e.op](values[id(e.a)], values[id(e.b)])
        else:
            raise TypeError(type(e).__name__)
        values[id(e)] = v
    return values[id(body)]


def run_loop_program(program: LoopProgram, arrays: list[np.ndarray]) -> list[Any]:
    """Run ``program`` on arrays in input-buffer order; the flat output leaves."""
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
        out = np.zeros(max(1, math.prod(cb.shape) if cb.shape else 1), dtype=cb.dtype)
        grid = _grid(cb.ranges, cb.reduction_ranges)
        value = np.asarray(evaluate(cb.data.body, grid, memory))
        full = np.broadcast_to(value, tuple(np.broadcast_shapes(*(g.shape for g in grid.values())))
                               if grid else ())
        if isinstance(cb.data, Scan):  # in order along the scanned axis, as NumPy
            scan = np.cumsum if cb.data.scan_type == "sum" else np.cumprod
            full = scan(np.array(full), axis=len(cb.ranges), dtype=cb.dtype)
        elif isinstance(cb.data, Reduction):
            axes = tuple(range(len(cb.ranges), len(cb.ranges) + len(cb.reduction_ranges)))
            kind = cb.data.reduction_type
            if kind in ("argmax", "argmin"):  # over the reduction axes flattened, in C order
                flat = full.reshape(full.shape[: len(cb.ranges)] + (-1,))
                full = getattr(np, kind)(flat, axis=-1).astype(cb.dtype)
            elif kind in ("max", "min"):
                full = _REDUCE[kind](full, axis=axes).astype(cb.dtype)
            else:
                full = _REDUCE[kind](full, axis=axes, dtype=cb.dtype)
            grid = _grid(cb.ranges, ())
        full = np.broadcast_to(full, tuple(len(g.reshape(-1)) for g in grid.values()))
        out[_index(cb.store_index, grid)] = full
        memory[cb.name] = (out, 0)
        itemsize = np.dtype(cb.dtype).itemsize
        objects[cb.name] = np.lib.stride_tricks.as_strided(
            out, shape=cb.shape, strides=tuple(s * itemsize for s in cb.strides))
    results = []
    for ref in program.outputs:
        if ref.buffer is None:
            results.append(ref.const)
        else:
            value = objects[ref.buffer]
            value = value.copy() if ref.buffer in computed else value
            results.append(value[()] if ref.scalar and isinstance(value, np.ndarray) else value)
    return results


def _memory_of(array: np.ndarray) -> tuple[np.ndarray, int]:
    """The array's memory span as a flat array, and where element 0 lies in it."""
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
