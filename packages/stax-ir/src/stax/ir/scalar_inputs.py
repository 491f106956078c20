"""Scalar arguments as run-time inputs of a generic version (issue 15, item 3; issue 14, item 3).

Capture records where a scalar argument was an operand of a traced call (``meta["scalar_args"]``,
``stax.trace.traced_scalars.TracedScalar``) and whether Python decided anything from its value
(``info["scalar_read"]``). ``scalar_inputs`` rewrites such a capture so the argument is an input:

- a Python ``float``/``int``: a 0-d ``float64``/``int64`` placeholder, converted where it is
  used to the dtype NumPy converts a *weak* Python scalar to (NEP 50: ``x_f32 * k`` computes in
  float32, ``k`` rounded to it once) — the ``astype`` NumPy's own conversion does. Only uses
  whose NumPy loop takes the scalar that way are rewritten: element-wise arithmetic,
  comparisons, maxima and ``where`` with floating-point arrays, an ``int`` with int64 arrays
  (every int the input takes, +-2**53, is one of int64's), a ``float`` among ``where``'s
  numbers. ``x ** k`` (NumPy's fast paths for some exponents), other integer arrays (an ``int``
  past the array's range raises) and any other use keep the value in the key;
- a NumPy scalar (kind ``"numpy.float32"``...): *strong* (NEP 50), so NumPy computes with it as
  with a 0-d array of its dtype: the placeholder is that array, used as it is, by the same
  element-wise calls (with arrays of any dtype).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .graph import Node, Opcode
from .meta import TensorMeta
from .ops import SCALAR_OPERATORS
from .program import GraphProgram
from .symbolic_shapes import replaced_argument

#: calls whose weak scalar operand NumPy converts to the floating-point arrays' dtype
WEAK_OPERAND_TARGETS = frozenset({
    "operator.add", "operator.sub", "operator.mul", "operator.truediv",
    "operator.lt", "operator.le", "operator.gt", "operator.ge", "operator.eq", "operator.ne",
    "numpy.add", "numpy.subtract", "numpy.multiply", "numpy.divide", "numpy.true_divide",
    "numpy.less", "numpy.less_equal", "numpy.greater", "numpy.greater_equal", "numpy.equal",
    "numpy.not_equal", "numpy.maximum", "numpy.minimum", "numpy.fmax", "numpy.fmin",
    "numpy.where", "numpy.clip",
    "operator.pow", "numpy.power",  # a float array's exponent: ``to_opgraph.arithmetic._power``
})
POWERS = frozenset({"operator.pow", "numpy.power"})
#: those taking a weak Python complex: arithmetic (NumPy orders complex numbers by parts, which
#: the kernels do not)
COMPLEX_OPERAND_TARGETS = frozenset({
    "operator.add", "operator.sub", "operator.mul", "operator.truediv", "numpy.add",
    "numpy.subtract", "numpy.multiply", "numpy.divide", "numpy.true_divide"})
#: a lifted loop's step takes a scalar input as the 0-d array itself: its runner hands the body
#: the Python (or NumPy) number again (``stax.runtime.lifted_loops``), which nothing rounds
TAKEN_WHOLE = frozenset({"stax.functional.lifted_loop"})
#: ``x[key] = value``: a scalar stored into a float array converts to its dtype (``_stored_dtype``)
STORE = "stax.functional.setitem"
#: ``np.array([s, i, r])`` of scalars and numbers (``stax.trace.creation``): likewise
FROM_NUMBERS = "numpy.array"
#: calls filling a new array with a value (``np.full_like(c, lo)``, ``np.full(shape, lo)``)
FILLS = frozenset({"numpy.full_like", "numpy.full"})
#: the keywords of those calls a fill value may come with (the value's own by name)
_FILL_KEYWORDS = frozenset({"fill_value", "dtype"})
ASSIGNING = frozenset({STORE, FROM_NUMBERS, *FILLS})
#: the dtype of the input a scalar argument of each Python type is passed in
INPUT_DTYPES = {"float": "float64", "int": "int64", "complex": "complex128"}


def value_kind(value: Any) -> str | None:
    """The kind of a scalar argument a generic version can take as a run-time input:
    ``"float"``, ``"int"`` or ``"complex"`` (Python's; not a bool), ``"numpy.<dtype>"`` for a
    NumPy integer, float32/float64 or complex64/complex128 scalar of exactly its dtype's type;
    None for anything else."""
    t = type(value)
    if t is float or t is int or t is complex:
        return t.__name__
    if isinstance(value, np.generic) and numpy_kind(value.dtype) is not None and \
            np.dtype(value.dtype.name).type is t:  # not np.longlong, say (another int64 type)
        return f"numpy.{value.dtype.name}"
    return None


def numpy_kind(dtype: np.dtype) -> str | None:
    """``"numpy.<dtype>"`` for the NumPy scalars taken as run-time inputs, else None."""
    if dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize in (4, 8)) or \
            (dtype.kind == "c" and dtype.itemsize in (8, 16)):
        return f"numpy.{dtype.name}"
    return None


def input_dtype(kind: str) -> str:
    """The dtype of the 0-d input of a scalar of ``kind`` (``"float"``, ``"numpy.int32"``)."""
    return INPUT_DTYPES[kind] if kind in INPUT_DTYPES else kind.split(".", 1)[1]


def _strong(kind: str) -> bool:
    return kind not in INPUT_DTYPES  # a NumPy scalar: its own dtype, no weak conversion


def scalar_inputs(program: GraphProgram, leaves: Mapping[int, str],
                  read: Sequence[int] = ()) -> str | None:
    """Make each flat argument ``leaf`` (of kind ``leaves[leaf]``: ``"float"``, ``"int"``,
    ``"numpy.float32"``...) an input of ``program``, in place; None when done, else why not
    (the program may then be half rewritten: rewrite a copy). ``read``: the arguments Python
    decided something from (capture's ``info["scalar_read"]``)."""
    graph = program.graph
    taken = {str(n.target) for n in graph.nodes if n.op is Opcode.PLACEHOLDER}
    first = next((n for n in graph.nodes if n.op is not Opcode.PLACEHOLDER), None)
    if first is None:
        return "the graph has no operation"
    for leaf, kind in sorted(leaves.items()):
        why = input_refusal(program, leaf, read, kind)
        if why is not None:
            return why
    placeholders: dict[int, Node] = {}
    for leaf, kind in sorted(leaves.items()):
        name = next(f"scalar{leaf}" + "_" * k for k in range(len(taken) + 1)
                    if f"scalar{leaf}" + "_" * k not in taken)
        # among the placeholders in argument order (an executable's inputs are in graph
        # order): before the next argument's, else after the last
        later = [program.inputs[i] for i in range(leaf + 1, len(program.inputs))
                 if program.inputs[i] is not None]
        by_target = {str(n.target): n for n in graph.nodes if n.op is Opcode.PLACEHOLDER}
        at = by_target.get(str(later[0])) if later else None
        with graph.inserting_before(at if at is not None else first):
            placeholders[leaf] = graph.placeholder(
                name, {"tensor": TensorMeta((), input_dtype(kind), ())})
        program.inputs[leaf] = placeholders[leaf].target
    pinned, general = _pinned(program)
    for node in list(graph.nodes):
        uses = [(path, used) for path, used in node.meta.get("scalar_args", ())
                if leaves_of(used) & placeholders.keys()]
        # the dtypes weak scalars convert to, before any operand is rewritten
        targets = {k: _weak_dtype(node, k) for k in ("int", "float", "complex")} if uses else {}
        stored = {id(path): _stored_dtype(node, path) for path, _ in uses} \
            if node.target in ASSIGNING else {}
        for path, used in uses:
            with graph.inserting_before(node):
                if isinstance(used, list):  # a number computed in Python from arguments
                    value = _computed(graph, used, placeholders)
                    kind = expression_kind(used)
                else:  # a NumPy scalar: the 0-d array of its own dtype
                    value, kind = placeholders[used], leaves[used]
                cast = value
                if not isinstance(used, list) and used in general and \
                        node.target in POWERS:  # pow serves it: ``to_opgraph.arithmetic._power``
                    node.meta["exponent_not_fast"] = True
                if not isinstance(used, list) and used in pinned:  # its version's only value
                    cast = pinned[used]
                elif node.target == INDEXING:  # the int64 itself (NumPy's integer index)
                    if np.dtype(input_dtype(kind)) != np.int64:
                        cast = graph.call_method("astype", (value, "int64"), name=f"{value.name}_as",
                                                 meta={"tensor": TensorMeta((), "int64", ())})
                elif not _strong(kind) and node.target not in TAKEN_WHOLE:
                    target = stored[id(path)] if node.target in ASSIGNING else targets[kind]
                    assert target is not None  # input_refusal said so
                    cast = graph.call_method("astype", (value, target), name=f"{value.name}_as",
                                             meta={"tensor": TensorMeta((), target, ())})
                    if kind == "int" and np.dtype(target).kind in "iu" and target != "int64":
                        cast = _in_range(graph, value, cast, target)
                    elif kind == "float" and target in ("float32", "float16"):
                        cast = _finite_cast(graph, value, cast, target)
            if node.target == INDEXING:  # a copy at the call's index (``_read_only``)
                node.meta.pop("view", None)
            where, *rest = path
            if where == "args":
                node.set_args(replaced_argument(node.args, rest, cast), node.kwargs)
            else:
                node.set_args(node.args, replaced_argument(node.kwargs, rest, cast))
    return None


#: true division of integer arrays: a weak int converts to their dtype, the quotient is float64
_TRUE_DIVISIONS = frozenset({"operator.truediv", "numpy.divide", "numpy.true_divide"})


def weak_int_target(node: Node) -> str | None:
    """The dtype NumPy converts a weak Python ``int`` operand of ``node`` to (as ``_weak_dtype``
    says, and the integer arrays' dtype where they are divided: ``n_int64 / 3``), or None
    where ``node`` takes an int otherwise."""
    target = _weak_dtype(node, "int")
    if target is not None or node.target not in _TRUE_DIVISIONS or node.kwargs:
        return target
    arrays = {a.tensor.dtype for a in node.args if isinstance(a, Node) and a.tensor is not None}
    if len(arrays) == 1 and np.dtype(next(iter(arrays))).kind in "iu" and \
            node.tensor is not None and node.tensor.dtype == "float64":
        return next(iter(arrays))
    return None


def weak_int_cast(graph: Any, value: Node, target: str) -> Node:
    """The 0-d int64 ``value`` converted to ``target`` as NumPy converts a weak Python int
    (``weak_int_target``): declining where it does not fit an integer ``target``."""
    if target == "int64":
        return value
    cast = graph.call_method("astype", (value, target), name=f"{value.name}_as",
                             meta={"tensor": TensorMeta((), target, ())})
    return _in_range(graph, value, cast, target) if np.dtype(target).kind in "iu" else cast


def _pinned(program: GraphProgram) -> tuple[dict[int, Any], set[int]]:
    """The arguments a recorded predicate pins to one value (``p == 2.0`` came out True: the
    version applies to that value alone), with their values, taken as constants where they are
    used (``x ** p``: NumPy's square at 2.0, ``stax.trace.traced_scalars.FAST_EXPONENTS``); and
    those recorded unequal to each of the fast exponents (pow serves them)."""
    pinned: dict[int, Any] = {}
    unequal: dict[int, set[float]] = {}
    for name, left, right, outcome in program.info.get("scalar_predicates", ()):
        if name == "eq" and left[0] == "arg" and right[0] == "const":
            if outcome and number(*right[-2:]) != 0:  # (0.0 == -0.0: not one value)
                pinned[left[1]] = number(*left[-2:])
            else:
                unequal.setdefault(left[1], set()).add(float.fromhex(right[-1]))
    return pinned, {leaf for leaf, values in unequal.items() if values >= set(FAST_EXPONENTS)}


def input_refusal(program: GraphProgram, leaf: int, read: Sequence[int] = (),
                  kind: str = "float") -> str | None:
    """Why flat argument ``leaf`` (a scalar of ``kind``) cannot be an input of ``program``, or
    None: the function decided something from its value, or a traced call takes it other than
    as a weak scalar of float arrays (a NumPy scalar: other than as an element-wise operand).
    Nothing is rewritten."""
    if leaf in set(read):
        return f"the function reads argument {leaf}'s value in Python (a branch, a conversion, " \
            "range(), or arithmetic Stax does not follow)"
    recorded = False  # a node records a use of it
    for node in program.graph.nodes:
        uses = [(path, kind if used == leaf else expression_kind(used))
                for path, used in node.meta.get("scalar_args", ()) if leaf in leaves_of(used)]
        kinds = [k for _, k in uses]
        recorded = recorded or bool(kinds)
        if not kinds or (node.target in TAKEN_WHOLE and not node.kwargs.keys() - {"loop"}):
            continue
        if node.target == INDEXING:
            if any(not _index_use(path, k) for path, k in uses):
                return f"{node.name}: argument {leaf} is an operand of {node.target}() other " \
                       "than an integer index of the array"
            if node.meta.get("view") is not None and not _read_only(node):
                return f"{node.name}: argument {leaf} indexes a view that is returned, viewed " \
                       "again or updated in place"
            continue
        if node.target in ASSIGNING:
            if any(_stored_dtype(node, path) is None for path, _ in uses):
                return f"{node.name}: argument {leaf} is an operand of {node.target}() other " \
                       "than a value converted to a float array's dtype"
            continue
        if any(_strong(k) for k in kinds):
            if not _weak_call(node):
                return f"{node.name}: argument {leaf} is an operand of {node.target}(), " \
                       "which is not an element-wise operation"
        elif any(_weak_dtype(node, k) is None for k in kinds):
            return f"{node.name}: argument {leaf} is an operand of {node.target}(), " \
                   "which takes it other than as a weak scalar of a float array"
    if not recorded and leaf in set((program.info or {}).get("scalar_used", ())):
        # a traced call took it, and a rewrite of the capture lost where: as an input its value
        # would stay the capture's wherever that was (a safety net: rewrites keep the record)
        return f"argument {leaf} was an operand of a traced call that the graph no longer " \
            "records"
    return None


#: ``x[k]``, ``x[i, k]``: an integer argument as an index is a traced integer of the key
#: (``to_opgraph.native_forms``: ``take`` of a 0-d index, NumPy's bounds and negative positions)
INDEXING = "operator.getitem"


def _index_use(path: Sequence[Any], kind: str) -> bool:
    """A Python int (or NumPy integer) that is the key of ``x[key]`` or an element of a tuple
    key. Not a slice's bound: ``x[:n]`` has a length of its own per value."""
    if kind != "int" and not (kind.startswith("numpy.") and np.dtype(kind[6:]).kind in "iu" and
                              kind != "numpy.uint64"):  # (past 2**63 NumPy raises: no int64)
        return False
    where, *rest = path
    return where == "args" and bool(rest) and rest[0] == 1 and len(rest) <= 2 and \
        all(isinstance(p, int) for p in rest)


def _read_only(view: Node) -> bool:
    """Whether a view (``A[i]``, ``A[:, j]``) is only read by operations, none of them a view of
    it, an update through it or the output: its elements may then be a copy at an index the
    call gives (``take``), where NumPy's view object was made at the traced one."""
    return not view.meta.get("aliases") and all(
        user.op in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) and user.target not in ASSIGNING
        and user.meta.get("view") is None and not user.meta.get("aliases") and
        all(v is not view for v in user.kwargs.values()) for user in view.users)


#: exponents NumPy's loop over a scalar exponent computes without pow, bit-exact: a square, sqrt,
#: a reciprocal (``to_opgraph.arithmetic._power``, ``stax.trace.traced_scalars``)
FAST_EXPONENTS = (2.0, 0.5, -1.0)
#: a computed number's operators (``stax.trace.traced_scalars.FOLLOWED_OPERATORS``)
OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
              "truediv": operator.truediv, "neg": operator.neg, "pos": operator.pos,
              "abs": operator.abs, "pow": operator.pow}
