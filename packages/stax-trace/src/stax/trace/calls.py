"""Which function a frame of the user's code is calling at this moment, or whether it is
applying a Python operator (``operating``).

A creation recorder (``creation.py``) runs both when the user writes ``np.zeros((n, m))`` and when
C code the user called (a Cython ``np.random.PCG64(3)``) calls ``np.empty`` itself: C leaves no
frame, so in both cases the nearest frame is the user's. Only the first may return a traced
array (C code needs a real one). The frame's current instruction tells them apart: it is a call
whose callable expression, read from the bytecode (the loads that start where the call starts:
``LOAD_GLOBAL np; LOAD_ATTR zeros``), resolves to the recorder itself.

Names are resolved in the frame, attributes only on modules and classes (reading an attribute of
another object could run a property); anything else answers "not this function". Python 3.10
has no instruction positions: there the answer is always no, and local arrays stay concrete.
"""

from __future__ import annotations

import dis
import functools
import types
from typing import Any

_NAME_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF",
               "LOAD_CLASSDEREF"}
_ATTRIBUTE_LOADS = {"LOAD_ATTR", "LOAD_METHOD"}
_MISSING = object()


def calls(frame: types.FrameType, fn: Any) -> bool:
    """Whether ``frame`` is executing a call of ``fn`` (written as a name or a dotted name)."""
    chain = _callee(frame.f_code, frame.f_lasti)
    if chain is None:
        return False
    (opname, name), attributes = chain[0], chain[1:]
    value = _resolve(frame, opname, name)
    for _, attribute in attributes:
        if not isinstance(value, (types.ModuleType, type)):
            return False
        value = getattr(value, attribute, _MISSING)
    return value is fn


def _resolve(frame: types.FrameType, opname: str, name: str) -> Any:
    if opname in ("LOAD_GLOBAL",):
        scopes = (frame.f_globals, frame.f_builtins)
    elif opname == "LOAD_NAME":
        scopes = (frame.f_locals, frame.f_globals, frame.f_builtins)
    else:
        scopes = (frame.f_locals,)
    for scope in scopes:
        value = scope.get(name, _MISSING)
        if value is not _MISSING:
            return value
    return _MISSING


@functools.lru_cache(maxsize=4096)
def _callee(code: types.CodeType, lasti: int) -> tuple[tuple[str, str], ...] | None:
    """The loads of the callable of the call at ``lasti``: a name, then attributes."""
    instructions = list(dis.get_instructions(code))
    before = [i for i in instructions if i.offset <= lasti]
    if not before or not before[-1].opname.startswith("CALL"):
        return None
    call = before[-1]
    where = getattr(call, "positions", None)
    if where is None or where.lineno is None or where.col_offset is None:
        return None
    start, end = (where.lineno, where.col_offset), (where.end_lineno, where.end_col_offset)
    span: list[dis.Instruction] = []  # the call's own instructions, walking back from it
    for ins in reversed(before[:-1]):
        p = ins.positions
        if p is None or p.lineno is None or (p.lineno, p.col_offset) < start or \
                (p.end_lineno, p.end_col_offset) > end:
            break
        span.append(ins)
    chain: list[tuple[str, str]] = []
    for ins in reversed(span):
        p = ins.positions
        if (p.lineno, p.col_offset) != start:
            break
        if not chain and ins.opname in _NAME_LOADS:
            chain.append((ins.opname, ins.argval))
        elif chain and ins.opname in _ATTRIBUTE_LOADS:
            chain.append((ins.opname, ins.argval))
        elif ins.opname not in ("PUSH_NULL", "NOP"):
            break
    return tuple(chain) if chain else None


#: Python's binary operators and comparisons (3.11 on: ``BINARY_OP`` for every operator, its
#: argument saying which; 3.10: an instruction per operator)
_OPERATOR_PREFIXES = ("BINARY_", "INPLACE_", "COMPARE_OP")


def operating(frame: types.FrameType) -> bool:
    """Whether ``frame`` is executing a binary operator or a comparison (``t + dt``), or a
    call of a dunder method (``t.__add__(dt)``)."""
    at = _instruction(frame.f_code, frame.f_lasti)
    if at is not None and at.startswith(_OPERATOR_PREFIXES) and at != "BINARY_SUBSCR":
        return True
    chain = _callee(frame.f_code, frame.f_lasti)
    return bool(chain) and len(chain) > 1 and chain[-1][1].startswith("__") and \
        chain[-1][1].endswith("__")


@functools.lru_cache(maxsize=4096)
def _instruction(code: types.CodeType, lasti: int) -> str | None:
    return next((i.opname for i in dis.get_instructions(code) if i.offset == lasti), None)
