"""The front-end passes of spec §4.1–4.7 and the pipeline that runs them to a fixed point."""

from __future__ import annotations

import os

from ..graph import Graph
from .base import MAX_ROUNDS, PassLog, PassManager, measure
from .basis import decompose_to_basis
from .constfold import ConstFold
from .cse import CSE
from .dce import DCE
from .decompose import DecomposePass
from .fusion_hint import PointwiseFusionHint, regions
from .normalize import NormalizeOperators

#: Pass names usable in a pipeline string, in the order spec §4.1 gives and argues for.
PASSES = {
    "normalize": NormalizeOperators, "constfold": ConstFold, "decompose": DecomposePass,
    "cse": CSE, "dce": DCE, "pointwise_hint": PointwiseFusionHint,
}
DEFAULT_PIPELINE = "normalize,constfold,decompose,cse,dce,pointwise_hint"


def parse_pipeline(spec: str) -> list:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        raise ValueError(f"unknown pass {unknown[0]!r}; passes: {', '.join(PASSES)}")
    return [PASSES[n]() for n in names]


def run_pipeline(graph: Graph, spec: str = DEFAULT_PIPELINE, verify: bool | None = None
                 ) -> PassLog:
    """Run the passes named in ``spec`` on ``graph`` in rounds until nothing changes. With
    ``verify`` (default: the environment's ``STAX_VERIFY_PASSES=1``, which the test sessions set)
    the graph verifier runs after every pass, so a pass that breaks an invariant is named."""
    if verify is None:
        verify = os.environ.get("STAX_VERIFY_PASSES") == "1"
    return PassManager(parse_pipeline(spec), verify=verify).run(graph)


__all__ = [
    "CSE",
    "DCE",
    "DEFAULT_PIPELINE",
    "MAX_ROUNDS",
    "PASSES",
    "ConstFold",
    "DecomposePass",
    "NormalizeOperators",
    "PassLog",
    "PassManager",
    "PointwiseFusionHint",
    "decompose_to_basis",
    "measure",
    "parse_pipeline",
    "regions",
    "run_pipeline",
]