#: Python's errors of a float ``**``, which a non-finite result of finite operands stands for
_POW_ERRORS = "a Python float power that overflows, divides zero or is complex " \
    "(OverflowError, ZeroDivisionError, a complex result)"
_F64 = {"tensor": TensorMeta((), "float64", ())}


def leaves_of(used: Any) -> set[int]:
    """The flat arguments a recorded use reads: one argument's index, or an expression's
    (``scalar_predicates`` too)."""
    if not isinstance(used, list):
        return {used}
    if used[0] == "arg":
        return {used[1]}
    return set().union(*(leaves_of(e) for e in used[1:] if isinstance(e, list)))


def number(kind: str, code: Any) -> Any:
    """A recorded number (``[..., kind, code]`` of an expression's argument or constant): an
    int, a Python float from its hex, or a NumPy float64 or float32."""
    value = code if kind == "int" else float.fromhex(code)
    return np.float64(value) if kind == "numpy.float64" else \
        np.float32(value) if kind == "numpy.float32" else value


#: the strong kinds of computed numbers, widest first (NumPy's promotion among its scalars)
_STRONG_FLOATS = ("numpy.float64", "numpy.float32")


def expression_kind(expr: list[Any]) -> str:
    """A computed number's kind: a Python ``float`` (weak) unless a NumPy float took part
    (strong: ``"numpy.float64"``, or ``"numpy.float32"`` where no float64 did, Python numbers
    converted to it, as NEP 50 says); a ufunc of Python numbers alone is NumPy's float64."""
    if expr[0] in ("arg", "const"):  # [..., kind, code]
        return expr[-2] if expr[-2] in _STRONG_FLOATS else "float"
    kinds = {expression_kind(e) for e in expr[1:]}
    strong = next((k for k in _STRONG_FLOATS if k in kinds), None)
    if strong is not None:
        return strong
    return "numpy.float64" if expr[0].startswith("numpy.") else "float"


