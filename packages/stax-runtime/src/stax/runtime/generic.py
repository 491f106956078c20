"""Size-generic versions and automatic dynamic (issue 15, docs/dynamic-shapes.md).

A function compiled with ``dynamic=None`` (the default) gets one version per exact signature
until a call misses only because some array dimensions have other sizes than a version's; those
dimensions become *dynamic*: the call's capture has their sizes replaced by symbols
(``stax.ir.symbolic_shapes``), is compiled once under a ``ShapeEnv`` whose guards record every
decision taken from them, and runs for every size the guards admit (``stax.codegen.instantiate``).
``dynamic=True`` makes every dimension of size 2 or more dynamic from the first call;
``dynamic=False`` keeps one version per exact signature.

The generic key of a call is sigma with each dynamic dimension's size written ``*`` and the
array's strides as definition 2.2's expressions (``dynamic.stride_expressions``): a contiguous
array of any batch size has one key, its transpose another, a size 0 or 1 its own (sizes 0 and 1
are specialized). A version found by it still checks its shape guards on the call's sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.ir.scalar_inputs import value_kind
from stax.ir.scalar_predicates import OTHER_OUTCOME
from stax.ir.shape_env import ShapeEnv

from .dynamic import SPECIALIZED_SIZES, stride_expressions
from .key_entry import NOT_SCALAR, leaf_scalar, version_entry
from .pattern_items import (
    ITEM,
    SCALAR_VALUE,
    changed_items,
    described,
    flat_item,
    item_position,
    items_of,
    leaf_at,
    scalar_kind,
    scalar_positions,
    split,
)
from .signature import (
    ARRAY,
    Unguardable,
    array_signature,
    diff_signature,
    signature,
)

#: (argument, dimension) pairs that are dynamic; ``(argument, SCALAR_VALUE)``: a scalar whose
#: value is a run-time input (``pattern_items.py``: an argument or an item of one)
Pattern = frozenset[tuple[int, int]]
@dataclass(frozen=True)
class ShapeGuardFailure:
    """A shape guard of a size-generic version that a call fails (``explain()``)."""

    condition: str
    expected: Any
    actual: Any

    @property
    def path(self) -> str:
        return self.condition.split(" ", 1)[0]

    def __str__(self) -> str:
        what = "scalar comparisons" if self.actual == OTHER_OUTCOME else "shape guard"
        return f"{what} {self.condition} (got {self.actual})"


def generic_failures(version: Any, sigma: Any, leaves: Sequence[Any]) -> list[Any]:
    """What keeps a call from a generic version: its key's differences other than the dynamic
    sizes (``diff_signature`` over generic keys), then its shape guards."""
    pattern = version.pattern
    mine, theirs = generic_key(version.sigma, pattern), generic_key(sigma, pattern)
    if theirs is None:
        return list(diff_signature(version.sigma, sigma))
    out: list[Any] = list(diff_signature((mine, ()), (theirs, ())))
    if not out:
        arrays = [leaves[i] for i in version.flat[1]]
        out = [ShapeGuardFailure(*failed) for failed in version.generic.failed_guards(arrays)]
    return out


class NotGeneric(Exception):
    """Why a capture could not be compiled size-generic: the exact version is compiled instead."""


def _array_leaf(leaf: Any) -> bool:
    """An array's signature leaf, on the CPU or a device (its device key kept in the key)."""
    return isinstance(leaf, tuple) and len(leaf) == 5 and leaf[0] == ARRAY


