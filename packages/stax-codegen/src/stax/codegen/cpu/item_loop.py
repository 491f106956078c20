"""A lifted loop's items in machine code: one call runs the body's kernels for many items.

A lifted Python loop (``stax.runtime.lifted_loops``) calls its compiled body once per item. Each
call pays the dispatch of a call, the allocation of the body's buffers and its results, all for
kernels that often take less than a microsecond. Once the body's arguments have a steady layout
(each array the body rebinds or updates comes back with the layout it went in with), the items
that remain run here instead: one LLVM function (``stax_item_loop``) that, for each item,

1. writes the item into the body's 0-d index buffer (a ``while`` loop's body has none);
2. calls the body's kernels in plan order over their whole outer range, on the calling thread;
3. stops at that item, reporting it, when a kernel reports a floating-point event other than
   underflow alone (the runner ignores underflow in a lifted body) or sets a check flag (an
   index out of bounds): the body's inputs are only ever read by its kernels, so the state
   before that item is intact and the caller runs it through the dispatcher, which settles it;
4. before the next item, hands each carried input the buffer its new value was written to,
   and that buffer's slot one no input holds any more (data pointers moved: no copy, nothing
   allocated), or — where the body copies an argument and then updates a region of the copy
   (``x[i] = v``) — skips the copy and updates the argument's own buffer in place;
5. for a ``while`` loop's body, which also computes the loop's next test (a 0-d bool result),
   returns after the item whose test is false (``EXITED`` in the events word it reports).

Buffers are allocated once per run, by NumPy. The kernels read only the data pointer of their
array arguments, so each plan slot is a stand-in: a few bytes with that pointer at the offset
where an array object has it, which the loop rewrites when it moves buffers. The loop takes
the addresses of the array objects too and reads their data pointers itself (a pointer read in
Python costs a ctypes object: most of a short run's fixed cost), moving the objects' addresses
with the buffers so that the caller can tell which array each slot holds after the run.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np
from llvmlite import ir

from ..artifact import KernelArtifact
from .entry import EntryPlan
from .fpevents import UNDERFLOW
from .jit import CompiledModule, array_data_offset
from .types import I8P, I64

I32 = ir.IntType(32)
I8 = ir.IntType(8)
#: in the events word ``run`` reports: the loop ended at a false test (a ``while`` loop's body)
EXITED = 1 << 30


@dataclass(frozen=True)
class ItemLoopPlan:
    """The entry's slots (inputs, then allocations, then the events word), with what the loop
    adds: the item's slot and the buffers exchanged between items."""

    slots: EntryPlan
    item: int | None  # None: the body reads no item (a ``while`` loop's)
    #: (carried input slot, the slot its next value is written to: an allocation or another
    #: carried input, ``a, b = b, a + b``); a carried input returned as it came is not here
    nexts: tuple[tuple[int, int], ...]
    #: (input slot, the slot of its updated value): one buffer, updated in place, the kernel
    #: that copies the input into it skipped (``KernelPlan.copies``)
    aliases: tuple[tuple[int, int], ...] = ()
    skipped: frozenset[int] = frozenset()  # kernels not run (those copies)
    #: the kernel before which the item's events and checks are all known: the loop tests them
    #: there, before anything is written in place
    settled: int = 0
    #: the slot of the body's 0-d bool result that says whether another item runs (a
    #: ``while`` loop's next test), or None: every item of the count runs
    exit: int | None = None

    @property
    def moves(self) -> tuple[tuple[int, int], ...]:
        """(from, to): before each item after the first, slot ``to`` takes the buffer slot
        ``from`` had — each carried input its next value's, and each allocation written a
        buffer no input holds any more (one of the inputs' before)."""
        nexts = dict(self.nexts)
        taken = set(nexts.values())
        pairs = []
        # a freed input buffer goes to the allocation at the end of its own chain (input ->
        # next value -> ...), which has its layout: paired in sorted order, a 0-d running total
        # and a vector swapped buffers (``total += x[i]; out[i] = total / (i + 1)``)
        for freed in sorted(i for i in nexts if i not in taken):
            end = nexts[freed]
            while end in nexts:
                end = nexts[end]
            pairs.append((freed, end))
        return tuple((o, i) for i, o in nexts.items()) + tuple(pairs)

    @staticmethod
    def of(artifact: KernelArtifact, inputs: list[np.ndarray], item: int | None,
           carried: dict[int, int], exit: int | None = None) -> ItemLoopPlan | str:
        """The plan for a body whose input ``item`` is the item (a 0-d int64 array; None: it
        reads none) and whose input ``i`` takes result ``carried[i]`` of the item before, or
        why there is none; with ``exit``, the result that says whether another item runs."""
        if any(type(a) is not np.ndarray for a in inputs):
            return "an argument is not a plain array"
        plan = EntryPlan.of(artifact, [(a.shape, a.strides) for a in inputs], loop=True)
        if isinstance(plan, str):
            return plan
        if item is not None and (inputs[item].shape != () or inputs[item].dtype != np.int64):
            return "the item is not a 0-d int64 array"
        if item is not None and item in carried:
            return "the item is a result"
        exit_slot = None
        if exit is not None:
            exit_slot, _ = plan.outputs[exit]
            layout = [*plan.inputs, *plan.allocs][exit_slot] if exit_slot >= 0 else None
            if layout is None or layout[0] != () or np.dtype(layout[2]) != np.bool_:
                return "the loop's test is not a 0-d bool the body computes"
        nexts: dict[int, int] = {}
        for i, k in sorted(carried.items()):
            slot, _ = plan.outputs[k]
            if slot < 0:
                return f"result {k}, which the next item reads, is a constant"
            if slot != i:  # else returned as it came in
                nexts[i] = slot
        layouts = [*plan.inputs, *plan.allocs]
        if len(set(nexts.values())) < len(nexts):
            return "two carried values are one result"
        for i, slot in nexts.items():
            if slot < len(plan.inputs) and slot not in nexts:
                return f"the next value of argument {i} is an argument the loop does not carry"
        candidate = ItemLoopPlan(plan, item, tuple(sorted(nexts.items())),
                                 settled=len(plan.kernels), exit=exit_slot)
        for a, b in candidate.moves:
            if layouts[a] != layouts[b] or any(st < 0 for st in layouts[a][1]):
                return "a carried value does not keep its layout from one item to the next"
        return _in_place(artifact, candidate)


