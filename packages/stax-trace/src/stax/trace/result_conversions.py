"""Python numbers made from traced values only to be returned: ``return float(loss)``.

``float(x)`` of a traced value is a data gate (spec table 3.2): Python holds a number, and any
use of it may decide what the function does, so the version keeps the number and checks it on
every call by replaying its slice. But a conversion written as an element of the ``return``
statement itself (``return float(loss)``, ``return y, int(x.argmax())``, ``return
{"loss": loss.item()}``) can be used by nothing else: its number is the result. The function's
source is rewritten (with its loops, ``loops.py``) so that such a conversion calls
``converted``, which during capture keeps the traced value and marks it (``Converted``); the
program then returns the value and the result's tree converts it on every call (a "python"
``stax.ir.TreeDef``): no gate, no replay, no version per outcome.

Only conversions directly in the returned displays (tuples, lists, dict values, nested) are
rewritten; ``return float(a) + 1`` is not (Python adds to the number). So is a name bound once,
in the function's own top-level statements, to a conversion and read only there (``loss =
float(...); ...; return {"loss": loss}``): nothing else can see its number either. ``int``,
``float`` and ``bool`` must be the builtins when the call runs (the name is passed, not
assumed).
"""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import TreeDef, tree_flatten, tree_unflatten
from stax.ir.pytree import RESULT_CONVERSIONS

from . import selection_counts
from .proxy import Proxy
from .reach import plain_copy
from .traced_scalars import TracedScalar
from .traced_sizes import TracedNumber, TracedSize

#: the name the rewritten code reads ``converted`` from (a closure cell, as loops.py's helpers)
HELPER = "__stax_result__"
_BUILTINS = {builtins.int: "int", builtins.float: "float", builtins.bool: "bool"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
#: statements whose body's errors code of the function may catch or see: a conversion there
#: must raise where it is written (``int(nan)`` caught by ``except ValueError``)
_HANDLED = (ast.Try, ast.With, ast.AsyncWith, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
#: calls that read the frame's locals (the rewrite's helper among them)
_FRAME_READS = frozenset({"locals", "vars", "eval", "exec", "dir"})


@dataclass(frozen=True)
class Converted:
    """A result the function converts: the traced value, the conversion, and the number eager
    Python returned (what the capture's own call gives back)."""

    proxy: Proxy
    kind: str
    value: Any


def converted(conversion: Any, value: Any) -> Any:
    """``conversion(value)`` (``value.item()`` for None; a builtin's name, ``"int"``, names
    the builtin itself), kept traced when the caller is the function capture runs and
    ``value`` a traced 0-d number."""
    if isinstance(conversion, str):  # a name the rewrite wrapped (``convert_results``)
        if not isinstance(value, Proxy):
            return value  # the name's value as written
        if conversion == "carried":  # a float a lifted loop carried (``carried_floats``);
            if id(value) not in getattr(value.tracer, "carried_floats", ()):  # else as it is
                return value
            conversion = "float"
        conversion = getattr(builtins, conversion)
    elif isinstance(conversion, tuple):  # ``+ - *`` of carried floats and numbers
        # (``arithmetic_results``), given its operands: traced where every traced one is a
        # float a lifted loop carried (an array, a 0-d array of the user's: as it is)
        carried = getattr(value.tracer, "carried_floats", ()) if isinstance(value, Proxy) \
            else ()
        if not carried or not all(id(v) in carried if isinstance(v, Proxy) else
                                  type(v) in (int, float) for v in conversion[1:]):
            return value
        conversion = builtins.float
    kind = "item" if conversion is None else _BUILTINS.get(conversion)
    if kind is None or not isinstance(value, Proxy) or value.tracer.finished or \
            np.ndim(value.value) or np.asarray(value.value).dtype.kind not in "biufc" or \
            not _returns_to_capture(sys._getframe(2)):
        # a recursive or nested call of the function, say: Python holds the number (a gate)
        return value.item() if conversion is None else conversion(value)
    # eager's number (and its errors: ``int(nan)``) from the example, without a gate
    number = RESULT_CONVERSIONS[kind](value.value)
    if isinstance(value.value, np.ndarray):  # a 0-d array: its value now, not after a later
        value = np.copy(value)                # in-place update (``acc += 1`` after ``float(acc)``)
    return Converted(value, kind, number)


def _returns_to_capture(frame: Any) -> bool:
    """Whether the function returning (``frame`` is its caller's) returns the capture's result:
    between it and the capture's call there are only Stax's own wrappers (lifted free values,
    object attributes), no code of the user's (a function calling the one rewritten, itself
    included)."""
    while frame is not None and frame.f_code not in _CAPTURE_CALLERS:
        if not frame.f_globals.get("__name__", "").startswith("stax."):
            return False
        frame = frame.f_back
    return frame is not None


#: the code that calls the function capture runs (``tracer._run_isolated``)
_CAPTURE_CALLERS: set[Any] = set()


def returning_to(caller: Any) -> Any:
    """Declare ``caller`` the function that runs the captured function (a decorator)."""
    _CAPTURE_CALLERS.add(caller.__code__)
    return caller


def rewrite_returns(function: ast.FunctionDef) -> int:
    """Rewrite the conversions in ``function``'s own ``return`` statements (not those of nested
    functions); the number rewritten."""
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FRAME_READS
           for n in ast.walk(function)):
        return 0  # ``locals()`` would show the helper and the marks
    count = 0
    returned: set[int] = set()  # the names read as results, by id of their Name node
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) or isinstance(node, _HANDLED):
            continue  # (a conversion inside ``try``/``with`` may raise into a handler there)
        if isinstance(node, ast.Return) and node.value is not None:
            node.value, found = _in_result(node.value, returned)
            count += found
        stack.extend(ast.iter_child_nodes(node))
    for statement in function.body:  # ``loss = float(...)`` read only as a result
        call = _conversion(statement.value) if isinstance(statement, ast.Assign) else None
        if call is not None and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], ast.Name) and \
                _only_returned(function, statement.targets[0].id, returned):
            statement.value = ast.copy_location(
                ast.Call(ast.Name(HELPER, ast.Load()), list(call), []), statement.value)
            count += 1
    return count


