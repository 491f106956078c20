"""Entries for calls keyed by plain positional arguments: a version's key checked at the cost of
one comparison per argument.

The dispatcher keys a call that has a non-array argument by its full signature: tree flattening,
device placement, ``float.hex`` of each scalar, the version lookup — 13 µs on a 3-element ODE
right-hand side with three float parameters whose eager call takes 1.3 µs. Once a version keyed
by plain positional arguments (arrays, Python scalars by value, ``None``, strings) has run, the
function's next call goes first to an entry generated from that key: a comparison per argument
(an array's type, shape, strides and dtype; a scalar's type and value, its bits where ``==``
cannot tell: ±0.0, NaN), then

- for a fallback version, the function itself (``eager_entry``);
- for a compiled one, its machine-code entry on the array arguments alone (``native_entry``):
  the scalars are constants of the compiled code; one without a machine-code entry, the
  version as the dispatcher runs it (``version_entry``).

Anything else goes back to the dispatcher, so an entry can only be faster, never different.
Versions with guards beyond the arguments (free values, data gates) get none.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir.scalar_predicates import SYMBOLS, evaluate

from .object_arrays import hidden, own_attributes
from .scalar_arguments import EXACT_INT
from .signature import ARRAY, float_key, numpy_scalar_dtype
from .value_checks import ValueChecks, keyed_apart, scalar_test


class KeyEntry:
    """``function(*args)``: the version's call when ``args`` match its key; ``hits`` counts them.
    ``dispatches``: it runs the version as the dispatcher does (declines handled there), not a
    machine-code entry. ``inner``: the machine-code entry it passes the arrays to, whose hits
    count only the calls that stood (``Version.declined``)."""

    def __init__(self, dispatches: bool = False) -> None:
        self.function: Callable[..., Any] = lambda *args, **kwargs: None
        self.hits = 0
        self.dispatches = dispatches
        self.inner: Any = None


class Redo(Exception):
    """Raised by a machine-code entry's slow path under a key entry: the key entry then hands the
    call, with all its arguments, to the dispatcher."""


def eager_entry(fn: Callable[..., Any], sigma: Any, dispatch: Callable[..., Any],
                served: tuple[list[int], set[tuple[Any, ...]]] | None = None,
                given: CallValues | None = None) -> KeyEntry | None:
    """An entry calling ``fn`` for a fallback version keyed by ``sigma``, or None where its key
    is not plain. ``served``: the positions of scalars and the values of them compiled versions
    serve, which the entry hands to the dispatcher instead."""
    constants: dict[str, Any] = {"fn": fn}
    return _generate(sigma, dispatch, constants, "fn({all})", extra=_unserved(served, constants),
                     given=given)


def _unserved(served: tuple[list[int], set[tuple[Any, ...]]] | None, constants: dict[str, Any]
              ) -> list[str]:
    """The test that the scalars at ``served[0]`` are none of the values ``served[1]`` that
    other versions serve (those calls go to the dispatcher, which runs them)."""
    if served is None or not served[1]:
        return []
    positions, constants["served"] = served
    return [f"({''.join(f'a{i}, ' for i in positions)}) not in served"]


def native_entry(sigma: Any, slots: list[int], function: Callable[..., Any],
                 dispatch: Callable[..., Any], predicates: Sequence[Any] = (),
                 given: CallValues | None = None,
                 served: tuple[list[int], set[tuple[Any, ...]]] | None = None
                 ) -> KeyEntry | None:
    """An entry calling ``function`` (a machine-code entry over the array inputs at ``slots``,
    flat leaves: an item of a list or tuple argument is one, ``a1[0]``; its slow path raises
    ``Redo``) for a compiled version keyed by ``sigma``."""
    constants: dict[str, Any] = {"function": function, "Redo": Redo}
    flat = flat_names(sigma[0])
    return _generate(sigma, dispatch, constants, "function({arrays})", [flat[i] for i in slots],
                     predicates=predicates, given=given, extra=_unserved(served, constants))


def container_items(leaf: Any) -> tuple[Any, ...] | None:
    """The items' keys of a list or tuple argument's key leaf, else None."""
    return leaf[1] if isinstance(leaf, tuple) and len(leaf) == 2 and \
        leaf[0] in ("list", "tuple") and isinstance(leaf[1], tuple) else None


def flat_names(positional: Sequence[Any]) -> list[str]:
    """The expression of each flat leaf of a call keyed by ``positional``: ``a0`` for an
    argument, ``a1[0]`` for an item of a list or tuple of leaves (coefficients, ``(w, b)``)."""
    names = []
    for i, leaf in enumerate(positional):
        items = container_items(leaf)
        names += [f"a{i}"] if items is None else [f"a{i}[{j}]" for j in range(len(items))]
    return names


def _flat_containers(positional: Sequence[Any]) -> bool:
    """Whether every list or tuple argument of a key holds leaves alone (arrays, numbers,
    strings: no container inside), so that ``flat_names`` names every flat leaf."""
    for leaf in positional:
        items = container_items(leaf)
        if items is not None:
            if any(isinstance(item, tuple) and item and item[0] in ("list", "tuple", "dict")
                   for item in items):
                return False
        elif leaf[0] == "dict":
            return False
    return True


def version_entry(sigma: Any, run_version: Callable[..., Any], dispatch: Callable[..., Any],
                  predicates: Sequence[Any] = (), given: CallValues | None = None,
                  served: tuple[list[int], set[tuple[Any, ...]]] | None = None
                  ) -> KeyEntry | None:
    """An entry for a compiled version without machine-code entry (NumPy steps, kernels on the
    thread pool): after the key's comparisons, ``run_version(*args)`` runs it as the dispatcher
    would, without the signature, placement and lookup (7-9 us of a call with a scalar)."""
    constants: dict[str, Any] = {"run_version": run_version}
    return _generate(sigma, dispatch, constants, "run_version({all})", dispatches=True,
                     predicates=predicates, given=given, extra=_unserved(served, constants))


def compiled_entry(make_entry: Callable[..., Any], sigma: Any, leaves: list[Any], slots: list[int],
                   plain: bool, dispatch: Callable[..., Any], predicates: Sequence[Any] = (),
                   given: CallValues | None = None,
                   served: tuple[list[int], set[tuple[Any, ...]]] | None = None) -> Any:
    """The machine-code entry of a compiled version, or a string saying why it has none.
    ``plain``: every argument is an array input (the entry takes the call as it is); otherwise a
    key entry checks the other arguments (scalars, constants of the code) and passes the arrays
    on, where every argument is a top-level positional leaf. A version with ``predicates``
    (comparisons of its scalar inputs, ``stax.ir.scalar_predicates``) always has the key
    entry, which tests them."""
    if plain and not predicates:
        return make_entry(leaves, dispatch)
    if sigma is None:  # (generic in sizes: ``sized_entries.sized_entry`` per size)
        return "its sizes are generic: an entry per size"
    if sigma[1] or not _flat_containers(sigma[0]) or len(flat_names(sigma[0])) != len(leaves):
        return "an argument is a container of containers, or a keyword"
    inner = make_entry([leaves[i] for i in slots], redo)
    if isinstance(inner, str):
        return inner
    entry = native_entry(sigma, slots, inner.function, dispatch, predicates, given, served)
    if entry is None:
        return "an argument's key is not compared by value"
    entry.inner = inner
    return entry


def redo(*args: Any, **kwargs: Any) -> Any:
    """The slow path of a machine-code entry a key entry wraps: its ``except Redo`` hands the
    call to the dispatcher."""
    raise Redo


@dataclass(frozen=True)
class CallValues:
    """The values of the call a key was made from (the free arrays, the ``LiftedAttributes``
    marker and its arrays, the arguments, in the key's order) and the attribute names the
    function's code loads: what an argument object's condition is written from
    (``value_checks.py``)."""

    values: tuple[Any, ...]
    names: frozenset[str]


def _generate(sigma: Any, dispatch: Callable[..., Any], constants: dict[str, Any],
              call: str, arrays: list[str] | None = None, dispatches: bool = False,
              predicates: Sequence[Any] = (), extra: Sequence[str] = (),
              given: CallValues | None = None) -> KeyEntry | None:
    """The comparisons written out as one Python function (as ``dataclasses`` writes
    ``__init__``): a loop over per-argument checks would cost a call each. ``predicates``:
    comparisons of the scalars with the outcomes the version holds, tested after them.
    ``given``: the call the key was made from, whose argument objects get conditions of their
    own (else an object argument gives no entry); the arrays lifted from them are read from
    the objects, after their conditions."""
    positional, keywords = sigma
    if keywords:
        return None
    names = [f"a{i}" for i in range(len(positional))]
    constants.update({"dispatch": dispatch, "ndarray": np.ndarray, "float_key": float_key})
    marker = next((i for i, leaf in enumerate(positional) if leaf[0] == "lifted attributes"),
                  None)
    if marker is not None and given is None:
        return None
    lifted = range(marker, marker + given.values[marker].leaves) if marker is not None else ()
    tests = []
    for k, (name, leaf) in enumerate(zip(names, positional)):
        if k in lifted:
            continue
        # containers of leaves (``flat_names``): their items passed on where the entry takes
        # arrays (not beside an argument object's lifted arrays)
        test = _test(name, leaf, constants) if arrays is not None and marker is not None \
            else _container_test(name, name, leaf, constants)
        if test is None and given is not None and leaf[0] == "object":
            test = _object_test(k, leaf, given, marker, constants)
        if test is None:
            return None
        tests.append(test)
    if marker is not None:
        taken = _lifted_tests(names, positional, marker, given, constants)
        if taken is None:
            return None
        tests += taken
    elif given is not None:
        tests += _apart(names, positional, given, {})
    if predicates and any(leaf[0] in ("tuple", "list", "dict") for leaf in positional):
        return None  # a predicate names flat leaves: here the arguments themselves
    for predicate in predicates:
        test = _predicate_test(predicate, len(names), constants)
        if test is None:
            return None
        tests.append(test)
    tests += extra  # (after the types: values of them)
    entry = constants["entry"] = KeyEntry(dispatches)
    incoming = [n for k, n in enumerate(names) if k not in lifted]
    unpack = f"        {', '.join(incoming)}, = args\n" if incoming else ""
    target = call.format(all=", ".join(names), arrays=", ".join(arrays or ()))
    if arrays is None:
        run = f"            return {target}\n"
    else:
        run = (f"            try:\n                return {target}\n"
               "            except Redo:\n                pass\n")
    # an object's condition reads its attributes: whatever one raises, the dispatcher decides
    condition = f"        if {' and '.join(tests) or 'True'}:\n" if given is None else (
        f"        try:\n            held = {' and '.join(tests) or 'True'}\n"
        "        except Exception:\n            held = False\n        if held:\n")
    source = (
        "def call(*args, **kwargs):\n"
        f"    if not kwargs and len(args) == {len(incoming)}:\n"
        f"{unpack}"
        f"{condition}"
        "            entry.hits += 1\n"
        f"{run}"
        "    return dispatch(*args, **kwargs)\n")
    try:
        constants["__name__"] = __name__  # Stax's code (``straight_line``: not the user's)
        exec(compile(source, "<stax key entry>", "exec"), constants)
    except (SyntaxError, RecursionError, MemoryError):  # nested past the compiler's limits
        return None
    entry.function = constants["call"]
    return entry


def _object_test(k: int, leaf: Any, given: CallValues, marker: int | None,
                 constants: dict[str, Any]) -> str | None:
    """The condition on argument ``a{k}``, an object keyed by ``leaf``, or None; checked on
    the value it was written from (a condition that value fails would never hold)."""
    try:  # (a value nested deeper than the writer recurses: no condition, the dispatcher)
        return _written_object_test(k, leaf, given, marker, constants)
    except Exception:
        return None


def _written_object_test(k: int, leaf: Any, given: CallValues, marker: int | None,
                         constants: dict[str, Any]) -> str | None:
    if keyed_apart(leaf):
        return None
    values = given.values
    skip, lifted = {}, {}
    if marker is not None:
        user = marker + values[marker].leaves
        skip = hidden(values[marker], values[user:])
        lifted = {id(values[user + p]): f"a{user + p}" for p, attr in values[marker].paths
                  if not attr.startswith("=")}
    test = ValueChecks(constants, f"o{k}_", lifted).test(f"a{k}", values[k], given.names, skip)
    try:
        holds = test is not None and eval(  # (it may name the other arguments: ``a5 is not a6``)
            f"lambda {', '.join(f'a{i}' for i in range(len(values)))}: {test}", constants)(*values)
    except Exception:  # a defect of the writer: never the user's call to fail
        holds = False
    return test if holds else None


def _lifted_tests(names: list[str], positional: Any, marker: int, given: CallValues,
                  constants: dict[str, Any]) -> list[str] | None:
    """The lifted arrays bound from their objects (``object_arrays.ObjectArrays.find``) and
    tested as arrays; an object's second place tested as the first one's object."""
    lifted = given.values[marker]
    constants[names[marker]] = lifted  # the marker: a constant of the key
    user = marker + lifted.leaves  # where the arguments start
    tests, same = [], {}
    for j, (position, attr) in enumerate(lifted.paths):
        name = names[marker + 1 + j]
        owner = names[user + position]
        if attr.startswith("="):
            same[user + position] = user + int(attr[1:])
            tests.append(f"(({name} := None) is None)")
            continue
        test = _test(name, positional[marker + 1 + j], constants)
        if test is None:
            return None
        tests.append(f"(({name} := {owner}.__dict__[{attr!r}]) is not None or True) and {test}")
    return [*_apart(names, positional, given, same, user), *tests]


def _apart(names: list[str], positional: Any, given: CallValues, same: dict[int, int],
           user: int = 0) -> list[str]:
    """Object arguments that ``ObjectArrays.find`` takes for one object (``same``: position ->
    the first one's) are one; all others are distinct objects (one passed twice would be
    marked, another key)."""
    objects = [k for k in range(user, len(positional))
               if positional[k][0] == "object" and own_attributes(given.values[k])]
    tests = []
    for i, k in enumerate(objects):
        if k in same:
            tests.append(f"{names[k]} is {names[same[k]]}")
            continue
        tests += [f"{names[k]} is not {names[m]}" for m in objects[:i] if m not in same]
    return tests


def _test(name: str, leaf: Any, constants: dict[str, Any]) -> str | None:
    """The Python condition that ``name`` has the key ``leaf``, its constants put in
    ``constants``; None for a key this entry does not handle."""
    kind = leaf[0]
    if kind == ARRAY:
        if leaf[1] != "cpu":
            return None
        _, _, shape, dtype, strides = leaf
        constants.update({f"{name}_shape": shape, f"{name}_strides": strides,
                          f"{name}_dtype": dtype})
        return (f"type({name}) is ndarray and {name}.shape == {name}_shape and "
                f"{name}.strides == {name}_strides and {name}.dtype == {name}_dtype")
    if len(leaf) == 2 and leaf[1] == "*":  # a run-time input (generic.SCALAR_VALUE)
        if kind in ("float", "complex"):
            return f"type({name}) is {kind}"
        if kind == "int":
            return f"type({name}) is int and -{EXACT_INT} < {name} < {EXACT_INT}"
        if kind.startswith("numpy."):  # a NumPy scalar of exactly this type
            constants[f"{name}_type"] = np.dtype(kind.split(".", 1)[1]).type
            return f"type({name}) is {name}_type"
        return None
    if kind == "NoneType":
        return f"{name} is None"
    if kind == "numpy.random.Generator" and len(leaf) == 2:  # keyed by its bit generator's kind
        constants.update({f"{name}_bits": leaf[1], "Generator": np.random.Generator})
        return f"type({name}) is Generator and type({name}.bit_generator).__qualname__ == " \
            f"{name}_bits"
    value = leaf_scalar(leaf)
    return None if value is NOT_SCALAR else scalar_test(name, value, constants, name)


NOT_SCALAR = object()


def leaf_scalar(leaf: Any) -> Any:
    """The scalar a key leaf describes (``("float", key)``, a NaN by its bits; ``("int", 3)``,
    a bool, a str; a NumPy number's ``(type name, dtype, bytes)``), or ``NOT_SCALAR``. Its
    callers' policies on top: a key entry compares NaNs by bits, a generic version refuses
    them (``generic._scalar_values``)."""
    kind = leaf[0]
    if kind == "float" and len(leaf) == 2 and isinstance(leaf[1], str):
        if leaf[1].startswith("nan:"):  # its bits, which ``float_key`` compares
            return struct.unpack("<d", struct.pack("<Q", int(leaf[1][4:], 16)))[0]
        return float.fromhex(leaf[1])
    if kind in ("int", "bool", "str") and len(leaf) == 2:
        return leaf[1]
    if kind == "complex" and len(leaf) == 3:
        real, imag = (leaf_scalar(("float", part)) for part in leaf[1:])
        return NOT_SCALAR if NOT_SCALAR in (real, imag) else complex(real, imag)
    dtype = numpy_scalar_dtype(leaf)
    if dtype is not None and dtype.kind in "biufc":
        return np.frombuffer(leaf[2], dtype)[0]
    return NOT_SCALAR


def _predicate_test(predicate: Sequence[Any], count: int, constants: dict[str, Any]
                    ) -> str | None:
    """A recorded comparison of the arguments (``stax.ir.scalar_predicates``) and its outcome
    as a Python condition on ``a0...``, its constants put in ``constants``; None where it
    could raise or warn (a division, a NumPy function: the dispatcher tests those)."""
    op, left, right, outcome = predicate

    def source(expr: Sequence[Any]) -> str | None:
        head = expr[0]
        if head == "arg":
            return f"a{expr[1]}" if isinstance(expr[1], int) and expr[1] < count else None
        if head == "const":
            name = f"p{len(constants)}"
            constants[name] = evaluate(expr, {})
            return name
        parts = [source(e) for e in expr[1:]]
        if any(p is None for p in parts):
            return None
        if head in ("neg", "pos") and len(parts) == 1:
            return f"({'-' if head == 'neg' else '+'}{parts[0]})"
        if head == "abs" and len(parts) == 1:
            return f"abs({parts[0]})"
        if head in SYMBOLS and len(parts) == 2:
            return f"({parts[0]} {SYMBOLS[head]} {parts[1]})"
        return None
    a, b = source(left), source(right)
    if a is None or b is None:
        return None
    test = f"{a} {SYMBOLS[op]} {b}"
    return f"({test})" if outcome else f"not ({test})"


def _container_test(expr: str, name: str, leaf: Any, constants: dict[str, Any]) -> str | None:
    """``_test`` of ``expr`` (an argument, or an item of one: ``a0['w']``), a tuple, list or
    dict of such too (a dict's keys strings, in the key's order); ``name`` names its
    constants. A fallback version keyed by a dict of arrays cost 21 us over the eager call."""
    kind = leaf[0]
    items = container_items(leaf)
    if items is not None:
        tests = [f"type({expr}) is {kind}", f"len({expr}) == {len(items)}"]
        for k, item in enumerate(items):
            test = _container_test(f"{expr}[{k}]", f"{name}_{k}", item, constants)
            if test is None:
                return None
            tests.append(test)
        return "(" + " and ".join(tests) + ")"
    if kind == "dict" and len(leaf) == 2 and isinstance(leaf[1], tuple):
        keys = [key for key, _ in leaf[1]]
        if not all(isinstance(k, tuple) and len(k) == 2 and k[0] == "str" for k in keys):
            return None
        constants[f"{name}_keys"] = tuple(k[1] for k in keys)
        constants[f"{name}_types"] = (str,) * len(keys)  # (a str subclass key is no str)
        tests = [f"type({expr}) is dict", f"tuple({expr}) == {name}_keys",
                 f"tuple(map(type, {expr})) == {name}_types"]
        for k, (key, item) in enumerate(leaf[1]):
            constants[f"{name}_k{k}"] = key[1]
            test = _container_test(f"{expr}[{name}_k{k}]", f"{name}_{k}", item, constants)
            if test is None:
                return None
            tests.append(test)
        return "(" + " and ".join(tests) + ")"
    if expr == name:
        return _test(name, leaf, constants)
    # an item: bound to a name of its own first (the tests below name it more than once)
    test = _test(name, leaf, constants)
    return None if test is None else f"(({name} := {expr}) is not None or True) and {test}"


def answers_its_key(version: Any, versions: Any) -> bool:
    """Whether every call of ``version``'s key runs it: the key's only version (no branch), or
    an eager one put first with no gates (``branches._eager_from_now_on``: a key measured
    slower than NumPy, or whose gates keep changing), which the dispatch always picks."""
    versions = list(versions)
    return bool(versions) and versions[0] is version and (
        len(versions) == 1 or (version.gates is None and not version.native))


#: a version's ``eager_key`` where no eager entry can compare its key
UNCOMPARED = object()


#: eager entries a version keeps for the layouts of its skipped calls (``paused_entry``)
MAX_EAGER_ENTRIES = 64


def paused_entry(version: Any, fn: Callable[..., Any], dispatch: Callable[..., Any],
                 resume: Callable[[], None], key: Any = None) -> Callable[..., Any]:
    """The entry of the calls after one that ``version`` skips (``Version.eager_for_now``): its
    key's eager entry (about a lookup a call, not a dispatch) for as many calls as it would
    skip, counted on the version, then ``resume()`` hands the next call to the dispatch, which
    tries the version again. ``key``: the skipped call's own (a size-generic version's calls
    come with other sizes than its sigma's), where the version has no eager key of its own.
    The entries are kept per key on the version: made anew at each skipped call of a generic
    version, their source compiled each time, they cost 45-90 us a call (``x.T @ x``: NumPy's
    1 us)."""
    ahead = version.skips_ahead() if version.eager_key is not UNCOMPARED else 0
    key = version.eager_key or key or version.sigma  # (its own first: a scalars' types one)
    entry = version.eager_entries.get(key) if ahead else None
    if entry is None and ahead:
        entry = eager_entry(fn, key, dispatch)
        if entry is not None:
            if len(version.eager_entries) >= MAX_EAGER_ENTRIES:
                version.eager_entries.clear()
            version.eager_entries[key] = entry
    if entry is None:
        if ahead:  # a key the entry cannot compare (a generator's): not tried again
            version.eager_key = UNCOMPARED
        return dispatch
    eager = entry.function
    left = [ahead]

    def paused(*args: Any, **kwargs: Any) -> Any:
        left[0] -= 1
        version.skipped += 1
        if not left[0]:
            resume()
        return eager(*args, **kwargs)
    return paused


def with_free_values(entry: Any, read: Callable[[], tuple[Any, ...]]) -> Any:
    """``entry`` (made for the call's arguments after a function's free arrays, lifted:
    ``freevars.FreeVariables``) taking the call's own arguments: the free arrays read, then
    compared and run as the entry does (a function reading a module-level array went through
    the dispatcher every call: 5 us, 25 us with a scalar argument, against 1 us eagerly)."""
    inner = entry.function

    def call(*args: Any, **kwargs: Any) -> Any:
        return inner(*read(), *args, **kwargs)
    entry.function = call
    return entry