def _in_place(artifact: KernelArtifact, plan: ItemLoopPlan) -> ItemLoopPlan:
    """``plan`` with each carried input that the body copies and then updates (``x[i] = v``:
    the copy, then a region update) updated in place instead, where that keeps the loop's
    semantics: no kernel after the copy reads the input, and every event and check of the item
    is known before it (an item that stops must leave its inputs as they were)."""
    entry = plan.slots
    slot_of = {name: s for k, (_, slots, _) in zip(artifact.kernels, entry.kernels)
               for name, s in zip(k.args, slots)}
    names = {s: name for name, s in slot_of.items() if s < len(entry.inputs)}
    writes = [{slot_of[c] for c in k.computes if c in slot_of} for k in artifact.kernels]
    reports = [entry.events in slots or bool(writes[n] & set(entry.checks))
               for n, (_, slots, _) in enumerate(entry.kernels)]
    aliases, nexts, skipped = [], [], set()
    settled = len(entry.kernels)
    targets = {o for _, o in plan.nexts}
    for i, o in plan.nexts:
        first = next((n for n, w in enumerate(writes) if o in w), None)
        if o < len(entry.inputs) or i in targets or first is None or names.get(i) is None or \
                artifact.kernels[first].copies != names[i] or \
                any(i in slots for _, slots, _ in entry.kernels[first + 1:]) or \
                any(reports[first:]):
            nexts.append((i, o))
            continue
        aliases.append((i, o))
        skipped.add(first)
        settled = min(settled, first)
    return ItemLoopPlan(entry, plan.item, tuple(nexts), tuple(aliases), frozenset(skipped),
                        settled, plan.exit)


