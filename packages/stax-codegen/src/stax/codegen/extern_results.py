"""NumPy steps that write their result into the plan's storage (``out=``), so the storage plan
reuses its memory like a kernel's.

A matrix product NumPy allocates lives outside the plan: nothing else reuses its memory while it
lives, and every call maps it afresh (a transformer block's gradient holds two 64 MiB products
of attention scores that way). A call that takes ``out=`` and whose result capture saw as a
new C-ordered array writes instead into a block of the plan (``plan_program``'s
``extern_results``; the CPU's). The executable passes that block's view as ``out=``; the plan
states it by giving the extern's buffer a storage block, which a reader that ignores it (an
older executable) leaves unused: its NumPy call then allocates, as before.

``out=`` changes no value: NumPy computes a product the same way into a given array as into
its own (the operands never share the block: its live interval and theirs meet at the step).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.loop import ExternCall

#: the capture targets whose call takes ``out=``, and the function that takes it
OUT_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "operator.matmul": np.matmul,
    "numpy.matmul": np.matmul,
}


def writes_into_storage(call: ExternCall) -> bool:
    """Whether ``call`` can write its result into a block of the plan: a function taking
    ``out=``, not given one by the user, of an array result of concrete size in C order."""
    return call.effect is None and takes_out(call)


def takes_out(call: Any) -> bool:
    """Whether the NumPy step ``call`` (an ``ExternCall``, or its document's ``ExternPlan``) can
    be given its result's array as ``out=``: see ``writes_into_storage``. (A result of the
    program itself is allocated from the block pool and given so, ``executable.py``: its pages
    are already mapped, where NumPy's fresh 16 MiB cost a millisecond of page faults.)"""
    if call.method or call.target not in OUT_FUNCTIONS or "out" in call.kwargs:
        return False
    if call.scalar or call.sequence is not None:
        return False
    shape, strides = call.shape, call.strides
    if not shape or not all(type(n) is int for n in (*shape, *strides)) or not math.prod(shape):
        return False
    want = 1
    for n, stride in reversed(list(zip(shape, strides))):
        if n > 1 and stride != want:
            return False
        want *= n
    return np.dtype(call.dtype).kind in "biuf"
