"""Loop-level IR (spec §6): buffers whose contents are ``Pointwise`` or ``Reduction`` bodies.

Variables ``x0, x1, ...`` range over a body's ``ranges`` (its iteration space) and ``r0, r1, ...``
over ``reduction_ranges``. A ``ComputedBuffer`` stores element ``(x0, x1, ...)`` at
``store_index``. Everything here is immutable data and serializes to ``stax.loopir/1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stax.ir import TreeDef, check_schema, read_json, write_json
from stax.ir.serialize import decode_value, encode_value
from stax.ir.sizes import size_from_json, size_to_json

from .containers import fold
from .expr import Expr, Index, affine_loads, expr_from_json, expr_to_json, format_expr, loads, postorder
from .index import Affine

#: 1.1: extern calls; 1.2: scans, index/guarded/indirect loads, checks; 1.3: events-only buffers;
#: 1.4: region updates and scatters (``ComputedBuffer.updates``, ``store_offset``); 1.5: the
#: trigonometric argument limits the program's checks enforce (``LoopProgram.trig_limits``);
#: 1.6: buffers written over an updated argument once the call stands (``LoopProgram.overwrites``);
#: 1.7: size symbols (``LoopProgram.sizes``): shapes, strides, ranges and index coefficients may
#: be size expressions, written as their text (``"16*s0"``, ``stax.ir.sizes``; issue 15);
#: 1.8: late buffers that report their events after writing (``LoopProgram.late_reports``);
#: 1.9: results converted to Python numbers ("python" nodes of ``output_tree``);
#: 1.10: events reported on NumPy's behalf (``LoopProgram.event_reports``);
#: 1.11: a constant that underflowed at capture (``LoopProgram.constant_underflow``)
LOOPIR_SCHEMA = "stax.loopir/1.11"
LOOPIR_1_10_SCHEMA = "stax.loopir/1.10"
LOOPIR_1_9_SCHEMA = "stax.loopir/1.9"
LOOPIR_1_8_SCHEMA = "stax.loopir/1.8"
#: what a document with sizes but no late reports declares
LOOPIR_1_7_SCHEMA = "stax.loopir/1.7"
#: what a document without sizes but with overwrites declares, and one with neither
LOOPIR_1_6_SCHEMA = "stax.loopir/1.6"
LOOPIR_1_5_SCHEMA = "stax.loopir/1.5"
REDUCTION_TYPES = ("sum", "prod", "max", "min", "argmax", "argmin")
SCAN_TYPES = ("sum", "prod", "max", "min")


def xvar(i: int) -> str:
    return f"x{i}"


def rvar(i: int) -> str:
    return f"r{i}"


@dataclass(frozen=True)
class Pointwise:
    ranges: tuple[int, ...]
    body: Expr


@dataclass(frozen=True)
class Reduction:
    ranges: tuple[int, ...]
    reduction_ranges: tuple[int, ...]
    reduction_type: str
    body: Expr  # the value accumulated at (x, r), already in the accumulator dtype


@dataclass(frozen=True)
class Scan:
    """A running reduction along one axis: at (x, r0) the combination, in order, of ``body`` at
    (x, 0), ..., (x, r0) — stored for every r0 (cumsum, cumprod). Sequential by definition: the
    order is NumPy's, so the result is bit for bit NumPy's."""

    ranges: tuple[int, ...]         # the other axes (x variables)
    scan_range: int                 # the scanned axis (variable r0)
    scan_type: str                  # "sum" | "prod" | "max" | "min" (NumPy's maximum: a NaN
    #                                 stays, a tie takes the later element)
    body: Expr                      # the value at (x, r0), already in the result dtype

    @property
    def reduction_ranges(self) -> tuple[int, ...]:
        return (self.scan_range,)


Body = Pointwise | Reduction | Scan


@dataclass(frozen=True)
class InputBuffer:
    name: str
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]


@dataclass(frozen=True)
class ComputedBuffer:
    """A buffer of ``shape`` laid out with ``strides`` whose element ``store_index`` (over the
    body's ranges) is the body's value.

    With ``updates`` set it is a *region update* (spec §4.9's setitem, written in place as §7
    allows): the buffer is the computed buffer ``updates`` names, with only the elements the
    body's ranges reach overwritten — same shape, dtype and strides, same memory. Whatever else
    read ``updates`` must run before it (lowering makes it the old value's only reader), and its
    body reads ``updates`` at most at the element it writes."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    store_index: Affine
    data: Body
    updates: str | None = None
    #: a scatter's computed positions: an int64 expression of the loop variables added to
    #: ``store_index`` (with ``updates``: ``x[i] = v``, ``np.add.at``). The loops then run in
    #: order, one thread: a repeated position takes the last value, as NumPy's
    store_offset: Expr | None = None
    #: the outermost loop runs in order, on one thread: an iteration reads what an earlier one
    #: stored, or overwrites it (a scatter; a rerolled run of updates, ``reroll.py``)
    ordered: bool = False

    @property
    def ranges(self) -> tuple[int, ...]:
        return self.data.ranges

    @property
    def reduction_ranges(self) -> tuple[int, ...]:
        return self.data.reduction_ranges if isinstance(self.data, Reduction | Scan) else ()


def node_loads(node: ComputedBuffer) -> list[Any]:
    """Every read of ``node``'s kernel: its body's, and its scatter positions' (``store_offset``)."""
    found = loads(node.data.body)
    if node.store_offset is not None:
        found = found + loads(node.store_offset)
    return found


def loop_extents(node: ComputedBuffer) -> dict[str, int]:
    """Each loop variable of ``node`` and its extent."""
    extents = {xvar(i): n for i, n in enumerate(node.ranges)}
    extents.update({rvar(j): n for j, n in enumerate(node.reduction_ranges)})
    return extents


INT32_RANGE = (-(2 ** 31), 2 ** 31 - 1)


def index_width(node: ComputedBuffer) -> int:
    """32 when every element index ``node`` computes (its loads and its store) provably fits in
    int32 over its loop ranges, else 64 (spec §6.8): 32-bit index arithmetic is cheaper, and a
    strided access vectorizes as a gather of twice as many lanes."""
    extents = loop_extents(node)
    if any(n == 0 for n in extents.values()):
        return 32  # no iteration: nothing is indexed
    if node.store_offset is not None:
        return 64  # computed positions: their values are not bounded by the ranges
    # (an ``Index`` value, ``np.arange(2**31, ...)``, is computed in the kernel's index type too)
    indices = [ld.index for ld in affine_loads(node.data.body)] + [node.store_index] + \
        [e.index for e in postorder(node.data.body) if isinstance(e, Index)]
    for index in indices:
        low, high = index.bounds(extents)
        if low < INT32_RANGE[0] or high > INT32_RANGE[1]:
            return 64
    return 32


@dataclass(frozen=True)
class BufferRef:
    """An extern call's operand that is a buffer (an input, a computed or an extern result)."""

    name: str


@dataclass(frozen=True)
class ExternCall:
    """A buffer produced by calling NumPy (spec's extern kernels): ``target`` is a capture target
    (``numpy.matmul``, ``operator.getitem``) or, with ``method``, a method of the first operand.
    ``args``/``kwargs`` nest ``BufferRef``s among constants. The result may be a view of an operand,
    exactly as in eager NumPy; ``shape``/``dtype``/``strides`` are what capture observed, and the
    runtime checks every result against them.

    ``effect`` names the input whose state the call changes (the generator a draw advances): such
    a call is a side effect, run on every call whether or not its result is read, and after every
    earlier call with an effect (``effect_order``), whatever the data dependences allow."""

    name: str
    target: str
    method: bool
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    scalar: bool = False
    sequence: int | None = None  # the call returns this many arrays (a tuple or list)
    effect: str | None = None
    #: ``file:line in function`` of the user's code that made the call (the op node's source):
    #: NumPy's warnings from the call name that line, as in eager NumPy. Diagnostic only (JSON
    #: key ``source``, which readers of any 1.x ignore), so not part of the call's identity.
    source: str | None = field(default=None, compare=False)

    @property
    def reads(self) -> list[str]:
        found: list[str] = []
        map_buffer_refs((self.args, self.kwargs), lambda ref: found.append(ref.name))
        return found


def effect_order(buffers: list[ComputedBuffer | ExternCall]) -> dict[str, str]:
    """Ordering edges among the calls with an effect: each one -> the one before it in program
    order (the order of ``LoopProgram.buffers``). All effectful calls form one chain, not one per
    generator: two generator arguments may be one object, and an order among NumPy calls costs
    nothing. A scheduler must run each call after its predecessor here, as if it read it."""
    edges: dict[str, str] = {}
    last: str | None = None
    for b in buffers:
        if isinstance(b, ExternCall) and b.effect is not None:
            if last is not None:
                edges[b.name] = last
            last = b.name
    return edges


def map_buffer_refs(value: Any, fn: Any) -> Any:
    """``value`` with every ``BufferRef`` inside (nested tuples, lists, dicts, slices) replaced
    by ``fn(ref)``: how an extern call's operands become the arrays it is called with."""
    return fold(value, lambda v: fn(v) if isinstance(v, BufferRef) else v)


def _encode_operand(value: Any) -> Any:
    return {"buffer": value.name} if isinstance(value, BufferRef) else encode_value(value)


def _encode_container(container: Any, items: list[Any]) -> Any:
    if isinstance(container, tuple):
        return {"tuple": items}
    if isinstance(container, list):
        return items
    if isinstance(container, dict):
        return {"dict": [[k, v] for k, v in items]}
    return {"slice": items}


def encode_operands(value: Any) -> Any:
    """An extern call's operands as JSON: buffer references, and constants tagged as
    ``stax.ir``'s ``encode_value`` tags them."""
    return fold(value, _encode_operand, _encode_container)


def _decode_document(doc: Any, items: list[Any]) -> Any:
    if isinstance(doc, list):
        return items
    tagged = dict(items)  # a tagged value, its parts already decoded
    if "buffer" in tagged:
        return BufferRef(tagged["buffer"])
    if "tuple" in tagged:
        return tuple(tagged["tuple"])
    if "dict" in tagged:
        return {k: v for k, v in tagged["dict"]}
    return decode_value(tagged)


def decode_operands(doc: Any) -> Any:
    """The operands ``encode_operands`` wrote."""
    return fold(doc, lambda v: v, _decode_document)


@dataclass(frozen=True)
class OutputRef:
    """One leaf of the result: a buffer (``scalar``: return a NumPy scalar) or a constant."""

    buffer: str | None = None
    scalar: bool = False
    const: Any = None


@dataclass
class LoopProgram:
    name: str
    inputs: list[InputBuffer]
    input_slots: list[str | None]  # per flattened argument leaf: its input buffer, or a constant
    input_tree: TreeDef
    #: in an order where producers come first, and the calls with an effect in program order
    buffers: list[ComputedBuffer | ExternCall]
    outputs: list[OutputRef]
    output_tree: TreeDef
    #: bool buffers that must come out False (an index out of bounds, say): when one is True the
    #: call runs eagerly, so NumPy raises its own error
    checks: dict[str, str] = field(default_factory=dict)  # buffer -> what a True means
    #: buffers computed only for the floating-point events their steps may raise: values the
    #: program does not use (NumPy computes every step and reports its events all the same,
    #: ``stax.loop.unused``). Nothing reads them; a code generator need not store them.
    events_only: list[str] = field(default_factory=list)
    #: per float dtype, the |x| below which every sin/cos/tan argument of that dtype is checked
    #: to lie (``LoopOptions.trig_reduction_limit``: a check buffer per use, a call beyond runs
    #: as NumPy). A code generator may reduce such arguments with a short reduction good below
    #: the limit; a dtype not listed (every document before 1.5) needs one good everywhere.
    trig_limits: dict[str, float] = field(default_factory=dict)
    #: late buffer -> the input it is written over: the final value of an argument the function
    #: updates in place (``stax.loop.overwrites``). A code generator computes these last, after
    #: the call's checks and events are decided, into the argument's own memory; each reads that
    #: input only at the element it writes. Another reader of the program may treat one as any
    #: buffer (its value is the argument's final value).
    overwrites: dict[str, str] = field(default_factory=dict)
    #: (1.7) a size-generic program's size symbols: name -> [smallest, largest, traced size]
    sizes: dict[str, list[int]] = field(default_factory=dict)
    #: (1.8) late buffer -> [NumPy ufunc name, ``file:line in function``]: an argument's final
    #: value that is one float operation NumPy applied in place (``x -= m``: its ``out`` is the
    #: argument). No twin computes its events first: the code generator computes them while it
    #: writes the argument and reports them afterwards, as that ufunc would from that line
    #: (NumPy writes ``out`` before it warns or raises). Its other operands are buffers whose
    #: events the program decided before.
    late_reports: dict[str, list[str]] = field(default_factory=dict)
    #: (1.10) event category (``divide``, ``over``, ``invalid``) -> [NumPy ufunc name, dtype,
    #: ``file:line in function``, its place among the capture's operations]: the one operation
    #: of the function that may raise that category (capture's ``info["event_sources"]``). A
    #: call whose kernels raised only categories named here may have NumPy report them as
    #: those ufuncs from those lines, in the order of their places, and stand; events of a
    #: category not named decline the call as before.
    event_reports: dict[str, list[Any]] = field(default_factory=dict)
    #: (1.11) a value the program holds as a constant underflowed when capture computed it
    #: (``x * np.exp(-s)`` of a scalar argument ``s``): no kernel computes it again, so a code
    #: generator declines every call while NumPy's error state heeds underflow (the eager run
    #: reports it; NumPy's default ignores underflow)
    constant_underflow: bool = False

    def buffer(self, name: str) -> InputBuffer | ComputedBuffer | ExternCall:
        for b in (*self.inputs, *self.buffers):
            if b.name == name:
                return b
        raise KeyError(name)

    # -- text ----------------------------------------------------------------------------------
    def __str__(self) -> str:
        lines = [f"# {self.schema} {self.name}"]
        for b in self.inputs:
            lines.append(f"input {b.name}: {b.dtype}{list(b.shape)} strides={b.strides}")
        for cb in self.buffers:
            if isinstance(cb, ExternCall):
                call = f".{cb.target}" if cb.method else cb.target
                kind = (f"{cb.sequence} arrays" if cb.sequence is not None
                        else f"{cb.dtype}{list(cb.shape)} strides={cb.strides}")
                effect = f" effect={cb.effect}" if cb.effect is not None else ""
                lines.append(f"{cb.name}: {kind} = "
                             f"extern {call}(args={_show_operands(cb.args)}, "
                             f"kwargs={_show_operands(cb.kwargs)}){effect}")
                continue
            data = cb.data
            if isinstance(data, Reduction):
                kind = (f"Reduction({data.reduction_type}, ranges={list(data.ranges)}, "
                        f"reduction_ranges={list(data.reduction_ranges)})")
            elif isinstance(data, Scan):
                kind = (f"Scan({data.scan_type}, ranges={list(data.ranges)}, "
                        f"scan_range={data.scan_range})")
            else:
                kind = f"Pointwise(ranges={list(data.ranges)})"
            if cb.updates is not None:
                kind = f"{cb.updates} updated in place, {kind}"
            if cb.ordered:
                kind = f"{kind}, in order"
            lines.append(f"{cb.name}: {cb.dtype}{list(cb.shape)} strides={cb.strides} = {kind}")
            lines += format_expr(data.body)
            if cb.store_offset is not None:
                lines.append("    at offset")
                lines += format_expr(cb.store_offset, "      ")
                lines.append(f"    store {cb.name}[{cb.store_index} + offset]")
            else:
                lines.append(f"    store {cb.name}[{cb.store_index}]")
        outs = [o.buffer if o.buffer is not None else repr(o.const) for o in self.outputs]
        if self.checks:
            lines += [f"check not {name} ({why})" for name, why in self.checks.items()]
        if self.events_only:
            lines.append(f"events only: {', '.join(self.events_only)}")
        if self.trig_limits:
            lines += [f"trig arguments of {dtype} checked below {limit!r}"
                      for dtype, limit in sorted(self.trig_limits.items())]
        lines += [f"{late} written over {name} once the call stands" +
                  (f", its events reported after as {self.late_reports[late][0]}'s"
                   if late in self.late_reports else "")
                  for late, name in self.overwrites.items()]
        lines += [f"{category} events reported as {ufunc} from {source}"
                  for category, (ufunc, _, source, _) in self.event_reports.items()]
        if self.constant_underflow:
            lines.append("a constant underflowed: calls heeding underflow decline")
        lines.append("return " + ", ".join(outs))
        return "\n".join(lines)

    # -- JSON ----------------------------------------------------------------------------------
    @property
    def schema(self) -> str:
        """The schema the document declares: the oldest minor version that has its fields."""
        if self.constant_underflow:
            return LOOPIR_SCHEMA
        if self.event_reports:
            return LOOPIR_1_10_SCHEMA
        if self.output_tree.converts:
            return LOOPIR_1_9_SCHEMA
        if self.late_reports:
            return LOOPIR_1_8_SCHEMA
        if self.sizes:
            return LOOPIR_1_7_SCHEMA
        return LOOPIR_1_6_SCHEMA if self.overwrites else LOOPIR_1_5_SCHEMA

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "name": self.name,
            "inputs": [{"name": b.name, "shape": _sizes(b.shape), "dtype": b.dtype,
                        "strides": _sizes(b.strides)} for b in self.inputs],
            "input_slots": self.input_slots,
            "input_tree": self.input_tree.to_json(),
            "buffers": [_buffer_to_json(cb) for cb in self.buffers],
            "outputs": [{"buffer": o.buffer, "scalar": o.scalar, "const": encode_value(o.const)}
                        for o in self.outputs],
            "output_tree": self.output_tree.to_json(),
            **({"checks": self.checks} if self.checks else {}),
            **({"events_only": self.events_only} if self.events_only else {}),
            **({"trig_limits": self.trig_limits} if self.trig_limits else {}),
            **({"overwrites": self.overwrites} if self.overwrites else {}),
            **({"sizes": self.sizes} if self.sizes else {}),
            **({"late_reports": self.late_reports} if self.late_reports else {}),
            **({"event_reports": self.event_reports} if self.event_reports else {}),
            **({"constant_underflow": True} if self.constant_underflow else {}),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LoopProgram:
        check_schema(doc, LOOPIR_SCHEMA)
        return cls(
            doc["name"],
            [InputBuffer(b["name"], _parsed(b["shape"]), b["dtype"], _parsed(b["strides"]))
             for b in doc["inputs"]],
            list(doc["input_slots"]),
            TreeDef.from_json(doc["input_tree"]),
            [_buffer_from_json(b) for b in doc["buffers"]],
            [OutputRef(o["buffer"], o["scalar"], decode_value(o["const"])) for o in doc["outputs"]],
            TreeDef.from_json(doc["output_tree"]),
            dict(doc.get("checks", {})),
            list(doc.get("events_only", [])),
            {str(k): float(v) for k, v in doc.get("trig_limits", {}).items()},
            {str(k): str(v) for k, v in doc.get("overwrites", {}).items()},
            {str(k): [int(n) for n in v] for k, v in doc.get("sizes", {}).items()},
            {str(k): [str(n) for n in v] for k, v in doc.get("late_reports", {}).items()},
            {str(k): [str(v[0]), str(v[1]), str(v[2]), int(v[3])]
             for k, v in doc.get("event_reports", {}).items()},
            bool(doc.get("constant_underflow", False)),
        )

    def dump(self, path: str | Path) -> None:
        write_json(path, self.to_json())


def load_loopir(path_or_doc: str | Path | dict[str, Any]) -> LoopProgram:
    doc = path_or_doc if isinstance(path_or_doc, dict) else read_json(path_or_doc)
    return LoopProgram.from_json(doc)


def _show_operand(value: Any) -> str:
    return value.name if isinstance(value, BufferRef) else repr(value)


def _show_container(container: Any, items: list[str]) -> str:
    if isinstance(container, tuple):
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(container, list):
        return "[" + ", ".join(items) + "]"
    if isinstance(container, dict):
        return "{" + ", ".join(f"{k}={v}" for k, v in items) + "}"
    return "slice(" + ", ".join(items) + ")"


def _show_operands(value: Any) -> str:
    return fold(value, _show_operand, _show_container)


def _sizes(values: Any) -> list[Any]:
    """Sizes in a document: ints, or size expressions as their text (1.7)."""
    return [size_to_json(v) for v in values]


def _parsed(values: Any) -> tuple[Any, ...]:
    return tuple(size_from_json(v) for v in values)


def _buffer_to_json(cb: ComputedBuffer | ExternCall) -> dict[str, Any]:
    if isinstance(cb, ExternCall):
        return {"name": cb.name, "extern": cb.target, "method": cb.method,
                "args": encode_operands(cb.args), "kwargs": encode_operands(cb.kwargs),
                "shape": _sizes(cb.shape), "dtype": cb.dtype, "strides": _sizes(cb.strides),
                "scalar": cb.scalar, "sequence": cb.sequence,
                **({"effect": cb.effect} if cb.effect is not None else {}),
                **({"source": cb.source} if cb.source is not None else {})}
    data = cb.data
    body: dict[str, Any] = {"ranges": _sizes(data.ranges), "body": expr_to_json(data.body)}
    if isinstance(data, Reduction):
        body.update(kind="reduction", reduction_ranges=_sizes(data.reduction_ranges),
                    reduction_type=data.reduction_type)
    elif isinstance(data, Scan):
        body.update(kind="scan", scan_range=size_to_json(data.scan_range),
                    scan_type=data.scan_type)
    else:
        body["kind"] = "pointwise"
    return {"name": cb.name, "shape": _sizes(cb.shape), "dtype": cb.dtype,
            "strides": _sizes(cb.strides), "store_index": cb.store_index.to_json(), "data": body,
            **({"updates": cb.updates} if cb.updates is not None else {}),
            **({"store_offset": expr_to_json(cb.store_offset)}
               if cb.store_offset is not None else {}),
            **({"ordered": True} if cb.ordered else {})}


def _buffer_from_json(doc: dict[str, Any]) -> ComputedBuffer | ExternCall:
    if "extern" in doc:
        return ExternCall(doc["name"], doc["extern"], doc["method"], decode_operands(doc["args"]),
                          decode_operands(doc["kwargs"]), _parsed(doc["shape"]), doc["dtype"],
                          _parsed(doc["strides"]), doc["scalar"], doc.get("sequence"),
                          doc.get("effect"), doc.get("source"))
    d = doc["data"]
    body = expr_from_json(d["body"])
    data: Body
    if d["kind"] == "reduction":
        data = Reduction(_parsed(d["ranges"]), _parsed(d["reduction_ranges"]),
                         d["reduction_type"], body)
    elif d["kind"] == "scan":
        data = Scan(_parsed(d["ranges"]), size_from_json(d["scan_range"]), d["scan_type"], body)
    else:
        data = Pointwise(_parsed(d["ranges"]), body)
    return ComputedBuffer(doc["name"], _parsed(doc["shape"]), doc["dtype"], _parsed(doc["strides"]),
                          Affine.from_json(doc["store_index"]), data, doc.get("updates"),
                          expr_from_json(doc["store_offset"]) if "store_offset" in doc else None,
                          bool(doc.get("ordered", False)))
