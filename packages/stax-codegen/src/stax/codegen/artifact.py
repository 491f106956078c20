"""The compiled artifact ``stax.kernels/1``: kernels, launch plan and buffer plan (spec §7–8).

It carries everything needed to run without the earlier layers: the code of every kernel (one
LLVM module for the CPU; one Triton source module for CUDA, with each kernel's launch), which
buffers each kernel reads and writes in which order, how to allocate each buffer, and how the
user's inputs and outputs map onto buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stax.ir import TreeDef, check_schema, read_json, write_json
from stax.ir.serialize import decode_value, encode_value
from stax.ir.sizes import Size, size_from_json, size_to_json

from .nesting import NestPlan
from .storage_plan import StoragePlan
from .target import Identity

# 1.1: extern calls, step order; 1.2: storage, index width, checks; 1.3: floating-point events;
# 1.4: each kernel's loop nest; 1.5: Triton source and each kernel's launch (CUDA documents);
# 1.6: the input a CPU kernel copies unchanged (a document with such a kernel declares 1.6);
# 1.7: a columns nest of several phases (its ``phases``, as a row nest's; such a document
# declares 1.7); 1.8: buffers written over an updated argument once the call stands
# (``overwrites``, buffers of role "overwrite"; such a document declares 1.8).
KERNELS_SCHEMA = "stax.kernels/1.4"
COPIES_KERNELS_SCHEMA = "stax.kernels/1.6"
PHASED_COLUMNS_KERNELS_SCHEMA = "stax.kernels/1.7"
OVERWRITES_KERNELS_SCHEMA = "stax.kernels/1.8"
#: 1.9: a size-generic plan (issue 15): shapes, strides, launch ranges, work, costs and storage
#: may be size expressions (text, ``stax.ir.sizes``); kernels read the sizes from their arrays
SIZES_KERNELS_SCHEMA = "stax.kernels/1.9"
#: 1.10: a size-generic CUDA plan: each Triton kernel's size arguments after its pointers
#: (``KernelPlan.size_args``) and launch grids as size expressions (``Launch``), besides 1.9's
#: sizes and 1.5's Triton source
SIZED_TRITON_KERNELS_SCHEMA = "stax.kernels/1.10"
#: 1.11: the storage's ``arena``, the blocks' byte offsets in one allocation per call
#: (``arena.py``; a CPU document whose blocks share bytes declares 1.11). A reader of an older
#: minor version ignores it and allocates each block alone: correct, with more memory
ARENA_KERNELS_SCHEMA = "stax.kernels/1.11"
#: 1.12: late kernels that report their floating-point events after writing over an argument
#: (``late_reports``: the ufunc NumPy applied in place there, and the user's line). A reader of
#: an older minor version runs them without reporting: it must not run such a document
LATE_REPORTS_KERNELS_SCHEMA = "stax.kernels/1.12"
#: 1.13: results converted to Python numbers ("python" nodes of ``output_tree``: ``return
#: float(loss)``), which a reader of an older minor version would return as dictionaries
CONVERTED_KERNELS_SCHEMA = "stax.kernels/1.13"
#: 1.14: events reported on NumPy's behalf (``event_reports``, ``LoopProgram.event_reports``).
#: A reader of an older minor version declines every call with events instead: correct, slower
EVENT_REPORTS_KERNELS_SCHEMA = "stax.kernels/1.14"
#: the schema a document with Triton source declares (a CPU document, which has none of 1.5's
#: fields, keeps declaring 1.4: every 1.4 document is a 1.5 document)
TRITON_KERNELS_SCHEMA = "stax.kernels/1.5"
#: the int32[1] buffer (role "events") kernels OR NumPy's floating-point status bits into, as
#: their last argument (``cpu/fpevents.py``); not a valid Python name, so never an argument's
EVENTS_BUFFER = "$events"


@dataclass(frozen=True)
class BufferPlan:
    name: str
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    #: "input" | "output" | "intermediate" | "extern" | "events" | "overwrite" (the memory of
    #: the input ``KernelArtifact.overwrites`` names)
    role: str


@dataclass(frozen=True)
class Launch:
    """How a GPU kernel is launched: its grid of programs, the block sizes its ``tl.constexpr``
    parameters take (``XBLOCK``, ``R0_BLOCK``) and the warps per program."""

    grid: tuple[int, ...]
    blocks: tuple[tuple[str, int], ...]
    num_warps: int

    @property
    def constants(self) -> dict[str, int]:
        return dict(self.blocks)

    def to_json(self) -> dict[str, Any]:
        return {"grid": [size_to_json(n) for n in self.grid], "blocks": dict(self.blocks),
                "num_warps": self.num_warps}  # a size-generic kernel's grid: expressions

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Launch:
        return cls(tuple(size_from_json(n) for n in doc["grid"]),
                   tuple((k, int(v)) for k, v in doc["blocks"].items()),
                   int(doc["num_warps"]))


@dataclass(frozen=True)
class KernelPlan:
    name: str
    args: tuple[str, ...]          # buffers passed, in order
    computes: tuple[str, ...]      # buffers it writes
    #: the x0 extent split across threads (1 when no loops; a columns nest of reductions over
    #: one kept axis counts its blocks of columns, ``cpu.nests.column_block``)
    outer_range: int
    work: int                      # elements visited: product of all loop extents
    parallel: bool
    bytes_read: int
    bytes_written: int
    index_bits: int = 64           # element index arithmetic: 32 when provably in range (§6.8)
    #: how its loops are arranged (``nesting.py``); None in documents before 1.4, which did not
    #: record it (and cannot be told it: they hold no loop IR, only the LLVM IR made from it)
    nest: NestPlan | None = None
    #: a GPU kernel's launch (1.5); None for a CPU kernel
    launch: Launch | None = None
    #: (1.6) the input this kernel copies, element for element at the same layout, into the one
    #: buffer it computes (the start of a region update of an argument: ``x[i] = v``). A lifted
    #: loop's item loop skips it and updates the argument's buffer in place
    #: (``cpu/item_loop.py``)
    copies: str | None = None
    #: a size-generic kernel's cost units as an expression of the sizes (issue 15): whether it
    #: is split over the pool is decided for each call's sizes (``instantiate.py``), and
    #: ``parallel`` says only that it may be. None for a kernel of constant sizes
    cost: Any = None
    #: a size-generic Triton kernel's size symbols, passed after its pointers (issue 15)
    size_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExternPlan:
    """A NumPy call between kernels; operands are encoded with ``stax.loop``'s buffer refs."""

    buffer: str
    target: str
    method: bool
    args: Any           # JSON form (stax.loop.ir.encode_operands)
    kwargs: Any
    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    scalar: bool
    sequence: int | None = None  # the call returns this many arrays
    #: the user's ``file:line in function`` that made the call: NumPy's warnings name it
    #: (``call_sites.call_site``). Diagnostic only: JSON key ``source``, ignored by any 1.x
    source: str | None = field(default=None, compare=False)


