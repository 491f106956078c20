"""Key entries per layout of size-generic versions whose calls pass scalars, and the keys of
calls a generic version skips (``branches._enter``, ``api._run``).

A size-generic version's machine-code entry per size (``GenericExecutable.entry_for``) takes
its array inputs only; a call that passes scalars too (inputs of a version generic in sizes
and scalar values, or constants of its code) went through the dispatcher's signature and
lookup at every call. ``sized_entry`` puts a key entry in front of the size instance's
machine-code entry: the arrays compared as they are, the scalars by type (and the version's
predicates) or by value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .generic import generic_key, served_exactly, sized_scalars
from .key_entry import CallValues, KeyEntry, native_entry, redo, version_entry
from .signature import Unguardable, signature

#: key entries a version keeps (``sized_entry``): past it, the table starts again
MAX_SIZED_ENTRIES = 64


def sized_entry(version: Any, args: Sequence[Any], names: Any,
                run_version: Callable[..., Any], dispatch: Callable[..., Any],
                versions: Sequence[Any]) -> Any | None:
    """The key entry of a size-generic version whose calls pass more than its array inputs,
    at the exact layouts of ``args``, kept on the version (``sized_entries``): its scalars as run-time
    inputs (generic in sizes *and* scalar values: compared by type and the version's
    predicates, as a scalar-generic version's entry, ``entry_key``; the values exact versions
    at these layouts serve handed to the dispatcher) or as constants of its code (compared by
    value). After the comparisons, the machine-code entry of the size instance (made the second
    time the layouts are seen: None before), or ``run_version`` where the instance has none.
    Such calls went through the dispatcher's signature and lookup every time (``x * k`` over
    new sizes: 13.5 us a call with ``k`` a constant, 3.7 us with ``k`` an input, for NumPy's
    0.6; a probe's find)."""
    generic, entries = version.generic, version.sized_entries
    scalars = sized_scalars(generic)
    quick = _quick_layout(args, scalars)  # a layout's entry without its signature, where one was made
    found = entries.get(quick) if quick is not None else None
    if found is not None:
        return found
    try:
        sigma = signature(tuple(args), {}, names)
    except Unguardable:
        return None
    key = generic_key(sigma, scalars) if scalars else sigma
    if key is None:
        return None
    if key in entries:
        return entries[key]
    slots = version.flat[1]
    key_values = (key, ()) if scalars else key
    predicates, given = getattr(generic, "predicates", ()), CallValues(tuple(args), names)
    served = served_exactly(sigma, scalars, versions) if scalars else None
    inner = generic.entry_for([args[i] for i in slots], redo, lambda _: version_entry(
        key_values, run_version, dispatch, predicates, given, served))
    if inner is None or isinstance(inner, KeyEntry):  # first sight; or no machine code: the
        return inner  # key entry running the version, which the generic keeps for the layouts
    entry = native_entry(key_values, slots, inner.function, dispatch, predicates, given, served)
    if entry is not None:
        entry.inner = inner
        if len(entries) >= MAX_SIZED_ENTRIES:
            entries.clear()
        entries[key] = entry
        if quick is not None:
            entries[quick] = entry
    return entry


def _quick_layout(args: Sequence[Any], scalars: Sequence[Any]) -> Any:
    """What a call's key entry is kept under besides its key (found without the signature,
    which cost calls alternating between sizes a few microseconds each: a review's find): its
    arrays' layouts, its scalars' types where they are inputs, else their values; None where
    an argument is another kind of object (its signature decides)."""
    taken = {i for i, _ in scalars}
    parts: list[Any] = ["layout"]
    for i, a in enumerate(args):
        if type(a) is np.ndarray:
            parts.append((a.shape, a.strides, a.dtype))
        elif type(a) in (int, float, bool) or isinstance(a, np.generic):
            parts.append(type(a) if i in taken else (type(a), a))
        else:
            return None
    try:
        key = tuple(parts)
        hash(key)
    except TypeError:
        return None
    return key


def own_key(version: Any, args: tuple[Any, ...], kwargs: dict[str, Any], names: Any) -> Any:
    """The key of a call a size-generic version skips (``key_entry.paused_entry``): its own
    signature, not the version's sigma; None for an exact version (or a call with no key)."""
    try:
        return signature(args, kwargs, names) if version.generic is not None else None
    except Unguardable:
        return None
