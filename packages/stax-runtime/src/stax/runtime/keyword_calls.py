"""Calls placed in one positional form before they are keyed: ``f(x, k=3.0)`` is ``f(x, 3.0)``.

The key, its generic forms (a scalar's value a run-time input, ``generic.py``) and the key
entries (``key_entry.py``) describe positional arguments only; a call with keywords took the
full signature, one version per scalar value (12 us a call against 0.5 for three elements). So
a call is placed first (``CallForm.place``). A function's parameters are positions, its
keyword-only ones after its positional ones, and each keyword goes to its position, a
parameter skipped before it taking its default: ``f(x, b=5.0)`` is ``(x, 2.0, 5.0)`` for
``def f(x, k=2.0, b=1.0)`` and for ``def f(x, *, k=2.0, b=1.0)`` alike, and ``f(x)`` is ``(x,)``
for both (the function then reads its defaults, guarded as free values: ``code_reads.reads``).
After ``*args`` the keyword-only values are always all placed, defaults included, after the
positional arguments however many they are. Keywords that a ``**kwargs`` parameter takes stay
keywords (such calls take the full signature).

A placed call that reaches keyword-only positions is no call Python takes, and a call that
passes them positionally must still raise: so every call of a function with keyword-only
parameters is placed (``CallForm.always``), and whatever runs the function itself (capture,
eager runs, eager entries) calls it through ``CallForm.calling``, which names those values
again.

Defaults are read from the function at each call (``__defaults__``, ``__kwdefaults__``), as
Python binds them; a callable that holds no defaults of its own (a ``functools.partial`` of a
function with some) is not placed. A call Python refuses (too many positional arguments, an
unknown or repeated keyword, a missing argument before a given one) is not placed: ``place``
returns None and the caller calls the function itself, for Python's own ``TypeError``; a placed
call missing a later argument gets that error from the function it is given back to.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.trace import loops
from stax.trace.creation import active_tracer

from .code_reads import keyword_default

#: the keywords of a placed call that has none left (never changed: calls unpack it)
NO_KEYWORDS: dict[str, Any] = {}

_Placed = tuple[tuple[Any, ...], dict[str, Any]]


class CallForm:
    """How calls of one function are placed (module docstring)."""

    def __init__(self, fn: Callable[..., Any], params: list[inspect.Parameter]) -> None:
        kinds = inspect.Parameter
        positional = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY,
                                                       kinds.POSITIONAL_OR_KEYWORD)]
        self.count = len(positional)
        self.keyword_only = tuple(p.name for p in params if p.kind is kinds.KEYWORD_ONLY)
        #: every parameter by position, the keyword-only ones after the positional ones
        self.names = [*(p.name for p in positional), *self.keyword_only]
        #: the positions a keyword can name (not positional-only parameters')
        self.index = {name: i for i, name in enumerate(self.names)
                      if i >= self.count or positional[i].kind is kinds.POSITIONAL_OR_KEYWORD}
        self.varargs = any(p.kind is kinds.VAR_POSITIONAL for p in params)
        self.varkw = any(p.kind is kinds.VAR_KEYWORD for p in params)
        # defaults read at each call where the function holds them, else its signature's
        function = fn.__func__ if isinstance(fn, types.MethodType) else fn
        self._function = function if isinstance(function, types.FunctionType) else None
        self._static = (tuple(p.default for p in positional if p.default is not p.empty),
                        {p.name: p.default for p in params
                         if p.kind is kinds.KEYWORD_ONLY and p.default is not p.empty})
        #: an array among the positional defaults: every positional parameter is placed, the
        #: defaults as arguments (``def f(x, w=W0)``: the function read W0, an array no key
        #: holds, and ran eagerly, even where the call passed ``w``)
        self.fills = any(isinstance(d, np.ndarray) for d in self._static[0])
        #: every call is placed, not only those with keywords
        self.always = bool(self.keyword_only) or self.fills
        self.place: Callable[[tuple[Any, ...], dict[str, Any]], _Placed | None] = \
            self._place if self.fills else self._fast_place()

    # -- placing a call ----------------------------------------------------------------------------
    def _defaults(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The positional defaults (the last parameters') and the keyword-only ones, now."""
        function = self._function
        if function is None:
            return self._static
        return function.__defaults__ or (), function.__kwdefaults__ or {}

    def _default(self, i: int, defaults: tuple[Any, ...], kwdefaults: dict[str, Any]
                 ) -> tuple[bool, Any]:
        if i >= self.count:
            name = self.names[i]
            return name in kwdefaults, kwdefaults.get(name)
        first = self.count - len(defaults)
        return i >= first, defaults[i - first] if i >= first else None

    def _place(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Placed | None:
        """Any call: its placed form, or None where Python raises ``TypeError``."""
        n = len(args)
        if n > self.count and not self.varargs:
            return None
        rest = dict(kwargs)
        named = [self.index[k] for k in kwargs if k in self.index]
        if any(i < min(n, self.count) for i in named):  # given by position and by name
            return None
        filled = self.count if self.fills else 0  # the positional parameters placed at least
        if self.varargs and self.keyword_only:  # the named positional ones, then every one
            last = max((i for i in named if i < self.count), default=n - 1)
            ends = [(n, max(last + 1, filled)), (self.count, len(self.names))]
        else:
            ends = [(n, max(max(named, default=n - 1) + 1, filled))]
        defaults, kwdefaults = self._defaults()
        placed = list(args)
        for start, end in ends:
            for i in range(start, end):
                name = self.names[i]
                if name in rest and name in self.index:
                    placed.append(rest.pop(name))
                    continue
                found, value = self._default(i, defaults, kwdefaults)
                if not found:  # a required argument missing
                    return None
                placed.append(value)
        if rest and not self.varkw:  # an unknown keyword (or a positional-only one)
            return None
        return tuple(placed), rest or NO_KEYWORDS

    def _fast_place(self) -> Callable[[tuple[Any, ...], dict[str, Any]], _Placed | None]:
        """``_place`` with the common calls written out first (as ``dataclasses`` writes
        ``__init__``): every keyword-only value given; after ``*args``, some of them; one
        keyword naming the next position; none, with the positional arguments alone."""
        count, every = self.count, len(self.keyword_only)
        reach = count + 1 if every else count  # the positions a keyword after them can name
        following = tuple(name if name in self.index else None for name in self.names[:reach])
        constants: dict[str, Any] = {"general": self._place, "NO_KEYWORDS": NO_KEYWORDS,
                                     "following": following}
        lines = ["def place(args, kwargs):"]
        if every:  # each value named in the code
            values = "".join([*(f"args[{i}], " for i in range(count)),
                              *(f"kwargs[{name!r}], " for name in self.keyword_only)])
            lines += [f"    if len(args) == {count} and len(kwargs) == {every}:",
                      "        try:",
                      f"            return ({values}), NO_KEYWORDS",
                      "        except KeyError:",
                      "            pass"]
        if self.varargs and every:  # every keyword-only value placed: given, or its default
            values = "".join(f"kwargs[{name!r}] if {name!r} in kwargs else given[{name!r}], "
                             for name in self.keyword_only)
            constants.update(function=self._function, keyword_only=frozenset(self.keyword_only))
            lines += ["    if kwargs.keys() <= keyword_only:",
                      "        try:",
                      "            given = function.__kwdefaults__",
                      f"            return (*args, {values}), NO_KEYWORDS",
                      "        except (KeyError, TypeError):",  # (no default: Python's error)
                      "            pass"]
        else:
            lines += [f"    if len(kwargs) == 1 and len(args) < {reach}:",
                      "        name = following[len(args)]",
                      "        if name in kwargs:",
                      "            return (*args, kwargs[name]), NO_KEYWORDS"]
            if every:
                lines += [f"    if not kwargs and len(args) <= {count}:",
                          "        return args, NO_KEYWORDS"]
        lines.append("    return general(args, kwargs)")
        constants["__name__"] = __name__  # Stax's code (``straight_line``: not the user's)
        exec(compile("\n".join(lines) + "\n", "<stax call placement>", "exec"), constants)
        return constants["place"]  # type: ignore[no-any-return]

    # -- calling the function ----------------------------------------------------------------------
    def split(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """A placed call's positional arguments and its keyword-only values, by name."""
        if not self.keyword_only:
            return args, {}
        cut = len(args) - len(self.keyword_only) if self.varargs else self.count
        return args[:cut], dict(zip(self.keyword_only, args[cut:]))

    def calling(self, fn: Callable[..., Any], rewrite: bool = False, leading: int = 0
                ) -> Callable[..., Any]:
        """``fn`` called with placed arguments after ``leading`` others (lifted free values),
        then any keywords left: itself where that is a call Python takes, else a function
        naming the keyword-only values again. ``rewrite``: while a capture runs, ``fn`` with
        its loops rewritten (``stax.trace.loops``), as capture does for the function it is
        given."""
        if not self.keyword_only:
            return fn
        make = self.__dict__.get("_make")
        if make is None:
            make = self._make = self._maker()
        call = make(fn, rewrite, leading)
        call.__wrapped__ = getattr(fn, "__wrapped__", fn)  # capture's scans look through it
        return call  # type: ignore[no-any-return]

    def _maker(self) -> Callable[[Callable[..., Any], bool, int], Callable[..., Any]]:
        """``make(fn, rewrite, leading)``, the function ``calling`` returns, written out once:
        every keyword-only value named in the code (a ``**dict(zip(...))`` took twice as
        long), else those the call reaches, as ``split`` cuts them."""
        every = len(self.keyword_only)
        given = "".join(f"{name}=a[{i - every}], " for i, name in enumerate(self.keyword_only))
        full, cut = ("len(a) >= full", "len(a) - every") if self.varargs else \
            ("len(a) == full", "leading + count")
        source = (
            "def make(fn, rewrite, leading):\n"
            "    full = leading + count + every\n"
            "    def call(*a, **kw):\n"
            "        run = (rewritten(fn) or fn) if rewrite and active_tracer() is not None \\\n"
            "            else fn\n"
            f"        if {full}:\n"
            f"            return run(*a[:-every], {given}**kw)\n"
            f"        at = {cut}\n"
            "        return run(*a[:at], **dict(zip(names, a[at:])), **kw)\n"
            "    return call\n")
        constants: dict[str, Any] = {"rewritten": loops.rewritten, "active_tracer": active_tracer,
                                     "names": self.keyword_only, "count": self.count,
                                     "every": every}
        exec(compile(source, "<stax keyword call>", "exec"), constants)
        return constants["make"]  # type: ignore[no-any-return]


def call_form(fn: Callable[..., Any]) -> CallForm | None:
    """How calls of ``fn`` are placed, or None where they are taken as they come: a callable
    without a signature or with one its code does not bind (``__signature__``), or one with
    defaults or keyword-only parameters it does not hold itself (a ``functools.partial``'s
    keywords, its function's defaults: the signature's are a copy, stale once they change)."""
    if getattr(fn, "__signature__", None) is not None:
        return None
    try:
        params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None
    form = CallForm(fn, params)
    if form._function is None and (form.keyword_only or any(form._static)):
        return None  # defaults it does not hold itself (a partial's function's): unread here
    if not form.index:  # nothing a keyword could be placed at
        return None
    return form


def defaults_unread(form: CallForm | None, args: tuple[Any, ...]) -> frozenset[str]:
    """The guard paths of the defaults a placed call does not read: those of the keyword-only
    values it passes (given, or placed as defaults after ``*args``; two paths checked at every
    call cost 0.2 us, a third of the call), and the positional ones where it passes every
    positional parameter (``CallForm.fills``: an array default no key could hold)."""
    if form is None:
        return frozenset()
    unread = frozenset(map(keyword_default, form.split(args)[1])) if form.keyword_only else \
        frozenset()
    return unread | {"defaults"} if form.fills and len(args) >= form.count else unread


def as_called(form: CallForm | None, args: tuple[Any, ...], kwargs: dict[str, Any]
              ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A placed call's arguments as the function takes them: its keyword-only values named
    again, before any other keywords (the order of the placed call's leaves)."""
    if form is None or not form.keyword_only:
        return args, kwargs
    positional, named = form.split(args)
    return positional, {**named, **kwargs}