def _loop_ir(plan: ItemLoopPlan, data: int, given: tuple[int, ...]) -> str:
    """``i64 stax_item_loop(i8* stand_ins, i64* kernels, i64 first, i64 step, i64 count,
    i32* seen, i64* objects)``: the number of items run (``count``, or the item that stopped);
    ``seen`` gets the events of every item ORed in. Slot ``s``'s stand-in is at ``stand_ins +
    s * (data + 8)``, its data pointer at ``data`` in it; each slot of ``given`` takes the data
    pointer of the array object at address ``objects[s]`` first, and ``objects`` is moved with
    the buffers (the caller reads which array each slot holds after the run)."""
    entry = plan.slots
    module = ir.Module("stax_item_loop")
    fnty = ir.FunctionType(I64, [I8P, I64.as_pointer(), I64, I64, I64, I32.as_pointer(),
                                 I64.as_pointer()])
    fn = ir.Function(module, fnty, "stax_item_loop")
    stand_ins, kernels, first, step, count, seen, objects = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    head, body, stop, done = (fn.append_basic_block(n) for n in ("head", "body", "stop", "done"))

    def obj(slot: int) -> ir.Value:
        return b.gep(stand_ins, [ir.Constant(I64, slot * (data + 8))])

    def slot_data(slot: int, typ: ir.Type) -> ir.Value:
        """The slot's data pointer, as a pointer to ``typ``: read from its stand-in now."""
        return b.load(b.bitcast(b.gep(obj(slot), [ir.Constant(I64, data)]),
                                typ.as_pointer().as_pointer()))

    def data_word(slot: int) -> ir.Value:
        return b.bitcast(b.gep(obj(slot), [ir.Constant(I64, data)]), I64.as_pointer())

    def object_word(slot: int) -> ir.Value:
        return b.gep(objects, [ir.Constant(I64, slot)])

    for slot in given:  # the arrays' data pointers, read here rather than in Python
        address = b.inttoptr(b.add(b.load(object_word(slot)), ir.Constant(I64, data)),
                             I64.as_pointer())
        b.store(b.load(address), data_word(slot))
    start = b.block
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(I64, "t")
    t.add_incoming(ir.Constant(I64, 0), start)
    b.cbranch(b.icmp_signed("<", t, count), body, done)
    b.position_at_end(body)
    swap = fn.append_basic_block("swap")
    run = fn.append_basic_block("run")
    b.cbranch(b.icmp_signed(">", t, ir.Constant(I64, 0)), swap, run)
    b.position_at_end(swap)  # the item before wrote its results: they are this item's inputs
    moved = [(b.load(data_word(source)), b.load(object_word(source)), target)
             for source, target in plan.moves]
    for pointer, array, target in moved:
        b.store(pointer, data_word(target))
        b.store(array, object_word(target))
    b.branch(run)
    b.position_at_end(run)
    if plan.item is not None:
        b.store(b.add(first, b.mul(t, step)), slot_data(plan.item, I64))
    if entry.events is not None:
        b.store(ir.Constant(I32, 0), slot_data(entry.events, I32))
    for k, (_, slots, outer) in enumerate(entry.kernels):
        if k == plan.settled:
            _stop_unless_settled(b, fn, plan, slot_data, stop, seen)
        if k in plan.skipped:
            continue
        address = b.load(b.gep(kernels, [ir.Constant(I64, k)]))
        kernel = b.inttoptr(address, ir.FunctionType(ir.VoidType(), [I8P] * len(slots) +
                                                     [I64, I64]).as_pointer())
        args = [obj(s) for s in slots]
        b.call(kernel, args + [ir.Constant(I64, 0), ir.Constant(I64, outer)])
    if plan.settled == len(entry.kernels):
        _stop_unless_settled(b, fn, plan, slot_data, stop, seen)
    following = b.add(t, ir.Constant(I64, 1))
    if plan.exit is not None:  # the item ran whole; a false test ends the loop after it
        exited = fn.append_basic_block("exited")
        onward = fn.append_basic_block("onward")
        test = b.load(slot_data(plan.exit, I8))
        b.cbranch(b.icmp_unsigned("==", test, ir.Constant(I8, 0)), exited, onward)
        b.position_at_end(exited)
        b.store(b.or_(b.load(seen), ir.Constant(I32, EXITED)), seen)
        b.ret(following)
        b.position_at_end(onward)
    t.add_incoming(following, b.block)
    b.branch(head)
    b.position_at_end(stop)
    b.ret(t)
    b.position_at_end(done)
    b.ret(count)
    return str(module)


