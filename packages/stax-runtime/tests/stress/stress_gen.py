"""The hypothesis strategy that writes stress programs.

``programs(...)`` draws the leaves a program reads (arguments, containers, objects, globals and
closure cells holding arrays, scalars, objects and callables, a random generator), then steps
over the coverage table's operations (``stress_ops``), then the calls to make. Every candidate step
is run on sample values as it is drawn: a step NumPy refuses (a dtype without a loop, shapes that
do not broadcast) is drawn again, and the sample gives the step's dtype and shape for the next
ones. Each value is marked exact or inexact (``stress_ops``); a step that would feed an inexact
value to an operation that is not smooth is refused too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from stress_builder import (
    BIG_SHAPES,
    DTYPES,
    LAYOUTS,
    MAX_STEPS,
    SHAPES,
    Builder,
    Draft,
    Value,
    copy_value,
    shares_memory,
)
from stress_program import PRELUDE, Call, Leaf, Owner, Program, State
from stress_steps import FAMILIES, new_name, weighted


# -- the leaves ---------------------------------------------------------------------------------------
def draw_leaves(b: Builder, *, containers: bool, ids: bool, frozen: bool, still: bool,
                late: bool = False) -> None:
    """Arguments and free variables. ``frozen``: scalars, callables and objects in globals, cells
    and attributes change between calls (else they keep one value); ``ids``: a new configuration
    object at every call (else one object whose attributes are set at every call); ``still``: no
    free variable changes at all (programs that threads call at once); ``late``: module globals
    more often (the late_binding strategy's programs read them before they exist)."""
    counter = {"n": 0}

    def name(prefix: str) -> str:
        counter["n"] += 1
        return f"{prefix}{counter['n']}"

    def array_leaf(ref: str, owner: str, path: list[Any], *, where: str, shape: str = "") -> None:
        dtype = b.choice(DTYPES)
        shape = shape or b.choice(["full", "full", "row", "col", "0d"])
        layout = b.choice(LAYOUTS) if shape != "0d" else "C"
        change = "fresh" if where == "arg" else "fixed" if still else b.choice(["rebind", "inplace"])
        if change == "inplace" and layout == "B":
            layout = "C"
        b.leaves.append(Leaf(ref, owner, path, "array", dtype, shape, layout, change))

    def scalar_leaf(ref: str, owner: str, path: list[Any], *, where: str) -> None:
        kind = b.choice(["float", "int", *(["float32", "float64", "int32", "int64"]
                                            if where == "arg" else [])])
        change = "value" if where == "arg" or frozen else "fixed"
        b.leaves.append(Leaf(ref, owner, path, kind, change=change))

    b.owners.append(Owner("x", "arg", "array"))
    array_leaf("x", "x", [], where="arg", shape="full")
    menu = ["arg_array", "arg_array", "arg_scalar", "object", "global_array", "cell_array",
            "global_scalar", "cell_scalar", "global_object", "global_callable", "cell_callable",
            "cell_object"]
    if containers:
        menu += ["tuple", "list", "dict", "nested"]
    menu += ["global_array"] * 3 * late  # the late_binding trigger reads a module global
    for _ in range(b.draw(st.integers(0, 5))):
        what = b.choice(menu)
        if what == "arg_array":
            n = name("y")
            b.owners.append(Owner(n, "arg", "array"))
            x = b.leaves[0]
            if x.layout != "B" and b.flag(0.2):  # an argument that is (a view of) another one
                b.leaves.append(Leaf(n, n, [], "array", x.dtype, x.shape, x.layout, "fresh",
                                     alias=[0, b.choice(["same", "rev"])]))
            else:
                array_leaf(n, n, [], where="arg")
        elif what == "arg_scalar":
            n = name("s")
            b.owners.append(Owner(n, "arg", "scalar"))
            scalar_leaf(n, n, [], where="arg")
        elif what in ("global_array", "cell_array"):
            n = name("GA" if what == "global_array" else "CA")
            where = what.split("_")[0]
            b.owners.append(Owner(n, where, "array"))
            array_leaf(n, n, [], where=where)
        elif what in ("global_scalar", "cell_scalar"):
            n = name("GS" if what == "global_scalar" else "CS")
            where = what.split("_")[0]
            b.owners.append(Owner(n, where, "scalar"))
            scalar_leaf(n, n, [], where=where)
        elif what in ("global_callable", "cell_callable"):
            n = name("GF" if what == "global_callable" else "CF")
            where = what.split("_")[0]
            b.owners.append(Owner(n, where, "callable"))
            b.leaves.append(Leaf(n, n, [], "callable", change="value" if frozen else "fixed"))
        elif what in ("object", "global_object", "cell_object"):
            where = {"object": "arg", "global_object": "global", "cell_object": "cell"}[what]
            n = name({"arg": "cfg", "global": "GO", "cell": "CO"}[where])
            new = ids if where == "arg" else frozen and b.flag(0.5)
            b.owners.append(Owner(n, where, "object", "new" if new else "same"))
            # an attribute of a config object is a free value like a global: it changes between
            # calls only where the frozen-capture defect is switched on (or the object is new)
            scalar_leaf(f"{n}.scale", n, ["scale"], where="arg" if new else "global")
            if b.flag(0.5):
                array_leaf(f"{n}.w", n, ["w"], where="global")
        else:  # containers of arrays
            kind = "dict" if what == "nested" else what
            n = name({"tuple": "t", "list": "l", "dict": "d"}[kind])
            b.owners.append(Owner(n, "arg", kind))
            keys: list[Any] = ["a", "b"] if kind == "dict" else [0, 1]
            for k in keys:
                array_leaf(f"{n}[{k!r}]", n, [k], where="arg")
            if what == "nested":
                array_leaf(f"{n}['p'][0]", n, ["p", 0], where="arg")
                scalar_leaf(f"{n}['p'][1]", n, ["p", 1], where="arg")
    if b.uses_rng:
        b.owners.append(Owner("rng", "arg", "rng"))


def sample_namespace(b: Builder, program: Program) -> None:
    """Run the prelude and build the first call's values: the namespace steps are tried in."""
    ns: dict[str, Any] = {}
    exec(PRELUDE, ns)
    state = State(program, ns)
    args, globals_, cells = state.build(program.calls[0])
    ns.update(zip(program.params(), args))
    ns.update(globals_)
    ns.update(zip(program.cells(), cells))
    b.namespace = ns
    for i, leaf in enumerate(b.leaves):
        sample = eval(leaf.ref, ns)
        if leaf.kind == "callable":
            b.values.append(Value(leaf.ref, True, sample, "leaf", leaf=i))
            continue
        b.values.append(Value(leaf.ref, True, copy_value(sample), "leaf", leaf=i))
        b.current[i] = len(b.values) - 1
    # aliases: an argument that is another argument (or a view of it)
    for i, leaf in enumerate(b.leaves):
        if leaf.alias is not None:
            b.values[b.current[i]].view_of = b.current[leaf.alias[0]]



# -- the outputs -----------------------------------------------------------------------------------------
def draw_outputs(b: Builder) -> tuple[Any, str] | None:
    """The return value: a value, or a tuple, list or dict of them (nested once)."""
    live = [i for i, v in enumerate(b.values) if v.origin == "step" and not v.stale
            and v.leaf is None]
    if not live:
        return None
    chosen = [live[-1]] + [live[-1 - b.draw(st.integers(0, len(live) - 1))]
                           for _ in range(b.draw(st.integers(0, 2)))]
    form = b.choice(["single", "tuple", "list", "dict", "nested"])
    if form == "single" or (len(chosen) == 1 and form == "nested"):
        return chosen[0], b.t(chosen[0])
    if form in ("tuple", "list"):
        text = ", ".join(b.t(i) for i in chosen)
        return [form, chosen], f"({text},)" if form == "tuple" else f"[{text}]"
    if form == "dict":
        keys = [f"k{j}" for j in range(len(chosen))]
        return (["dict", [[k, i] for k, i in zip(keys, chosen)]],
                "{" + ", ".join(f"{k!r}: {b.t(i)}" for k, i in zip(keys, chosen)) + "}")
    head, rest = chosen[0], chosen[1:]
    return (["dict", [["a", ["tuple", rest]], ["b", head]]],
            "{'a': (" + "".join(b.t(i) + ", " for i in rest) + "), 'b': " + b.t(head) + "}")


# -- the strategy -------------------------------------------------------------------------------------------
@st.composite
def programs(draw: Callable[[Any], Any], *, known: frozenset[str] = frozenset(), still: bool = False,
             big: bool = True, calls: tuple[int, int] = (2, 5),
             modes: tuple[str, ...] = ("default", "ignore")) -> Program:
    """A program, with the calls to make.

    ``known``: the known-defect strategies to draw from (``stress_flags.KNOWN_DEFECTS``); a strategy
    left out keeps its defect's trigger out of the programs; ``still``: nothing
    changes between calls but the arguments, and NumPy's global random state is not used (for
    threads); ``big``: one program in ten on arrays large enough for parallel kernels; ``modes``:
    the np.errstate modes of the calls: NumPy's default, whose heeded events make a call run eagerly,
    and "ignore", where the kernels' own results come back (the ``errstate`` strategy adds the others).
    """
    # a program with a generator argument: one in five, one in two where several draws may be made
    b = Builder(draw, rng_draws=draw(st.integers(0, 9)) < (5 if "draw_order" in known else 2),
                known=known)
    b.global_random = not still and draw(st.integers(0, 19)) == 0
    draw_leaves(b, containers="containers" in known, ids="ids" in known,
                frozen="frozen" in known and not still, still=still, late="late_binding" in known)
    large = big and draw(st.integers(0, 9)) == 0
    shape = draw(st.sampled_from(BIG_SHAPES if large else SHAPES))
    b.max_size = 4 * shape[0] * shape[1] + 64 if large else 4096
    seed = draw(st.integers(0, 2**32 - 1))
    draws = b.uses_rng or b.global_random
    if draws and "decline_draws" not in known:
        modes = ("ignore",)  # nothing declines or reruns a call after it drew: no events heeded
    elif "errstate" in known:
        modes = tuple(dict.fromkeys((*modes, "default", "raise", "ignore", "divide")))
    program = Program(b.owners, b.leaves, [], [], None, "", [], [], 0, [], seed,
                      [Call(draw(st.integers(0, 2**32 - 1)), shape, modes[0])],
                      global_random=b.global_random,
                      late_binding="late_binding" in known and draw(st.integers(0, 2)) == 0,
                      specials=not (draws and "decline_draws" not in known))  # nor NaN/Inf inputs
    sample_namespace(b, program)
    families = weighted(known)
    for _ in range(draw(st.integers(1, MAX_STEPS))):
        for _attempt in range(6):
            if b.commit(FAMILIES[draw(st.sampled_from(families))][1](b)):
                break
    outputs = draw_outputs(b)
    if outputs is None:  # nothing made: one step that always works
        b.commit(Draft([f"{new_name(b)} = {b.t(0)} * 2"], new_name(b), [0], smooth="lin2"))
        outputs = draw_outputs(b)
        assert outputs is not None
    if "errstate" in known and "dead_warnings" not in known:
        outputs = return_dead(b, outputs, lambda v: True)  # every warning from a live value
    elif "dead_draws" not in known:
        outputs = return_dead(b, outputs, lambda v: v.draw)
    program.ret, program.ret_text = outputs
    program.lines, program.probe_lines, program.steps = b.lines, b.probe, b.steps
    program.exact = [v.exact for v in b.values]
    program.n_values = len(b.values)
    program.effects = side_effects(b)
    for _ in range(draw(st.integers(*calls)) - 1):
        new_shape = draw(st.sampled_from(SHAPES)) if not (large or still) and \
            draw(st.integers(0, 3)) == 0 else shape
        program.calls.append(Call(draw(st.integers(0, 2**32 - 1)), new_shape,
                                  draw(st.sampled_from(list(modes)))))
    return program


def return_dead(b: Builder, outputs: tuple[Any, str], which: Callable[[Value], bool]
                ) -> tuple[Any, str]:
    """Return the values nothing uses (those ``which`` selects), too: a dropped draw does not
    advance its generator, a dropped step does not warn (``dead_draws``, ``dead_warnings``)."""
    tree, text = outputs
    made_by = {step.out: step.operands for step in b.steps}
    live: set[int] = set()
    stack = [*_tree_ids(tree), *(i for i, v in enumerate(b.values) if v.leaf is not None
                                 and v.origin == "step")]
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack += made_by.get(i, [])
    dead = [i for i, v in enumerate(b.values) if v.origin == "step" and v.leaf is None
            and which(v) and i not in live and not v.stale]
    if not dead:
        return outputs
    return ["tuple", [tree, *dead]], f"({text}, {', '.join(b.t(i) for i in dead)})"


def _tree_ids(tree: Any) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    kind, items = tree
    return [i for item in items for i in _tree_ids(item[1] if kind == "dict" else item)]


def side_effects(b: Builder) -> list[list[int]]:
    """[leaf, value ids]: each argument array and the in-place results that may have written it
    (its own, or those of an argument it shares memory with); its error bound is their largest."""
    updates = [i for i, v in enumerate(b.values) if v.origin == "step" and v.leaf is not None]
    out = []
    for leaf in sorted(b.current):
        if b.leaves[leaf].kind != "array" or b.owner(leaf).where != "arg":
            continue
        mine = b.namespace_value(leaf)
        writers = [i for i in updates if shares_memory(mine, b.namespace_value(b.values[i].leaf))]
        out.append([leaf, *writers])
    return out
