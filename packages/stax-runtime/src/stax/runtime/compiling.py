"""``compile``, the entry point: a ``CompiledFunction`` of a NumPy function (``api.py``), or a
gradient as it is (``autodiff.Differentiated`` compiles its own program: ``compile(grad(f))``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .api import CompiledFunction
from .autodiff import Differentiated


def compile(fn: Callable[..., Any] | None = None, *, device: str | None = None,
            dynamic: bool | None = None, strict_native: bool = False, backend: str = "stax",
            options: dict[str, Any] | None = None) -> Any:
    """Compile a NumPy function; usable as ``@compile`` or ``@compile(strict_native=True)``."""
    def wrap(f: Callable[..., Any]) -> Any:
        if isinstance(f, Differentiated):
            return f  # forward and backward compiled together already
        return CompiledFunction(f, device=device, dynamic=dynamic, strict_native=strict_native,
                                backend=backend, options=options)
    return wrap if fn is None else wrap(fn)