def _stop_unless_settled(b: ir.IRBuilder, fn: ir.Function, plan: ItemLoopPlan, slot_data: Any,
                         stop: ir.Block, seen: ir.Value) -> None:
    """Branch to ``stop`` when the item reported an event other than underflow alone (which
    the runner reports for the whole loop, ``seen``) or set a check flag."""
    entry = plan.slots
    bad = ir.Constant(ir.IntType(1), 0)
    if entry.events is not None:
        events = b.load(slot_data(entry.events, I32))
        b.store(b.or_(b.load(seen), events), seen)
        bad = b.or_(bad, b.icmp_unsigned("!=", b.and_(events, ir.Constant(I32, ~UNDERFLOW)),
                                         ir.Constant(I32, 0)))
    for slot in entry.checks:
        flag = b.load(slot_data(slot, ir.IntType(8)))
        bad = b.or_(bad, b.icmp_unsigned("!=", flag, ir.Constant(ir.IntType(8), 0)))
    settled = fn.append_basic_block("settled")
    b.cbranch(bad, stop, settled)
    b.position_at_end(settled)


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype) -> int:
    """The bytes an array of this layout (non-negative strides) spans."""
    if 0 in shape:
        return 0
    return dtype.itemsize + sum([(n - 1) * s for n, s in zip(shape, strides)])


#: NumPy's own ``empty`` (4x faster than the ``ndarray`` constructor), not the one a capture
#: running in this thread puts in its place (``stax.trace.creation``)
_EMPTY = getattr(np.empty, "__stax_original__", np.empty)


