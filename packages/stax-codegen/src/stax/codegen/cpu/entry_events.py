"""The machine-code entry's part in NumPy's error state (``entry.py``): reading the errmask, and
handing a late kernel's events to the executable's reporter.

NumPy keeps its error state in a context variable holding a capsule whose pointer is the
errmask (three bits per category); the entry reads it where a call's underflow matters. A late
kernel that applies an in-place ufunc (``KernelArtifact.late_reports``) ORs its events into the
call's events word after writing over the argument; new bits are the executable's to report
(``late_reports.py``: NumPy warns or raises as that ufunc), through a Python call that may raise.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import ir

from .. import errstate
from .fpevents import DIVIDE, INVALID, MAYBE, OVERFLOW, TIE, UNDERFLOW
from .types import I8P, I64

I32 = ir.IntType(32)
I8PP = I8P.as_pointer()
CAPSULE_POINTER = 16  # offsetof(PyCapsule, pointer): checked in errstate_layout()
UNDER_MASK = 7 << 6   # NumPy's errmask: three bits per category, underflow's at 6


def errstate_layout() -> int:
    """The address of NumPy's error-state context variable, if the entry can read the errmask of
    its capsule at ``CAPSULE_POINTER`` (an int whose underflow bits are ``UNDER_MASK``), else 0
    (then plans whose kernels report events get no entry)."""
    var = errstate.STATE
    if var is None:
        return 0
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        with np.errstate(under="warn", divide="ignore"):
            capsule = var.get()
            pointer = get(capsule, b"numpy.ufunc.extobj")
            mask = ctypes.c_int.from_address(pointer).value
        ok = ctypes.c_void_p.from_address(id(capsule) + CAPSULE_POINTER).value == pointer and \
            mask & UNDER_MASK == 1 << 6 and mask & 7 == 0
    except (ValueError, OSError, TypeError):
        return 0
    return id(var) if ok else 0


def underflow_ignored(fn: ir.Function, b: ir.IRBuilder, contextvar_get: ir.Value,
                      state: ir.Value, decref: ir.Value) -> ir.Value:
    """Whether NumPy's current error state ignores underflow: the errmask in its context
    variable's capsule, read as ``errstate_layout`` checked (a cached lookup and two loads).
    ``contextvar_get``: ``PyContextVar_Get``'s address; ``state``: the variable's."""
    get = b.inttoptr(contextvar_get, ir.FunctionType(I32, [I8P, I8P, I8PP]).as_pointer())
    with b.goto_entry_block():
        b.position_at_start(fn.entry_basic_block)
        out = b.alloca(I8P, name="errstate")
    b.store(ir.Constant(I8P, None), out)
    b.call(get, [b.inttoptr(state, I8P), ir.Constant(I8P, None), out])
    capsule = b.load(out)
    before = b.block
    read = fn.append_basic_block("errstate_read")
    done = fn.append_basic_block("errstate_done")
    b.cbranch(b.icmp_unsigned("!=", capsule, ir.Constant(I8P, None)), read, done)
    b.position_at_end(read)
    slot = b.bitcast(b.gep(capsule, [ir.Constant(I64, CAPSULE_POINTER)]), I8PP)
    mask = b.load(b.bitcast(b.load(slot), I32.as_pointer()))
    b.call(decref, [capsule])
    b.branch(done)
    b.position_at_end(done)
    got = b.phi(I32)
    got.add_incoming(ir.Constant(I32, UNDER_MASK), before)  # no state: take the slow path
    got.add_incoming(mask, read)
    return b.icmp_unsigned("==", b.and_(got, ir.Constant(I32, UNDER_MASK)), ir.Constant(I32, 0))


def _call_with_bits(fn: ir.Function, b: ir.IRBuilder, bits: ir.Value, hook: ir.Value,
                    from_long: ir.Value, vectorcall: ir.Value, decref: ir.Value,
                    slot: str) -> ir.Value:
    """``hook(bits)`` through ``PyObject_Vectorcall`` (its argument an int made by
    ``PyLong_FromLong`` at ``from_long``, held in the entry block's ``slot``): the new
    reference it returns, NULL where it raised."""
    make = b.inttoptr(from_long, ir.FunctionType(I8P, [I64]).as_pointer())
    arg = b.call(make, [b.zext(bits, I64)])
    with b.goto_entry_block():
        b.position_at_start(fn.entry_basic_block)
        argv = b.alloca(I8P, name=slot)
    b.store(arg, argv)
    call_fn = b.inttoptr(vectorcall, ir.FunctionType(I8P, [I8P, I8PP, I64, I8P]).as_pointer())
    got = b.call(call_fn, [b.inttoptr(hook, I8P), argv, ir.Constant(I64, 1),
                           ir.Constant(I8P, None)])
    b.call(decref, [arg])
    return got


def report_late(fn: ir.Function, b: ir.IRBuilder, status: ir.Value, report: ir.Value,
                from_long: ir.Value, vectorcall: ir.Value, decref: ir.Value,
                result: ir.Value) -> None:
    """Before the entry returns ``result`` (a new reference): when the events word ``status``
    (zeroed before the late kernels) holds bits, call the Python function ``report`` with them;
    if it raises, drop ``result`` and return NULL with its exception."""
    bits = b.load(status)
    call, raised, done = (fn.append_basic_block(n) for n in ("late_events", "late_raised",
                                                             "late_done"))
    b.cbranch(b.icmp_unsigned("!=", bits, ir.Constant(I32, 0)), call, done)
    b.position_at_end(call)
    got = _call_with_bits(fn, b, bits, report, from_long, vectorcall, decref, "late_argv")
    ok = fn.append_basic_block("late_reported")
    b.cbranch(b.icmp_unsigned("==", got, ir.Constant(I8P, None)), raised, ok)
    b.position_at_end(ok)
    b.call(decref, [got])
    b.branch(done)
    b.position_at_end(raised)
    b.call(decref, [result])
    b.ret(ir.Constant(I8P, None))
    b.position_at_end(done)


def settle_events(fn: ir.Function, b: ir.IRBuilder, bits: ir.Value, words: list[ir.Value],
                  decref: ir.Value, made: list[ir.Value], stands: ir.Block,
                  declined: ir.Block) -> None:
    """After the kernels reported ``bits`` (not underflow alone): call the executable's
    ``stands(bits)`` (``words``: its address, ``PyLong_FromLong``, ``PyObject_Vectorcall``,
    ``Py_True``); ``True`` goes on to ``stands`` (every heeded event reported by NumPy, or
    none heeded), anything else to ``declined`` (the dispatcher runs the call again), and an
    exception (NumPy's ``FloatingPointError``, a warning turned error) drops what the call made
    and returns NULL with it."""
    hook, from_long, vectorcall, true = words
    got = _call_with_bits(fn, b, bits, hook, from_long, vectorcall, decref, "settle_argv")
    raised, answered = fn.append_basic_block("settle_raised"), fn.append_basic_block("settled")
    b.cbranch(b.icmp_unsigned("==", got, ir.Constant(I8P, None)), raised, answered)
    b.position_at_end(raised)
    for obj in made:
        b.call(decref, [obj])
    b.ret(ir.Constant(I8P, None))
    b.position_at_end(answered)
    b.call(decref, [got])  # (True is immortal enough: the interpreter holds it)
    b.cbranch(b.icmp_unsigned("==", got, b.inttoptr(true, I8P)), stands, declined)


def judge(report: Any) -> Any:
    """``stands(bits)`` for an entry whose kernels reported ``bits``: True when the call stands
    as it is (the state heeds none of them) or once ``report`` (``event_reports.py``) had NumPy
    report them; False hands the call to the dispatcher (a non-finite value the precise kernels
    must look at, an fmax tie, heeded underflow, events no report covers), which decides as
    ``executable._settle`` does."""
    def stands(bits: int) -> bool:
        if bits & (MAYBE | TIE):
            return False
        heeded = errstate.heeded() & bits
        if heeded & UNDERFLOW:
            return False
        if not heeded:
            return True
        return report is not None and report(bits & (DIVIDE | OVERFLOW | INVALID))
    return stands
