"""The steps of stress programs: one function per family of operations of the coverage table
(ufuncs, operators, reductions, views, array building, products, data gates, random draws, calls of
free callables, in-place updates of arguments and of locals). Each draws its operands and returns a
``Draft`` (or None when the program has nothing it can use); ``Builder.commit`` tries it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import stress_ops as ops
from hypothesis import strategies as st
from stress_builder import Builder, Draft

OPERATORS_2 = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide",
               "%": "remainder", "**": "power", "&": "bitwise_and", "|": "bitwise_or",
               "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift", "<": "less",
               "<=": "less_equal", "==": "equal", "!=": "not_equal", ">": "greater",
               ">=": "greater_equal"}
OPERATORS_1 = {"-{}": "negative", "+{}": "positive", "~{}": "invert", "abs({})": "absolute"}
VIEWS = ["{}.T", "{}.transpose()", "{}[::-1]", "{}[1:]", "{}[..., ::2]", "{}[..., None]", "{}[None]",
         "np.swapaxes({}, 0, -1)", "np.moveaxis({}, 0, -1)", "np.expand_dims({}, 0)",
         "{}.reshape(-1)", "np.reshape({}, (-1, {}.shape[-1]))", "np.ravel({})", "{}[0]", "{}[-1]",
         "np.squeeze({})", "np.broadcast_to({}, (2,) + {}.shape)", "{}[:, 1:3]", "{}[::-1, ::2]",
         "{}[1]", "{}[[0, -1]]", "np.flip({}, 0)", "np.roll({}, 1, axis=-1)", "{}[..., :1]"]
BUILDERS_1 = ["np.pad({}, 1)", "np.tril({})", "np.triu({}, 1)", "{}.copy()", "np.concatenate([{0}, {0}[::-1]])",
              "np.stack([{0}, {0}], axis=-1)"]
CASTS = ["float32", "float64", "int32", "int64", "bool"]
DRAWS = ["rng.standard_normal({}.shape)", "rng.random({}.shape)", "rng.integers(0, 7, {}.shape)",
         "rng.uniform(-1.0, 1.0, {}.shape)", "rng.normal(0.5, 2.0, {}.shape)",
         "rng.standard_normal({}.shape, dtype=np.float32)", "rng.exponential(1.5, {}.shape)",
         "rng.standard_normal({}.shape[:1])"]
GLOBAL_DRAWS = ["np.random.random({}.shape)", "np.random.standard_normal({}.shape)"]


def new_name(b: Builder) -> str:
    return f"v{len(b.steps)}"


def fam_ufunc1(b: Builder) -> Draft | None:
    name = b.choice(ops.UFUNCS_1)
    a = b.array()
    return Draft([f"{new_name(b)} = np.{name}({b.t(a)})"] if a is not None else [], new_name(b), [a],
                 approx=ops.is_approximate(name), smooth=ops.SMOOTH_UNARY.get(name))


def fam_ufunc2(b: Builder) -> Draft | None:
    name = b.choice(ops.UFUNCS_2)
    a, c = b.array(), b.operand()
    if a is None or c is None:
        return None
    smooth = ops.SMOOTH_BINARY.get(name)
    scalar_second = b.values[c].origin != "step" and not isinstance(b.values[c].sample, np.ndarray)
    if name in ops.SMOOTH_BY_SCALAR and scalar_second and b.values[c].exact:
        smooth = ops.SMOOTH_BY_SCALAR[name]
    operands = [a, c]
    if b.flag(0.2) and name in ops.SMOOTH_BINARY:
        operands = [c, a]
    args = ", ".join(b.t(o) for o in operands)
    # fmax/fmin of 0.0 and -0.0 may come back with the other sign (the fmax_zero_sign defect):
    # without that strategy, exact but for the sign of a zero (an inexact value of bound 0)
    signless = name in ("fmax", "fmin") and "fmax_zero_sign" not in b.known
    return Draft([f"{new_name(b)} = np.{name}({args})"], new_name(b), operands,
                 approx=ops.is_approximate(name) or signless, smooth=smooth,
                 exact_rule="same" if signless else "approx")


def fam_ufunc2out(b: Builder) -> Draft | None:
    name = b.choice(ops.UFUNCS_2OUT)
    fn = getattr(np, name)
    a = b.array(exact=True)
    if a is None:
        return None
    operands = [a] if fn.nin == 1 else [a, b.operand()]
    if None in operands:
        return None
    k = b.draw(st.integers(0, 1))
    args = ", ".join(b.t(o) for o in operands)
    return Draft([f"{new_name(b)} = np.{name}({args})[{k}]"], new_name(b), operands)


def fam_operator(b: Builder) -> Draft | None:
    if b.flag(0.25):
        form = b.choice(sorted(OPERATORS_1))
        name = OPERATORS_1[form]
        a = b.array()
        if a is None:
            return None
        return Draft([f"{new_name(b)} = {form.format(b.t(a))}"], new_name(b), [a],
                     smooth=ops.SMOOTH_UNARY.get(name))
    op = b.choice(sorted(OPERATORS_2))
    name = OPERATORS_2[op]
    a, c = b.array(), b.operand()
    if a is None or c is None:
        return None
    if op == "**" and b.flag(0.7):
        c = b.constant(b.choice(["2", "3", "0.5", "-1", "2.0"]))
    smooth = ops.SMOOTH_BINARY.get(name)
    if name in ops.SMOOTH_BY_SCALAR and b.values[c].origin != "step" and \
            not isinstance(b.values[c].sample, np.ndarray):
        smooth = ops.SMOOTH_BY_SCALAR[name]
    operands = [c, a] if b.flag(0.2) and smooth in ("add", "mul", "same") else [a, c]
    return Draft([f"{new_name(b)} = {b.t(operands[0])} {op} {b.t(operands[1])}"], new_name(b), operands,
                 approx=ops.is_approximate(name), smooth=smooth)


def fam_reduce(b: Builder) -> Draft | None:
    name = b.choice(ops.REDUCTIONS)
    a = None
    if "late_binding" in b.known and b.flag(0.5):  # its trigger: a free array reduced on its own
        a = b.pick(lambda v: v.origin == "leaf" and v.leaf is not None and isinstance(
            v.sample, np.ndarray) and v.sample.ndim >= 1 and b.owner(v.leaf).where == "global"
            and b.owner(v.leaf).kind == "array")
    a = b.array(ndim=1) if a is None else a
    if a is None:
        return None
    ndim = b.values[a].sample.ndim
    axis = b.choice([None, 0, -1] + ([1, (0, 1)] if ndim >= 2 else []))
    scan = name in ("cumsum", "cumprod")
    form = b.choice(["method", "function", "ufunc"])
    if form == "ufunc" and name in ("sum", "max", "cumprod"):
        method = {"sum": "np.add.reduce", "max": "np.maximum.reduce",
                  "cumprod": "np.multiply.accumulate"}[name]
        axis = 0 if name == "cumprod" else axis
        expr = f"{method}({b.t(a)}, axis={axis!r})"
    elif form == "function" and not scan:
        keep = b.flag(0.4)
        expr = f"np.{name}({b.t(a)}, axis={axis!r}, keepdims={keep})"
    else:
        expr = f"{b.t(a)}.{name}(axis={axis!r})"
    if scan and isinstance(axis, tuple):
        return None
    exact_rule = ops.EXACT_INPUT_RULE.get(name, "same")
    # max/min of 0.0 and -0.0 may be either, by the order of the reduction: exact but for the
    # sign of a zero, i.e. inexact with a bound of 0 (which keeps them from 1/x and copysign)
    signless = name in ("max", "min")
    return Draft([f"{new_name(b)} = {expr}"], new_name(b), [a],
                 approx=name not in ops.EXACT_REDUCTIONS or signless,
                 smooth=ops.REDUCTION_RULE[name], exact_rule=exact_rule,
                 extra={"axis": list(axis) if isinstance(axis, tuple) else axis, "scan": scan})


def fam_view(b: Builder) -> Draft | None:
    form = b.choice(VIEWS)
    a = b.array(ndim=1)
    if a is None:
        return None
    building = form.startswith(("np.roll", "np.flip"))  # copies, like np.pad
    return Draft([f"{new_name(b)} = {form.replace('{}', b.t(a))}"], new_name(b), [a], smooth="same",
                 view=a, refuse=b.avoid("clip_layout", "clip") if building else frozenset())


def fam_build(b: Builder) -> Draft | None:
    what = b.choice(["where", "clip", "concatenate", "stack", "one", "astype", "creation"])
    if "clip_layout" in b.known and b.flag(0.5):
        what = "clip"
    v = new_name(b)
    if what == "where":
        c, x, y = b.array(exact=True), b.array(), b.operand()
        if None in (c, x, y):
            return None
        cond = b.t(c) if b.values[c].sample.dtype == bool else f"{b.t(c)} > 0"
        return Draft([f"{v} = np.where({cond}, {b.t(x)}, {b.t(y)})"], v, [x, y], smooth="same")
    if what == "clip":
        a = b.array()
        lo, hi = b.choice([("-1", "2"), ("0.5", "3"), ("-3", "-1")])
        if "clip_layout" in b.known and b.flag(0.7):  # its trigger, whole, on an argument
            a = b.pick(lambda v: v.origin == "leaf" and isinstance(v.sample, np.ndarray)
                       and v.sample.ndim == 2) or a
            return None if a is None else Draft([f"{v} = np.pad(np.clip({b.t(a)}, {lo}, {hi})[0], 1)"], v, [a],
                         smooth="same")
        return None if a is None else Draft([f"{v} = np.clip({b.t(a)}, {lo}, {hi})"], v, [a],
                                              smooth="same", tags=frozenset({"clip"}))
    if what in ("concatenate", "stack"):
        a, c = b.array(ndim=1), b.array(ndim=1)
        if a is None or c is None:
            return None
        axis = b.choice([0, -1])
        return Draft([f"{v} = np.{what}([{b.t(a)}, {b.t(c)}], axis={axis})"], v, [a, c],
                     smooth="same", refuse=b.avoid("clip_layout", "clip"))
    if what == "one":
        a = b.array(ndim=1)
        if a is None:
            return None
        form = b.choice(BUILDERS_1)
        return Draft([f"{v} = {form.replace('{}', b.t(a)).replace('{0}', b.t(a))}"], v, [a],
                     smooth="same", refuse=b.avoid("clip_layout", "clip"))
    if what == "astype":
        a = b.array()
        if a is None:
            return None
        to = b.choice(CASTS)
        src = b.values[a].sample.dtype
        smooth = None
        if src.kind == "f" and np.dtype(to).kind == "f":
            smooth = "narrow" if np.dtype(to).itemsize < src.itemsize else "same"
        return Draft([f"{v} = {b.t(a)}.astype(np.{to})"], v, [a], smooth=smooth)
    a = b.array(ndim=1)
    if a is None:
        return None
    form = b.choice([("np.zeros_like({0}) + {0}", "add"), ("{0} + np.ones({0}.shape)", "add"),
                     ("{0} * np.full({0}.shape, 2.0)", "lin2"),
                     ("{0} + np.arange({0}.shape[-1])", "add"),
                     ("{0} * np.linspace(0, 1, {0}.shape[-1])", "lin2")])
    return Draft([f"{v} = {form[0].format(b.t(a))}"], v, [a], smooth=form[1])


def fam_matmul(b: Builder) -> Draft | None:
    a, c = b.array(exact=True, ndim=2), b.array(exact=True, ndim=2)
    if a is None or c is None:
        return None
    A, C = b.t(a), b.t(c)
    form = b.choice([(f"{A} @ {C}.T", [A, f"{C}.T"]), (f"np.matmul({A}, {C}.T)", [A, f"{C}.T"]),
                     (f"np.dot({A}, {C}.T)", [A, f"{C}.T"]),
                     (f"np.einsum('ij,kj->ik', {A}, {C})", [A, f"{C}.T"]),
                     (f"{A} @ np.eye({A}.shape[-1])", [A, f"np.eye({A}.shape[-1])"])])
    return Draft([f"{new_name(b)} = {form[0]}"], new_name(b), [a, c], probe_ops=form[1], approx=True,
                 exact_rule="matmul")


def fam_gate(b: Builder) -> Draft | None:
    """Python reading a traced value: a branch, float(), int(), .item(), iteration (data gates)."""
    a, c = b.array(), b.array(exact=True, ndim=1)
    if a is None or c is None:
        return None
    A, C = b.t(a), b.t(c)
    reduce = "max" if b.values[c].sample.dtype.kind == "f" else "sum"  # exact either way
    k = b.choice(["0", "1.5", "-2"])
    v = new_name(b)
    form = b.choice(["branch", "float", "int", "item", "iterate"])
    if form == "branch":
        return Draft([f"{v} = {A} + 1 if {C}.{reduce}() > {k} else {A} - 1"], v, [a],
                     probe_ops=[A], smooth="add")
    scalar = {"float": f"float({C}.max())", "int": f"int({C}.{reduce}() > {k})",
              "item": f"{C}.max().item()", "iterate": f"sum({C}.reshape(-1)[:3].tolist())"}[form]
    return Draft([f"{v} = {A} * {scalar}"], v, [a, c], probe_ops=[A, scalar], smooth="mul")


def fam_draw(b: Builder) -> Draft | None:
    a = b.array()
    if a is None or not (b.uses_rng or b.global_random):
        return None
    if "draw_order" not in b.known and any(v.draw for v in b.values):
        return None  # two draws may run in another order (the draw_order defect, off by default)
    forms = (DRAWS if b.uses_rng else []) + (GLOBAL_DRAWS if b.global_random else [])
    form = b.choice(forms)
    return Draft([f"{new_name(b)} = {form.format(b.t(a))}"], new_name(b), [], probe_ops=[],
                 draw=True)


def fam_call_free(b: Builder) -> Draft | None:
    f = b.pick(lambda v: v.origin == "leaf" and callable(v.sample))
    a = b.array()
    if f is None or a is None:
        return None
    return Draft([f"{new_name(b)} = {b.t(f)}({b.t(a)})"], new_name(b), [a], smooth="lin2")


def fam_inplace(b: Builder) -> Draft | None:
    """An argument updated in place (the caller sees it): +=, *=, slices, out=, a view's *=."""
    targets = {id(b.values[i]) for leaf, i in b.current.items()
               if b.leaves[leaf].kind == "array" and b.owner(leaf).where == "arg"
               and ("attr_inplace" in b.known or b.owner(leaf).kind != "object")}
    attributes = {id(b.values[i]) for leaf, i in b.current.items()
                  if id(b.values[i]) in targets and b.owner(leaf).kind == "object"}
    t = b.pick(lambda v: id(v) in attributes) if attributes and b.flag(0.7) else None
    t = b.pick(lambda v: id(v) in targets) if t is None else t  # attributes first, when allowed
    if t is None:
        return None
    T = b.t(t)
    form = b.choice(["+=", "-=", "*=", "[1:] =", "[...] =", "[::2] +=", "out_multiply", "out_where",
                     "view", "mask"])
    s = b.scalar()
    if form in ("+=", "-=", "[1:] =", "[...] ="):
        c = b.operand()
        if c is None:
            return None
        if form in ("+=", "-="):
            return Draft([f"{T} {form} {b.t(c)}"], T, [t, c], smooth="add", target=t)
        if not b.fits(f"{T}{form[:-2]}", c):
            return None
        return Draft([f"{T}{form} {b.t(c)}"], T, [t, c], smooth="same", target=t)
    if form == "*=":
        return Draft([f"{T} *= {b.t(s)}"], T, [t, s], smooth="mul", target=t)
    if form == "[::2] +=":
        return Draft([f"{T}[::2] += {b.t(s)}"], T, [t, s], smooth="add", target=t)
    if form == "out_multiply":
        return Draft([f"np.multiply({T}, {b.t(s)}, out={T})"], T, [t, s], smooth="mul", target=t)
    if form == "out_where":
        c, m = b.operand(), b.array(exact=True)
        if c is None or m is None:
            return None
        return Draft([f"np.add({T}, {b.t(c)}, out={T}, where={b.t(m)} > 0)"], T, [t, c],
                     smooth="add", target=t)
    if form == "view":
        w = f"w{len(b.steps)}"
        return Draft([f"{w} = {T}[1:]", f"{w} *= {b.t(s)}"], T, [t, s], smooth="mul", target=t)
    m = b.array(exact=True)
    if m is None:
        return None
    return Draft([f"{T}[{b.t(m)} > 0] = {b.t(s)}"], T, [t, s], smooth="same", target=t)


