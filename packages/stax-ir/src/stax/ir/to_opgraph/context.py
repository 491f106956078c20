"""What a capture rule writes into: the op graph being built, and the capture node being lowered."""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..graph import Graph, Node, Opcode
from ..meta import TensorMeta, contiguous_strides


def dense_meta(shape: tuple[int, ...], dtype: str) -> TensorMeta:
    """The metadata of a fresh row-major array: what an op's intermediate value is."""
    return TensorMeta(tuple(shape), dtype, contiguous_strides(tuple(shape)))


class RuleContractError(RuntimeError):
    """A capture rule emitted an op it does not declare (``rule(..., emits=...)``): a bug in the
    rule, not in the user's program."""


class LoweringContext:
    def __init__(self) -> None:
        self.graph = Graph("op")
        self.current: Node | None = None
        self.emits: frozenset[str] = frozenset()  # what the rule lowering ``current`` may emit

    def lowering(self, node: Node, emits: frozenset[str]) -> None:
        self.current, self.emits = node, emits

    def emit(self, op: str, operands: tuple[Any, ...], attrs: dict[str, Any] | None = None,
             meta: TensorMeta | None = None, name: str | None = None) -> Node:
        assert self.current is not None
        if op not in self.emits:
            raise RuleContractError(f"the capture rule of {describe(self.current)} emitted op "
                                    f"{op!r}, not among the ops it declares ({sorted(self.emits)})")
        info: dict[str, Any] = {"tensor": meta or self.current.tensor}
        if self.current.source:
            info["source"] = self.current.source
        if "sequence" in self.current.meta and meta is None:  # several results, as an extern
            info = {"sequence": self.current.meta["sequence"], "source": self.current.source}
        if self.current.effectful:  # a draw stays one, through every later layer
            info["random"] = True
        return self.graph.call_function(op, tuple(operands), attrs or {}, name=name or op, meta=info)

    def view(self, x: Node, offset: int, strides: tuple[int, ...], shape: tuple[int, ...]
             ) -> Node:
        """A ``view`` op: ``x``'s memory read at ``offset`` with ``strides`` (0: a broadcast)."""
        return self.emit("view", (x,), {"offset": offset, "strides": strides, "shape": shape},
                         meta=TensorMeta(shape, x.tensor.dtype, strides))

    def unsupported(self, what: str, hint: str | None = None) -> UnsupportedError:
        assert self.current is not None
        return UnsupportedError(what, node=self.current.name, source=self.current.source, hint=hint)


def describe(node: Node) -> str:
    return f"method .{node.target}()" if node.op is Opcode.CALL_METHOD else f"{node.target}()"
