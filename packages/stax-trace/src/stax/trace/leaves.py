"""Readable names for the leaves of a call's arguments (placeholders and dumps name them)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from stax.ir import tree_flatten


def leaf_names(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """A readable placeholder name for every leaf of ``(args, kwargs)``, in flatten order."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for i, arg in enumerate(args):
        base = params[i] if i < len(params) else f"arg{i}"
        count = len(tree_flatten(arg)[0])
        names += [base] if count == 1 else [f"{base}_{j}" for j in range(count)]
    for key, arg in kwargs.items():
        count = len(tree_flatten(arg)[0])
        names += [key] if count == 1 else [f"{key}_{j}" for j in range(count)]
    return names
