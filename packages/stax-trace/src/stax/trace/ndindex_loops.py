"""Loops over ``np.ndindex``: the loop capture takes them as loops over the flat position.

``for i, j in np.ndindex(shape)`` iterates tuples, which no lifted body can take as its item
(a 0-d integer). The rewritten source calls ``np.ndindex`` as written (``shaped_iter``), and
where it is NumPy's of int sizes, the loop gets an ``NdIndex``: the same tuples, with the
shape. ``loops.run_loop`` then runs a loop over ``range`` of the size whose body unravels the
flat position (``over_flat``: floor divisions and remainders of the traced item, recorded),
so the loop lifts like any ``range`` loop and the indices are numbers the body may compute
with. A tuple target is unpacked from a plain one, ``INDEX_TUPLE``, first in the body
(``plain_index_target``: Python's own order)."""

from __future__ import annotations

import ast
import itertools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

#: the plain target a loop over ``np.ndindex`` unpacking its tuples is given
INDEX_TUPLE = "__stax_index"


class NdIndex:
    """What ``np.ndindex(*shape)`` iterates (tuples of Python ints, in C order), with its
    ``shape``: the iterable of a loop ``for i, j in np.ndindex(shape)`` (``_shaped_iter``)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self._it = iter(itertools.product(*(range(n) for n in shape)))

    def __iter__(self) -> NdIndex:
        return self

    def __next__(self) -> tuple[int, ...]:
        return next(self._it)



def unravel(flat: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The index tuple of a flat position in C order (a Python int, or a lifted body's traced
    item: its floor divisions and remainders are recorded)."""
    if not shape:
        return ()
    out, inside = [], 1
    for n in reversed(shape[1:]):
        out.append(flat // inside % n)
        inside *= n
    out.append(flat // inside)
    return tuple(reversed(out))


def ndindex_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` as a loop's iterable; NumPy's ``ndindex`` of Python ints as an
    ``NdIndex`` of that shape."""
    items = fn(*args, **kwargs)
    shape = args[0] if len(args) == 1 and type(args[0]) is tuple else args
    if fn is not np.ndindex or kwargs or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape):
        return items
    # (a traced array's sizes are read here as the unrolled loop's ranges would read them)
    return NdIndex(tuple(max(operator.index(n), 0) for n in shape))


def shaped_iter(iterable: ast.expr) -> ast.expr:
    """``np.ndindex(...)`` as ``__stax_loop__.ndindex(np.ndindex, ...)``: the call as written,
    whose result, where it is NumPy's ``ndindex`` of an int shape, iterates the same tuples
    and knows its shape (``NdIndex``), so a long loop over it lifts as a loop over the flat
    index. Any other iterable as it is."""
    func = iterable.func if isinstance(iterable, ast.Call) else None
    if not ((isinstance(func, ast.Attribute) and func.attr == "ndindex") or
            (isinstance(func, ast.Name) and func.id == "ndindex")):
        return iterable
    return ast.Call(ast.Attribute(ast.Name("__stax_loop__", ast.Load()), "ndindex", ast.Load()),
                    [func, *iterable.args], iterable.keywords)


def plain_index_target(node: ast.For) -> bool:
    """Give a loop over ``np.ndindex`` with a tuple target (``for i, j in ...``) the plain
    target ``INDEX_TUPLE``, unpacked first in its body; whether it did."""
    if not isinstance(node.target, ast.Tuple) or shaped_iter(node.iter) is node.iter:
        return False
    unpack = ast.copy_location(ast.Assign([node.target], ast.Name(INDEX_TUPLE, ast.Load())), node)
    node.target = ast.copy_location(ast.Name(INDEX_TUPLE, ast.Store()), node)
    node.body = [unpack, *node.body]
    return True


def over_flat(shape: tuple[int, ...], body: Callable[..., tuple[Any, ...]],
               whole: Callable[..., tuple[Any, ...]], target: int | None
               ) -> tuple[Any, Any, range]:
    """A loop over ``np.ndindex(shape)`` as one over ``range`` of its size: the body and the
    whole loop take flat positions and unravel them (closing over the shape alone: a lifted
    body's key reads what it closes over). ``target``: the loop variable's position among
    the body's results, where the body returns the flat position."""

    def flat_body(item: Any, *values: Any) -> tuple[Any, ...]:
        out = body(unravel(item, shape), *values)
        if target is None:
            return out
        return (*out[:target], item, *out[target + 1:])

    def flat_whole(items: Any, *values: Any) -> tuple[Any, ...]:
        return whole((unravel(k, shape) for k in items), *values)
    return flat_body, flat_whole, range(math.prod(shape))
