"""libdevice under Triton's interpreter (``TRITON_INTERPRET=1``), which runs a kernel as Python on
NumPy arrays but has no libdevice: each function the emitters call, computed by NumPy's function
of the same meaning on the interpreter's tensors. The executable puts this in place of the
module's ``libdevice`` only while interpreting, so the interpreter checks a kernel's structure
(indices, masks, phases, reductions, dtypes) against NumPy; libdevice's own accuracy is measured
on a GPU, never here."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

#: libdevice function -> NumPy function of the same operands
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1, "exp2": np.exp2,
    "sinh": np.sinh, "cosh": np.cosh, "cbrt": np.cbrt, "atan": np.arctan, "asin": np.arcsin,
    "acos": np.arccos, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "atan2": np.arctan2, "hypot": np.hypot, "pow": np.power, "copysign": np.copysign,
    "trunc": np.trunc, "rint": np.rint, "ldexp": np.ldexp,
    "popc": lambda x: np.bitwise_count(x).astype(np.int32),
}


def numpy_libdevice() -> SimpleNamespace:
    """An object with libdevice's functions (``libdevice.exp(x)``...) for the interpreter."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def lift(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            data = [a.handle.data if isinstance(a, tl.tensor) else np.asarray(a) for a in args]
            blocks = [a.type.shape for a in args if isinstance(a, tl.tensor) and a.type.is_block()]
            with np.errstate(all="ignore"):
                out = np.asarray(fn(*data))
            scalar = tl.int32 if name == "popc" else args[0].dtype
            if not blocks:
                return tl.tensor(TensorHandle(out.reshape(1), scalar), scalar)
            shape = list(np.broadcast_shapes(*[tuple(s) for s in blocks]))
            out = np.broadcast_to(out, shape).copy()
            return tl.tensor(TensorHandle(out, scalar), tl.block_type(scalar, shape))
        call.__name__ = name
        return call
    return SimpleNamespace(**{name: lift(name, fn) for name, fn in FUNCTIONS.items()})
