"""The coverage table's gradient column (issue 16): each case differentiated and checked.

A case whose float64 array arguments lead to one float result is differentiated by
``stax.runtime.grad`` as the loss ``sum(f(*args) * w)`` (``w`` a fixed random cotangent, so every
element of the result counts with its own weight) with respect to every float64 array argument,
and each gradient is compared with central finite differences of the eager function, element by
element. The column says:

- ``yes``: every gradient within the finite differences' error (a step of ``STEP``);
- ``NO``: a gradient differs (a wrong rule);
- ``no rule``: Stax refused, naming the op without a derivative (detail: the message);
- ``refused``: Stax cannot differentiate the function for another reason (a data gate, ...);
- ``n/a``: nothing to differentiate (no float64 array argument, a non-float or several results).

At points where the function is not differentiable (a kink of ``abs``, a tie of ``max``) the
finite differences are not a derivative; the samples lie in (0.1, 0.9), away from them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from stax.ir import UnsupportedError

#: the finite differences' step, and the tolerance they meet, for a float64 result and for a
#: narrower one (the loss rounded to float32: a larger step, a looser bound): their truncation
#: error is about step**2 times the third derivative, their rounding about eps / step
STEP, RTOL, ATOL = 1e-6, 1e-5, 1e-6
NARROW_STEP, NARROW_RTOL, NARROW_ATOL = 1e-2, 2e-3, 2e-3

STATUSES = ("yes", "NO", "no rule", "refused", "n/a")


def reason_of(exc: BaseException) -> str:
    """Why Stax refused, for the table: the message's first line without the node and the
    source line (a path of the machine that measured)."""
    return str(exc).split(" at ")[0].split(" (node")[0].split("\n")[0]


def measure_gradient(fn: Any, args: tuple[Any, ...]) -> tuple[str, str]:
    """(status, detail) of the gradient of ``fn`` at ``args`` (see the module's doc)."""
    from .autodiff import grad

    numbers = tuple(k for k, a in enumerate(args)
                    if isinstance(a, np.ndarray) and a.dtype == np.float64)
    if not numbers or any(isinstance(a, np.random.Generator) for a in args):
        return "n/a", ""  # random draws: each evaluation of the differences draws anew
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            out = fn(*_copies(args))
        except Exception:
            return "n/a", ""
        if not isinstance(out, np.ndarray | np.floating) or np.asarray(out).dtype.kind != "f":
            return "n/a", ""
        weights = np.random.default_rng(7).uniform(0.5, 1.5, np.shape(out))

        def loss(*a: Any) -> Any:
            return (fn(*a) * weights).sum()

        try:
            got = grad(loss, argnums=numbers)(*_copies(args))
        except UnsupportedError as exc:
            message = reason_of(exc)
            return ("no rule" if "no derivative" in message or "no rule" in message
                    else "refused"), message
        except Exception as exc:  # a capture that cannot run at all
            return "refused", f"{type(exc).__name__}: {str(exc).splitlines()[0]}"[:160]
        wide = np.asarray(out).dtype == np.float64
        step, rtol, atol = (STEP, RTOL, ATOL) if wide else (NARROW_STEP, NARROW_RTOL, NARROW_ATOL)
        for k, g in zip(numbers, got):
            want = _central_differences(loss, args, k, step)
            if np.shape(g) != want.shape or not np.allclose(g, want, rtol=rtol, atol=atol,
                                                             equal_nan=True):
                worst = np.max(np.abs(np.asarray(g, np.float64) - want)) if \
                    np.shape(g) == want.shape else float("nan")
                return "NO", f"argument {k}: off by {worst:.2g} from finite differences"
    return "yes", ""


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _central_differences(loss: Any, args: tuple[Any, ...], k: int, step: float) -> np.ndarray:
    base = args[k]
    out = np.empty(base.shape)
    for at in np.ndindex(base.shape):
        values = []
        for sign in (1.0, -1.0):
            moved = list(_copies(args))
            moved[k][at] += sign * step
            values.append(float(loss(*moved)))
        out[at] = (values[0] - values[1]) / (2 * step)
    return out