def result_names(function: ast.FunctionDef) -> dict[int, ast.Name]:
    """The names ``function``'s own ``return`` statements read as elements of their results
    (``return x, k``), by id of their Name node: what ``converted`` may keep traced (a loop's
    target after a ``break``, ``loops``); none where the function reads its frame."""
    return {id(e): e for e in _returned_elements(function) if isinstance(e, ast.Name)}


#: the operators of a returned expression of carried floats (``arithmetic_results``): IEEE
#: double arithmetic on Python floats and NumPy float64 alike. Not ``/``, ``//``, ``%`` or
#: ``**``: Python raises (``ZeroDivisionError``, ``OverflowError``) where NumPy gives inf or NaN
EXACT_OPERATORS = (ast.Add, ast.Sub, ast.Mult)


def arithmetic_results(function: ast.FunctionDef) -> dict[int, tuple[ast.expr, list[ast.Name]]]:
    """The elements of ``function``'s own ``return`` displays that are arithmetic of names and
    numbers (``return out, s + i + r``, ``1.0 - s``; ``EXACT_OPERATORS``, unary ``-``/``+``),
    by id of the expression, with the Name nodes they read: where every name is a float a
    lifted loop carried, the expression is the Python float eager computes (``"carried"``)."""
    found: dict[int, tuple[ast.expr, list[ast.Name]]] = {}
    for element in _returned_elements(function):
        names: list[ast.Name] = []
        if isinstance(element, (ast.BinOp, ast.UnaryOp)) and _arithmetic(element, names) and \
                names:
            found[id(element)] = (element, names)
    return found


def _returned_elements(function: ast.FunctionDef) -> list[ast.expr]:
    """The elements of the displays (tuples, lists, dict values, nested) ``function``'s own
    ``return`` statements return, outside ``try``/``with`` bodies; none where the function
    reads its frame (``locals()`` would show the rewrite's helper)."""
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FRAME_READS
           for n in ast.walk(function)):
        return []
    found: list[ast.expr] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) or isinstance(node, _HANDLED):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            _display_elements(node.value, found)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _display_elements(node: ast.expr, found: list[ast.expr]) -> None:
    if isinstance(node, (ast.Tuple, ast.List, ast.Dict)):
        for element in node.elts if not isinstance(node, ast.Dict) else node.values:
            _display_elements(element, found)
    else:
        found.append(node)


