"""Spelling loop-IR values in Triton source: dtype names, typed constants, identifiers, and the
module's header. Constants always carry their dtype (``tl.full([], value, tl.int8)``): Triton's
promotion of a bare Python number depends on its neighbours, NumPy's result dtype is the loop
IR's, and the two must not drift apart.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from stax.ir.sizes import Size

#: each loop dtype's Triton type (``bool`` is ``int1``, stored as a byte)
TL_DTYPES = {"bool": "tl.int1", "int8": "tl.int8", "int16": "tl.int16", "int32": "tl.int32",
             "int64": "tl.int64", "uint8": "tl.uint8", "uint16": "tl.uint16",
             "uint32": "tl.uint32", "uint64": "tl.uint64", "float32": "tl.float32",
             "float64": "tl.float64"}

HEADER = """\
import triton
import triton.language as tl
from triton.language.extra import libdevice
"""


def tl_dtype(dtype: str) -> str:
    """The Triton type of a loop dtype; ``NotImplementedError`` for one Triton kernels lack."""
    try:
        return TL_DTYPES[dtype]
    except KeyError:
        raise NotImplementedError(f"no Triton type for the dtype {dtype!r}") from None


def is_float(dtype: str) -> bool:
    return np.dtype(dtype).kind == "f"


def is_signed(dtype: str) -> bool:
    return np.dtype(dtype).kind in "if"


def number(value: Any, dtype: str) -> str:
    """A Python literal of ``value`` as ``dtype`` holds it (NaN and infinities spelled through
    ``float``, which Triton folds into constants; -0.0 keeps its sign)."""
    v = np.asarray(value).astype(np.dtype(dtype)).item()
    if dtype == "bool":
        return repr(bool(v))
    if isinstance(v, float):
        if math.isnan(v):
            return 'float("-nan")' if math.copysign(1.0, v) < 0 else 'float("nan")'
        if math.isinf(v):
            return 'float("inf")' if v > 0 else 'float("-inf")'
        return repr(v)
    return repr(int(v))


def constant(value: Any, dtype: str) -> str:
    """A scalar constant of ``dtype`` (a 0-d value: it broadcasts against any block); a size
    (a size-generic kernel's count or extent) is its expression over the kernel's size
    arguments, converted."""
    if isinstance(value, Size):
        return f"tl.cast({value}, {tl_dtype(dtype)})"
    if dtype == "uint64" and int(np.asarray(value).astype(np.uint64)) >= 1 << 63:
        # beyond int64: Triton takes the bits of the int64 of the same bits
        bits = int(np.asarray(value).astype(np.uint64).view(np.int64))
        return f"tl.full([], {bits}, tl.int64).to(tl.uint64, bitcast=True)"
    return f"tl.full([], {number(value, dtype)}, {tl_dtype(dtype)})"


def identifier(name: str, taken: set[str]) -> str:
    """A Python identifier for buffer ``name`` (``buf3`` stays ``buf3``), unique among ``taken``
    (which it joins)."""
    base = re.sub(r"\W", "_", name).strip("_") or "buf"
    if base[0].isdigit():
        base = "b" + base
    candidate, n = base, 1
    while candidate in taken or candidate in _RESERVED:
        n += 1
        candidate = f"{base}_{n}"
    taken.add(candidate)
    return candidate


#: the mark of a store ``drop_unread`` may leave out: ``UNREAD + buffer + UNREAD + store``
UNREAD = "\x00"


def drop_unread(lines: list[str], read_back: set[str]) -> list[str]:
    """A kernel's lines without the marked stores (``UNREAD``) of the buffers it does not read
    back itself (``read_back``): nothing after the kernel reads them, and the kernel's own later
    phases take them from registers. A block the left-out store was the first statement of gets
    ``pass`` (harmless where more statements follow)."""
    out: list[str] = []
    for line in lines:
        body = line.lstrip()
        if not body.startswith(UNREAD):
            out.append(line)
            continue
        _, buffer, store = body.split(UNREAD, 2)
        indent = line[:len(line) - len(body)]
        if buffer in read_back:
            out.append(indent + store)
            continue
        code = [c for c in out if c.strip() and not c.lstrip().startswith("#")]
        if code and code[-1].rstrip().endswith(":") and \
                len(code[-1]) - len(code[-1].lstrip()) < len(indent):
            out.append(indent + "pass")
    return out


_NAME = re.compile(r"[A-Za-z_]\w*")
_ASSIGN = re.compile(r"([A-Za-z_]\w*) = (.+)")


def loads_first(lines: list[str]) -> list[str]:
    """A straight-line kernel's lines with each ``tl.load`` moved up as far as it may go: below
    the lines defining the names it reads (its address, mask, guard or offset) and any line
    naming what it assigns, below the loads already there (their order kept), never above a
    store or any line other than an assignment (a plan may give two buffers one memory). The
    values are the same; only when the loads are issued changes: all before the arithmetic, as
    Inductor writes its kernels. ptxas keeps a load below the branches of an inlined libdevice
    call: float64 ``sin(x) * exp(y)`` loaded ``y`` only after ``sin``, and with it loaded first
    ran at 0.952 of a copy instead of 0.945 on an H200 (0.951 instead of 0.894 at 4 elements a
    thread; gpu-notes.md run 6). Lines that open a block are left as they are, all of them."""
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())] if lines else ""
    if any(ln.strip() and (ln[:len(indent)] != indent or ln[len(indent)].isspace() or
                           ln.rstrip().endswith(":")) for ln in lines):
        return lines
    out: list[str] = []
    floor = 0  # below the last store (or other statement): no load moves above it
    for line in lines:
        body = line.strip()
        assign = _ASSIGN.fullmatch(body)
        if assign is None or not assign.group(2).startswith("tl.load("):
            out.append(line)
            if body and not body.startswith("#") and assign is None:
                floor = len(out)
            continue
        reads = set(_NAME.findall(assign.group(2))) | {assign.group(1)}
        at = floor
        for i in range(len(out) - 1, floor - 1, -1):
            found = _ASSIGN.fullmatch(out[i].strip())
            names = set(_NAME.findall(out[i])) if found is None else \
                {found.group(1)} | ({assign.group(1)} & set(_NAME.findall(found.group(2))))
            if names & reads:
                at = i + 1
                break
        while at < len(out) and "= tl.load(" in out[at]:
            at += 1
        out.insert(at, line)
    return out


#: names the kernels use for themselves
_RESERVED = {"tl", "triton", "libdevice", "xnumel", "xoffset", "xindex", "xmask", "r0_base",
             "r0_index", "r0_mask", "r0_offset", "mask", "XBLOCK", "R0_BLOCK"}
