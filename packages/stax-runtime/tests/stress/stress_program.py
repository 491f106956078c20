"""A stress program as data: its source text, the leaves it reads, the steps that make its values
and the calls to make. Everything here is plain data (JSON), so a failing program can be printed,
saved and replayed in another process (``python stress_run.py replay FILE``).

The function is real Python source, exec'd into a fresh module: its globals are module globals
and its closure cells are cells of ``make``, so free variables behave exactly as in user code. A
*leaf* is one value a program reads: an array argument ``x``, an element ``t[0]`` of a tuple
argument, ``cfg.scale`` of an object, a global ``GS0``, a closure cell ``CA0``, and so on. Each
call builds every leaf afresh (arguments get new data; free variables keep, rebind or mutate
theirs according to ``Leaf.change``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

PRELUDE = '''import numpy as np


class Cfg:
    """A configuration object: the program reads its attributes (cfg.scale)."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def _double(v):
    return v * 2


def _inc(v):
    return v + 1
'''

#: the functions a callable free variable is bound to (all bit-exact, slope at most 2: rule lin2)
CALLABLES = ["_double", "_inc", "np.negative", "np.abs"]
FLOATS = [0.5, 2.0, -1.5, 3.0, -0.25, 7.5, 1e-3, 1e3, float("inf"), float("nan")]
INTS = [1, 2, 3, -1, -4, 7]
NP_SCALARS = ["float32", "float64", "int32", "int64"]


@dataclass
class Owner:
    """A parameter or free variable of the program."""

    name: str
    where: str  # "arg" | "global" | "cell"
    kind: str   # "array" | "scalar" | "callable" | "tuple" | "list" | "dict" | "object" | "rng"
    change: str = "same"  # objects: "same" (attributes set on one object) | "new" (one per call)


@dataclass
class Leaf:
    """One value the program reads."""

    ref: str            # its expression in the body: "x", "t0[1]", "d0['a']", "cfg0.scale", "GS0"
    owner: str
    path: list[Any]     # inside the owner: [] or [1] or ["a"] or ["p", 0] or ["scale"]
    kind: str           # "array" | "float" | "int" | "float32" (and other NumPy scalars) | "callable"
    dtype: str = ""
    shape: str = ""     # "full" (m, n) | "row" (n,) | "col" (m, 1) | "0d"
    layout: str = ""    # "C" | "F" | "T" (transposed) | "S" (strided) | "N" (negative) | "B" (broadcast)
    change: str = "fresh"  # "fresh" | "rebind" | "inplace" | "fixed" | "value"
    alias: list[Any] | None = None  # [leaf index, "same" | "rev"]: that leaf's array, or a view


@dataclass
class Step:
    """How value ``out`` was made: its error rule over ``operands`` (the values the probe records)."""

    out: int
    rule: str
    operands: list[int]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Call:
    seed: int
    shape: list[int]
    errstate: str = "default"


@dataclass
class Program:
    owners: list[Owner]
    leaves: list[Leaf]
    lines: list[str]          # the body's statements, without the return
    probe_lines: list[str]    # the same statements with _rec(...) between them
    ret: Any                  # output tree: value id | ["tuple"|"list", [...]] | ["dict", [[k, t]]]
    ret_text: str
    steps: list[Step]
    exact: list[bool]         # per value id
    n_values: int
    effects: list[list[int]]  # [leaf index, value id of its content after the call]
    seed: int
    calls: list[Call] = field(default_factory=list)
    global_random: bool = False
    late_binding: bool = False  # compile() before the free variables are bound (a decorator above them)
    specials: bool = True  # NaN, Inf and -0.0 in the float arrays

    # -- text ------------------------------------------------------------------------------------
    def params(self) -> list[str]:
        return [o.name for o in self.owners if o.where == "arg"]

    def cells(self) -> list[str]:
        return [o.name for o in self.owners if o.where == "cell"]

    def source(self) -> str:
        params = ", ".join(self.params())
        cells = self.cells()
        out = [PRELUDE, ""]
        if not self.late_binding:  # else not even defined when compile() runs (a decorator above)
            out += [f"{o.name} = None" for o in self.owners if o.where == "global"]
        out += ["", "", f"def make({', '.join(cells)}):", f"    def prog({params}):"]
        out += [f"        {line}" for line in self.lines] + [f"        return {self.ret_text}", ""]
        out += [f"    def probe({params + ', ' if params else ''}_rec):"]
        out += [f"        {line}" for line in self.probe_lines] + ["        return None", ""]
        out += ["    def update(*values):"]
        if cells:
            out += [f"        nonlocal {', '.join(cells)}", f"        ({', '.join(cells)},) = values"]
        else:
            out += ["        pass"]
        out += ["", "    return prog, probe, update", ""]
        return "\n".join(out)

    def program_text(self) -> str:
        """The user-visible part: globals, make() and prog (no probe), for reports."""
        params = ", ".join(self.params())
        cells = self.cells()
        out = [f"{o.name} = ...  # a global" for o in self.owners if o.where == "global"]
        out += [f"def make({', '.join(cells)}):", f"    def prog({params}):"]
        out += [f"        {line}" for line in self.lines] + [f"        return {self.ret_text}"]
        out += ["    return prog"]
        return "\n".join(out)

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Program:
        d = json.loads(text)
        d["owners"] = [Owner(**o) for o in d["owners"]]
        d["leaves"] = [Leaf(**leaf) for leaf in d["leaves"]]
        d["steps"] = [Step(**s) for s in d["steps"]]
        d["calls"] = [Call(**c) for c in d["calls"]]
        return cls(**d)


# -- building one call's values ---------------------------------------------------------------------
def leaf_shape(leaf: Leaf, shape: list[int]) -> tuple[int, ...]:
    m, n = shape
    return {"full": (m, n), "row": (n,), "col": (m, 1), "0d": ()}[leaf.shape]


def make_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], layout: str,
               specials: bool = True) -> np.ndarray:
    """Random data of a dtype in a layout, with NaN, Inf, -0.0 and integer extremes sprinkled in
    (float specials only with ``specials``)."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape))
    if dt.kind == "f":
        flat = (rng.standard_normal(size) * 4).astype(dt)
        values = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dt)
        if specials and size and rng.random() < 0.7:
            where = rng.integers(0, size, rng.integers(1, 4))
            flat[where] = values[rng.integers(0, len(values), len(where))]
    elif dt.kind in "iu":
        flat = rng.integers(-9, 10, size).astype(dt)
        if size and rng.random() < 0.3:
            info = np.iinfo(dt)
            flat[rng.integers(0, size)] = info.max if rng.random() < 0.5 else info.min
    else:
        flat = rng.random(size) < 0.5
    data = flat.reshape(shape)
    if layout == "F" or (layout == "T" and len(shape) < 2):
        return np.asfortranarray(data)
    if layout == "T":
        return np.ascontiguousarray(np.swapaxes(data, -1, -2)).swapaxes(-1, -2)
    if layout == "S" and shape:
        big = np.zeros(tuple(2 * s for s in shape), dt)
        view = big[tuple(slice(None, None, 2) for _ in shape)]
        view[...] = data
        return view
    if layout == "N" and shape:
        return np.ascontiguousarray(data[::-1])[::-1]
    if layout == "B" and len(shape) == 2:
        return np.broadcast_to(data[:1], shape)  # stride 0, read-only
    return np.ascontiguousarray(data)


def leaf_value(program: Program, index: int, call: Call, shape: list[int]) -> Any:
    """A leaf's fresh value for a call (fixed leaves: the same at every call)."""
    leaf = program.leaves[index]
    seed = program.seed if leaf.change == "fixed" else call.seed
    rng = np.random.default_rng([seed, index])
    if leaf.kind == "array":
        return make_array(rng, leaf.dtype, leaf_shape(leaf, shape), leaf.layout, program.specials)
    if leaf.kind == "callable":
        return CALLABLES[rng.integers(len(CALLABLES))]  # a name, resolved in the module
    if leaf.kind == "float":
        return FLOATS[rng.integers(len(FLOATS))]
    if leaf.kind == "int":
        return INTS[rng.integers(len(INTS))]
    return getattr(np, leaf.kind)(INTS[rng.integers(len(INTS))] * 0.5 if "float" in leaf.kind
                                  else INTS[rng.integers(len(INTS))])


class State:
    """Builds the arguments and free variables of calls; keeps the objects that live across calls
    (a configuration object mutated in place, an array global updated in place)."""

    def __init__(self, program: Program, namespace: dict[str, Any]) -> None:
        self.program = program
        self.namespace = namespace  # the module: Cfg and the callables
        self.kept: dict[Any, Any] = {}

    def build(self, call: Call) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
        """(arguments, globals, cell values) for one run of a call; every run builds anew."""
        p = self.program
        shape = call.shape
        values: dict[int, Any] = {}
        for i, leaf in enumerate(p.leaves):
            if leaf.alias is not None:
                target = values[leaf.alias[0]]
                values[i] = target if leaf.alias[1] == "same" else target[::-1]
                continue
            value = leaf_value(p, i, call, shape)
            if leaf.kind == "callable":
                value = eval(value, self.namespace)
            if leaf.kind == "array" and leaf.change == "inplace":
                old = self.kept.get(("leaf", i))
                if old is not None and old.shape == value.shape:
                    old[...] = value
                    value = old
                self.kept[("leaf", i)] = value
            values[i] = value
        owned: dict[str, list[int]] = {}
        for i, leaf in enumerate(p.leaves):
            owned.setdefault(leaf.owner, []).append(i)
        built: dict[str, Any] = {}
        for owner in p.owners:
            built[owner.name] = self._owner(owner, owned.get(owner.name, []), values, call)
        args = tuple(built[o.name] for o in p.owners if o.where == "arg")
        globals_ = {o.name: built[o.name] for o in p.owners if o.where == "global"}
        cells = [built[o.name] for o in p.owners if o.where == "cell"]
        return args, globals_, cells

    def _owner(self, owner: Owner, leaves: list[int], values: dict[int, Any], call: Call) -> Any:
        p = self.program
        if owner.kind == "rng":
            return np.random.default_rng([call.seed, 10_000])
        if owner.kind in ("array", "scalar", "callable"):
            return values[leaves[0]]
        if owner.kind == "object":
            obj = self.kept.get(("object", owner.name)) if owner.change == "same" else None
            if obj is None:
                obj = self.namespace["Cfg"]()
                self.kept[("object", owner.name)] = obj
            for i in leaves:
                setattr(obj, p.leaves[i].path[0], values[i])
            return obj
        return _container(owner.kind, [(p.leaves[i].path, values[i]) for i in leaves])


def _container(kind: str, items: list[tuple[list[Any], Any]]) -> Any:
    """A tuple, list or dict from (path, value) items; a path of two keys nests a tuple."""
    top: dict[Any, Any] = {}
    for path, value in items:
        if len(path) == 1:
            top[path[0]] = value
        else:
            top.setdefault(path[0], {})[path[1]] = value
    def build(k: Any, v: Any) -> Any:
        return tuple(v[j] for j in sorted(v)) if isinstance(v, dict) else v
    if kind == "dict":
        return {k: build(k, v) for k, v in top.items()}
    seq = [build(k, top[k]) for k in sorted(top)]
    return tuple(seq) if kind == "tuple" else seq
