"""How a call goes on when the version it ran found, in its own program, that the call's data
gates took another branch (``gate_checks.py``): the version whose gates hold runs instead, or
one is compiled for this branch. A mixin of ``CompiledFunction``, whose dispatch state it uses."""

from __future__ import annotations

from typing import Any

from stax.ir import tree_leaves
from stax.trace import Outcome

from . import config, logs
from .gate_checks import GateMismatch
from .signature import signature
from .versions import Version, first_for_its_key


class OtherBranches:
    """``_gates_failed`` for ``CompiledFunction._run``: the attributes named here are its, and
    so are the methods called on ``self`` (``_run``, ``_lookup``, ``_miss``,
    ``_captured_result``)."""

    _by_sigma: dict[Any, list[Version]]
    _by_layout: dict[Any, list[Version]]
    _hits: dict[int, int]
    _hit_level: int
    _last: tuple[Any, list[Version]]
    _compile_lock: Any
    _name: str

    def _gates_failed(self, version: Version, args: tuple[Any, ...], kwargs: dict[str, Any],
                      other_branches: bool) -> Any:
        """``version`` ran, and its gates say another branch: try the others. A version whose
        program disagreed on the very first call it served (the inputs it was traced on) has
        gate values that are not NumPy's, a compiler defect: its gates are replayed from then
        on, instead of a new version compiled at every call until the limit."""
        check = version.gate_check
        if check is not None and check.active and not check.passed:
            check.active = False
            logs.emit("perf", config.current().logs, f"{self._name} v{version.index}: the "
                      "program's gate values differ from NumPy's on the inputs it was traced on; "
                      "its gates are replayed from now on")
            if version.gates is not None and version.gates.matches(tree_leaves((args, kwargs))):
                return self._run(version, args, kwargs, other_branches)
        if not other_branches:
            raise GateMismatch("a data gate took another branch")
        return self._other_branch(version, args, kwargs)

    def _other_branch(self, tried: Version, args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> Any:
        """The version whose gates hold (then tried first for its key), or a new one traced on
        this call (looked for again under the compile lock: another thread may have made it)."""
        sigma, skipped = signature(args, kwargs, self._names), {id(tried)}
        self._hits[self._hit_level] -= 1  # counted for ``tried``, which did not apply
        while True:
            found = self._lookup(sigma, args, kwargs, skipped)
            if found is None:
                with self._compile_lock:
                    found = self._lookup(sigma, args, kwargs, skipped)
                    if found is None:
                        found = self._miss(sigma, args, kwargs, outcome := Outcome())
                        if not found.native:
                            return self._captured_result(found, args, kwargs, outcome, None)
            try:
                result = self._run(found, args, kwargs, other_branches=False)
            except GateMismatch:
                self._hits[3] -= 1
                skipped.add(id(found))
                continue
            with self._compile_lock:  # ``_miss`` appends to these lists under it
                first_for_its_key(self._by_sigma, self._by_layout, sigma, found)
            self._last = (None, [])
            return result
