"""The NumPy surface Stax captures, measured.

Every case is a small program run twice, compiled (``strict_native=True``) and eagerly, and the two
results must agree. Each row says how Stax ran it: ``native`` (fused LLVM kernels only), ``extern``
(captured; some calls run as NumPy steps between kernels), ``fallback`` (not captured: the whole
function runs eagerly, with the reason). ``python -m stax.runtime.coverage`` prints the table; the
repository keeps it in ``docs/coverage.md`` and a test keeps that file current.

The CUDA column runs the same cases through the CUDA path (``device="cuda"``) on torch CPU
tensors under Triton's interpreter (``TRITON_INTERPRET=1``; no GPU needed), against NumPy:
``native`` (Triton kernels only), ``NumPy step`` (some calls run as NumPy's, CuPy's on a GPU,
between the kernels), ``fallback`` (the function runs eagerly, through CuPy on a GPU). It needs
torch and Triton; without them the table has no CUDA column.

The gradient column differentiates each case with ``stax.runtime.grad`` and checks it against
central finite differences (``coverage_gradients.py``).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from stax.ir import approximate_ops
from stax.ir.to_opgraph import targets_emitting

from .api import CompiledFunction
from .coverage_gradients import STATUSES as GRADIENT_STATUSES
from .coverage_gradients import measure_gradient, reason_of


def _approximate_ufuncs() -> frozenset[str]:
    targets = targets_emitting(approximate_ops())
    return frozenset(name for name, ufunc in vars(np).items()
                     if isinstance(ufunc, np.ufunc) and f"numpy.{ufunc.__name__}" in targets)


#: NumPy's ufuncs, by every name NumPy gives them, that Stax computes within NumPy's ulp threshold
#: rather than bit for bit: those whose capture rule may emit an op declared approximate
#: (``stax.ir.approximate_ops``; neither side is correctly rounded, so the last bits may differ)
APPROXIMATE = _approximate_ufuncs()


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    exact: bool = True


@dataclass(frozen=True)
class Row:
    group: str
    name: str
    status: str         # native | extern | fallback | n/a
    agrees: bool        # compiled result == eager result (always checked)
    detail: str = ""
    cuda: str = ""      # native | NumPy step | fallback | n/a, on the CUDA path ("" not measured)
    cuda_agrees: bool = True
    cuda_detail: str = ""
    gradient: str = ""  # yes | NO | no rule | refused | n/a (``coverage_gradients``)
    gradient_detail: str = ""


def _samples(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "f": rng.uniform(0.1, 0.9, (3, 4)), "g": rng.uniform(0.1, 0.9, (3, 4)),
        "i": rng.integers(1, 6, (3, 4)), "j": rng.integers(1, 6, (3, 4)),
        "b": rng.random((3, 4)) > 0.5, "c": rng.random((3, 4)) > 0.5,
        "m": rng.standard_normal((4, 3)), "v": rng.standard_normal(4),
        "n": rng.standard_normal((3, 4)).astype(np.float32),
    }


def _ufunc_cases(s: dict[str, Any]) -> list[Case]:
    cases = []
    for name in sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)):
        uf = getattr(np, name)
        if name in ("matmul", "matvec", "vecmat", "vecdot"):
            continue  # linear algebra, below
        tried = [("f", "g"), ("i", "j"), ("b", "c"), ("f", "i")]
        for keys in tried:
            args = tuple(s[k] for k in keys[: uf.nin])
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    uf(*args)
            except TypeError:
                continue
            cases.append(Case("ufunc", f"np.{name}", lambda *a, uf=uf: uf(*a), args,
                              exact=name not in APPROXIMATE))
            break
        else:
            cases.append(Case("ufunc", f"np.{name}", None, ()))  # type: ignore[arg-type]
    f = s["f"]
    cases += [
        Case("ufunc method", "np.add.reduce", lambda x: np.add.reduce(x, axis=1), (f,), False),
        Case("ufunc method", "np.multiply.accumulate",
             lambda x: np.multiply.accumulate(x, axis=0), (f,)),
        Case("ufunc method", "np.maximum.reduce", lambda x: np.maximum.reduce(x, axis=0), (f,)),
        Case("ufunc kwargs", "np.add(dtype=)", lambda x, y: np.add(x, y, dtype=np.float32),
             (f, s["g"])),
        Case("ufunc kwargs", "np.add(out=)", lambda x, y: np.add(x, y, out=x), (f.copy(), s["g"])),
        Case("ufunc kwargs", "np.add(out=, where=)",
             lambda x, y, m: np.add(x, y, out=x, where=m), (f.copy(), s["g"], s["b"])),
    ]
    return cases


def _operator_cases(s: dict[str, Any]) -> list[Case]:
    f, g, i, j = s["f"], s["g"], s["i"], s["j"]
    ops: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("x + y", lambda x, y: x + y, (f, g)), ("x - y", lambda x, y: x - y, (f, g)),
        ("x * y", lambda x, y: x * y, (f, g)), ("x / y", lambda x, y: x / y, (f, g)),
        ("x // y", lambda x, y: x // y, (i, j)), ("x % y", lambda x, y: x % y, (i, j)),
        ("x ** y", lambda x, y: x ** y, (f, g)), ("x @ y", lambda x, y: x @ y.T, (f, g)),
        ("x & y", lambda x, y: x & y, (i, j)), ("x | y", lambda x, y: x | y, (i, j)),
        ("x ^ y", lambda x, y: x ^ y, (i, j)), ("x << y", lambda x, y: x << y, (i, j)),
        ("x >> y", lambda x, y: x >> y, (i, j)), ("-x", lambda x: -x, (f,)),
        ("+x", lambda x: +x, (f,)), ("abs(x)", lambda x: abs(x), (f,)),
        ("~x", lambda x: ~x, (i,)), ("x < y", lambda x, y: x < y, (f, g)),
        ("x <= y", lambda x, y: x <= y, (f, g)), ("x == y", lambda x, y: x == y, (i, j)),
        ("x != y", lambda x, y: x != y, (i, j)), ("x > 0.5", lambda x: x > 0.5, (f,)),
        ("x >= y", lambda x, y: x >= y, (f, g)), ("2 * x + 1", lambda x: 2 * x + 1, (f,)),
    ]
    cases = [Case("operator", name, fn, args) for name, fn, args in ops]

    def inplace(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x += y
        return x

    def local_inplace(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        z = x * 2
        z *= y
        return z

    cases += [Case("in-place", "x += y (an argument)", inplace, (f.copy(), g)),
              Case("in-place", "z *= y (a local)", local_inplace, (f, g))]
    return cases


_REDUCTIONS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "any", "all", "var", "std",
               "cumsum", "cumprod")


def _reduction_cases(s: dict[str, Any]) -> list[Case]:
    cases = []
    for name in _REDUCTIONS:
        x = s["b"] if name in ("any", "all") else s["f"]
        exact = name in ("max", "min", "argmax", "argmin", "any", "all")
        cases.append(Case("reduction", f"x.{name}(axis=-1)",
                          lambda x, name=name: getattr(x, name)(axis=-1), (x,), exact))
        if name in ("cumsum", "cumprod"):
            continue
        axis = 0 if name in ("argmax", "argmin") else (0, 1)
        cases.append(Case("reduction", f"np.{name}(x, axis={axis}, keepdims=True)",
                          lambda x, name=name, axis=axis: getattr(np, name)(x, axis=axis,
                                                                           keepdims=True),
                          (x,), exact))
        cases.append(Case("reduction", f"x.{name}()", lambda x, name=name: getattr(x, name)(),
                          (x,), exact))
    return cases


def _shape_cases(s: dict[str, Any]) -> list[Case]:
    f, g, b = s["f"], s["g"], s["b"]
    shape_ops: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("x.reshape(4, 3)", lambda x: x.reshape(4, 3), (f,)),
        ("np.reshape(x, -1)", lambda x: np.reshape(x, -1), (f,)),
        ("x.transpose()", lambda x: x.transpose(), (f,)), ("x.T", lambda x: x.T, (f,)),
        ("np.swapaxes", lambda x: np.swapaxes(x, 0, 1), (f,)),
        ("np.moveaxis", lambda x: np.moveaxis(x, 0, -1), (f,)),
        ("np.expand_dims", lambda x: np.expand_dims(x, 1), (f,)),
        ("np.squeeze", lambda x: np.squeeze(x[:1]), (f,)),
        ("np.broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)), (f,)),
        ("np.concatenate", lambda x, y: np.concatenate([x, y], axis=1), (f, g)),
        ("np.stack", lambda x, y: np.stack([x, y]), (f, g)),
        ("np.split", lambda x: np.split(x, 2, axis=1), (f,)),
        ("np.where(c, x, y)", lambda c, x, y: np.where(c, x, y), (b, f, g)),
        ("np.clip", lambda x: np.clip(x, 0.2, 0.8), (f,)),
        ("np.pad", lambda x: np.pad(x, 1), (f,)),
        ("np.flip", lambda x: np.flip(x, 0), (f,)), ("np.roll", lambda x: np.roll(x, 1), (f,)),
        ("np.tril", lambda x: np.tril(x), (f,)), ("np.triu", lambda x: np.triu(x), (f,)),
        ("x.astype(np.float32)", lambda x: x.astype(np.float32), (f,)),
        ("x.copy()", lambda x: x.copy(), (f,)),
    ]
    return [Case("shape", name, fn, args) for name, fn, args in shape_ops]


def _index_cases(s: dict[str, Any]) -> list[Case]:
    f, b = s["f"], s["b"]

    def assign_slice(x: np.ndarray) -> np.ndarray:
        y = x * 1
        y[1:3] = 0
        return y

    def assign_mask(x: np.ndarray, m: np.ndarray) -> np.ndarray:
        y = x * 1
        y[m] = 0
        return y

    def iterate_values(x: np.ndarray) -> np.ndarray:
        total = x * 0
        for v in x[0].tolist():  # iteration over a data sequence: a gate (table 3.2)
            total = total + v
        return total * x[1, 1].item()

    index_ops: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
        ("x[1]", lambda x: x[1], (f,)), ("x[:, 1:3]", lambda x: x[:, 1:3], (f,)),
        ("x[::-1, ::2]", lambda x: x[::-1, ::2], (f,)), ("x[..., None]", lambda x: x[..., None], (f,)),
        ("x[[0, 2]]", lambda x: x[[0, 2]], (f,)),
        ("x[idx] (array index)", lambda x, i: x[i], (f, np.array([2, 0]))),
        ("x[mask]", lambda x, m: x[m], (f, b)),
        ("y[1:3] = 0 (a local)", assign_slice, (f,)),
        ("y[mask] = 0 (a local)", assign_mask, (f, b)),
        ("for v in x[0].tolist(); x[1, 1].item()", iterate_values, (f,)),
    ]
    return [Case("indexing", name, fn, args) for name, fn, args in index_ops]


def _linalg_creation_cases(s: dict[str, Any]) -> list[Case]:
    f, m, v = s["f"], s["m"], s["v"]
    ops: list[tuple[str, str, Callable[..., Any], tuple[Any, ...], bool]] = [
        ("linear algebra", "np.matmul", lambda x, y: np.matmul(x, y), (f, m), False),
        ("linear algebra", "np.dot", lambda x, y: np.dot(x, y), (f, v), False),
        ("linear algebra", "np.einsum", lambda x, y: np.einsum("ij,jk->ik", x, y), (f, m), False),
        ("creation", "np.zeros_like", lambda x: np.zeros_like(x) + x, (f,), True),
        ("creation", "np.ones(shape)", lambda x: x + np.ones(x.shape), (f,), True),
        ("creation", "np.full(shape, v)", lambda x: x * np.full(x.shape, 2.0), (f,), True),
        ("creation", "np.arange(n)", lambda x: x + np.arange(x.shape[1]), (f,), True),
        ("creation", "np.eye(n)", lambda x: x @ np.eye(x.shape[1]), (f,), False),
        ("creation", "np.linspace", lambda x: x * np.linspace(0, 1, x.shape[1]), (f,), True),
        ("random", "rng.standard_normal", lambda x, rng: x + rng.standard_normal(x.shape),
         (f, np.random.default_rng(1)), True),
    ]
    return [Case(group, name, fn, args, exact) for group, name, fn, args, exact in ops]


def cases(seed: int = 0) -> list[Case]:
    s = _samples(seed)
    return [*_operator_cases(s), *_ufunc_cases(s), *_reduction_cases(s), *_shape_cases(s),
            *_index_cases(s), *_linalg_creation_cases(s)]


def _copy_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(a.copy())
        elif isinstance(a, np.random.Generator):  # the same stream, a fresh object
            out.append(np.random.default_rng(a.bit_generator.state["state"]["state"] % 2**32))
        else:
            out.append(a)
    return tuple(out)


def layout_copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with its strides (a slice's, a transpose's, a broadcast's zeros) and its
    writeability: what a variant's layout is must reach the function, not a C copy of it."""
    if a.flags.c_contiguous or any(s < 0 for s in a.strides) or not a.size:
        out = a.copy()
    elif a.flags.f_contiguous:
        out = a.copy(order="F")
    else:
        span = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize
        base = np.empty(span // a.itemsize + 1, a.dtype)
        out = np.lib.stride_tricks.as_strided(base, a.shape, a.strides, writeable=True)
        out[...] = a
    if not a.flags.writeable:
        out.setflags(write=False)
    return out


def _variant_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``_copy_args`` keeping each array's layout (``layout_copy``)."""
    return tuple(layout_copy(a) if isinstance(a, np.ndarray) else _copy_args((a,))[0]
                 for a in args)


def _agree(got: Any, want: Any, exact: bool) -> bool:
    if isinstance(want, (tuple, list)):
        return type(got) is type(want) and len(got) == len(want) and all(
            _agree(g, w, exact) for g, w in zip(got, want))
    if type(got) is not type(want):
        return False
    got_a, want_a = np.asarray(got), np.asarray(want)
    if got_a.shape != want_a.shape or got_a.dtype != want_a.dtype:
        return False
    if exact or got_a.dtype.kind not in "fc":
        return bool(np.array_equal(got_a, want_a, equal_nan=got_a.dtype.kind in "fc"))
    eps = float(np.finfo(got_a.dtype).eps)
    return bool(np.allclose(got_a, want_a, rtol=8 * eps, atol=8 * eps * 1e-3, equal_nan=True))


def measure(case: Case, cuda: bool = False, gradient: bool = True) -> Row:
    """The case's row; ``cuda`` measures its CUDA column too (torch and Triton's interpreter),
    ``gradient`` its gradient column."""
    if case.fn is None:
        na = "n/a" if cuda else ""
        return Row(case.group, case.name, "n/a", True, "no numeric (float/int/bool) loop", na,
                   gradient="n/a" if gradient else "")
    quiet = logging.getLogger("stax")
    level, quiet.level = quiet.level, logging.ERROR
    try:
        row = _measure(case)
        if cuda:
            status, agrees, detail = _measure_cuda(case)
            row = replace(row, cuda=status, cuda_agrees=agrees, cuda_detail=detail)
        if gradient:
            status, detail = measure_gradient(case.fn, _copy_args(case.args))
            row = replace(row, gradient=status, gradient_detail=detail)
        return row
    finally:
        quiet.level = level


def cuda_available() -> bool:
    """Whether the CUDA column can be measured here: torch and Triton installed, and Triton's
    interpreter on (``TRITON_INTERPRET=1`` before Triton is imported; ``main`` sets it)."""
    try:
        import torch  # noqa: F401
        import triton
    except ImportError:
        return False
    return bool(triton.knobs.runtime.interpret)


def _measure_cuda(case: Case) -> tuple[str, bool, str]:
    """(status, agrees, detail) of the case on the CUDA path, on torch CPU tensors."""
    import torch

    def tensors() -> tuple[Any, ...]:
        return tuple(torch.from_numpy(a) if isinstance(a, np.ndarray) else a
                     for a in _copy_args(case.args))

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = case.fn(*_copy_args(case.args))
        strict = CompiledFunction(case.fn, device="cuda", strict_native=True)
        try:
            got = strict(*tensors())
        except Exception as exc:
            reason = reason_of(exc)
            got = CompiledFunction(case.fn, device="cuda")(*tensors())
            return "fallback", _agree(_from_tensors(got, want, torch), want, True), reason
    version = strict.versions()[0]
    externs = sorted({e.target for e in version.artifact.externs}) if version.artifact else []
    status = "NumPy step" if externs else "native"
    return status, _agree(_from_tensors(got, want, torch), want, case.exact), ", ".join(externs)


def _from_tensors(got: Any, want: Any, torch: Any) -> Any:
    """A CUDA result as NumPy's kind, for comparing with eager NumPy: each tensor as its NumPy
    array (a 0-d tensor as the scalar NumPy returns); an array result that did not come back as
    a tensor stays as it is, so that it disagrees."""
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        return type(got)(_from_tensors(g, w, torch) for g, w in zip(got, want))
    if isinstance(got, torch.Tensor):
        host = got.numpy()
        return host[()] if isinstance(want, np.generic) else host
    return None if isinstance(want, (np.ndarray, np.generic)) else got


def _measure(case: Case) -> Row:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = case.fn(*_copy_args(case.args))
        strict = CompiledFunction(case.fn, strict_native=True)
        try:
            got = strict(*_copy_args(case.args))
        except Exception as exc:  # refused: check the eager fallback gives the same answer
            reason = reason_of(exc)
            got = CompiledFunction(case.fn)(*_copy_args(case.args))
            return Row(case.group, case.name, "fallback", _agree(got, want, True), reason)
    version = strict.versions()[0]
    externs = sorted({e.target for e in version.artifact.externs}) if version.artifact else []
    status = "extern" if externs else "native"
    detail = ", ".join(externs)
    return Row(case.group, case.name, status, _agree(got, want, case.exact), detail)


# -- the same cases on other layouts, dtypes and special values -----------------------------------

def _specials(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    flat = b.reshape(-1)
    flat[: 4] = [np.nan, np.inf, -0.0, -np.inf][: flat.size]
    return b


VARIANTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "float32": lambda a: a.astype(np.float32) if a.dtype == np.float64 else a,
    "fortran": lambda a: np.asfortranarray(a),
    "sliced": lambda a: np.repeat(np.repeat(a, 2, 0), 2, -1)[::2, ::2] if a.ndim == 2 else a,
    "transposed": lambda a: np.ascontiguousarray(a.T).T if a.ndim == 2 else a,
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape) if a.ndim == 2 else a,
    "nan-inf-zero": lambda a: _specials(a) if a.dtype.kind == "f" else a,
    "one-row": lambda a: a[:1].copy() if a.ndim == 2 else a,
    "7x5": lambda a: np.resize(a, (7, 5)) if a.ndim == 2 else a,
}


