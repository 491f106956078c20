"""A compiled function whose own code is replaced in place: IPython's ``%autoreload`` sets
``f.__code__`` of the functions it reloads, and so does a test's patch. Every version was
traced from the old code, and so were the analyses made when it was compiled (its call form,
its free names, what it reads of objects), so they all go: the function compiles again, as
for ``stax.compile`` of the new code, said under ``STAX_LOGS=recompiles``. The calls check
the code object by identity (``CompiledFunction.__call__``: one attribute load and one
comparison); the entries of versions other functions inline are keyed by it already
(``signature.Describer``)."""

from __future__ import annotations

from typing import Any

from . import config, logs

#: what the caller set after making it (a lifted loop's body, a gradient's backend) or how it
#: binds in a class body: kept
_SETTINGS = ("capture_check", "donates_arguments", "declines_to_caller", "rho", "_binds",
             "backend", "backend_name")


class _Uncoded:
    """What a callable without code (a ``functools.partial``) is checked through."""

    __code__ = None


_UNCODED = _Uncoded()


def code_of(fn: Any) -> tuple[Any, Any]:
    """(what holds the code the calls check, that code): ``fn`` and its ``__code__``, or an
    object whose ``__code__`` is None always (one comparison a call either way)."""
    code = getattr(fn, "__code__", None)
    return (fn, code) if code is not None else (_UNCODED, None)


def refresh(compiled: Any) -> None:
    """``compiled`` as made afresh for its function's new code (under its compile lock: a
    thread that finds it refreshed already leaves it)."""
    with compiled._compile_lock:
        fn = compiled.fn
        if code_of(fn)[1] is compiled._code:
            return
        logs.emit("recompiles", config.current().logs,
                  f"{compiled._name}: its code was replaced (autoreload, a patch): its "
                  f"{len(compiled._versions)} version(s) dropped, compiled again at the next call")
        kept = {name: getattr(compiled, name) for name in _SETTINGS}
        type(compiled).__init__(compiled, fn, device=compiled.requested_device,  # (its
                                dynamic=compiled.dynamic, strict_native=compiled.strict_native,
                                options=compiled.options, limits=compiled.limits)  # backend:
        # kept, as the caller may have set one no name registers: ``autodiff``'s)
        compiled.__dict__.update(kept)  # (the lock held here stays: ``__init__`` keeps it)


def current(compiled: Any, version: Any) -> bool:
    """Whether ``version`` is one of ``compiled``'s now: a call that found it before another
    thread's ``refresh`` finishes with it, but must not install its entry for the calls after
    (they would run the old code's version, the code check passed)."""
    index = version.index
    return index < 0 or (index < len(compiled._versions) and compiled._versions[index] is version)
