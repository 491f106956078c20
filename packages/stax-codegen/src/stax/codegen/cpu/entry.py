"""A machine-code entry point per compiled version: the call ``f(x)`` without the interpreter.

For a tiny call the time is all overhead: the Python dispatch (tuple compares of shapes, strides
and dtypes), ctypes' argument conversion, ``np.empty``. The entry does the same work in LLVM IR,
as a CPython ``METH_FASTCALL | METH_KEYWORDS`` builtin function:

1. the guard: exactly ``len(inputs)`` positional arguments, no keywords, each an exact
   ``numpy.ndarray`` with the version's ndim, shape, strides and dtype (the dtype object itself:
   an equal but distinct dtype, a byte-swapped one say, takes the slow path, which decides);
2. outputs and intermediates allocated with NumPy's own ``PyArray_NewFromDescr``;
3. the kernels called directly, in plan order, on the calling thread;
4. intermediates released, the result returned — or a tuple of results — each 0-d result as a
   NumPy scalar, as NumPy does; an argument returned as a result gets a reference of its own.

Anything else — another layout, a keyword, a subclass — goes to ``slow``, the Python dispatcher,
with the arguments untouched, so the entry can only ever be faster, never different.

Floating-point events (``fpevents.py``): the kernels' events buffer is a word on the entry's
stack, behind a stand-in for an array object (kernels only read the data pointer). Any event
hands the call to ``slow``, which runs it again and settles it (``executable.py``), except an
underflow alone while NumPy's error state ignores underflow. NumPy's state is read in machine
code (its context variable's capsule) only for that, and, for plans that may underflow unseen,
at the start of every call (such a call goes slow while underflow is heeded).

Only plans it can run whole get one (``EntryPlan.of`` says why not otherwise): kernels, and
no NumPy steps but matrix products NumPy makes with one ``gemm`` call (called here with NumPy's
arguments, ``entry_blas.py``), no large buffers (those come from the block pool), array results
(one, or tuples, lists and dicts of them, and Python numbers converted from them:
``entry_results.py``) or None. A kernel split over threads is launched on the native pool
(``native_pool.launch``: where another launch is in flight, or a forked child has no workers
yet, it runs on the calling thread); without a native pool such plans get no entry.

Arguments updated in place (``x[x < 0] = 0``, ``y += dt * f(y)``): the late kernels that write
over them (``KernelArtifact.overwrites``) run once the call stands, after its events and checks,
so a call handed to ``slow`` finds its arguments untouched. The guard adds what the dispatcher's
write-back checks (``runners.writeback_runner``): each updated argument writable and apart from
every other argument in memory (the bounds ``np.may_share_memory`` compares); a layout whose
elements share memory gets no entry. A function that returns an updated argument gets the
caller's own array. Buffers the storage plan puts in one block share one allocation (the
result's own array when a result lives there, else bytes: kernels read only data pointers).
Data gates checked in the program are tested after the kernels (``entry_gates.py``). The IR
holds no addresses (a context table filled at load time), so it is cached on disk.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from llvmlite import ir

from stax.ir.meta import elements_overlap

from ..artifact import KernelArtifact
from ..block_pool import MIN_BYTES
from .blas import numpys_gemm
from .entry_api import Layout, MethodDef, api_addresses, array_layout, entry_available
from .entry_blas import Product, emit_product, product, refusal
from .entry_events import report_late, settle_events, underflow_ignored
from .entry_gates import EntryGate, emit_gates, tested_gates
from .entry_layouts import apart, block_layout, same_extents, shared_block
from .entry_results import (
    build,
    buildable,
    builder_signatures,
    convert,
    converted_leaf,
    leaf_conversions,
    nesting_of,
    signatures,
)
from .entry_scalars import readable, scalar_stand_in, scalar_type
from .fpevents import UNDERFLOW
from .jit import CompiledModule
from .native_pool import MAX_ARITY, NativePool
from .types import I8P, I64

I32 = ir.IntType(32)
I8PP = I8P.as_pointer()
VECTORCALL_ARGUMENTS_OFFSET = 1 << 63
METH_FASTCALL_KEYWORDS = 0x80 | 0x02
# context table slots
CTX_ARRAY_TYPE, CTX_SLOW, CTX_VECTORCALL, CTX_NEW, CTX_RETURN, CTX_DECREF, CTX_INCREF, \
    CTX_HITS, CTX_TUPLE_NEW, CTX_TUPLE_SET, CTX_CONTEXTVAR_GET, CTX_ERRSTATE, CTX_NONE, \
    CTX_LAUNCH, CTX_REPORT, CTX_LONG, CTX_GEMM32, CTX_GEMM64, CTX_REST, CTX_SAVE, CTX_RESTORE, \
    CTX_TO_FLOAT, CTX_TO_INT, CTX_IS_TRUE, CTX_TO_BOOL, CTX_LIST_NEW, CTX_LIST_SET, \
    CTX_DICT_NEW, CTX_DICT_SET, CTX_AS_LONG, CTX_SETTLE, CTX_TRUE, CTX_PRECISE, CTX_GATES, \
    CTX_FIXED = range(35)
#: the context slots of the conversions of results to Python numbers (``entry_results.py``)
_CONVERTERS = {"PyNumber_Float": CTX_TO_FLOAT, "PyNumber_Long": CTX_TO_INT,
               "PyObject_IsTrue": CTX_IS_TRUE, "PyBool_FromLong": CTX_TO_BOOL}
#: ... and of the lists and dicts of results (``entry_results.build``)
_BUILDERS = {"PyList_New": CTX_LIST_NEW, "PyList_SetItem": CTX_LIST_SET,
             "PyDict_New": CTX_DICT_NEW, "PyDict_SetItem": CTX_DICT_SET}
NPY_ARRAY_WRITEABLE = 0x0400
#: ``EntryPlan.outputs``' slot of a ``None`` result (a function that only updates its arguments)
NONE_RESULT = -2
#: the slot of a constant result, less its position among ``EntryPlan.constants``
CONST_RESULT = -3


@dataclass(frozen=True)
class EntryPlan:
    """What the entry does for one artifact, in slot order (inputs first, then allocations)."""

    inputs: tuple[tuple[tuple[int, ...], tuple[int, ...], str], ...]   # shape, byte strides, dtype
    allocs: tuple[tuple[tuple[int, ...], tuple[int, ...], str], ...]
    kernels: tuple[tuple[str, tuple[int, ...], int], ...]              # name, arg slots, outer
    outputs: tuple[tuple[int, bool], ...]  # (slot, scalar) per result
    as_tuple: bool                          # the results as a tuple (else the one result)
    #: bool buffers that must be False after the kernels; a True hands the call to the
    #: dispatcher, which runs it again and eagerly (a rare path: an index out of bounds, say)
    checks: tuple[int, ...] = ()
    #: the slot of the kernels' floating-point events word (after the allocations), if any
    events: int | None = None
    #: a kernel may underflow without reporting it: a state that does not ignore underflow
    #: goes slow (else a kernel's UNDERFLOW alone goes slow only if the state heeds it)
    unseen: bool = False
    #: the last ``late`` kernels write over arguments (``KernelArtifact.overwrites``): they run
    #: once the call stands, after the checks and events
    late: int = 0
    #: the input slots they write over: each must be writable and overlap no other input
    #: (``np.may_share_memory``'s bounds), else the dispatcher takes the call (and runs it
    #: eagerly, as ``runners.writeback_runner`` decides)
    updated: tuple[int, ...] = ()
    #: (kernel, chunks) of each kernel launched on the native pool (``native_pool.launch``)
    pooled: tuple[tuple[int, int], ...] = ()
    #: a late kernel reports its own events (``KernelArtifact.late_reports``): new bits after
    #: the late kernels go to the executable's ``report_late``, which may raise
    late_reports: bool = False
    #: events the state ignores, or NumPy reports (``event_reports.py``), leave the call to the
    #: entry: the executable's ``stands`` decides (``entry_events.settle_events``)
    settles: bool = False
    #: matrix products between the kernels, NumPy's ``gemm`` calls (``entry_blas.py``)
    products: tuple[Product, ...] = ()
    #: pairs of input slots that must not be one array (operands of one product)
    apart: tuple[tuple[int, int], ...] = ()
    #: results in nested tuples, lists and dicts (``return a + 1, (a - 1, a * 2)``, ``return
    #: {"y": y}``): the tree's shape, each leaf its result's position, a list or dict an
    #: ``entry_results.Built`` (``nesting_of``); () for one result or a flat tuple
    nesting: Any = ()
    #: the Python values returned as results (``return x + 1, 0.0``), each result of the
    #: ``k``-th one at slot ``CONST_RESULT - k``: the same object every call, as the
    #: executable's own call returns it
    constants: tuple[Any, ...] = ()
    #: per result, the Python number it is converted to ("float", "int", "bool"; None: none)
    conversions: tuple[str | None, ...] = ()
    #: the input slots the call passes as Python or NumPy scalars, with their kinds (a
    #: scalar-generic version's 0-d run-time inputs, ``ScalarArguments``): the guard checks the
    #: type, the kernels read the value through a stand-in on the stack (``entry_scalars.py``)
    scalars: tuple[tuple[int, str], ...] = ()
    #: the executable has precise kernels, which a call starts with while a word says so
    #: (``Executable._precise_left``, at ``CTX_PRECISE``): such a call goes to ``slow``
    precise: bool = False
    #: the data gates it tests after the early kernels, ``(slot, dtype, gate)`` each
    #: (``entry_gates.py``): the last results of the artifact, not the user's
    gates: tuple[tuple[int, str, EntryGate], ...] = ()

    @staticmethod
    def of(artifact: KernelArtifact, input_layouts: list[tuple[tuple[int, ...], tuple[int, ...]]],
           loop: bool = False, pool: NativePool | None = None,
           scalars: tuple[tuple[int, str], ...] = (), gates: tuple[EntryGate, ...] = ()
           ) -> EntryPlan | str:
        """The plan, or why this artifact gets no entry. ``loop``: the slots of a lifted loop's
        body (``item_loop.py``), which allocates its buffers itself, calls parallel kernels over
        their whole range and takes a constant result as slot -1. ``pool``: the native pool
        that runs parallel kernels (None: they have no entry). ``gates``: what the last
        results, data-gate values, must be (``entry_gates.py``)."""
        if (refused := refusal(artifact.externs, loop)) is not None:
            return refused
        gemm = numpys_gemm() if artifact.externs else None
        parallel = [k.parallel for k in artifact.kernels]
        if any(parallel) and not loop and (pool is None or any(
                len(k.args) > MAX_ARITY for k in artifact.kernels if k.parallel)):
            return "a kernel runs on the thread pool"
        if artifact.overwrites and loop:
            return "it writes over an argument"
        tree = artifact.output_tree
        if not buildable(tree) or (loop and (tree.kind not in ("leaf", "tuple") or any(
                c.kind != "leaf" and not converted_leaf(c) for c in tree.children))):
            return "its results are not one array or a tuple of arrays (or tuples of them)"
        # the user's results; after them, an updated argument's final value (``overwrites``)
        n_user, n_all = tree.num_leaves, len(artifact.outputs) - len(gates)
        user, finals, gated = artifact.outputs[:n_user], artifact.outputs[n_user:n_all], \
            artifact.outputs[n_all:]
        dtypes = {b.name: b.dtype for b in artifact.buffers}
        conversions = leaf_conversions(tree, [dtypes.get(o.get("buffer")) for o in user])
        if isinstance(conversions, str):
            return conversions
        if finals and not artifact.overwrites:
            return "its results are not one array or a flat tuple of arrays"
        slots: dict[str, int] = {}
        inputs, allocs = [], []
        buffers = [b for b in artifact.buffers if b.role == "input"]
        for b, (shape, strides) in zip(buffers, input_layouts):
            slots[b.name] = len(inputs)
            inputs.append((tuple(shape), tuple(strides), b.dtype))
        # each buffer's (shape, byte strides, dtype), as its kernels and NumPy see it
        layouts = {b.name: (tuple(b.shape), tuple(s * np.dtype(b.dtype).itemsize
                                                  for s in b.strides), b.dtype)
                   for b in artifact.buffers}
        layouts.update({b.name: inputs[slots[b.name]] for b in buffers})
        by_block: dict[int, int] = {}  # a storage block the plan shares: its one allocation
        unstored = artifact.unstored
        for b in artifact.buffers:
            if b.role == "overwrite":  # the argument's own memory
                slots[b.name] = slots[artifact.overwrites[b.name]]
                continue
            if b.role in ("input", "events") or b.name in unstored:  # none stores it
                continue
            itemsize = np.dtype(b.dtype).itemsize
            if int(np.prod(b.shape)) * itemsize >= MIN_BYTES and not loop:
                return "a buffer is large (it comes from the block pool)"
            block = shared_block(artifact, b.name)
            if block is not None and block in by_block:
                slots[b.name] = by_block[block]
                continue
            layout = layouts[b.name]
            if block is not None:
                layout = block_layout(artifact, block)
                if isinstance(layout, str):
                    return layout
                by_block[block] = len(inputs) + len(allocs)
            slots[b.name] = len(inputs) + len(allocs)
            allocs.append(layout)
        events = None
        if artifact.events is not None:
            events = slots[artifact.events] = len(inputs) + len(allocs)
        kernels = tuple((k.name, tuple(slots[a] for a in k.args), k.outer_range)
                        for k in artifact.kernels)
        # a constant result: the item loop's slot -1 (it keeps the value itself), else the
        # entry's None or one of its constants
        constants = () if loop else tuple(o["const"] for o in user if "buffer" not in o and
                                          o.get("const") is not None)
        numbered = iter(range(len(constants)))
        outputs = tuple((slots[o["buffer"]], bool(o["scalar"])) if "buffer" in o else
                        (-1 if loop else NONE_RESULT, False) if loop or o.get("const") is None
                        else (CONST_RESULT - next(numbered), False) for o in user)
        if any(slots.get(o.get("buffer"), len(inputs)) >= len(inputs) for o in finals):
            return "an updated argument's final value is copied back"
        updated = tuple(sorted({slots[over] for over in artifact.overwrites.values()}))
        for u in updated:
            shape, strides, dtype = inputs[u]
            if elements_overlap(shape, strides, np.dtype(dtype).itemsize):
                return "elements of an updated argument share memory"
        products: list[Product] = []
        kernel_steps = {k.name for k in artifact.kernels}
        for e in artifact.externs:
            before = sum(1 for s in artifact.steps[:artifact.steps.index(e.buffer)]
                         if s in kernel_steps)
            found = product(e, slots, layouts, before, gemm)
            if isinstance(found, str):
                return found
            products.append(found)
        apart = tuple(sorted({(p.a, p.b) for p in products
                              if p.a < len(inputs) and p.b < len(inputs)}))
        checks = tuple(slots[name] for name in artifact.checks)
        scalar_slots = {i for i, _ in scalars}
        if any(inputs[i][:2] != ((), ()) or not readable(kind, inputs[i][2])
               for i, kind in scalars):
            return "a scalar argument is of a type the entry does not read"
        if scalar_slots & ({slot for slot, _ in outputs} | {*updated} |
                           {p.a for p in products} | {p.b for p in products}):
            return "a scalar argument is returned, updated or a product's operand"
        pooled = () if loop or pool is None else tuple(
            (k, pool.chunks(kernel.outer_range)) for k, kernel in enumerate(artifact.kernels)
            if kernel.parallel)
        kept = list(constants)  # a dict's keys join the constants
        nesting = nesting_of(tree, iter(range(n_user)), kept) if tree.kind in ("list", "dict") \
            or any(c.kind != "leaf" for c in tree.children) else ()
        constants = tuple(kept)
        if isinstance(tested := tested_gates(artifact.buffers, gated, gates, slots), str):
            return tested
        return EntryPlan(tuple(inputs), tuple(allocs), kernels, outputs,
                         tree.kind in ("tuple", "list", "dict"),
                         checks, events, artifact.underflow_unseen, artifact.late_steps, updated,
                         pooled, bool(artifact.late_reports), events is not None and not loop,
                         tuple(products), apart, nesting,
                         constants, conversions if any(conversions) else (), tuple(scalars),
                         artifact.precise_ir is not None and not loop, tested)


def _entry_ir(plan: EntryPlan, layout: Layout) -> str:
    module = ir.Module("stax_entry")
    n_ctx = CTX_FIXED + len(plan.inputs) + len(plan.allocs) + len(plan.kernels) + \
        len(plan.pooled) + len(plan.constants)
    ctx = ir.GlobalVariable(module, ir.ArrayType(I64, n_ctx), "stax_ctx")
    ctx.initializer = ir.Constant(ir.ArrayType(I64, n_ctx), [0] * n_ctx)
    fnty = ir.FunctionType(I8P, [I8P, I8PP, I64, I8P])
    fn = ir.Function(module, fnty, "stax_entry")
    this, args, nargsf, kwnames = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slow = fn.append_basic_block("slow")
    blocks = iter(range(10_000))

    def ctx_word(i: int) -> ir.Value:
        return b.load(b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, i)]))

    def ctx_fn(i: int, ret: ir.Type, params: list[ir.Type]) -> ir.Value:
        return b.inttoptr(ctx_word(i), ir.FunctionType(ret, params).as_pointer())

    def field(obj: ir.Value, offset: int, typ: ir.Type) -> ir.Value:
        return b.load(b.bitcast(b.gep(obj, [ir.Constant(I64, offset)]), typ.as_pointer()))

    def require(cond: ir.Value, otherwise: ir.Block | None = None) -> None:
        ok = fn.append_basic_block(f"ok{next(blocks)}")
        b.cbranch(cond, ok, otherwise or slow)
        b.position_at_end(ok)

    if plan.precise:  # recent calls' fast kernels could not tell: the precise ones first
        left = b.load(b.inttoptr(ctx_word(CTX_PRECISE), I64.as_pointer()))
        require(b.icmp_signed("==", left, ir.Constant(I64, 0)))
    nargs = b.and_(nargsf, ir.Constant(I64, ~VECTORCALL_ARGUMENTS_OFFSET & (2**64 - 1)))
    require(b.and_(b.icmp_unsigned("==", kwnames, ir.Constant(I8P, None)),
                   b.icmp_unsigned("==", nargs, ir.Constant(I64, len(plan.inputs)))))
    objs: list[ir.Value] = []
    array_type = ctx_word(CTX_ARRAY_TYPE)
    scalars = dict(plan.scalars)
    for i, (shape, strides, dtype) in enumerate(plan.inputs):
        a = b.load(b.gep(args, [ir.Constant(I64, i)]))
        if i in scalars:  # exactly its type (the type object in the descr's slot)
            require(b.icmp_unsigned("==", field(a, 8, I64), ctx_word(CTX_FIXED + i)))
            objs.append(scalar_stand_in(b, fn, a, scalars[i], dtype, layout.data, require,
                                        lambda: ctx_word(CTX_AS_LONG)))
            continue
        objs.append(a)
        require(b.icmp_unsigned("==", field(a, 8, I64), array_type))  # Py_TYPE(a) exactly
        same = b.icmp_unsigned("==", field(a, layout.descr, I64), ctx_word(CTX_FIXED + i))
        same = b.and_(same, b.icmp_signed("==", field(a, layout.nd, I32),
                                          ir.Constant(I32, len(shape))))
        require(same)
        require(same_extents(b, a, shape, strides, layout, field))
    for u in plan.updated:  # writable, and overlapping no other input
        flags = field(objs[u], layout.flags, I32)
        require(b.icmp_unsigned("!=", b.and_(flags, ir.Constant(I32, NPY_ARRAY_WRITEABLE)),
                                ir.Constant(I32, 0)))
        for o in range(len(plan.inputs)):
            if o != u:
                require(apart(b, plan.inputs[u], plan.inputs[o], objs[u], objs[o], layout, field))
    for u, o in plan.apart:  # a product of an array with itself is NumPy's syrk: slow
        require(b.icmp_unsigned("!=", field(objs[u], layout.data, I64), field(objs[o], layout.data,
                                                                              I64)))
    new = ctx_fn(CTX_NEW, I8P, [I64, I64, I32, I64.as_pointer(), I64.as_pointer(), I8P, I32, I8P])
    incref = ctx_fn(CTX_INCREF, ir.VoidType(), [I64])
    decref = ctx_fn(CTX_DECREF, ir.VoidType(), [I8P])
    status = None
    if plan.unseen:
        require(underflow_ignored(fn, b, ctx_word(CTX_CONTEXTVAR_GET), ctx_word(CTX_ERRSTATE),
                                  decref))
    if plan.events is not None:
        with b.goto_entry_block():
            b.position_at_start(fn.entry_basic_block)
            status = b.alloca(I32, name="fp_events")
            stand_in = b.alloca(ir.ArrayType(ir.IntType(8), layout.data + 8), name="events_obj")
        b.store(ir.Constant(I32, 0), status)
        events_obj = b.bitcast(stand_in, I8P)
        b.store(b.bitcast(status, I8P), b.bitcast(b.gep(events_obj, [ir.Constant(I64, layout.data)]),
                                                  I8PP))
    failed = fn.append_basic_block("failed")
    made: list[ir.Value] = []
    for j, (shape, strides, _) in enumerate(plan.allocs):
        descr = ctx_word(CTX_FIXED + len(plan.inputs) + j)
        b.call(incref, [descr])  # PyArray_NewFromDescr steals it
        dims = ir.GlobalVariable(module, ir.ArrayType(I64, max(1, len(shape))), f"dims{j}")
        dims.initializer = ir.Constant(dims.type.pointee, list(shape) or [0])
        dims.global_constant = True
        steps = ir.GlobalVariable(module, ir.ArrayType(I64, max(1, len(strides))), f"strides{j}")
        steps.initializer = ir.Constant(steps.type.pointee, list(strides) or [0])
        steps.global_constant = True
        zero = ir.Constant(I32, 0)
        obj = b.call(new, [array_type, descr, ir.Constant(I32, len(shape)),
                           b.gep(dims, [zero, zero]), b.gep(steps, [zero, zero]),
                           ir.Constant(I8P, None), ir.Constant(I32, 0), ir.Constant(I8P, None)])
        ok = fn.append_basic_block(f"made{j}")
        b.cbranch(b.icmp_unsigned("==", obj, ir.Constant(I8P, None)), failed, ok)
        b.position_at_end(ok)
        made.append(obj)
        objs.append(obj)
    if status is not None:
        objs.append(events_obj)  # slot plan.events

    first_kernel = CTX_FIXED + len(plan.inputs) + len(plan.allocs)
    pooled = {k: (j, chunks) for j, (k, chunks) in enumerate(plan.pooled)}

    def launch(k: int) -> None:
        _, slots, outer = plan.kernels[k]
        if k not in pooled:
            kernel = ctx_fn(first_kernel + k, ir.VoidType(), [I8P] * len(slots) + [I64, I64])
            b.call(kernel, [objs[s] for s in slots] + [ir.Constant(I64, 0),
                                                      ir.Constant(I64, outer)])
            return
        # on the native pool: argv = (kernel, arrays...), run by the trampoline of its arity
        j, chunks = pooled[k]
        with b.goto_entry_block():
            b.position_at_start(fn.entry_basic_block)
            argv = b.alloca(ir.ArrayType(I8P, len(slots) + 1), name=f"argv{k}")
        words = [b.inttoptr(ctx_word(first_kernel + k), I8P)] + [objs[s] for s in slots]
        for i, word in enumerate(words):
            b.store(word, b.gep(argv, [ir.Constant(I32, 0), ir.Constant(I32, i)]))
        run = ctx_fn(CTX_LAUNCH, ir.VoidType(), [I8P, I8PP, I64, I64])
        b.call(run, [b.inttoptr(ctx_word(first_kernel + len(plan.kernels) + j), I8P),
                     b.gep(argv, [ir.Constant(I32, 0), ir.Constant(I32, 0)]),
                     ir.Constant(I64, outer), ir.Constant(I64, chunks)])

    early = len(plan.kernels) - plan.late

    def products_before(k: int) -> None:
        for item in plan.products:
            if item.before == k:
                emit_product(b, fn, item, lambda s: field(objs[s], layout.data, I8P), ctx_word,
                             CTX_GEMM64 if item.dtype == "float64" else CTX_GEMM32,
                             (CTX_SAVE, CTX_RESTORE), CTX_REST if plan.pooled else None, status,
                             numpys_gemm().ilp64)  # type: ignore[union-attr]
    for k in range(early):
        products_before(k)
        launch(k)
    products_before(early)
    recheck = fn.append_basic_block("recheck")
    if plan.gates:  # another branch's call: the dispatcher finds its version
        emit_gates(b, plan.gates, lambda s: field(objs[s], layout.data, I8P),
                   ctx_word(CTX_GATES), lambda ok: require(ok, recheck))
    if status is not None:  # any event: the dispatcher runs the call again and settles it
        ok, some, tiny = (fn.append_basic_block(n) for n in ("no_events", "events", "underflow"))
        reported = b.load(status)
        b.cbranch(b.icmp_unsigned("==", reported, ir.Constant(I32, 0)), ok, some)
        b.position_at_end(some)  # underflow alone (the CPU's flag): slow only if it is heeded
        ask = fn.append_basic_block("settle") if plan.settles else recheck
        b.cbranch(b.icmp_unsigned("==", reported, ir.Constant(I32, UNDERFLOW)), tiny, ask)
        b.position_at_end(tiny)
        ignored = underflow_ignored(fn, b, ctx_word(CTX_CONTEXTVAR_GET), ctx_word(CTX_ERRSTATE),
                                    decref)
        b.cbranch(ignored, ok, recheck)
        if plan.settles:  # the executable's ``stands``: ignored or reported, the call stands
            b.position_at_end(ask)  # (its checks first: a failed one reports nothing here)
            for c, slot in enumerate(plan.checks):
                go = fn.append_basic_block(f"settle_checked{c}")
                b.cbranch(b.icmp_unsigned("!=", field(objs[slot], layout.data, ir.IntType(8)),
                                          ir.Constant(ir.IntType(8), 0)), recheck, go)
                b.position_at_end(go)
            settle_events(fn, b, reported, [ctx_word(i) for i in (CTX_SETTLE, CTX_LONG,
                          CTX_VECTORCALL, CTX_TRUE)], decref, made, ok, recheck)
        b.position_at_end(ok)
    for c, slot in enumerate(plan.checks):  # a set flag: release what was made, go the slow way
        flag = b.load(field(objs[slot], layout.data, I8P))
        ok = fn.append_basic_block(f"checked{c}")
        b.cbranch(b.icmp_unsigned("!=", flag, ir.Constant(ir.IntType(8), 0)), recheck, ok)
        b.position_at_end(ok)
    if plan.late_reports and status is not None:  # the late kernels' own events from here
        b.store(ir.Constant(I32, 0), status)
    for k in range(early, len(plan.kernels)):  # the call stands: write over the arguments
        launch(k)
    hits = b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, CTX_HITS)])
    b.store(b.add(b.load(hits), ir.Constant(I64, 1)), hits)
    # references: each result holds one. A buffer made here has one to hand over; an argument
    # returned, or a buffer returned twice, gets the others — all taken before any conversion, as
    # a 0-d array's conversion to a scalar consumes a reference and may free the array
    uses = Counter(slot for slot, _ in plan.outputs if slot >= 0)
    first_constant = first_kernel + len(plan.kernels) + len(plan.pooled)
    for slot, count in uses.items():
        for _ in range(count - 1 + (slot < len(plan.inputs))):
            b.call(incref, [b.ptrtoint(objs[slot], I64)])
    returned = set(uses)
    results: list[ir.Value] = []
    for slot, scalar in plan.outputs:
        if slot < 0:  # Py_None or a constant: a reference of its own
            word = ctx_word(CTX_NONE if slot == NONE_RESULT else
                            first_constant + CONST_RESULT - slot)
            b.call(incref, [word])
            results.append(b.inttoptr(word, I8P))
            continue
        obj = objs[slot]
        if scalar:  # 0-d array -> NumPy scalar (steals the array's reference)
            obj = b.call(ctx_fn(CTX_RETURN, I8P, [I8P]), [obj])
        results.append(obj)
    for j, obj in enumerate(made):
        if len(plan.inputs) + j not in returned:
            b.call(decref, [obj])
    if plan.conversions:  # ``return float(loss)``: Python numbers
        convert(b, fn, results, plan.conversions, {
            name: ctx_fn(slot, signatures()[name].return_type, list(signatures()[name].args))
            for name, slot in _CONVERTERS.items()}, decref)
    api = {name: ctx_fn(slot, sig.return_type, list(sig.args))
           for name, sig in builder_signatures().items() for slot in (_BUILDERS[name],)}
    api["PyTuple_New"] = ctx_fn(CTX_TUPLE_NEW, I8P, [I64])
    api["PyTuple_SetItem"] = ctx_fn(CTX_TUPLE_SET, I32, [I8P, I64, I8P])
    value = results[0]
    if plan.as_tuple:
        value = build(b, plan.nesting or tuple(range(len(results))), results, api,
                      lambda k: b.inttoptr(ctx_word(first_constant + k), I8P), decref)
    if plan.late_reports and status is not None:  # the arguments are written: NumPy reports
        report_late(fn, b, status, ctx_word(CTX_REPORT), ctx_word(CTX_LONG),
                    ctx_word(CTX_VECTORCALL), decref, value)
    b.ret(value)
    # a failed allocation: release what was made, return NULL with NumPy's MemoryError set
    b.position_at_end(failed)
    b.ret(ir.Constant(I8P, None))  # (a leak of earlier buffers only when memory ran out)
    b.position_at_end(recheck)
    for obj in made:
        b.call(decref, [obj])
    b.branch(slow)
    b.position_at_end(slow)
    vectorcall = ctx_fn(CTX_VECTORCALL, I8P, [I8P, I8PP, I64, I8P])
    b.ret(b.call(vectorcall, [b.inttoptr(ctx_word(CTX_SLOW), I8P), args, nargsf, kwnames]))
    del this
    return str(module)


class Entry:
    """The builtin function ``entry(*arrays)``, with ``slow`` behind it for every other call.
    ``hits`` counts the calls the entry ran itself."""

    def __init__(self, plan: EntryPlan, kernels: CompiledModule, slow: Any, descrs: list[np.dtype],
                 cache: Any = None, pool: NativePool | None = None,
                 report: Any = None, stands: Any = None, precise: np.ndarray | None = None,
                 live: np.ndarray | None = None) -> None:
        api, layout = api_addresses(), array_layout()
        assert api is not None and layout is not None
        # straight-line guard code: a light optimization level compiles it in a few milliseconds
        self.module = CompiledModule(_entry_ir(plan, layout), cache, speed_level=1)
        # the context holds borrowed pointers to these (the pool lives as long as the process)
        self._keep = (slow, descrs, kernels, pool, report, stands, plan.constants, precise, live)
        context = [api["array_type"], id(slow), api["PyObject_Vectorcall"], api["new"],
                   api["return"], api["Py_DecRef"], api["Py_IncRef"], 0, api["PyTuple_New"],
                   api["PyTuple_SetItem"], api["PyContextVar_Get"], api["errstate"], id(None),
                   pool.launch_address if pool is not None else 0,
                   id(report) if report is not None else 0, api["PyLong_FromLong"]]
        gemm = numpys_gemm() if plan.products else None
        context += [gemm.address["float32"], gemm.address["float64"]] if gemm else [0, 0]
        context += [pool.rest_address if pool is not None else 0, api["PyEval_SaveThread"],
                    api["PyEval_RestoreThread"]]
        context += [api[name] for name in (*_CONVERTERS, *_BUILDERS)]
        context += [api["PyLong_AsLongLongAndOverflow"], id(stands), id(True),
                    precise.ctypes.data if precise is not None else 0,
                    live.ctypes.data if live is not None else 0]
        context += [id(d) for d in descrs]
        context += [kernels.address(name) for name, _, _ in plan.kernels]
        if plan.pooled:
            assert pool is not None
            context += [pool.tramp(len(plan.kernels[k][1])) for k, _ in plan.pooled]
        context += [id(c) for c in plan.constants]
        self._ctx = (ctypes.c_int64 * len(context)).from_address(
            self.module.global_address("stax_ctx"))
        for i, value in enumerate(context):
            self._ctx[i] = ctypes.c_int64(value).value
        self._def = MethodDef(b"stax_entry", self.module.address("stax_entry"),
                               METH_FASTCALL_KEYWORDS, None)
        new_function = ctypes.pythonapi.PyCFunction_NewEx
        new_function.restype = ctypes.py_object
        new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]
        # the function's ``__self__`` (the entry ignores it) holds its machine code, method
        # definition and context: it may outlive this object and is never left dangling
        self.function = new_function(ctypes.addressof(self._def),
                                     (self.module, self._def, self._keep), None)

    @property
    def hits(self) -> int:
        return self._ctx[CTX_HITS]


def make_entry(artifact: KernelArtifact, kernels: CompiledModule, inputs: list[np.ndarray],
               slow: Any, cache: Any = None, pool: NativePool | None = None,
               report: Any = None, scalars: tuple[tuple[int, str], ...] = (),
               stands: Any = None, precise: np.ndarray | None = None,
               gates: tuple[EntryGate, ...] = (), live: np.ndarray | None = None
               ) -> Entry | str:
    """An entry for ``artifact`` specialized to the layouts of ``inputs``, or why there is none.
    ``report``: the executable's ``report_late`` (``late_reports.py``), for plans that have one.
    ``scalars``: the inputs the call passes as Python or NumPy scalars, with their kinds
    (``EntryPlan.scalars``), here their 0-d arrays. ``gates``: what the artifact's last results,
    data-gate values, must be, while ``live[0]`` is not zero (``entry_gates.py``)."""
    if not entry_available():
        return "this NumPy's array layout or C API is not the one the entry was written for"
    if any(type(a) is not np.ndarray for a in inputs):
        return "an argument is not a plain array"
    if (artifact.events is not None or artifact.underflow_unseen) and not api_addresses()["errstate"]:
        return "its kernels report floating-point events and this NumPy's error state is not " \
            "the one the entry reads"
    if gates and live is None:
        return "its data gates have no word saying they hold"
    plan = EntryPlan.of(artifact, [(a.shape, a.strides) for a in inputs], pool=pool,
                        scalars=scalars, gates=gates)
    if isinstance(plan, str):
        return plan
    # a scalar's slot holds its type instead (the guard compares the object's type)
    kinds = dict(scalars)
    descrs: list[Any] = [scalar_type(kinds[i]) if i in kinds else a.dtype
                         for i, a in enumerate(inputs)]
    descrs += [np.dtype(dtype) for _, _, dtype in plan.allocs]  # a shared block's: one
    if plan.late_reports and report is None:
        return "a late kernel reports its events and no reporter was given"
    if plan.settles and stands is None:
        return "its kernels report events and no judge of them was given"
    if plan.precise and precise is None:
        plan = replace(plan, precise=False)
    return Entry(plan, kernels, slow, descrs, cache, pool, report, stands, precise, live)
