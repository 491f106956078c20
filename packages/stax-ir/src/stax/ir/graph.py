"""The graph shared by the capture and operator layers (spec §3.1, definition 3.1).

A graph is a list of nodes in a topological order; every node defines one value once (SSA), and
its users are kept as a use-list so passes can ask local questions ("who reads this?") without a
scan. Targets are strings (``"operator.add"``, ``"numpy.maximum"``, ``"sum"``, ``"add"``) so that a
graph serializes without pickling a live Python object.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

from .meta import TensorMeta
from .ops import OPS


class Opcode(str, Enum):
    """The six opcodes of spec table 3.1."""

    PLACEHOLDER = "placeholder"
    GET_ATTR = "get_attr"
    CALL_FUNCTION = "call_function"
    CALL_METHOD = "call_method"
    CALL_MODULE = "call_module"
    OUTPUT = "output"


class Node:
    """One operation; ``args``/``kwargs`` may hold other nodes (its inputs) and constants."""

    __slots__ = ("args", "graph", "kwargs", "meta", "name", "op", "target", "users")

    def __init__(self, graph: Graph, name: str, op: Opcode, target: str,
                 args: tuple[Any, ...], kwargs: dict[str, Any], meta: dict[str, Any]) -> None:
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.meta = meta
        self.users: dict[Node, None] = {}  # an ordered set
        self.set_args(args, kwargs)

    # -- inputs and users ----------------------------------------------------------------------
    @property
    def inputs(self) -> list[Node]:
        """The nodes this node reads, in argument order, without repeats."""
        seen: dict[Node, None] = {}
        _collect_nodes(self.args, seen)
        _collect_nodes(self.kwargs, seen)
        return list(seen)

    def set_args(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> None:
        """Replace the arguments, keeping every use-list consistent."""
        for old in self.inputs:
            old.users.pop(self, None)
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        for new in self.inputs:
            new.users[self] = None

    def replace_all_uses_with(self, other: Node) -> None:
        for user in list(self.users):
            user.set_args(*map_nodes((user.args, user.kwargs),
                                     lambda n: other if n is self else n))

    @property
    def tensor(self) -> TensorMeta | None:
        """The metadata of this node's value, when known (spec §3.3: meta ``val``)."""
        return self.meta.get("tensor")

    @property
    def source(self) -> str | None:
        """``file:line`` of the user's code that created this node, when known."""
        return self.meta.get("source")

    @property
    def effectful(self) -> bool:
        """Whether running this node changes state beyond its own value: a random draw advances
        the generator it draws from (meta ``random``, set at capture and kept by lowering), as
        does any node of an op declared ``random``. Such a node is a side effect: passes never
        remove, merge, fold or move it (``Graph.erase_node`` refuses it), and later layers run
        it on every call, in program order among the effectful nodes, whether or not its value
        is used."""
        if self.meta.get("random"):
            return True
        if self.op is not Opcode.CALL_FUNCTION or self.graph.dialect != "op":
            return False
        op = OPS.get(self.target)
        return op is not None and op.random

    @property
    def events_only(self) -> bool:
        """Whether this node's value is unused and the node is kept only for the floating-point
        events computing it may raise (meta ``events_only``, set by DCE): NumPy computes every
        step a program writes and reports its events (``np.errstate``: warn, raise, call) whether
        or not the value is read, so a compiled program computes such a step too, for its
        events, without returning its value. Lowering carries the mark to the op node computing
        the value; the loop layer gives it a buffer of its own where no other value reads it
        (``LoopProgram.events_only``)."""
        return bool(self.meta.get(EVENTS_ONLY))

    def __repr__(self) -> str:
        return f"%{self.name}"


#: meta key of ``Node.events_only``
EVENTS_ONLY = "events_only"


def mark_events_only(value: Any) -> None:
    """Mark the call nodes among ``value`` (a node, or the tuple a multi-result rule returns)
    as computed only for their floating-point events."""
    for node in value if isinstance(value, tuple) else (value,):
        if isinstance(node, Node) and node.op in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD):
            node.meta[EVENTS_ONLY] = True


def _collect_nodes(value: Any, seen: dict[Node, None]) -> None:
    t = type(value)
    if t is Node:
        seen[value] = None
    elif t is tuple or t is list:
        for v in value:
            _collect_nodes(v, seen)
    elif t is dict:
        for v in value.values():
            _collect_nodes(v, seen)
    elif t is slice:
        _collect_nodes((value.start, value.stop, value.step), seen)