@dataclass
class KernelArtifact:
    name: str
    target: dict[str, str]
    codegen_version: str
    llvm_ir: str
    buffers: list[BufferPlan]
    kernels: list[KernelPlan]
    input_slots: list[str | None]
    input_tree: TreeDef
    outputs: list[dict[str, Any]]   # {"buffer", "scalar"} or {"const"}
    output_tree: TreeDef
    fusion: list[dict[str, Any]] = field(default_factory=list)
    externs: list[ExternPlan] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # kernel names and extern buffers, in order
    storage: StoragePlan | None = None  # blocks shared by buffers whose lives do not overlap
    checks: dict[str, str] = field(default_factory=dict)  # bool buffers that must be False
    #: the kernels again with exact floating-point event checks (same names and arguments),
    #: for calls whose fast kernels saw a non-finite value; None when no kernel does float
    #: arithmetic that may report events (nor underflow: ``errstate.py``)
    precise_ir: str | None = None
    #: some kernel may underflow without reporting it: while NumPy's error state does not
    #: ignore underflow, calls run eagerly (``errstate.py``)
    underflow_unseen: bool = False
    #: the kernels as one Triton source module (a ``cuda`` target's; ``llvm_ir`` is then empty)
    triton_source: str | None = None
    #: buffer -> the input whose memory it is written into: an updated argument's final value
    #: (``LoopProgram.overwrites``). The kernels computing these are the last steps and run
    #: only once the call stands (after its gates, checks and events), without reporting events
    #: unless ``late_reports`` names them
    overwrites: dict[str, str] = field(default_factory=dict)
    #: (1.9) a size-generic plan's symbols (name -> [smallest, largest, traced size]) and the
    #: shape guards its compile recorded (``stax.ir.shape_env.Guard`` documents): the sizes it
    #: runs at (``instantiate.GenericExecutable``)
    sizes: dict[str, Any] = field(default_factory=dict)
    #: (1.12) late buffer -> [NumPy ufunc, ``file:line in function``] (``LoopProgram.late_reports``):
    #: its kernel ORs its events into the events buffer after the call's own were settled; the
    #: executable then reports the new ones NumPy's state heeds as that in-place ufunc would
    #: from that line (``late_reports.py``)
    late_reports: dict[str, list[str]] = field(default_factory=dict)
    #: (1.14) event category -> [NumPy ufunc, dtype, ``file:line in function``, place]
    #: (``LoopProgram.event_reports``): a call whose events are all of categories named here
    #: has NumPy report them as those ufuncs from those lines and stands (``event_reports.py``)
    event_reports: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def late_steps(self) -> int:
        """How many of the last steps write over arguments (``overwrites``)."""
        computes = {k.name: k.computes for k in self.kernels}
        count = 0
        for step in reversed(self.steps):
            if not all(c in self.overwrites for c in computes.get(step, ("",))):
                break
            count += 1
        return count

    @property
    def events(self) -> str | None:
        """The events buffer's name, if the kernels report floating-point events."""
        return EVENTS_BUFFER if any(b.role == "events" for b in self.buffers) else None

    @property
    def nests(self) -> dict[tuple[str, ...], NestPlan]:
        """Each kernel's recorded loop nest, by the buffers it computes: what ``generate(...,
        nests=)`` takes to build the same plan again, or an edited one."""
        return {k.computes: k.nest for k in self.kernels if k.nest is not None}

    @property
    def schema(self) -> str:
        """The schema the document declares: the oldest minor version that has its fields."""
        if self.event_reports:
            return EVENT_REPORTS_KERNELS_SCHEMA
        if self.output_tree.converts:
            return CONVERTED_KERNELS_SCHEMA
        if self.late_reports:
            return LATE_REPORTS_KERNELS_SCHEMA
        if self.storage is not None and self.storage.offsets:
            return ARENA_KERNELS_SCHEMA
        sized = any(isinstance(n, Size) for b in self.buffers for n in b.shape)
        if self.triton_source is not None:
            sized = sized or any(k.size_args for k in self.kernels)
            return SIZED_TRITON_KERNELS_SCHEMA if sized else TRITON_KERNELS_SCHEMA
        if sized:
            return SIZES_KERNELS_SCHEMA
        if self.overwrites:
            return OVERWRITES_KERNELS_SCHEMA
        if any(k.nest is not None and k.nest.kind == "columns" and len(k.nest.phases) > 1
               for k in self.kernels):
            return PHASED_COLUMNS_KERNELS_SCHEMA
        return COPIES_KERNELS_SCHEMA if any(k.copies for k in self.kernels) else KERNELS_SCHEMA

    @property
    def intermediates(self) -> list[BufferPlan]:
        return [b for b in self.buffers if b.role == "intermediate"]

    @property
    def unstored(self) -> frozenset[str]:
        """Intermediates no step stores: no kernel takes them (held in registers or a stack
        row, or computed only for their events), no block holds them, no result is one. A call
        allocates nothing for them (it allocated each: a softmax's unstored exponentials of
        1.5 MB pushed the heap past glibc's trim threshold, and every call faulted the result's
        pages in again)."""
        if self.storage is None:
            return frozenset()
        used = {a for k in self.kernels for a in k.args} | set(self.storage.storage) | \
            {o["buffer"] for o in self.outputs if "buffer" in o}
        return frozenset(b.name for b in self.buffers
                         if b.role == "intermediate" and b.name not in used)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "name": self.name,
            "target": self.target,
            "codegen_version": self.codegen_version,
            "buffers": [{"name": b.name, "shape": _sizes(b.shape), "dtype": b.dtype,
                         "strides": _sizes(b.strides), "role": b.role} for b in self.buffers],
            "kernels": [{"name": k.name, "args": list(k.args), "computes": list(k.computes),
                         "outer_range": size_to_json(k.outer_range),
                         "work": size_to_json(k.work), "parallel": k.parallel,
                         "bytes_read": size_to_json(k.bytes_read),
                         "bytes_written": size_to_json(k.bytes_written),
                         "index_bits": k.index_bits,
                         **({"cost": size_to_json(k.cost)} if k.cost is not None else {}),
                         **({"size_args": list(k.size_args)} if k.size_args else {}),
                         **({"nest": k.nest.to_json()} if k.nest is not None else {}),
                         **({"launch": k.launch.to_json()} if k.launch is not None else {}),
                         **({"copies": k.copies} if k.copies is not None else {})}
                        for k in self.kernels],
            "input_slots": self.input_slots,
            "input_tree": self.input_tree.to_json(),
            "outputs": [{**o, "const": encode_value(o.get("const"))} for o in self.outputs],
            "output_tree": self.output_tree.to_json(),
            "fusion": self.fusion,
            "externs": [{"buffer": e.buffer, "target": e.target, "method": e.method,
                         "args": e.args, "kwargs": e.kwargs, "shape": _sizes(e.shape),
                         "dtype": e.dtype, "strides": _sizes(e.strides), "scalar": e.scalar,
                         "sequence": e.sequence,
                         **({"source": e.source} if e.source is not None else {})}
                        for e in self.externs],
            "steps": self.steps,
            "storage": None if self.storage is None else {
                "blocks": _sizes(self.storage.sizes), "buffers": self.storage.storage,
                "in_place": self.storage.in_place,
                "peak_bytes": size_to_json(self.storage.peak_bytes),
                "unshared_bytes": size_to_json(self.storage.unshared_bytes),
                **({"arena": {"bytes": self.storage.arena_bytes,
                              "offsets": {str(b): o for b, o in self.storage.offsets.items()}}}
                   if self.storage.offsets else {})},
            **({"checks": self.checks} if self.checks else {}),
            "llvm_ir": self.llvm_ir,
            **({"precise_llvm_ir": self.precise_ir} if self.precise_ir is not None else {}),
            **({"underflow_unseen": True} if self.underflow_unseen else {}),
            **({"triton_source": self.triton_source} if self.triton_source is not None else {}),
            **({"overwrites": self.overwrites} if self.overwrites else {}),
            **({"sizes": self.sizes} if self.sizes else {}),
            **({"late_reports": self.late_reports} if self.late_reports else {}),
            **({"event_reports": self.event_reports} if self.event_reports else {}),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> KernelArtifact:
        check_schema(doc, KERNELS_SCHEMA)
        return cls(
            doc["name"], dict(doc["target"]), doc["codegen_version"], doc["llvm_ir"],
            [BufferPlan(b["name"], _parsed(b["shape"]), b["dtype"], _parsed(b["strides"]),
                        b["role"]) for b in doc["buffers"]],
            [KernelPlan(k["name"], tuple(k["args"]), tuple(k["computes"]),
                        size_from_json(k["outer_range"]), size_from_json(k["work"]),
                        k["parallel"], size_from_json(k["bytes_read"]),
                        size_from_json(k["bytes_written"]), k.get("index_bits", 64),
                        NestPlan.from_json(k["nest"], k["computes"]) if "nest" in k else None,
                        Launch.from_json(k["launch"]) if "launch" in k else None,
                        k.get("copies"),
                        size_from_json(k["cost"]) if "cost" in k else None,
                        tuple(k.get("size_args", ())))
             for k in doc["kernels"]],
            list(doc["input_slots"]), TreeDef.from_json(doc["input_tree"]),
            [{**o, "const": decode_value(o.get("const"))} for o in doc["outputs"]],
            TreeDef.from_json(doc["output_tree"]), list(doc.get("fusion", [])),
            [ExternPlan(e["buffer"], e["target"], e["method"], e["args"], e["kwargs"],
                        _parsed(e["shape"]), e["dtype"], _parsed(e["strides"]), e["scalar"],
                        e.get("sequence"), e.get("source"))
             for e in doc.get("externs", [])],
            list(doc.get("steps") or [k["name"] for k in doc["kernels"]]),
            _storage_from_json(doc.get("storage")),
            dict(doc.get("checks", {})),
            doc.get("precise_llvm_ir"),
            bool(doc.get("underflow_unseen", False)),
            doc.get("triton_source"),
            {str(k): str(v) for k, v in doc.get("overwrites", {}).items()},
            dict(doc.get("sizes", {})),
            {str(k): [str(n) for n in v] for k, v in doc.get("late_reports", {}).items()},
            {str(k): [str(v[0]), str(v[1]), str(v[2]), int(v[3])]
             for k, v in doc.get("event_reports", {}).items()},
        )

    def dump(self, path: str | Path) -> None:
        write_json(path, self.to_json())

    def __str__(self) -> str:
        schema = self.schema
        where = self.target.get("cpu") if self.triton_source is None else \
            f"{self.target.get('device', 'cuda')} (Triton)"
        if self.triton_source is None and self.target.get("features"):
            identity = Identity("cpu", self.target.get("triple", ""), self.target.get("cpu", ""),
                                self.target["features"])
            if identity.tuned_bits:
                where += f", {identity.tuned_bits}-bit vectors"
        if isinstance(self.target.get("parallel_work"), int):
            where += f", kernels of {self.target['parallel_work']} cost units and more split " \
                "over the thread pool"
        lines = [f"# {schema} {self.name} for {where}"]
        for b in self.buffers:
            lines.append(f"buffer {b.name}: {b.dtype}{list(b.shape)} strides={b.strides} ({b.role})")
        for e in self.externs:
            call = f".{e.target}" if e.method else e.target
            lines.append(f"extern {e.buffer} = {call}(...) -> {e.dtype}{list(e.shape)} (NumPy)")
        lines.append("steps: " + ", ".join(self.steps))
        if self.checks:
            lines += [f"check {name}: the call runs eagerly when {why}"
                      for name, why in self.checks.items()]
        lines += [f"overwrite {name}: written into argument {over}'s memory once the call stands" +
                  (f", then its events reported as {self.late_reports[name][0]}'s in place "
                   f"(NumPy's order)" if name in self.late_reports else "")
                  for name, over in self.overwrites.items()]
        for k in self.kernels:
            # a computed buffer that is no argument is never stored: computed for its events
            # only, or read only in its kernel at the element computed (``transient.py``)
            computes = [c if c in k.args else f"{c} (unstored)" for c in k.computes]
            lines.append(f"launch {k.name}({', '.join(k.args)}) outer loop over [0, {k.outer_range})"
                         f"{' in parallel' if k.parallel else ''}: computes {', '.join(computes)};"
                         f" moves {k.bytes_read} B in, {k.bytes_written} B out;"
                         f" int{k.index_bits} indices{_describe(k.nest)}{_launched(k.launch)}"
                         f"{f'; copies {k.copies}' if k.copies else ''}")
        if self.storage is not None:
            st = self.storage
            for block, size in enumerate(st.sizes):
                names = [n + (f" (in place over {st.in_place[n]})" if n in st.in_place else "")
                         for n, b in st.storage.items() if b == block]
                if len(names) > 1:
                    lines.append(f"storage block {block} ({size} B): {', '.join(names)}")
            lines.append(f"planned buffers: peak {st.peak_bytes} B "
                         f"({st.unshared_bytes} B without reuse)")
            if st.offsets:
                placed = ", ".join(f"block {b} at {o}" for b, o in sorted(st.offsets.items(),
                                                                         key=lambda i: i[1]))
                lines.append(f"arena {st.arena_bytes} B (blocks alone: "
                             f"{sum(st.sizes[b] for b in st.offsets)} B): {placed}")
        for f in self.fusion:
            verdict = "fused" if f["fused"] else "not fused"
            lines.append(f"fusion {f['producer']} -> {f['consumer']}: {verdict} ({f['reason']})")
        if self.triton_source is not None:  # the kernels themselves, as a CPU plan's are not
            lines += ["triton source:", *("    " + line if line else ""
                                          for line in self.triton_source.rstrip().splitlines())]
        return "\n".join(lines)