def _arithmetic(node: ast.expr, names: list[ast.Name]) -> bool:
    """Whether ``node`` is ``EXACT_OPERATORS`` and unary signs over names and numbers (its
    names appended to ``names``)."""
    if isinstance(node, ast.Name):
        names.append(node)
        return True
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _arithmetic(node.operand, names)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, EXACT_OPERATORS) and _arithmetic(node.left, names) and \
            _arithmetic(node.right, names)
    return False


def convert_results(function: ast.FunctionDef, kinds: dict[int, Any]) -> None:
    """Each Name node of ``kinds`` (result elements, ``result_names``, by id) wrapped in
    ``converted`` with its kind: ``"int"`` (a lifted loop's last item, a counter),
    ``"carried"`` (a float a lifted loop carried) or ``("carried_arithmetic", names)`` (an
    expression of such floats and numbers, ``arithmetic_results``, reading ``names``): any
    Python value as it was, a traced 0-d number a result converted to a Python int (float)
    each call."""
    def visit(node: ast.AST) -> None:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for k, v in enumerate(value):
                    if id(v) in kinds:
                        value[k] = _converted_name(v, kinds[id(v)])
                    elif isinstance(v, ast.AST):
                        visit(v)
            elif isinstance(value, ast.AST):
                if id(value) in kinds:
                    setattr(node, field, _converted_name(value, kinds[id(value)]))
                else:
                    visit(value)
    visit(function)


def _converted_name(name: ast.expr, kind: str | tuple[str, list[ast.Name]]) -> ast.expr:
    """``converted(kind, name)``; an arithmetic element's kind (``"carried_arithmetic"``, its
    names) passes the names' values too: ``converted(("carried_arithmetic", s, i), s + i)``."""
    how: ast.expr = ast.Constant(kind) if isinstance(kind, str) else ast.Tuple(
        [ast.Constant(kind[0]), *[ast.Name(n.id, ast.Load()) for n in kind[1]]], ast.Load())
    call = ast.Call(ast.Name(HELPER, ast.Load()), [how, name], [])
    return ast.copy_location(call, name)


def _only_returned(function: ast.FunctionDef, name: str, returned: set[int]) -> bool:
    """Whether ``name`` is bound once in ``function`` (an assignment, no other binding, no
    global, nonlocal or nested scope naming it) and read only as an element of its results."""
    bound = 0
    for node in ast.walk(function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.name == name and node is not function:
            return False
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return False
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            return False
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Store):
                bound += 1
            elif id(node) not in returned:
                return False  # read elsewhere, deleted, or read by a nested function
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        elif isinstance(node, ast.arg) and node.arg == name:
            return False
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and \
                any((a.asname or a.name).split(".")[0] == name for a in node.names):
            return False
    return bound == 1


def _in_result(node: ast.expr, returned: set[int]) -> tuple[ast.expr, int]:
    elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else \
        node.values if isinstance(node, ast.Dict) else None
    if elements is not None:  # a display: each element in a result position
        found = 0
        for k, element in enumerate(elements):
            elements[k], n = _in_result(element, returned)
            found += n
        return node, found
    if isinstance(node, ast.Name):
        returned.add(id(node))
        return node, 0
    call = _conversion(node)
    if call is None:
        return node, 0
    conversion, value = call
    new = ast.Call(ast.Name(HELPER, ast.Load()), [conversion, value], [])
    return ast.copy_location(new, node), 1


def _conversion(node: ast.expr | None) -> tuple[ast.expr, ast.expr] | None:
    """(the conversion, its operand) of ``int(e)``, ``float(e)``, ``bool(e)`` or ``e.item()``."""
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    if isinstance(node.func, ast.Name) and node.func.id in ("int", "float", "bool") and \
            len(node.args) == 1 and not isinstance(node.args[0], ast.Starred):
        return node.func, node.args[0]
    if isinstance(node.func, ast.Attribute) and node.func.attr == "item" and not node.args:
        return ast.copy_location(ast.Constant(None), node), node.func.value
    return None


