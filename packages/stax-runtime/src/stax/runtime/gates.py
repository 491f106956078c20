"""Replaying data gates on new inputs (spec §3.5): the gamma_g component of the key."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stax.ir import GATE_CONVERSIONS, GraphProgram, run_graph

GATE_CONDITION = "control-flow gate outcomes match the traced branch"


class GateReplay:
    """Runs a capture's replay subgraph (algorithm 3.1) on the flat argument leaves of a call."""

    def __init__(self, capture: GraphProgram) -> None:
        assert capture.replay is not None
        self.graph = capture.replay
        self.kinds = [g.kind for g in capture.gates]
        self.expected = [g.value for g in capture.gates]
        self.slots = [(i, name) for i, name in enumerate(capture.inputs) if name is not None]

    def outcomes(self, leaves: list[Any]) -> list[Any] | None:
        """gamma_g for these inputs, or None when replaying fails on them (a different path)."""
        env = {name: leaves[i] for i, name in self.slots}
        try:
            with np.errstate(all="ignore"):
                values = run_graph(self.graph, env)
            return [GATE_CONVERSIONS[k](v) for k, v in zip(self.kinds, values)]
        except Exception:
            return None

    def matches(self, leaves: list[Any]) -> bool:
        got = self.outcomes(leaves)
        return got is not None and all(_same(a, b) for a, b in zip(got, self.expected))


def _same(a: Any, b: Any) -> bool:
    """Gate outcomes compare by value, element by element in a list (``x.tolist()``): a NaN
    matches a NaN, -0.0 differs from 0.0 (list equality would call [nan] and [nan] different,
    so a gate read through ``tolist()`` of data with a NaN missed on every call)."""
    if isinstance(a, float) and isinstance(b, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    if isinstance(a, list | tuple) and type(a) is type(b):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, complex) and isinstance(b, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    return type(a) is type(b) and a == b
