"""The dynamic half of definition 2.2: an array's layout as expressions of its sizes (issue 15).

In dynamic mode sigma keeps an array's rank and dtype and rewrites its strides in terms of the
sizes, so a contiguous array of any size has one signature and its transpose another (spec §2.2):
walk the dimensions from the smallest stride; a stride of 1 is ``1``; a stride equal to the
inner dimension's size times that dimension's expression is written so (``s1*1`` for the rows
of a row-major matrix); anything else stays a number (a slice's step 2, a broadcast's 0).
Dimensions of size 0 or 1 are specialized, as torch.compile does: their size stays in the key
and their stride, which NumPy leaves arbitrary for them, is not looked at.

What builds on this (docs/dynamic-shapes.md): size symbols in the capture and op graphs, shape
guards for the relations the program relies on, size-generic kernels whose sizes are runtime
arguments, and automatic dynamic (the dimensions that changed between two calls).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

#: sizes kept exact in dynamic mode: their behaviour differs (broadcasting, empty loops)
SPECIALIZED_SIZES = (0, 1)


def stride_expressions(shape: Sequence[int], strides: Sequence[int],
                       chained: Collection[int] = ()) -> tuple[str, ...]:
    """Each dimension's stride (in elements) as an expression of the sizes, per spec §2.2:
    ``s<d>`` names dimension ``d``'s size. A specialized dimension (size 0 or 1) is written as
    its size, ``=0`` or ``=1``; the other dimensions of an empty array as ``*`` (no element is
    read, whatever the strides). A size-1 dimension in ``chained`` (dynamic, ``generic.py``)
    is written like the others instead, strides of equal length then taken inner first."""
    if len(shape) != len(strides):
        raise ValueError(f"shape {tuple(shape)} and strides {tuple(strides)} differ in rank")
    if 0 in shape:  # no element is read: only the sizes matter (NumPy gives such arrays any
        return tuple("=0" if n == 0 else "*" for n in shape)  # strides, often 0)
    written: dict[int, str] = {}
    for d, n in enumerate(shape):
        if n in SPECIALIZED_SIZES and d not in chained:
            written[d] = f"={n}"
    # from the smallest stride outwards; the dimension seen last is the inner one of the next
    order = sorted((d for d in range(len(shape)) if d not in written),
                   key=lambda d: (abs(strides[d]), -d if chained else d))
    inner: int | None = None
    for d in order:
        stride = strides[d]
        if stride == 1:
            written[d] = "1"
        elif inner is not None and stride != 0 and stride == strides[inner] * shape[inner]:
            written[d] = f"s{inner}*{written[inner]}"
        else:
            written[d] = str(stride)
        inner = d
    return tuple(written[d] for d in range(len(shape)))


def dynamic_layout(shape: Sequence[int], strides: Sequence[int]) -> tuple[object, ...]:
    """An array's layout in a dynamic-mode signature: its rank, the specialized sizes, and the
    stride expressions (``stride_expressions``); the other sizes are left out, for shape
    guards to relate."""
    return (len(shape), stride_expressions(shape, strides))