def settle(result: Any) -> tuple[Any, Any, dict[int, str]]:
    """The function's result split into what eager Python returned (numbers in place of the
    marks) and what the program returns (the traced values), with the leaf positions converted
    and how."""
    result = _read_keys(result)
    leaves, tree = tree_flatten(result)
    kinds = {k: leaf.kind for k, leaf in enumerate(leaves) if isinstance(leaf, Converted)}
    # eager Python's numbers where a returned one was followed (a scalar argument's, a size):
    # what a capture refused after the function finished returns is eager's, not a stand-in
    numbers = {k for k, leaf in enumerate(leaves) if isinstance(leaf, TracedNumber)}
    if not kinds and not numbers:
        return result, result, {}
    eager = tree_unflatten(tree, [leaf.value if k in kinds or k in numbers else leaf
                                  for k, leaf in enumerate(leaves)])
    if not kinds:
        return eager, result, {}
    traced = tree_unflatten(tree, [leaf.proxy if k in kinds else leaf
                                   for k, leaf in enumerate(leaves)])
    return eager, traced, kinds


def _read_keys(result: Any) -> Any:
    """``result`` with the followed numbers it holds where no program output can be — dict keys
    (``return {a: x * a}``), elements of an object array — read: their values, which the
    version is then exact in (they were the capture's stand-ins, returned on every call)."""
    if type(result) in (tuple, list):
        return type(result)(_read_keys(v) for v in result)
    if type(result) is dict:  # a key's numbers read (a tuple key ``(a, "lr")`` too)
        return {plain_copy(k, _followed, _read): _read_keys(v) for k, v in result.items()}
    if type(result) is np.ndarray and result.dtype == object and \
            any(isinstance(v, TracedNumber) for v in result.flat):
        read = np.empty_like(result)
        for i, v in np.ndenumerate(result):
            read[i] = plain_copy(v, _followed, _read, 0)
        return read
    return result


def _followed(value: Any) -> bool:
    return isinstance(value, TracedNumber)


def _read(number: TracedNumber) -> Any:
    return number.read()


def numbers_returned(tracer: Any, leaves: list[Any], kinds: dict[int, str]) -> dict[int, str]:
    """Python floats computed from the scalar arguments (or one of them), returned: each a
    traced 0-d float64 the program outputs, ``1.0 * t`` (``t`` bit for bit: -0.0, a NaN),
    converted to a Python float, added to ``kinds``. Read, its value was a constant of the
    version and the scalars it came from part of the key: a version per value (a step
    ``return x, t + dt``, a lifted loop's carried time). Likewise a masked selection's length
    (``return t.sum(), len(t)``): the program's count, converted to a Python int."""
    kinds = dict(kinds)
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, TracedScalar) and type(leaf.value) is float and \
                leaf.tracer is tracer and leaf.expression is not None and not tracer.finished:
            one = tracer.created_array("numpy.ones", ((),), {"dtype": "float64"},
                                       np.ones(()), None)
            leaves[k], kinds[k] = np.multiply(one, leaf), "float"
        elif isinstance(leaf, TracedSize) and leaf.tracer is tracer and not tracer.finished:
            count = selection_counts.returned(tracer, leaf.expression)  # ``len(x[m])``
            if count is not None:
                leaves[k], kinds[k] = count, "int"
    return kinds


def converting_tree(tree: TreeDef, kinds: dict[int, str]) -> TreeDef:
    """``tree`` with the leaves at the positions in ``kinds`` converted ("python" nodes)."""
    position = iter(range(tree.num_leaves))

    def walk(node: TreeDef) -> TreeDef:
        if node.kind == "leaf":
            k = next(position)
            return TreeDef("python", (node,), (kinds[k],)) if k in kinds else node
        return TreeDef(node.kind, tuple(walk(c) for c in node.children), node.keys)
    return walk(tree) if kinds else tree