def fam_setitem(b: Builder) -> Draft | None:
    """A local array written in place: y = a.copy(); y[...] = ..."""
    a, c = b.array(ndim=1), b.operand()
    if a is None or c is None:
        return None
    v = new_name(b)
    key = b.choice(["1:", "::2", "..., 0", "0"])
    if b.flag(0.3):
        m = b.array(exact=True)
        if m is None:
            return None
        key = f"{b.t(m)} > 0"
    if "setitem_broadcast" in b.known and b.flag(0.5):  # its trigger: y[0] = a[:1]
        return Draft([f"{v} = {b.t(a)}.copy()", f"{v}[0] = {b.t(a)}[:1]"], v, [a], smooth="same")
    if not b.fits(f"{b.t(a)}[{key}]", c):
        return None
    return Draft([f"{v} = {b.t(a)}.copy()", f"{v}[{key}] = {b.t(c)}"], v, [a, c], smooth="same")


FAMILIES: dict[str, tuple[int, Callable[[Builder], Draft | None]]] = {
    "ufunc1": (4, fam_ufunc1), "ufunc2": (4, fam_ufunc2), "ufunc2out": (1, fam_ufunc2out),
    "operator": (4, fam_operator), "reduce": (3, fam_reduce), "view": (3, fam_view),
    "build": (2, fam_build), "matmul": (1, fam_matmul), "gate": (1, fam_gate),
    "draw": (1, fam_draw), "call_free": (1, fam_call_free), "inplace": (2, fam_inplace),
    "setitem": (1, fam_setitem),
}
WEIGHTED = [name for name, (w, _) in FAMILIES.items() for _ in range(w)]
#: where a known-defect strategy is on, the families that reach its trigger are drawn more often
BOOSTS = {"draw_order": ["draw"] * 6, "setitem_broadcast": ["setitem"] * 4,
          "clip_layout": ["build"] * 6, "late_binding": ["reduce"] * 3, "attr_inplace": ["inplace"] * 3}


def weighted(known: frozenset[str]) -> list[str]:
    return WEIGHTED + [name for defect in sorted(known & set(BOOSTS)) for name in BOOSTS[defect]]