def _layout(leaf: Any, dims: Sequence[int] = ()) -> tuple[Any, ...] | None:
    """An array leaf's ``(dtype, rank, stride expressions)``, or None for strides that are not
    whole elements. A dynamic dimension (``dims``) of size 1 takes part in the expressions as
    any dynamic dimension does, its own stride (never used: its only index is 0) taken as a
    row-major array's, so that a contiguous batch of 1 has the key of the others while a view
    whose other strides assume another size (``x[:, :1]`` of a wider array) does not."""
    _, _, shape, dtype, strides = leaf
    itemsize = np.dtype(dtype).itemsize
    if any(s % itemsize for s in strides):
        return None
    elements = [s // itemsize for s in strides]
    ones = {d for d in dims if shape[d] == 1}
    for d in sorted(ones, reverse=True):  # innermost first: an outer one may rest on it
        elements[d] = elements[d + 1] * shape[d + 1] if d + 1 < len(shape) else 1
    return (dtype, len(shape), stride_expressions(shape, elements, ones))


def _every_scalar(sigma: Any) -> tuple[Pattern, Any | None]:
    """The pattern of every scalar's value among a key's positional arguments, and the generic
    key of it (None: no scalar, or keywords)."""
    positional, keywords = sigma
    pattern = frozenset((i, SCALAR_VALUE) for i in scalar_positions(positional))
    return pattern, generic_key(sigma, pattern) if pattern and not keywords else None


def _scalar_values(sigma: Any, positions: Sequence[int]) -> tuple[Any, ...] | None:
    """The values of the scalars at ``positions`` a key holds (``key_entry.leaf_scalar``), or
    None where one is a NaN (no call compares equal to it) or no number a generic version
    takes (``scalar_kind``)."""
    values = []
    for i in positions:
        leaf = leaf_at(sigma[0], i)
        value = leaf_scalar(leaf) if scalar_kind(leaf) else NOT_SCALAR
        if value is NOT_SCALAR or value != value:
            return None
        values.append(value)
    return tuple(values)


def generic_key(sigma: Any, pattern: Pattern) -> Any | None:
    """Sigma with the sizes of ``pattern``'s dimensions and the values of its scalars left out
    (None when this call cannot use a generic version of that pattern: keywords, a dynamic
    dimension of size 0 or 1, another type where a scalar was)."""
    positional, keywords = sigma
    if keywords or any(split(i)[0] >= len(positional) for i, _ in pattern):  # (f(x) beside
        return None  # f(x, k))
    items: dict[int, list[int]] = {}  # argument -> its items that are inputs
    for position, d in pattern:
        argument, item = split(position)
        if item is not None and d == SCALAR_VALUE:
            items.setdefault(argument, []).append(item)
    leaves = []
    for i, leaf in enumerate(positional):
        if i in items:  # a list or tuple with scalar items as inputs: their types alone
            inner = items_of(leaf)
            if inner is None or max(items[i]) >= len(inner):
                return None
            kinds = {j: scalar_kind(inner[j]) for j in items[i]}
            if not all(kinds.values()):
                return None
            leaves.append((leaf[0], tuple((kinds[j], "*") if j in kinds else item
                                          for j, item in enumerate(inner))))
            continue
        if (i, SCALAR_VALUE) in pattern:
            kind = scalar_kind(leaf)
            if kind is None:
                return None
            leaves.append((kind, "*"))
            continue
        dims = [d for (k, d) in pattern if k == i]
        if not dims:
            leaves.append(leaf)
            continue
        if not _array_leaf(leaf) or any(d >= len(leaf[2]) or leaf[2][d] == 0 for d in dims):
            return None
        layout = _layout(leaf, dims)
        if layout is None:
            return None
        shape = tuple("*" if d in dims else n for d, n in enumerate(leaf[2]))
        leaves.append((ARRAY, leaf[1], shape, layout[0], layout[2]))  # strides as expressions
    return tuple(leaves)


def entry_key(sigma: Any, pattern: Pattern | None, generic: Any) -> Any | None:
    """The key a version's key entry compares calls with (``key_entry.py``): its sigma; for a
    version generic in scalar values only, sigma with those values ``*`` (the entry checks
    their types); None for a size-generic version (its shape guards need the dispatcher)."""
    if generic is None:
        return sigma
    if pattern is None or any(d != SCALAR_VALUE for _, d in pattern) or \
            getattr(generic, "sized", None) is not None:
        return None
    key = generic_key(sigma, pattern)
    return None if key is None else (key, ())


def served_exactly(sigma: Any, pattern: Pattern | None, versions: Sequence[Any]
                   ) -> tuple[list[int], set[tuple[Any, ...]]] | None:
    """For a version generic in scalar values (``pattern``): their positions and the values
    that exact native ``versions`` of its generic key serve, which its key entry hands to the
    dispatcher (an unrolled loop's version, 3 us a call, over the generic's lifted loop, 40);
    None where there are none."""
    if pattern is None or any(d != SCALAR_VALUE for _, d in pattern):
        return None
    key = generic_key(sigma, pattern)
    positions = sorted(i for i, _ in pattern)
    if positions[-1] >= ITEM:  # (items of a list: the key entry compares arguments)
        return None
    served = {values for v in versions if v.native and v.generic is None and
              generic_key(v.sigma, pattern) == key and
              (values := _scalar_values(v.sigma, positions)) is not None}
    return (positions, served) if served else None


def eager_entry_key(version: Any, versions: Sequence[Any]) -> Any:
    """The key a fallback version's key entry compares: its sigma; its scalars' types alone
    where it runs for every value of them (``GenericVersions.fell_back``) and the function has
    no native version that another value could have found."""
    if version.pattern is None or any(v.native for v in versions):
        return version.sigma
    return generic_key(version.sigma, version.pattern), ()


def sizes_entry(args: Sequence[Any], names: Any, run_version: Callable[..., Any],
                dispatch: Callable[..., Any]) -> Any | None:
    """A key entry for a generic version at the exact layouts of ``args`` where its instance
    has no machine-code entry (kernels on the thread pool, ``GenericExecutable.entry_for``):
    an exact version's comparisons, then ``run_version``, without the dispatcher's signature
    and lookup (example 1.1 at 4096 rows on a 2-core AMD EPYC: 142 us a call through the
    dispatcher, 124 for the exact version's key entry)."""
    try:
        sigma = signature(tuple(args), {}, names)
    except Unguardable:
        return None
    return version_entry(sigma, run_version, dispatch)


def sized_scalars(generic: Any) -> list[tuple[int, Any]]:
    """The scalar dimensions of a version generic in sizes *and* scalar values; none for one
    generic in either alone."""
    pattern = getattr(generic, "pattern", None) or ()
    scalars = [(i, d) for i, d in pattern if d == SCALAR_VALUE]
    return scalars if len(scalars) < len(pattern) else []


def changed_dimensions(old: Any, new: Any) -> Pattern | None:
    """The dimensions in which two signatures differ, when they differ only in array sizes (of
    2 or more, at the same layout expressions); None otherwise."""
    (old_args, old_kwargs), (new_args, new_kwargs) = old, new
    if old_kwargs or new_kwargs or len(old_args) != len(new_args):
        return None
    changed: set[tuple[int, int]] = set()
    for i, (a, b) in enumerate(zip(old_args, new_args)):
        if a == b:
            continue
        if scalar_kind(a) is not None and scalar_kind(a) == scalar_kind(b):
            changed.add((i, SCALAR_VALUE))  # a scalar's value changed: a run-time input
            continue
        items = changed_items(a, b)
        if items is not None:  # scalars in a list or tuple (coefficients): inputs too
            changed |= {(item_position(i, j), SCALAR_VALUE) for j in items}
            continue
        if not (_array_leaf(a) and _array_leaf(b)) or len(a[2]) != len(b[2]) or a[3] != b[3]:
            return None
        dims = sorted(d for d, (m, n) in enumerate(zip(a[2], b[2])) if m != n)
        if any(a[2][d] == 0 or b[2][d] == 0 for d in dims):
            return None
        if _layout(a, dims) is None or _layout(a, dims) != _layout(b, dims):
            return None
        changed |= {(i, d) for d in dims}
    return frozenset(changed) or None


def every_dimension(sigma: Any) -> Pattern | None:
    """``dynamic=True``: every array dimension of size 2 or more."""
    positional, keywords = sigma
    if keywords:
        return None
    dims = {(i, d) for i, leaf in enumerate(positional) if _array_leaf(leaf)
            for d, n in enumerate(leaf[2]) if n not in SPECIALIZED_SIZES}
    dims |= {(i, SCALAR_VALUE) for i in scalar_positions(positional)}
    return frozenset(dims) or None


#: a generic compile refused at a dynamic size below this is tried again at a larger size: a
#: small size can make a capture degenerate (``x[1:-1]`` of 2 rows is empty, no view)
SMALL_TRACE = 8


def _smallest(sigma: Any, pattern: Pattern) -> int:
    """The smallest dynamic size of a generic key's attempt, an int scalar's value among them
    (a loop count of 2, too few items to lift the loop, is tried again at a larger count)."""
    sizes = [sigma[0][i][2][d] if d != SCALAR_VALUE else
             leaf_at(sigma[0], i)[1] if leaf_at(sigma[0], i)[0] == "int" else SMALL_TRACE
             for i, d in pattern]
    return min(sizes, default=SMALL_TRACE)


def _retried(refusal: tuple[str, int, frozenset[int]], sigma: Any, pattern: Pattern) -> bool:
    """Whether a refused generic key is tried again at this call's sizes."""
    smallest = refusal[1]
    return smallest < SMALL_TRACE and _smallest(sigma, pattern) > smallest


#: calls past the version limit, new values of the same scalars, before they get an eager entry
LIMIT_MISSES = 16


@dataclass
class GenericVersions:
    """A function's generic versions by generic key, and the patterns tried so far."""

    mode: bool | None
    patterns: list[Pattern] = field(default_factory=list)
    by_key: dict[Any, list[Any]] = field(default_factory=dict)
    #: generic keys that could not be compiled generic: why, and the smallest dynamic size of
    #: that attempt (tried again only from a small one, at larger sizes: ``_retried``)
    refused: dict[Any, tuple[str, int, frozenset[int]]] = field(default_factory=dict)
    read: frozenset[int] = frozenset()  # scalar positions captures decided on (``refuse``)
    #: captures refused (eager versions) per key of every scalar's value (``fell_back``)
    eager_values: dict[Any, int] = field(default_factory=dict)
    #: calls past the version limit per generic key of their scalars' values (``past_limit``)
    limit_misses: dict[Any, int] = field(default_factory=dict)

    def find(self, sigma: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             applies: Callable[[Any], bool], by_sigma: dict[Any, list[Any]],
             by_layout: dict[Any, list[Any]]) -> Any | None:
        """The generic version for a call whose exact key has none; registered under that
        key (and its layouts) so that the next call at these sizes finds it as an exact one —
        not for a scalar's value: a stream of values would grow the table without end."""
        for pattern in self.patterns:
            key = generic_key(sigma, pattern)
            for version in self.by_key.get(key, ()) if key is not None else ():
                if applies(version):
                    if any(d == SCALAR_VALUE for _, d in pattern):
                        return version
                    by_sigma[sigma] = [version]
                    layout = array_signature(args) if not kwargs else None
                    if layout is not None:
                        by_layout[layout] = by_sigma[sigma]
                    return version
        return None

    def pattern_for(self, sigma: Any, exact: Sequence[Any], store: Any = None,
                    retry: bool = False) -> Pattern | None:
        """The dimensions to make dynamic for a miss on ``sigma``, given the exact versions'
        signatures and the decisions an earlier process stored (``store``:
        ``dynamic_memory.DecisionStore``); None: compile an exact version. ``retry``: a key
        refused before is tried again (its loops over a count are lifted this time)."""
        if self.mode is False:
            return None
        if self.mode is True:
            pattern = every_dimension(sigma)
        else:
            pattern = None
            for old in exact:
                pattern = changed_dimensions(old, sigma)
                if pattern is not None:
                    break
            if pattern is None and store is not None:  # what an earlier process learned
                pattern = next((p for p in store.patterns(sigma)
                                if generic_key(sigma, p) is not None), None)
            if pattern is not None:  # dimensions dynamic before stay dynamic
                pattern = pattern | frozenset().union(*[
                    p for p in self.patterns if generic_key(sigma, pattern | p) is not None])
        if pattern is None or any(d != SCALAR_VALUE and sigma[0][i][2][d] < 2
                                  for i, d in pattern):
            return None  # traced at 2 or more: a size 1 is compiled exact, generic at the next
        if not retry:  # scalars a capture decided something on (a loop count): generic in the
            pattern = frozenset(p for p in pattern  # others (a rate), a version per value of
                                if not (p[1] == SCALAR_VALUE and p[0] in self.read))  # those
        key = generic_key(sigma, pattern) if pattern else None
        if key is None or (key in self.refused and not retry and
                           not _retried(self.refused[key], sigma, pattern)):
            return None
        return pattern

    def add(self, sigma: Any, pattern: Pattern, version: Any) -> None:
        version.pattern = pattern
        if pattern not in self.patterns:
            self.patterns.append(pattern)
        self.by_key.setdefault(generic_key(sigma, pattern), []).append(version)

    def fell_back(self, sigma: Any, version: Any) -> None:
        """A capture refused (``version`` runs eagerly) at a key with scalar values: at the
        second refusal for other values of the same scalars, every value of them finds this
        eager version as a generic one (``find``) instead of a capture of its own each (a
        function that stores a scalar on an object: 2.5 ms a call, to the version limit)."""
        pattern, key = _every_scalar(sigma)
        if key is None:
            return
        self.eager_values[key] = self.eager_values.get(key, 0) + 1
        if self.eager_values[key] == 2:
            self.add(sigma, pattern, version)

    def past_limit(self, sigma: Any, versions: Sequence[Any]
                   ) -> tuple[Any, list[int], set[tuple[Any, ...]]] | None:
        """A call past the version limit whose key differs from others only in scalar values
        (``f(x, k)`` reading ``int(k)``, a new ``k`` each call): counted per generic key of
        those values; from the ``LIMIT_MISSES``-th on, for an eager entry (a lookup a call,
        not a dispatch: 12.6 us a call of a 2 us function): that key (its scalars' types
        compared), the scalars' positions, and the values compiled ``versions`` of it serve
        (those calls go to the dispatcher, which runs their version). None otherwise."""
        pattern, key = _every_scalar(sigma)
        if key is None:
            return None
        self.limit_misses[key] = self.limit_misses.get(key, 0) + 1
        if self.limit_misses[key] < LIMIT_MISSES:
            return None
        served = served_exactly(sigma, pattern, versions)
        return (key, ()), sorted(i for i, _ in pattern), served[1] if served else set()

    def refuse(self, sigma: Any, pattern: Pattern, why: str, read: frozenset[int] = frozenset()
               ) -> None:
        """``read``: the positions of the scalar arguments the capture decided something on
        (left out of the function's later patterns)."""
        self.refused[generic_key(sigma, pattern)] = (why, _smallest(sigma, pattern), read)
        self.read |= read

    def compile(self, name: str, sigma: Any, pattern: Pattern, capture: Any, args: Sequence[Any],
                run_backend: Callable[[Any], Any], log: Callable[[str, str], None],
                store: Any = None) -> Any:
        """The generic executable of this call's capture, or None (the exact version is
        compiled instead, and this generic key never tried again), logged either way."""
        dims = ", ".join(described(i, d) for i, d in sorted(pattern))
        try:
            executable, env = compile_generic(capture, pattern, args, run_backend)
        except NotGeneric as exc:
            leaves = set(capture.info.get("scalar_read", ()))
            self.refuse(sigma, pattern, str(exc), frozenset(
                i for i, leaf in enumerate(leaf_positions(args)) if leaf in leaves))
            log("recompiles", f"{name}: no size-generic version for dynamic {dims}: {exc}; "
                              "compiling for these exact sizes")
            return None
        pattern = getattr(executable, "pattern", None) or pattern  # with the scalars it took
        log("recompiles", f"{name}: size-generic version for dynamic {dims}: {describe(env)}")
        if store is not None:  # a later process compiles it at its first such call
            store.remember(sigma, pattern)
        return executable


def describe(env: ShapeEnv) -> str:
    """The symbols and guards of a generic version, for logs."""
    symbols = ", ".join(f"{name} = {info.origin} in [{info.low}, "
                        f"{'inf' if info.high >= 2 ** 62 else info.high}] (traced at {info.hint})"
                        for name, info in env.symbols.items())
    guards = "; ".join(f"{g} ({g.site})" for g in env.guards) or "none"
    if not symbols:
        return "scalar arguments as run-time inputs; sizes fixed"
    return f"sizes {symbols}; shape guards: {guards}"


def leaf_positions(args: Sequence[Any]) -> list[int]:
    """The flat leaf index of each top-level argument (its first leaf)."""
    from stax.ir import tree_flatten

    positions, offset = [], 0
    for a in args:
        positions.append(offset)
        offset += len(tree_flatten(a)[0])
    return positions


def _scalars_refusal(program: Any) -> str | None:
    """Why a capture cannot take its scalars as inputs, what ``symbolize`` says first: a data
    gate (a number read from the data, which the scalar may decide: its replay would hold the
    capture's value), an argument updated in place."""
    if program.gates or program.replay is not None:
        return "the function has data gates"
    return None


def compile_generic(capture: Any, pattern: Pattern, args: Sequence[Any],
                    run_backend: Callable[[Any], Any]) -> tuple[Any, ShapeEnv]:
    """The backend's executable for ``capture`` with ``pattern``'s dimensions symbolic, and the
    environment of its sizes and guards; ``NotGeneric`` says why it cannot be."""
    from stax.codegen.instantiate import GenericExecutable
    from stax.ir import CAPTURE_SCHEMA, GraphProgram
    from stax.ir.scalar_inputs import input_refusal, scalar_inputs
    from stax.ir.scalar_predicates import on_inputs
    from stax.ir.sizes import shape_env
    from stax.ir.symbolic_shapes import symbolize

    from .scalar_arguments import ScalarArguments

    positions = leaf_positions(args)
    dynamic: dict[int, list[int]] = {}
    scalars: dict[int, str] = {}  # flat argument -> "int"/"float"
    for i, d in sorted(pattern):
        if d == SCALAR_VALUE:
            flat, value = flat_item(args, positions, i)
            scalars[flat] = value_kind(value)
        else:
            dynamic.setdefault(positions[i], []).append(d)
    program = GraphProgram.from_json(capture.to_json(), CAPTURE_SCHEMA)
    read = capture.info.get("scalar_read", ())
    if scalars:  # the other Python scalars it can take join them: no version per their values,
        for i, a in enumerate(args):  # and every argument an input (the machine-code entry)
            if value_kind(a) is not None and positions[i] not in scalars and \
                    input_refusal(program, positions[i], read, value_kind(a)) is None:
                scalars[positions[i]] = value_kind(a)
                pattern = pattern | {(i, SCALAR_VALUE)}
    env = ShapeEnv()
    with shape_env(env):
        try:  # whatever stops it, the exact version is compiled instead
            why = symbolize(
                program, dynamic, env, frozenset(capture.info.get("shape_read", ())),
                capture.info.get("size_symbols"), capture.info.get("dims_read")) if dynamic \
                else _scalars_refusal(program)  # (scalars alone: no sizes to follow)
            if why is None and scalars:
                why = scalar_inputs(program, scalars, read)
            executable = None if why is not None else run_backend(program)
        except Exception as exc:
            raise NotGeneric(f"{type(exc).__name__}: {exc}") from None
        if why is not None:
            raise NotGeneric(why)
    if env.specializations:
        raise NotGeneric("sizes made exact by " + "; ".join(
            f"{expression}: {where}" for expression, where in env.specializations[:3]))
    pinned = env.specialized_symbols()
    if pinned:  # a decision equated a size with a number: exact in it
        raise NotGeneric("sizes made exact by the guards " + "; ".join(
            f"{g} ({g.site})" for g in env.guards if g.expression.symbols & pinned))
    # the comparisons Python branched on that read a scalar input (the others are decided by
    # the key: an ``eps <= 0`` check of a scalar whose value is in it)
    predicates = on_inputs(capture.info.get("scalar_predicates", ()), set(scalars))
    if not dynamic:  # scalars only: an executable of fixed sizes with them as inputs
        return ScalarArguments.around(executable, program, scalars, pattern, predicates), env
    if not isinstance(executable, GenericExecutable):
        raise NotGeneric("the backend made no size-generic executable")
    for name, (low, high) in executable.symbols.items():  # a plan from the disk cache: its
        env.symbols[name].low, env.symbols[name].high = low, high  # ranges and guards
    env.guards = list(executable.guards)
    if not env.holds(env.hints):
        raise NotGeneric("the stored generic plan's guards exclude these sizes")
    try:  # its machine code now, at the traced sizes: a size the code generator could not
        executable.instance(env.hints)  # take at run time fails here (its IR does not parse)
    except Exception as exc:
        lines = str(exc).strip().splitlines() or [""]
        said = next((line.strip() for line in lines if "error:" in line), lines[-1].strip())
        raise NotGeneric(f"the kernels need a size the code generator takes only as a "
                         f"constant ({type(exc).__name__}: {said})") from None
    return ScalarArguments.around(executable, program, scalars, pattern, predicates), env