def map_nodes(value: Any, fn: Callable[[Node], Any]) -> Any:
    """Apply ``fn`` to every node inside nested tuples/lists/dicts/slices, rebuilding them."""
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_nodes(v, fn) for v in value)
    if isinstance(value, list):
        return [map_nodes(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_nodes(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(map_nodes(value.start, fn), map_nodes(value.stop, fn),
                     map_nodes(value.step, fn))
    return value


_RESERVED = set(dir(builtins)) | set(keyword.kwlist)
_BASE_NAMES: dict[str, str] = {}


def _base_name(hint: str) -> str:
    """A Python-identifier-like name for a node from its target (``operator.add`` -> ``add``)."""
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint.split(".")[-1]) or "v"
    if base[0].isdigit():
        base = "_" + base
    if base in _RESERVED:
        base += "_0"
    return base


class Graph:
    """A mutable graph with insertion points; ``dialect`` says which layer's targets it holds."""

    def __init__(self, dialect: str = "capture") -> None:
        self.dialect = dialect
        self.nodes: list[Node] = []
        self._names: set[str] = set()
        # per base name, a suffix below which every name is taken (0: the base itself), and the
        # base and suffix of each name given out: naming stays linear in the graph's size
        self._free_from: dict[str, int] = {}
        self._named: dict[str, tuple[str, int]] = {}
        self._insert_at: int | None = None  # None: append at the end

    # -- naming ----------------------------------------------------------------------------------
    def _unique_name(self, hint: str) -> str:
        base = _BASE_NAMES.get(hint)
        if base is None:
            base = _BASE_NAMES[hint] = _base_name(hint)
        i = self._free_from.get(base, 0)
        name = f"{base}_{i}" if i else base
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._free_from[base] = i + 1
        self._names.add(name)
        self._named[name] = (base, i)
        return name

    # -- construction ----------------------------------------------------------------------------
    def create_node(self, op: Opcode, target: str, args: tuple[Any, ...] = (),
                    kwargs: dict[str, Any] | None = None, *, name: str | None = None,
                    meta: dict[str, Any] | None = None) -> Node:
        node = Node(self, self._unique_name(name or target), Opcode(op), target, args,
                    kwargs or {}, dict(meta or {}))
        if self._insert_at is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(self._insert_at, node)
            self._insert_at += 1
        return node

    def placeholder(self, name: str, meta: dict[str, Any] | None = None) -> Node:
        return self.create_node(Opcode.PLACEHOLDER, name, name=name, meta=meta)

    def call_function(self, target: str, args: tuple[Any, ...] = (),
                      kwargs: dict[str, Any] | None = None, **extra: Any) -> Node:
        return self.create_node(Opcode.CALL_FUNCTION, target, args, kwargs, **extra)

    def call_method(self, target: str, args: tuple[Any, ...] = (),
                    kwargs: dict[str, Any] | None = None, **extra: Any) -> Node:
        return self.create_node(Opcode.CALL_METHOD, target, args, kwargs, **extra)

    def output(self, results: tuple[Any, ...]) -> Node:
        return self.create_node(Opcode.OUTPUT, "output", (tuple(results),), name="output")

    @contextmanager
    def inserting_before(self, node: Node) -> Iterator[None]:
        saved = self._insert_at
        self._insert_at = self.nodes.index(node)
        try:
            yield
        finally:
            self._insert_at = saved

    @contextmanager
    def inserting_after(self, node: Node) -> Iterator[None]:
        saved = self._insert_at
        self._insert_at = self.nodes.index(node) + 1
        try:
            yield
        finally:
            self._insert_at = saved

    def erase_node(self, node: Node) -> None:
        if node.users:
            raise ValueError(f"cannot erase %{node.name}: still used by {list(node.users)}")
        if node.effectful:
            raise ValueError(f"cannot erase %{node.name}: it has a side effect (a random draw)")
        node.set_args(())
        self.nodes.remove(node)
        self._names.discard(node.name)
        base, i = self._named.pop(node.name, (None, 0))
        if base is not None and i < self._free_from.get(base, 0):
            self._free_from[base] = i  # the name is free again, as the first of its base

    # -- queries -----------------------------------------------------------------------------------
    @property
    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op is Opcode.PLACEHOLDER]

    @property
    def output_node(self) -> Node:
        last = self.nodes[-1] if self.nodes else None
        if last is None or last.op is not Opcode.OUTPUT:
            raise ValueError("graph has no output node")
        return last

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        from .printer import format_graph

        return format_graph(self)