def run_variant(case: Case, variant: str) -> tuple[bool, str]:
    """Run ``case`` with its array arguments transformed by ``VARIANTS[variant]``, compiled (not
    strict: whatever falls back must fall back correctly) and eagerly; (agree, what happened)."""
    if case.fn is None:
        return True, "n/a"
    change = VARIANTS[variant]
    args = tuple(change(a) if isinstance(a, np.ndarray) else a for a in _copy_args(case.args))
    quiet = logging.getLogger("stax")
    level, quiet.level = quiet.level, logging.CRITICAL
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                want: Any = case.fn(*_variant_args(args))
            except Exception as exc:
                want = exc
            try:
                got: Any = CompiledFunction(case.fn)(*_variant_args(args))
            except Exception as exc:
                got = exc
    finally:
        quiet.level = level
    if isinstance(want, Exception) or isinstance(got, Exception):
        return type(got) is type(want), f"eager: {want!r}; compiled: {got!r}"
    return _agree(got, want, case.exact and variant != "float32"), "ran"


CUDA_STATUSES = ("native", "NumPy step", "fallback", "n/a")


def table(rows: list[Row]) -> str:
    counts = {s: sum(r.status == s for r in rows) for s in ("native", "extern", "fallback", "n/a")}
    cuda = any(r.cuda for r in rows)
    lines = [
        "# NumPy coverage",
        "",
        "Generated by `python -m stax.runtime.coverage > docs/coverage.md`; a test keeps it current.",
        "Each case runs compiled (`strict_native=True`) and eagerly; *agrees* compares the results",
        "(bit for bit, except reordered floating-point reductions).",
        "",
        "- **native**: fused LLVM kernels only",
        "- **extern**: captured; the listed calls run as NumPy steps between the compiled kernels",
        "- **fallback**: not captured; the function runs eagerly for that key, for the reason given",
        "",
    ]
    if cuda:
        lines += [
            "The **CUDA** column is the same case compiled with `device=\"cuda\"` (`strict_native=True`)",
            "and run on torch CPU tensors in Triton's interpreter (`TRITON_INTERPRET=1`), against",
            "NumPy: **native** (Triton kernels only), **NumPy step** (the calls listed under *CUDA:*,",
            "or else the CPU's, run as NumPy's between the kernels; CuPy's on a GPU), **fallback** (runs",
            "eagerly, through CuPy on a GPU). A result that differs from NumPy's says **NO**.",
            "",
        ]
    gradients = any(r.gradient for r in rows)
    if gradients:
        lines += [
            "The **gradient** column differentiates the case with `stax.runtime.grad` (the loss",
            "`sum(f(*args) * w)`, `w` a fixed random cotangent, with respect to every float64",
            "array argument) and compares each gradient with central finite differences of the",
            "eager function: **yes**, **NO** (a wrong rule), **no rule** (the op named under",
            "*gradient:* has no derivative), **refused** (Stax cannot differentiate it, for the",
            "reason given), **n/a** (no float64 array argument, or not one float result).",
            "",
        ]
    lines += [f"Measured with NumPy {np.__version__}.", "",
              "Totals: " + ", ".join(f"{n} {s}" for s, n in counts.items())]
    if cuda:
        cuda_counts = {s: sum(r.cuda == s for r in rows) for s in CUDA_STATUSES}
        lines.append("CUDA: " + ", ".join(f"{n} {s}" for s, n in cuda_counts.items()))
    if gradients:
        grad_counts = {s: sum(r.gradient == s for r in rows) for s in GRADIENT_STATUSES}
        lines.append("Gradients: " + ", ".join(f"{n} {s}" for s, n in grad_counts.items()))
    columns = ["group", "case", "runs as", "agrees", *(["CUDA"] if cuda else []),
               *(["gradient"] if gradients else []), "detail"]
    lines += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        detail = r.detail
        if cuda and r.cuda_detail and r.cuda_detail != r.detail:
            detail = f"{detail}; CUDA: {r.cuda_detail}" if detail else f"CUDA: {r.cuda_detail}"
        if gradients and r.gradient_detail:
            detail = f"{detail}; gradient: {r.gradient_detail}" if detail else \
                f"gradient: {r.gradient_detail}"
        detail = detail.replace("|", "\\|")
        gpu = f" {r.cuda}{'' if r.cuda_agrees else ' (NO)'} |" if cuda else ""
        slope = f" {r.gradient} |" if gradients else ""
        lines.append(f"| {r.group} | `{r.name}` | {r.status} | {'yes' if r.agrees else 'NO'} "
                     f"|{gpu}{slope} {detail} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is imported: no GPU needed
    cuda = cuda_available()
    if not cuda:
        sys.stderr.write("stax.runtime.coverage: torch or Triton missing, no CUDA column\n")
    rows = [measure(c, cuda) for c in cases()]
    sys.stdout.write(table(rows))
    return 0 if all(r.agrees and r.cuda_agrees for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