def _computed(graph: Any, expr: list[Any], placeholders: Mapping[int, Node]) -> Any:
    """The node computing ``expr`` from the scalar inputs, in float64 (float32 where its kind is
    NumPy's float32; an argument that is no input is its recorded value), or its Python value
    where it reads none."""
    head = expr[0]
    if head in ("arg", "const"):
        *_, kind, code = expr
        leaf = expr[1] if head == "arg" else None
        if leaf in placeholders:
            node = placeholders[leaf]
            if kind != "int":
                return node
            return graph.call_method("astype", (node, "float64"), name=f"{node.name}_f64",
                                     meta=dict(_F64))  # exact: within +-2**53 (a guard)
        return number(kind, code)
    operands = [_computed(graph, e, placeholders) for e in expr[1:]]
    if not any(isinstance(o, Node) for o in operands):  # as Python computed it at capture
        if head.startswith("numpy."):
            return getattr(np, head.split(".", 1)[1])(*operands)
        return OPERATORS[head](*operands)
    if head == "truediv" and expression_kind(expr[2]) == "float":  # Python raises on zero
        divisor = operands[1]
        if isinstance(divisor, Node):
            zero = graph.call_function("operator.eq", (divisor, 0.0), name="divisor_zero",
                                       meta={"tensor": TensorMeta((), "bool", ())})
            operands[1] = _declined_where(graph, divisor, zero,
                                          "a Python float divided by zero (ZeroDivisionError)")
    if head == "pow":
        return _python_pow(graph, operands)
    meta = dict(_F64)
    if expression_kind(expr) == "numpy.float32":  # float32 arithmetic: weak operands (Python
        meta = {"tensor": TensorMeta((), "float32", ())}  # numbers' float64) converted first
        operands = [graph.call_method("astype", (o, "float32"), name=f"{o.name}_f32",
                                      meta=dict(meta))
                    if isinstance(o, Node) and expression_kind(e) == "float" else o
                    for o, e in zip(operands, expr[1:])]
    target = head if head.startswith("numpy.") else f"operator.{head}"
    return graph.call_function(target, tuple(operands), name=f"scalar_{head.split('.')[-1]}",
                               meta=meta)