def _describe(nest: NestPlan | None) -> str:
    if nest is None:
        return ""
    text = f"; {nest.kind} nest"
    if nest.kind == "tiled":
        text += f" ({nest.tile}x{nest.tile} tiles)"
    if nest.kind == "rows" or len(nest.phases) > 1:
        text += " (phases " + " | ".join(", ".join(p) for p in nest.phases) + ")"
    return text + "".join(f"; {r} also stores {b}" for r, b in nest.shares)


def _launched(launch: Launch | None) -> str:
    if launch is None:
        return ""
    blocks = ", ".join(f"{name}={size}" for name, size in launch.blocks)
    return f"; grid {launch.grid}, {blocks}, {launch.num_warps} warps"


def _sizes(values: Any) -> list[Any]:
    """Dimensions, strides or byte counts in a document: ints, or a size-generic artifact's
    size expressions as their text (issue 15)."""
    return [size_to_json(v) for v in values]


def _parsed(values: Any) -> tuple[Any, ...]:
    return tuple(size_from_json(v) for v in values)


def _storage_from_json(doc: dict[str, Any] | None) -> StoragePlan | None:
    if doc is None:
        return None
    arena = doc.get("arena") or {"bytes": 0, "offsets": {}}
    return StoragePlan(dict(doc["buffers"]), list(_parsed(doc["blocks"])), dict(doc["in_place"]),
                       size_from_json(doc["peak_bytes"]), size_from_json(doc["unshared_bytes"]),
                       {int(b): o for b, o in arena["offsets"].items()}, arena["bytes"])


def load_artifact(path_or_doc: str | Path | dict[str, Any]) -> KernelArtifact:
    doc = path_or_doc if isinstance(path_or_doc, dict) else read_json(path_or_doc)
    return KernelArtifact.from_json(doc)
