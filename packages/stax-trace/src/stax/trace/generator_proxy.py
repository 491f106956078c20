"""The stand-in for a ``np.random.Generator`` argument during capture."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stax.ir import Opcode, UnsupportedError

from .isolation import OUT_AT, refused
from .source import user_source

if TYPE_CHECKING:
    from .tracer import Tracer


class GeneratorProxy:
    """Stands in for a ``np.random.Generator`` argument during capture: each draw becomes a
    node marked random, which the compiled program makes on the caller's generator, in the same
    order (capture draws from a copy, ``isolation.private_copy``)."""

    __slots__ = ("generator", "node", "tracer")

    def __init__(self, node: Any, generator: np.random.Generator, tracer: Tracer) -> None:
        self.node = node
        self.generator = generator
        self.tracer = tracer

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.generator, name)
        if name.startswith("_") or not callable(attr) or name in ("spawn", "bit_generator"):
            raise refused(UnsupportedError(f"Generator.{name} of a traced generator",
                                           source=user_source()))

        def draw(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("out") is not None or len(args) > OUT_AT.get(name, 99):
                raise refused(UnsupportedError(f"Generator.{name}(out=)", source=user_source()))
            return self.tracer.record(Opcode.CALL_METHOD, name, (self, *args), kwargs,
                                      lambda g, *a, **k: getattr(g, name)(*a, **k), random=True)
        return draw

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return np.random.Generator

    def __repr__(self) -> str:
        return f"GeneratorProxy(%{self.node.name})"
