"""What a compiled function says of itself: its counts (``cache_info``), its versions, and for
given arguments which guards of each version fail (``explain``, spec corollary 2.1)."""

from __future__ import annotations

from typing import Any

from stax.ir import StaxError

from .object_arrays import with_lifted
from .signature import Unguardable, check_arguments, signature
from .versions import CacheInfo, Version, VersionReport


class Reports:
    """The reporting methods of ``CompiledFunction`` (its state is that class's)."""

    _versions: list[Version]
    _hits: dict[int, int]
    _compiles: int
    _misses: int
    _fallbacks: int
    _free: Any
    _form: Any
    _objects: Any
    _names: Any
    fn: Any

    def cache_info(self) -> CacheInfo:
        hits = dict(self._hits)
        hits[1] += sum(v.entry.hits for v in self._versions if v.entry is not None) + \
            sum(v.generic.entry_hits() for v in self._versions if v.generic is not None) + \
            sum(e.hits for v in self._versions for e in tuple((v.sized_entries or {}).values())
                if e.inner is None)  # (a machine-code entry inside: the generic's hits)
        eager = sum(v.entry.hits for v in self._versions if v.entry is not None and not v.native)
        return CacheInfo(len(self._versions), self._compiles, hits, self._misses,
                         self._fallbacks + eager)

    def versions(self) -> list[Version]:
        return list(self._versions)

    def explain(self, *args: Any, **kwargs: Any) -> list[VersionReport]:
        """For each cached version, the guards that fail for these arguments (corollary 2.1).
        Arguments the function cannot take raise its TypeError, as a call would."""
        check_arguments(self.fn, args, kwargs)
        if self._form is not None and (kwargs or self._form.always):  # as a call places them
            args, kwargs = self._form.place(args, kwargs) or (args, kwargs)
        args = with_lifted(self._objects, args)  # arrays of argument objects, as a call
        if self._free:
            args = (*self._free.read(), *args)
        try:
            sigma = signature(args, kwargs, self._names)
        except Unguardable as exc:
            raise StaxError(f"these arguments cannot be keyed ({exc}): such calls run "
                            "eagerly") from None
        return [VersionReport(v.index, v.native, v.failures(sigma, args, kwargs))
                for v in self._versions]
