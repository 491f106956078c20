"""Replaying data gates on new inputs (spec §3.5): the gamma_g component of the key.

On device arrays the replay subgraph runs on the device, through CuPy (NumPy's functions reach
it by ``__array_function__``), and only the gate values are read back to the host; a replay
CuPy cannot run is replayed on host copies of the inputs (``devices.py``)."""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Any

import numpy as np

from stax.ir import GATE_CONVERSIONS, GraphProgram, StaxError, run_graph
from stax.ir.serialize import graph_to_json

from . import devices

GATE_CONDITION = "control-flow gate outcomes match the traced branch"


class GateReplay:
    """Runs a capture's replay subgraph (algorithm 3.1) on the flat argument leaves of a call."""

    def __init__(self, capture: GraphProgram) -> None:
        assert capture.replay is not None
        self.graph = capture.replay
        self.kinds = [g.kind for g in capture.gates]
        self.expected = [g.value for g in capture.gates]
        self.slots = [(i, name) for i, name in enumerate(capture.inputs) if name is not None]
        self._fingerprint: str | None = None
        self.seconds = 0.0  # the last replay's time

    @property
    def fingerprint(self) -> str:
        """What the replay computes, as text ("" where it cannot be written): versions of one
        function whose gates differ only in their traced outcomes (a count of NaNs, say) replay
        the same graph, and one call replays it once for all of them (``outcomes``' memo)."""
        if self._fingerprint is None:
            try:
                nodes = [{k: n[k] for k in ("name", "op", "target", "args", "kwargs")}
                         for n in graph_to_json(self.graph)["nodes"]]
                text = json.dumps([nodes, self.slots, self.kinds], sort_keys=True)
                self._fingerprint = hashlib.sha256(text.encode()).hexdigest()
            except (StaxError, TypeError, ValueError):  # a constant without a JSON form
                self._fingerprint = ""
        return self._fingerprint

    def outcomes(self, leaves: list[Any], memo: dict[str, Any] | None = None) -> list[Any] | None:
        """gamma_g for these inputs, or None when replaying fails on them (a different path).
        ``memo``: outcomes this call's other versions replayed, by ``fingerprint``."""
        key = self.fingerprint if memo is not None else ""
        if key and key in memo:  # type: ignore[operator]
            return memo[key]  # type: ignore[index]
        if any(i >= len(leaves) for i, _ in self.slots):  # another tree of arguments
            return None  # (``f(x, [])`` against a version of ``f(x, flag)``: a probe's crash)
        env = {name: leaves[i] for i, name in self.slots}
        start = time.perf_counter()
        try:
            values = self._replay(env)
            got = [GATE_CONVERSIONS[k](v) for k, v in zip(self.kinds, values)]
        except Exception:
            got = None
        self.seconds = time.perf_counter() - start  # (``replay_costs``)
        if key:
            memo[key] = got  # type: ignore[index]
        return got

    def _replay(self, env: dict[str, Any]) -> list[Any]:
        found = devices.device_leaf(list(env.values()))
        if found is None:
            with np.errstate(all="ignore"):
                return list(run_graph(self.graph, env))
        library, like = found
        on_device = {n: library.as_cupy(v) if devices.library_of(v) is not None else v
                     for n, v in env.items()}
        try:
            with np.errstate(all="ignore"), library.step_stream(like):
                values = list(run_graph(self.graph, on_device))
            return devices.host_values(values, like, library)
        except Exception:  # an op CuPy does not take: replay on the host
            host = {n: devices.host_copy(v, library) if devices.library_of(v) is not None else v
                    for n, v in env.items()}
            with np.errstate(all="ignore"):
                return list(run_graph(self.graph, host))

    def matches(self, leaves: list[Any], memo: dict[str, Any] | None = None) -> bool:
        return self.expects(self.outcomes(leaves, memo))

    def expects(self, got: list[Any] | None) -> bool:
        """Whether outcomes ``got`` (None: none) are the traced ones."""
        return got is not None and all(same_outcome(a, b) for a, b in zip(got, self.expected))


def same_outcome(a: Any, b: Any) -> bool:
    """Gate outcomes compare by value, element by element in a list (``x.tolist()``): a NaN
    matches a NaN, -0.0 differs from 0.0 (list equality would call [nan] and [nan] different,
    so a gate read through ``tolist()`` of data with a NaN missed on every call)."""
    if isinstance(a, float) and isinstance(b, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    if isinstance(a, list | tuple) and type(a) is type(b):
        return len(a) == len(b) and all(same_outcome(x, y) for x, y in zip(a, b))
    if isinstance(a, complex) and isinstance(b, complex):
        return same_outcome(a.real, b.real) and same_outcome(a.imag, b.imag)
    return type(a) is type(b) and a == b
