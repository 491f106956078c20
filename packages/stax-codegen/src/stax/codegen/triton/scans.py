"""Scans in Triton (``np.cumsum``, ``np.cumprod``): a running sum or product along ``r0``.

- Per row (``scan`` nests with many rows, and a scan's ``columns`` nest, which differs only in
  its block shape): ``tl.cumsum``/``tl.cumprod`` of a block, persistent when the axis fits one
  block, else looped with the running total of the blocks before carried in a register (starting
  from -0.0 or 1, so the first element is the body's value itself, -0.0 included).
- Across programs (*decoupled look-back*, Merrill and Garland 2016), when a few long rows would
  leave the GPU idle (``launch.lookback_blocks``): each row is cut into blocks of ``R0_BLOCK``
  elements, one program each, read once. A program publishes its block's total at once (flag
  1), scans its block, then walks back over the blocks before it, ``WINDOW`` flags at a time
  (one round trip to memory for 32 blocks), adding their totals until one has published its
  inclusive prefix (flag 2), publishes its own inclusive prefix and stores its block plus the
  prefix. The flags live in a scratch buffer of the kernel, zeroed by a small kernel before
  each run (``clear_source``). A 32-bit value and its flag are one 64-bit word (one atomic
  exchange); a 64-bit value takes three words (flag, total, inclusive prefix), the
  value stored before the flag is released and read after it is acquired. Programs wait only on
  programs of lower id, which the GPU starts first.

Integers are exact either way (NumPy's wrapping: every partial sum is the same modular sum).
Floats are combined as a tree within a block and block by block across them, not in NumPy's
order: within the rounding bound of a sum of ``n`` terms, ``n * eps * sum(|x|)`` (spec §13).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stax.loop import ComputedBuffer, rvar, xvar

from .source import number, tl_dtype

W = Any  # the kernel writer (``emit.KernelWriter``)

_LOOKBACK_32 = '''@triton.jit
def _lookback_32(flags, total, block, first, PRODUCT: tl.constexpr, WINDOW: tl.constexpr):
    """The combination of the totals of the blocks before ``block`` (``first`` for block 0), its
    own inclusive prefix published: 32-bit values packed with their flag (1: a block's total,
    ``_publish_32``; 2: its inclusive prefix), read ``WINDOW`` blocks at a time."""
    prefix = first
    lanes = tl.arange(0, WINDOW)
    back = block - 1
    while back >= 0:
        at = back - lanes
        inside = at >= 0
        words = tl.atomic_add(flags + at, tl.zeros([WINDOW], tl.uint64), mask=inside, sem="relaxed")
        flag = tl.where(inside, words & 3, 2)  # before the first block: nothing to add
        stop = tl.min(tl.where(flag == 2, lanes, WINDOW), 0)  # the nearest inclusive prefix
        if tl.max(((lanes <= stop) & (flag == 0)).to(tl.int32), 0) == 0:  # all published
            values = (words >> 32).to(tl.uint32).to(total.dtype, bitcast=True)
            values = tl.where((lanes <= stop) & inside, values, first)
            if PRODUCT:
                prefix = tl.reduce(values, 0, _product) * prefix
            else:
                prefix = tl.sum(values, 0) + prefix
            if stop < WINDOW:
                back = tl.full([], -1, back.dtype)  # done (int64 blocks stay int64)
            else:
                back = back - WINDOW
    if PRODUCT:
        inclusive = prefix * total
    else:
        inclusive = prefix + total
    packed = (inclusive.to(tl.uint32, bitcast=True).to(tl.uint64) << 32) | 2
    tl.atomic_xchg(flags + block, packed, sem="relaxed")
    return prefix
'''

_LOOKBACK_64 = '''@triton.jit
def _lookback_64(flags, total, block, first, PRODUCT: tl.constexpr, WINDOW: tl.constexpr):
    """As ``_lookback_32`` for 64-bit values: three words a block (flag, total, inclusive
    prefix), each value stored before its flag is released and read after it is acquired."""
    prefix = first
    lanes = tl.arange(0, WINDOW)
    back = block - 1
    while back >= 0:
        at = back - lanes
        inside = at >= 0
        flag = tl.atomic_add(flags + 3 * at, tl.zeros([WINDOW], tl.uint64), mask=inside, sem="acquire")
        flag = tl.where(inside, flag, 2)
        stop = tl.min(tl.where(flag == 2, lanes, WINDOW), 0)
        if tl.max(((lanes <= stop) & (flag == 0)).to(tl.int32), 0) == 0:
            take = (lanes <= stop) & inside
            words = tl.load(flags + 3 * at + flag.to(tl.int32), mask=take, other=0, volatile=True)
            values = tl.where(take, words.to(total.dtype, bitcast=True), first)
            if PRODUCT:
                prefix = tl.reduce(values, 0, _product) * prefix
            else:
                prefix = tl.sum(values, 0) + prefix
            if stop < WINDOW:
                back = tl.full([], -1, back.dtype)  # done (int64 blocks stay int64)
            else:
                back = back - WINDOW
    if PRODUCT:
        inclusive = prefix * total
    else:
        inclusive = prefix + total
    tl.store(flags + 3 * block + 2, inclusive.to(tl.uint64, bitcast=True))
    tl.debug_barrier()
    tl.atomic_xchg(flags + 3 * block, tl.full([], 2, tl.uint64), sem="release")
    return prefix
'''

_PUBLISH_32 = '''@triton.jit
def _publish_32(flags, total, block):
    """A block's total (flag 1), published as soon as it is known: the blocks after it need not
    wait for its own look-back."""
    if block > 0:
        packed = (total.to(tl.uint32, bitcast=True).to(tl.uint64) << 32) | 1
        tl.atomic_xchg(flags + block, packed, sem="relaxed")
'''

_PUBLISH_64 = '''@triton.jit
def _publish_64(flags, total, block):
    if block > 0:
        tl.store(flags + 3 * block + 1, total.to(tl.uint64, bitcast=True))
        tl.debug_barrier()
        tl.atomic_xchg(flags + 3 * block, tl.full([], 1, tl.uint64), sem="release")
'''

#: blocks whose flags a look-back reads at once
WINDOW = 32

#: helper functions of look-back scans (``KernelWriter.helper``)
HELPERS = {"_lookback_32": _LOOKBACK_32, "_lookback_64": _LOOKBACK_64,
           "_publish_32": _PUBLISH_32, "_publish_64": _PUBLISH_64}


def lookback_words(dtype: str) -> int | None:
    """Scratch words per block of a look-back scan in ``dtype``; None where it has none (a
    value narrower than 32 bits, or bool: those scan per row)."""
    bits = np.dtype(dtype).itemsize * 8
    return {32: 1, 64: 3}.get(bits) if dtype != "bool" else None


def clear_source(name: str, pointer: str, words: int) -> str:
    """A kernel zeroing ``words`` scratch words (no block has published anything yet)."""
    return (f"@triton.jit\ndef {name}({pointer}, XBLOCK: tl.constexpr):\n"
            f"    # clears the look-back flags before each run\n"
            f"    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)\n"
            f"    tl.store({pointer} + xindex, tl.zeros([XBLOCK], tl.uint64), xindex < {words})\n")


def scan_kernel(w: W) -> None:
    """A running sum or product along ``r0`` for each row: per row, or across programs when the
    kernel has a look-back scratch buffer."""
    ((node,),) = w.spec.nest.phases
    kind, dtype = node.data.scan_type, node.dtype
    if dtype == "bool" or kind not in ("sum", "prod"):
        raise NotImplementedError(f"Triton kernel {w.spec.name}: no {kind} scan in {dtype}")
    if w.spec.scratch is not None:
        lookback_scan(w, node, kind, dtype)
    else:
        row_scan(w, node, kind, dtype)


def _start(kind: str, dtype: str) -> Any:
    """The value the blocks before the first combine to: -0.0 + x and 1 * x are x itself,
    signed zeros included."""
    return -0.0 if kind == "sum" and dtype.startswith("float") else 0 if kind == "sum" else 1


def _block(w: W, node: ComputedBuffer, kind: str, dtype: str) -> str:
    """The block of body values, masked lanes the identity (-0.0 for a float sum: it changes
    no sum's sign)."""
    filler = w.const(_start(kind, dtype), dtype)
    return w.assign(f"tl.where(mask, {w.value(node.data.body)}, {filler})")


def row_scan(w: W, node: ComputedBuffer, kind: str, dtype: str) -> None:
    w.outer(node.ranges, column=True)
    extent = node.data.scan_range
    persistent = extent <= w.spec.blocks.r0_block
    scan = "tl.cumsum" if kind == "sum" else "tl.cumprod"
    w.line(f"# running {kind} of {node.name} over {extent} "
           f"({'persistent' if persistent else 'looped'})")
    both = frozenset({"x", "r"})
    if persistent:
        w.inner_block((extent,), [rvar(0)], ["@0"], "r0_base")
        w.store(node.name, node.store_index, w.assign(f"{scan}({_block(w, node, kind, dtype)}, 1)"),
                both)
        return
    carry = w.assign(f"tl.full([XBLOCK, 1], {number(_start(kind, dtype), dtype)}, {tl_dtype(dtype)})",
                     "carry", frozenset({"x"}))
    w.line(f"for r0_offset in range(0, {extent}, R0_BLOCK):")
    w.depth += 1
    w.regions += 1
    w.open.append(w.regions)
    outer_memo, w.memo = w.memo, {}
    w.inner_block((extent,), [rvar(0)], ["@0"], "r0_offset + r0_base")
    block = _block(w, node, kind, dtype)
    op = "+" if kind == "sum" else "*"
    running = w.assign(f"{carry} {op} {scan}({block}, 1)", "running", both)
    w.store(node.name, node.store_index, running, both)
    # the last lane of the block holds the total so far (lanes past the end hold identities)
    filler = w.const(-0.0 if dtype.startswith("float") else 0, dtype)  # adds nothing
    w.line(f"{carry} = tl.sum(tl.where(r0_base == R0_BLOCK - 1, {running}, {filler}), 1)"
           f"[:, None].to({tl_dtype(dtype)})")
    w.memo = outer_memo
    w.open.pop()
    w.depth -= 1


def lookback_scan(w: W, node: ComputedBuffer, kind: str, dtype: str) -> None:
    """One program per block of ``R0_BLOCK`` elements of a row (``XBLOCK`` is 1): the block's
    scan plus the combination of the blocks before it (``_lookback_32``/``_lookback_64``)."""
    extent = node.data.scan_range
    r0_block = w.spec.blocks.r0_block
    assert w.spec.blocks.xblock == 1
    blocks = math.ceil(extent / r0_block)
    words = lookback_words(dtype)
    assert words is not None
    rows = math.prod(node.ranges)
    flags = w.spec.pointers[w.spec.scratch]
    w.line(f"# running {kind} of {node.name} over {extent}: {blocks} blocks a row, one program "
           "each, adding the blocks before it (decoupled look-back)")
    pid = "tl.program_id(0)" if w.spec.index_bits == 32 else "tl.program_id(0).to(tl.int64)"
    w.line(f"xnumel = {rows}")
    w.line(f"block = {pid} % {blocks}")
    w.line(f"xoffset = {pid} // {blocks}")
    w.line("xindex = xoffset + tl.arange(0, XBLOCK)[:, None]")
    w.line("xmask = xindex < xnumel")
    arange = "tl.arange(0, R0_BLOCK)[None, :]" + (".to(tl.int64)" if w.spec.index_bits == 64 else "")
    w.line(f"r0_base = {arange}")
    x, r = frozenset({"x"}), frozenset({"r"})
    w.axes.update(xindex=x, xmask=x, r0_base=r)
    w.region = type(w.region)({}, {}, {}, "outer")
    variables = [xvar(i) for i in range(len(node.ranges))]
    w.decompose(node.ranges, "xindex", variables, x, variables)
    w.region.layout = ("lookback", extent)
    w.inner_block((extent,), [rvar(0)], ["@0"], "block * R0_BLOCK + r0_base")
    block = _block(w, node, kind, dtype)
    if kind == "sum":
        local, total = f"tl.cumsum({block}, 1)", f"tl.sum({block})"
    else:
        local, total = f"tl.cumprod({block}, 1)", f"tl.reduce({block}, None, {w.helper('_product')})"
    # the total first, published before the block's own scan is computed
    total = w.assign(total, "total", frozenset())
    bits = "32" if words == 1 else "64"
    w.line(f"{w.helper('_publish_' + bits)}({flags} + xoffset * {blocks * words}, {total}, block)")
    local = w.assign(local, "local", frozenset({"x", "r"}))
    helper = w.helper("_lookback_" + bits)
    w.helper("_product")  # the helpers' product of a window
    first = w.const(_start(kind, dtype), dtype)
    prefix = w.assign(f"{helper}({flags} + xoffset * {blocks * words}, {total}, block, {first}, "
                      f"{kind == 'prod'}, {WINDOW})", "prefix", frozenset())
    op = "+" if kind == "sum" else "*"
    w.store(node.name, node.store_index, w.assign(f"{prefix} {op} {local}", "running"),
            frozenset({"x", "r"}))


__all__ = ["HELPERS", "clear_source", "lookback_words", "scan_kernel"]
