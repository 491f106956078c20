"""Alias scopes: telling LLVM which of a kernel's buffers cannot overlap in memory.

A kernel takes its buffers as pointers LLVM knows nothing about, so before it vectorizes a loop
that stores into some of them it tests at run time that no stored range overlaps another
buffer's, and it gives up past a limit: mandelbrot_real's rows kernel (12 iterations of ``zr``,
``zi`` and ``inside``, 34 buffers) ran scalar ("too many memory checks needed"), and no store
could be forwarded to a later load of the same element across a store into another buffer.

The buffers the plan allocates (``StoragePlan.storage``: intermediates and results) each live in
a block of their own while the kernel runs: a block is shared only by buffers whose lives do not
overlap, and the one way two of them meet in a kernel — an output written in place over an input
that dies there — gives both one pointer (``KernelSpec.in_place``), hence one scope here. Each
such pointer gets a scope, and every load and store through it says it does not alias the
others' (LLVM's scoped ``noalias`` metadata).

The caller's arrays share one scope: they may overlap each other, never a block of the plan (the
plan's blocks are fresh memory or the block pool's, reused only once no array views them). A
lifted loop's items (``item_loop.py``) hand an input's buffer to the update of its copy only
where no kernel after the copy reads the input, so the two never meet in one kernel. NumPy
steps' results stay unmarked: a NumPy step may return a view of anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from llvmlite import ir


def _root(pointer: ir.Value, roots: Mapping[int, int]) -> int | None:
    """The marked buffer ``pointer`` addresses (through GEPs, and selects of addresses into one
    buffer), or None."""
    if id(pointer) in roots:
        return roots[id(pointer)]
    if isinstance(pointer, ir.GEPInstr):
        return _root(pointer.pointer, roots)
    if isinstance(pointer, ir.SelectInstr):
        a, b = _root(pointer.lhs, roots), _root(pointer.rhs, roots)
        return a if a == b else None
    return None


def mark_alias_scopes(fn: ir.Function, pointers: Mapping[str, ir.Value], owned: Iterable[str],
                      callers: Iterable[str] = ()) -> None:
    """Give every load and store of ``fn`` through the pointer of an ``owned`` buffer that
    buffer's scope (buffers sharing a pointer share one), through a ``callers`` buffer the one
    scope of them all, and each the others' scopes as ``noalias``."""
    module = fn.module
    groups: dict[int, int] = {}  # id of a marked pointer -> its group's key
    for name in sorted(owned):
        pointer = pointers.get(name)
        if pointer is not None:
            groups[id(pointer)] = id(pointer)
    for name in sorted(callers):
        if name in pointers:
            groups.setdefault(id(pointers[name]), 0)  # 0: the caller's arrays, together
    keys = list(dict.fromkeys(groups.values()))
    if len(keys) < 2:
        return  # nothing to tell apart
    domain = module.add_metadata([ir.MetaDataString(module, f"{fn.name}.buffers")])
    scopes = {key: module.add_metadata([ir.MetaDataString(module, f"{fn.name}.{n}"), domain])
              for n, key in enumerate(keys)}
    own = {key: module.add_metadata([scope]) for key, scope in scopes.items()}
    others = {key: module.add_metadata([s for k, s in scopes.items() if k != key])
              for key in scopes}
    for block in fn.blocks:
        for instr in block.instructions:
            if isinstance(instr, ir.LoadInstr):
                address = instr.operands[0]
            elif isinstance(instr, ir.StoreInstr):
                address = instr.operands[1]
            else:
                continue
            key = _root(address, groups)
            if key is not None:
                instr.set_metadata("alias.scope", own[key])
                instr.set_metadata("noalias", others[key])
