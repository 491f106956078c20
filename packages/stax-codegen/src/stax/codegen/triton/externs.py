"""NumPy steps of a CUDA plan, for this first slice by way of the host: the operands are copied
to NumPy arrays, NumPy's function runs, and its result is copied back to a tensor on the
device, laid out as the plan says. Temporary: the steps are to run as the same call through CuPy
on the GPU (issue 12 item 3). The result is checked against what capture saw, as the CPU's
executable does (``ExternResultMismatch``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from stax.ir.interpreter import call_method, resolve_function
from stax.loop.ir import BufferRef, decode_operands, map_buffer_refs

from ..artifact import ExternPlan
from ..executable import ExternResultMismatch


def host_step(plan: ExternPlan, slot: dict[str, int], torch: Any,
              to_device: Callable[[np.ndarray, ExternPlan], Any]) -> Callable[[list[Any]], None]:
    """``step(env)``: NumPy's call on host copies of its operands from ``env``; its result (an
    array, or a sequence of arrays kept on the host for the steps that pick from it) stored."""
    args, kwargs = decode_operands(plan.args), decode_operands(plan.kwargs)
    # the allow-list, checked when the plan is loaded: a document names data, never code
    fn = None if plan.method else resolve_function(plan.target)
    if plan.method:
        call_method(None, plan.target, (), {}, check_only=True)
    dtype = np.dtype(plan.dtype)
    out, shape = slot[plan.buffer], plan.shape

    def host(value: Any) -> Any:
        return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value

    def step(env: list[Any]) -> None:
        def fetch(ref: BufferRef) -> Any:
            return host(env[slot[ref.name]])
        a, k = map_buffer_refs(args, fetch), map_buffer_refs(kwargs, fetch)
        result = call_method(a[0], plan.target, a[1:], k) if fn is None else fn(*a, **k)
        if plan.sequence is not None:
            if not isinstance(result, (tuple, list)) or len(result) != plan.sequence:
                raise ExternResultMismatch(f"extern {plan.target}() returned "
                                           f"{type(result).__name__}; capture saw "
                                           f"{plan.sequence} arrays")
            env[out] = result
            return
        array = np.asarray(result) if isinstance(result, np.generic) else result
        if type(array) is not np.ndarray or array.shape != shape or array.dtype != dtype:
            got = f"{type(result).__name__} {getattr(array, 'dtype', '')}{list(getattr(array, 'shape', ()))}"
            raise ExternResultMismatch(f"extern {plan.target}() returned {got}; capture saw "
                                       f"{plan.dtype}{list(shape)}")
        env[out] = to_device(array, plan)
    return step