def _in_range(graph: Any, value: Node, cast: Node, dtype: str) -> Node:
    """``cast``, the int64 input ``value`` converted to the integer ``dtype`` of the arrays it
    meets, declining where it does not fit: NumPy raises ``OverflowError`` there (NEP 50)."""
    info, whole = np.iinfo(dtype), np.iinfo(np.int64)
    flag = {"tensor": TensorMeta((), "bool", ())}
    tests = [graph.call_function(op, (value, int(bound)), name=f"{value.name}_{op[9:]}",
                                 meta=dict(flag))
             for op, bound, needed in (("operator.lt", info.min, info.min > whole.min),
                                       ("operator.gt", info.max, info.max < whole.max)) if needed]
    outside = tests[0] if len(tests) == 1 else graph.call_function(
        "numpy.logical_or", tuple(tests), name=f"{value.name}_outside", meta=dict(flag))
    return _declined_where(graph, cast, outside,
                           f"a Python int outside {dtype}'s range (OverflowError)", dtype)


def _finite_cast(graph: Any, value: Node, cast: Node, dtype: str) -> Node:
    """``cast``, the float64 input ``value`` rounded to the narrower float ``dtype`` of the
    arrays it meets, declining where a finite value overflows it: NumPy warns "overflow
    encountered in cast" there (the kernels' own event would name the operation reading it:
    ``x_f32 / 1e300`` reported "overflow encountered in divide"; a probe's find)."""
    flag = {"tensor": TensorMeta((), "bool", ())}
    overflows = graph.call_function("numpy.logical_and", (
        graph.call_function("numpy.isinf", (cast,), name=f"{value.name}_inf", meta=dict(flag)),
        graph.call_function("numpy.isfinite", (value,), name=f"{value.name}_finite",
                            meta=dict(flag))), name=f"{value.name}_overflows", meta=dict(flag))
    return _declined_where(graph, cast, overflows,
                           f"a Python float beyond {dtype}'s range (overflow in cast)", dtype)