def _new(shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A new array of exactly this layout that owns its memory (no base: capture tells a view
    from an array by it)."""
    try:
        return np.ndarray(shape, dtype, strides=strides)
    except ValueError:  # strides with gaps: the memory of a larger array, viewed
        raw = np.ndarray(max(_extent(shape, strides, dtype), 1), np.uint8)
        return np.ndarray(shape, dtype, buffer=raw, strides=strides)


_ALIGN = 64
#: a frame whose block is larger is made per run (a short run's fixed cost is not what a body
#: with megabytes of intermediates pays; memory held between calls is)
_KEPT_BYTES = 1 << 20
#: a run's memory, kept for the next: ``ItemLoop._frame``
_Frame = tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int, dict[int, np.ndarray]]


class ItemLoop:
    """``run(inputs, first, step, count)`` runs items ``first, first + step, ...`` of a lifted
    loop's body; see the module's docstring.

    A run allocates an array of its own for each buffer the loop moves (a carried input's copy,
    the buffers its new values are written to), with NumPy's ``ndarray`` constructor: a loop's
    first run happens under capture, where ``np.empty`` and the builtins are the capture's, and
    a run's fixed cost is what a short loop pays. The rest (the item, the intermediates, the
    events word) lives in a frame's block, and the frame (block, stand-ins, objects) is kept
    for the next run: a run takes one from ``_frames`` or makes one, and gives it back after
    copying its results out (threads running one loop at once take two)."""

    def __init__(self, plan: ItemLoopPlan, kernels: CompiledModule, cache: Any = None) -> None:
        self.plan = plan
        entry = plan.slots
        self._data = array_data_offset()
        layouts = [*entry.inputs, *entry.allocs] + \
            ([((1,), (4,), "int32")] if entry.events is not None else [])
        self._layouts = [(shape, strides, np.dtype(dtype)) for shape, strides, dtype in layouts]
        self._inputs = len(entry.inputs)
        self._carried = frozenset(i for i, _ in plan.nexts + plan.aliases)
        self._alias = {o: i for i, o in plan.aliases}
        moving = self._carried | {o for _, o in plan.nexts}
        self._moving = sorted(moving)
        self._scratch: dict[int, int] = {}  # slot -> offset in the block
        size = 0
        for slot, layout in enumerate(self._layouts):
            if slot in moving or slot in self._alias or (slot < self._inputs and slot != plan.item):
                continue
            self._scratch[slot] = size
            size += -(-_extent(*layout) // _ALIGN) * _ALIGN
        self._scratch_bytes = size + _ALIGN
        self._stride = (self._data + 8) // 8  # a stand-in's words
        #: the inputs the body reads as they are (neither carried nor the item's block slot)
        self._read = [slot for slot in range(self._inputs)
                      if slot not in self._carried and slot not in self._scratch]
        given = tuple(sorted({*self._moving, *self._read, *self._alias}))
        self.module = CompiledModule(_loop_ir(plan, self._data, given), cache, speed_level=1)
        self._kernels = kernels  # the addresses below point into it
        addresses = [kernels.address(name) for name, _, _ in entry.kernels]
        self._addresses = (ctypes.c_int64 * max(1, len(addresses)))(*addresses)
        self._call = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                      ctypes.c_void_p, ctypes.c_void_p)(
            self.module.address("stax_item_loop"))
        # a run's fixed cost, its layout checks first: (shape, dtype, strides or None where
        # any strides do: a carried input is copied)
        self._expected = [(shape, dtype, None if i in self._carried else strides)
                          for i, (shape, strides, dtype) in enumerate(self._layouts[:self._inputs])]
        self._frames: list[_Frame] = []
        #: (shape, dtype) of each moving buffer ``np.empty`` makes with its layout, else None
        self._plain = {slot: (shape, dtype) if _EMPTY(shape, dtype).strides == strides else None
                       for slot, (shape, strides, dtype) in
                       ((slot, self._layouts[slot]) for slot in self._moving)}
        self._outputs = [(slot, _BLOCK if slot in self._scratch else _MOVED
                          if slot >= 0 and (slot in self._carried or slot >= self._inputs)
                          else _GIVEN) for slot, _ in plan.slots.outputs]

    @property
    def returned_inputs(self) -> frozenset[int]:
        """The input slots some result is, as it came (neither moved nor written)."""
        return frozenset(slot for slot, kind in self._outputs if kind is _GIVEN and slot >= 0)

    def fits(self, inputs: list[np.ndarray]) -> bool:
        """Whether ``inputs`` have the layouts the loop was made for (a carried one's strides
        aside: it is copied)."""
        if len(inputs) != self._inputs:
            return False
        for a, (shape, dtype, strides) in zip(inputs, self._expected):
            if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype:
                return False
            if strides is not None and a.strides != strides and \
                    any([n != 1 and s != t for n, s, t in zip(shape, a.strides, strides)]):
                return False
        return True

    def _pointer(self, array: np.ndarray) -> int:
        return ctypes.c_void_p.from_address(id(array) + self._data).value or 0

    def _frame(self) -> _Frame:
        """(block, stand-ins, objects, the block's first aligned byte from its own start, the
        addresses of the stand-ins and of the objects, and each block slot's array): the
        stand-ins of the block's slots hold their pointers; the others' are written by each
        run's machine code."""
        n = len(self._layouts)
        block = np.ndarray(self._scratch_bytes, np.uint8)
        start = self._pointer(block)
        start += -start % _ALIGN
        stand_ins = np.zeros(n * self._stride, np.int64)
        for slot, offset in self._scratch.items():
            stand_ins[slot * self._stride + self._data // 8] = start + offset
        objects = np.zeros(n + 1, np.int64)  # the last word: the events a run saw
        offset = start - self._pointer(block)
        views = {slot: np.ndarray(self._layouts[slot][0], self._layouts[slot][2], buffer=block,
                                  strides=self._layouts[slot][1], offset=offset + at)
                 for slot, at in self._scratch.items()}
        return (block, stand_ins, objects, offset, self._pointer(stand_ins),
                self._pointer(objects), views)

    def run(self, inputs: list[np.ndarray], first: int, step: int, count: int
            ) -> tuple[int, list[np.ndarray | None], list[np.ndarray], bool, bool]:
        """``(items run, results, inputs, underflowed, exited)``: the body's results after the
        last item when all ran or a false test ended the loop (``exited``; None for a constant
        result), the inputs the item that stopped would have read (the values after the items
        that ran; where none stopped, ``inputs`` as given), and whether an item may have
        underflowed. Arguments are never written: carried ones are copied first."""
        try:
            frame = self._frames.pop()
        except IndexError:
            frame = self._frame()
        try:
            return self._run(frame, inputs, first, step, count)
        finally:
            if self._scratch_bytes <= _KEPT_BYTES:
                self._frames.append(frame)

    def _run(self, frame: _Frame, inputs: list[np.ndarray], first: int, step: int, count: int
             ) -> tuple[int, list[np.ndarray | None], list[np.ndarray], bool, bool]:
        layouts, n = self._layouts, len(self._layouts)
        objects, stand_ins, addresses = frame[2], frame[4], frame[5]
        ids = [0] * (n + 1)  # and the events word the run reports (``seen``), cleared
        owned: dict[int, np.ndarray] = {}  # the moving buffers, by their objects' addresses
        for slot in self._moving:
            plain = self._plain[slot]
            if plain is not None and slot < self._inputs:
                array = inputs[slot].copy()  # (row-major, as ``np.empty`` makes it)
            else:
                array = _EMPTY(*plain) if plain is not None else _new(*layouts[slot])
                if slot < self._inputs:
                    array[...] = inputs[slot]
            ids[slot] = id(array)
            owned[ids[slot]] = array
        for slot in self._read:
            ids[slot] = id(inputs[slot])
        for o, i in self._alias.items():
            ids[o] = ids[i]
        objects[:] = ids
        ran = self._call(stand_ins, self._addresses, first, step, count, addresses + 8 * n,
                         addresses)
        now = objects.tolist()
        seen = now[n]
        # the items that ran may have underflowed: the kernels said so, or cannot tell
        underflowed = bool(seen & UNDERFLOW) or self.plan.slots.unseen
        exited = bool(seen & EXITED)
        views = frame[6]
        copies: dict[int, np.ndarray] = {}  # one per slot: two results of one are one array
        if ran < count and not exited:
            now_inputs = [owned[now[i]] if i in self._carried else a
                          for i, a in enumerate(inputs)]
            return ran, [], now_inputs, underflowed, False
        results: list[np.ndarray | None] = []
        for slot, kind in self._outputs:
            if kind is _MOVED:
                results.append(owned[now[slot]])
            elif kind is _BLOCK:  # a copy: an array of its own, no view of the frame's block
                if slot not in copies:
                    copies[slot] = views[slot].copy(order="K")
                results.append(copies[slot])
            else:
                results.append(None if slot < 0 else inputs[slot])
        return ran, results, inputs, underflowed, exited


#: where a loop's result is after a run: a buffer it moved, or the frame's block
_MOVED, _BLOCK, _GIVEN = "moved", "block", "given"


def make_item_loop(artifact: KernelArtifact, kernels: CompiledModule, inputs: list[np.ndarray],
                   item: int | None, carried: dict[int, int], cache: Any = None,
                   exit: int | None = None) -> ItemLoop | str:
    """A machine-code loop over a lifted loop's items for ``artifact`` (the body) at the layouts
    of ``inputs``, or why there is none (``ItemLoopPlan.of``)."""
    if artifact.overwrites:  # a body's arguments are donated: it writes over none of them
        return "the body writes over an argument once its call stands"
    plan = ItemLoopPlan.of(artifact, inputs, item, carried, exit)
    if isinstance(plan, str):
        return plan
    return ItemLoop(plan, kernels, cache)
