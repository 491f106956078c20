"""Where a call runs, a CUDA version's first call, a fallback version's first call (its
capture's result) and the function run eagerly: a mixin of ``CompiledFunction``, whose
attributes named here it uses."""

from __future__ import annotations

from typing import Any

import numpy as np

from stax.ir import StaxError, tree_leaves
from stax.trace import Outcome

from . import devices, logs
from .runners import updated_copies
from .versions import Version


class DeviceCalls:
    """``_place``, ``_first_device_run``, ``_captured_result`` and ``_eager`` for
    ``CompiledFunction`` (the attributes below are its, and so are the methods called on
    ``self``: ``_run``, ``_traced_function``)."""

    _name: str
    _free: Any
    _fallbacks: int
    _run: Any
    _traced_function: Any
    requested_device: str | None
    strict_native: bool

    def _first_device_run(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any],
                          outcome: Outcome, placement: devices.Placement) -> Any:
        """The first call of a CUDA version. Its capture ran this very call in NumPy without an
        error, so an error from the kernels is a compiler defect, not the user's: the version
        falls back with one log line (``strict_native`` raises it)."""
        try:
            return self._run(version, args, kwargs)
        except StaxError:
            raise
        except Exception as exc:
            if self.strict_native:
                raise
            version.native, version.run, version.fast = False, self._eager, None
            version.reason = f"internal error running the CUDA kernels: {type(exc).__name__}: {exc}"
            logs.warn(f"stax: {self._name} falls back to eager NumPy through CuPy on "
                      f"{placement.key} for this signature: {version.reason}")
            return self._captured_result(version, args, kwargs, outcome, placement)

    def _captured_result(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any],
                         outcome: Outcome, placement: devices.Placement | None) -> Any:
        """A fallback version's first call: the capture ran it already, so its result stands
        (moved to the device for a device call) unless it cannot stand for eager's."""
        done, result = outcome.eager_result()
        if done:
            self._fallbacks += 1
            if placement is not None:  # computed on host copies
                return placement.restore(result, updated_copies(outcome))
            return result
        outcome.undo_untraced_updates()
        return self._run(version, args, kwargs)

    def _eager(self, args: tuple[Any, ...], kwargs: dict[str, Any], *, host: bool = False) -> Any:
        """The function run eagerly: on device arrays through CuPy (``host``: on host copies,
        for NumPy's own errors), on NumPy arrays as it is."""
        fn = self._traced_function()
        if devices.device_leaf(tree_leaves((args, kwargs))) is None:
            return fn(*args, **kwargs)
        run = devices.run_on_host if host else devices.run_through_cupy
        return run(fn, args, kwargs)

    def _place(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> devices.Placement | None:
        """The device of this call (None: the CPU); ``StaxError`` for arguments no device takes.
        A free NumPy array read by a function called on device arrays is named as such."""
        leaves = tree_leaves((args, kwargs))
        try:
            return devices.place(leaves, self.requested_device, self._name)
        except StaxError:
            n_free = len(self._free.names)
            host = [name for name, leaf in zip(self._free.names, leaves[:n_free])
                    if type(leaf) is np.ndarray]
            if host and devices.device_leaf(leaves[n_free:]) is not None:
                raise StaxError(f"{self._name} reads the NumPy array {host[0]!r} (a global or "
                                "closure variable) and is called with device arrays: pass it as "
                                "an argument on the same device") from None
            raise