def _python_pow(graph: Any, operands: list[Any]) -> Node:
    """Python's ``a ** b`` of floats: C's pow (``libm.py``), declining where Python raises or
    gives a complex number, i.e. where the result is not finite but both operands are."""
    operands = [o if isinstance(o, Node) else float(o) for o in operands]
    power = graph.call_function("stax.functional.python_pow", tuple(operands),
                                name="scalar_pow", meta=dict(_F64))
    flag = {"tensor": TensorMeta((), "bool", ())}
    bad = graph.call_function("numpy.logical_not", (graph.call_function(
        "numpy.isfinite", (power,), name="pow_finite", meta=dict(flag)),), name="pow_not_finite",
        meta=dict(flag))
    for operand in operands:
        if isinstance(operand, Node):
            finite = graph.call_function("numpy.isfinite", (operand,), name="pow_operand_finite",
                                         meta=dict(flag))
            bad = graph.call_function("numpy.logical_and", (bad, finite), name="pow_error",
                                      meta=dict(flag))
        elif not math.isfinite(operand):
            return power  # a non-finite operand: Python gives C's value
    return _declined_where(graph, power, bad, _POW_ERRORS)


def _declined_where(graph: Any, value: Node, bad: Node, why: str,
                    dtype: str = "float64") -> Node:
    """``value`` (0-d, of ``dtype``), on the condition that ``bad`` is false: else the call
    declines, and NumPy (Python) gives its error eagerly."""
    return graph.create_node(Opcode.CALL_FUNCTION, "stax.functional.decline_if", (value, bad),
                             {"why": why}, name="decline_if",
                             meta={"tensor": TensorMeta((), dtype, ())})


