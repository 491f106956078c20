"""NumPy steps of a CUDA plan: the same call through CuPy on the GPU.

A step's target (``numpy.sort``, ``numpy.linalg.solve``, ``numpy.add.reduce``, a method such as
``sum``) is first checked against the allow-list, as on the CPU (a document names data, never
code), then resolved to the function of the same name in the inputs' NumPy module
(``arrays.ArrayLibrary.numpy_module``): CuPy on a GPU, NumPy for torch CPU tensors under
Triton's interpreter. Its operands are the step's buffers viewed as that module's arrays without
a copy (torch tensors through DLPack), so ``numpy.matmul`` runs as ``cupy.matmul`` (cuBLAS) on
the GPU, on the stream the kernels use. The result is checked against what capture saw
(``ExternResultMismatch`` for another dtype or shape, as the CPU's executable does) and kept
without a copy when it is laid out as planned and owns its memory, else copied into the
planned layout.

Where the module lacks the function (``numpy.lib.scimath``, Stax's own ``stax.nn`` functions,
a CuPy without it, no CuPy at all), the call would write into an operand (``out=``), or CuPy
refuses the arguments (``NotImplementedError``, ``TypeError``) or returns another dtype or shape
than NumPy's, the step goes through the host from then on: its operands copied to NumPy arrays,
NumPy's function, the result copied back (``host_steps`` of the executable names those steps; a
log line says so once). Any other error of CuPy's call is NumPy's to decide: the call is made
again on the host, which returns NumPy's result or raises NumPy's error.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.ir import SCALAR_OPERATORS
from stax.ir.interpreter import (
    ARRAY_METHODS,
    NUMPY_MODULES,
    UFUNC_METHODS,
    call_method,
    resolve_function,
)
from stax.loop.ir import BufferRef, decode_operands, map_buffer_refs

from ..artifact import ExternPlan
from ..executable import ExternResultMismatch
from .arrays import ArrayLibrary

#: NumPy modules with a CuPy module of the same functions (``cupy``, ``cupy.linalg``, ``cupy.fft``)
MIRRORED = {"numpy": "", "numpy.linalg": "linalg", "numpy.fft": "fft"}
#: methods whose result is a host value (a Python object): they run on the host
HOST_METHODS = frozenset({"item", "tolist", "tobytes", "to_device"})
_log = logging.getLogger("stax.codegen")


def device_function(target: str, method: bool, xp: Any) -> Callable[..., Any] | None:
    """The function of NumPy module ``xp`` (NumPy or CuPy) that does what the allowed NumPy
    target ``target`` does, or None where ``xp`` has none (the step then runs on the host). A
    method is called on the receiver: None stands for that."""
    if method:
        return None
    if target in SCALAR_OPERATORS:  # the operator on 0-d device arrays: CUDA reports no events
        return SCALAR_OPERATORS[target]
    module, _, name = target.rpartition(".")
    if module == "operator":
        return resolve_function(target)  # operators dispatch on their operands' type
    if xp is np:
        return resolve_function(target) if module in NUMPY_MODULES or name in UFUNC_METHODS \
            else None
    if module in MIRRORED:
        found = _attribute(xp, MIRRORED[module], name)
    elif name in UFUNC_METHODS and module.rpartition(".")[0] == "numpy":
        found = getattr(getattr(xp, module.rpartition(".")[2], None), name, None)
    else:
        found = None
    return found if callable(found) else None


def _attribute(xp: Any, submodule: str, name: str) -> Any:
    try:
        owner = importlib.import_module(f"{xp.__name__}.{submodule}") if submodule else xp
    except ImportError:
        return None
    return getattr(owner, name, None)


class Step:
    """``step(env, lib, like)``: one NumPy step on ``env`` (the executable's buffers, arrays of
    ``lib`` on ``like``'s device); ``on_host`` lists the NumPy modules it ran on the host for."""

    def __init__(self, plan: ExternPlan, slot: dict[str, int]) -> None:
        self.plan = plan
        self.args, self.kwargs = decode_operands(plan.args), decode_operands(plan.kwargs)
        # the allow-list, checked when the plan is loaded: a document names data, never code
        self.host_fn = None if plan.method else resolve_function(plan.target)
        if plan.method:
            call_method(None, plan.target, (), {}, check_only=True)
        self.slot, self.out = slot, slot[plan.buffer]
        self.dtype = np.dtype(plan.dtype)
        self.on_host: list[str] = []
        self._resolved: dict[str, tuple[bool, Any]] = {}

    def _resolve(self, xp: Any) -> tuple[bool, Any]:
        """(whether the step runs in ``xp``, ``xp``'s function or None for a method)."""
        found = self._resolved.get(xp.__name__)
        if found is None:
            plan = self.plan
            if plan.method:
                ok = plan.target in ARRAY_METHODS and plan.target not in HOST_METHODS
                found = (ok, None)
            else:
                fn = device_function(plan.target, False, xp)
                found = (fn is not None and "out" not in self.kwargs, fn)
            self._resolved[xp.__name__] = found
            if not found[0]:
                self._to_host(xp.__name__, "it has no such call")
        return found

    def _to_host(self, module: str, why: str) -> None:
        """This step runs on the host from now on where the arrays' module is ``module``."""
        self._resolved[module] = (False, None)
        if module not in self.on_host:
            self.on_host.append(module)
            _log.info("stax: the NumPy step %s() runs on the host, not in %s: %s",
                      self.plan.target, module, why)

    def __call__(self, env: list[Any], lib: ArrayLibrary, like: Any) -> None:
        try:
            xp = lib.numpy_module(like)
        except ImportError:  # a GPU without CuPy: every step through the host
            self._to_host("cupy", "CuPy is not installed")
            self._on_host(env, lib, like)
            return
        runs, fn = self._resolve(xp)
        target = self.plan.target
        if runs and fn is None:
            receiver = self._fetch_device(self.args[0], env, lib, xp) if self.args else None
            runs = isinstance(receiver, xp.ndarray) and hasattr(receiver, target)
            if not runs:
                self._to_host(xp.__name__, f"its arrays have no method {target}")
        if runs:
            with lib.step_stream(like):
                a = self._fetch_device(self.args, env, lib, xp)
                k = self._fetch_device(self.kwargs, env, lib, xp)
                if xp is np:  # NumPy itself (the interpreter): its errors are the call's
                    result = getattr(a[0], target)(*a[1:], **k) if fn is None else fn(*a, **k)
                    self._store(result, env, lib, like, xp)
                    return
                try:
                    result = getattr(a[0], target)(*a[1:], **k) if fn is None else fn(*a, **k)
                    self._store(result, env, lib, like, xp)
                    return
                except (NotImplementedError, TypeError, AttributeError, ExternResultMismatch) as exc:
                    # an argument or a result CuPy does not take or give as NumPy does
                    self._to_host(xp.__name__, f"{type(exc).__name__}: {exc}")
                except Exception:
                    pass  # NumPy's own call on the host decides: its result, or its error
        self._on_host(env, lib, like)

    def _fetch_device(self, operands: Any, env: list[Any], lib: ArrayLibrary, xp: Any) -> Any:
        def fetch(ref: BufferRef) -> Any:
            value = env[self.slot[ref.name]]
            if lib.is_array(value):
                return lib.as_cupy(value)
            if isinstance(value, (list, tuple)):  # a sequence a step returned
                return type(value)(xp.asarray(v) if isinstance(v, np.ndarray) else v for v in value)
            return value

        def constant(value: Any) -> Any:
            return xp.asarray(value) if isinstance(value, np.ndarray) and xp is not np else value
        return map_buffer_refs(_map_arrays(operands, constant), fetch)

    def _on_host(self, env: list[Any], lib: ArrayLibrary, like: Any) -> None:
        def host(value: Any) -> Any:
            if lib.is_array(value):
                return lib.to_numpy(value)
            if isinstance(value, (list, tuple)):
                return type(value)(v if isinstance(v, np.ndarray) else
                                   _to_host(v) for v in value)
            return value

        def fetch(ref: BufferRef) -> Any:
            return host(env[self.slot[ref.name]])
        a, k = map_buffer_refs(self.args, fetch), map_buffer_refs(self.kwargs, fetch)
        plan = self.plan
        result = call_method(a[0], plan.target, a[1:], k) if self.host_fn is None \
            else self.host_fn(*a, **k)
        self._store(result, env, lib, like, np)

    def _store(self, result: Any, env: list[Any], lib: ArrayLibrary, like: Any, xp: Any) -> None:
        plan = self.plan
        if plan.sequence is not None:
            if not isinstance(result, (tuple, list)) or len(result) != plan.sequence:
                raise ExternResultMismatch(f"extern {plan.target}() returned "
                                           f"{type(result).__name__}; capture saw "
                                           f"{plan.sequence} arrays")
            env[self.out] = result  # kept as returned, for the steps that pick from it
            return
        if isinstance(result, np.generic) or (isinstance(result, np.ndarray) and xp is not np):
            result, xp = np.asarray(result), np  # a host value of a device call
        if type(result) is not xp.ndarray or result.shape != plan.shape or \
                result.dtype != self.dtype:
            got = f"{type(result).__name__} {getattr(result, 'dtype', '')}" \
                  f"{list(getattr(result, 'shape', ()))}"
            raise ExternResultMismatch(f"extern {plan.target}() returned {got}; capture saw "
                                       f"{plan.dtype}{list(plan.shape)}")
        env[self.out] = _planned(result, plan, lib, like, xp)


def _planned(result: Any, plan: ExternPlan, lib: ArrayLibrary, like: Any, xp: Any) -> Any:
    """``result`` (an array of ``xp``) as an array of ``lib`` laid out as ``plan`` says: itself
    (no copy) when it is, else a copy. A view NumPy's call returns (``x.T``, ``x[1:]``,
    ``np.asarray(x)``) stays a view of its operand's memory, as on the CPU, where the function's
    result is NumPy's own view object: writing into it writes into the argument, as in NumPy (the
    storage plan keeps an operand such a call may view alive as long as the result)."""
    if xp is np and lib.device_index(like) is not None:  # a host result, for a GPU
        staged = lib.from_numpy(result, like)  # contiguous, owning its memory
        if _laid_out(staged.shape, lib.layout(staged)[1], plan) or any(s < 0 for s in plan.strides):
            return staged
        out = lib.empty_strided(plan.shape, plan.strides, plan.dtype, like)
        lib.copy_into(out, staged)
        return out
    strides = tuple(s // result.itemsize for s in result.strides)
    if _laid_out(result.shape, strides, plan):
        return lib.from_cupy(result, like)
    if any(s < 0 for s in plan.strides):
        return lib.from_cupy(xp.ascontiguousarray(result) if xp is not np else np.array(result), like)
    out = lib.empty_strided(plan.shape, plan.strides, plan.dtype, like)
    lib.as_cupy(out)[...] = result
    return out


def _laid_out(shape: tuple[int, ...], strides: tuple[int, ...], plan: ExternPlan) -> bool:
    """Whether an array of ``shape`` and element ``strides`` is laid out as ``plan`` says (the
    stride of an axis of length 1, or of an empty array, never matters)."""
    return 0 in shape or all(n == 1 or got == want for n, got, want in zip(shape, strides, plan.strides))


def _to_host(value: Any) -> Any:
    get = getattr(value, "get", None)  # a CuPy array
    return get() if callable(get) and hasattr(value, "__cuda_array_interface__") else value


def _map_arrays(value: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_map_arrays(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_arrays(v, fn) for k, v in value.items()}
    return fn(value)


__all__ = ["HOST_METHODS", "MIRRORED", "Step", "device_function"]