def _stored_dtype(node: Node, path: Sequence[Any]) -> str | None:
    """The dtype a scalar (weak or strong) stored by ``x[key] = value`` converts to: ``x``'s,
    where ``x`` is a float or complex array and the scalar is the value or an element of a list or tuple
    value (``out[k] = s, i, r``): NumPy's assignment casts it as ``astype`` does; in
    ``np.array([s, i, r])`` of a float dtype, that dtype. None for a scalar in the key, or
    stored into an integer or bool array (a float's cast of NaN or a large value, an int past
    the range: NumPy's own errors)."""
    if node.op is not Opcode.CALL_FUNCTION:
        return None
    if node.target in FILLS:  # the fill value, cast to the new array's float dtype (NumPy's
        # ``copyto``: as ``astype`` casts it)
        where = ("args", 1) if len(node.args) >= 2 else ("kwargs", "fill_value")
        filled = tuple(path) == where and len(node.args) <= 2 and \
            set(node.kwargs) <= _FILL_KEYWORDS and node.tensor is not None
        return node.tensor.dtype if filled and np.dtype(node.tensor.dtype).kind == "f" else None
    if node.target == FROM_NUMBERS:  # np.array([s, i, r]): each converted to the array's dtype
        flat = len(path) == 3 and tuple(path[:2]) == ("args", 0) and \
            not set(node.kwargs) - {"dtype"}
        return node.tensor.dtype if flat and node.tensor is not None and \
            np.dtype(node.tensor.dtype).kind == "f" else None
    if node.target != STORE or node.kwargs or \
            len(path) < 2 or tuple(path[:2]) != ("args", 2) or len(node.args) != 3:
        return None
    x = node.args[0]
    if not isinstance(x, Node) or x.tensor is None or np.dtype(x.tensor.dtype).kind not in "fc":
        return None
    return x.tensor.dtype


#: the keywords of ``np.clip``'s bounds (NumPy 2's ``min``/``max`` and the older names)
CLIP_BOUNDS = frozenset({"a_min", "a_max", "min", "max"})


def _weak_call(node: Node) -> bool:
    """Whether ``node`` takes a scalar as a weak element-wise operand: a call of
    ``WEAK_OPERAND_TARGETS`` with positional operands, or a clip (``np.clip``, ``x.clip``) with
    its bounds given by position or keyword."""
    if node.op is Opcode.CALL_FUNCTION and node.target in WEAK_OPERAND_TARGETS:
        return not node.kwargs or (node.target == "numpy.clip" and
                                   node.kwargs.keys() <= CLIP_BOUNDS)
    return node.op is Opcode.CALL_METHOD and node.target == "clip" and \
        node.kwargs.keys() <= CLIP_BOUNDS


def _weak_dtype(node: Node, kind: str = "int") -> str | None:
    """The dtype NumPy converts a weak scalar operand (a Python ``kind``) of ``node`` to: its
    floating-point array operands' common dtype, or float64 for a float with integer arrays
    (``np.arange(n) * dx``); None where the call takes a scalar otherwise (an int with integer
    arrays: NumPy raises where it does not fit)."""
    if node.target in SCALAR_OPERATORS and kind == "int" and not node.kwargs and \
            node.tensor is not None and np.dtype(node.tensor.dtype).kind in "iu" and \
            all(a.tensor is not None and a.tensor.dtype == node.tensor.dtype
                for a in node.args if isinstance(a, Node)):
        return node.tensor.dtype  # NumPy's scalar math: the int takes the scalars' type
    if not _weak_call(node) or node.tensor is None:
        return None
    arrays = [a.tensor.dtype for a in node.args if isinstance(a, Node) and a.tensor is not None]
    if kind == "complex":  # arithmetic alone, NumPy's weak promotion (``x_f32 * 1j``: complex64)
        if node.target not in COMPLEX_OPERAND_TARGETS or not arrays or \
                any(np.dtype(d).kind not in "biufc" for d in arrays):
            return None
        dtype = np.result_type(*arrays, 1j).name
        return dtype if node.tensor.dtype == dtype else None
    if node.target == "numpy.where":
        arrays = arrays[1:] if node.args and isinstance(node.args[0], Node) else []
        if kind == "float" and not arrays and node.tensor.dtype == "float64":
            return "float64"  # ``np.where(m, alpha, 0.0)``: Python floats alone, float64's
    floats = [d for d in arrays if np.dtype(d).kind == "f" and np.dtype(d).itemsize >= 4]
    if kind == "float" and arrays and all(np.dtype(d).kind in "biu" for d in arrays):
        return "float64" if node.tensor.dtype in ("float64", "bool") else None
    if kind == "int" and arrays and len(set(arrays)) == 1 and np.dtype(arrays[0]).kind in "iu" \
            and node.tensor.dtype in (arrays[0], "bool"):
        # ``x * k``: any int the input takes (+-2**53) is one of int64's; ``x_int32 * k``, where
        # ``k`` fits (else NumPy raises: ``_in_range``)
        return arrays[0]
    if not floats or len(floats) != len(arrays):
        return None
    dtype = np.result_type(*floats).name
    if node.tensor.dtype not in (dtype, "bool"):
        return None
    return dtype
