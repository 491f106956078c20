"""The code objects of a function whose loops ``loops.py`` rewrites: its source compiled as it
is must give its own bytecode (``same_code``: a file edited since import is not rewritten),
and the rewritten source is compiled inside a factory whose locals are the helpers the new
code reads from closure cells (``compiled_function``), its loop bodies named after the
user's function (``named_bodies``)."""

from __future__ import annotations
import __future__

import ast
import contextlib
import dis
import functools
import operator
import types
import warnings
from collections.abc import Iterator
from typing import Any

_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, f).compiler_flag
                                                for f in __future__.all_feature_names))


def named_bodies(code: types.CodeType, user: types.CodeType) -> types.CodeType:
    """``code`` with its body functions named after the user's function (``<f: loop at line
    7>``, as a lambda is ``<lambda>``), as tracebacks, capture errors and logs show them, and its
    own qualified name the user's."""
    consts = tuple(named_bodies(c, user) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    changes: dict[str, Any] = {"co_consts": consts}
    if code.co_name.startswith(("__stax_body_", "__stax_whole_")):
        changes["co_name"] = f"<{user.co_name}: loop at line {code.co_firstlineno}>"
        if hasattr(code, "co_qualname"):
            changes["co_qualname"] = changes["co_name"]
    elif code.co_name == user.co_name and hasattr(code, "co_qualname"):
        changes["co_qualname"] = user.co_qualname
    return code.replace(**changes)


def compiled_function(function: ast.FunctionDef, code: types.CodeType,
                      helpers: tuple[str, ...]) -> types.CodeType | None:
    """The code object of ``function`` compiled inside a factory whose locals are ``helpers``
    and the original's free variables, so that it reads them from closure cells (``rewritten``
    fills them)."""
    factory = ast.FunctionDef(
        name="__stax_factory__", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                    kw_defaults=[], defaults=[]),
        body=[*(ast.Assign([ast.Name(n, ast.Store())], ast.Constant(None))
                for n in (*helpers, *code.co_freevars)), function,
              ast.Return(ast.Name(function.name, ast.Load()))], decorator_list=[])
    module = ast.Module([factory], type_ignores=[])
    ast.copy_location(factory, function)
    ast.fix_missing_locations(module)
    try:
        with quiet_compile():
            compiled = compile(module, code.co_filename, "exec",
                               flags=code.co_flags & _FUTURE_FLAGS,
                               dont_inherit=True)  # the user's __future__ imports, not ours
    except (SyntaxError, ValueError):
        return None
    inner = _function_code(compiled, "__stax_factory__")
    return _function_code(inner, code.co_name) if inner is not None else None


#: the filters ``quiet_compile`` puts first for its block
_QUIET = (("ignore", None, SyntaxWarning, None, 0), ("ignore", None, DeprecationWarning, None, 0))


@contextlib.contextmanager
def quiet_compile() -> Iterator[None]:
    """Parsing and compiling the user's source again: its warnings (``1 is 1``: a
    ``SyntaxWarning``; an invalid escape) were the import's to give, not each compile's. The
    filters go into the list itself, not through ``catch_warnings``/``simplefilter``: those
    mark the filters changed, which empties every module's record of the warnings it already
    showed, and a NumPy warning shown once per line came again after each compile (a probe)."""
    filters = warnings.filters
    filters[0:0] = _QUIET
    try:
        yield
    finally:
        for quiet in _QUIET:
            if quiet in filters:
                filters.remove(quiet)


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Same instructions on the same names and constants, nested code objects alike. Line
    numbers and jump offsets aside, and a method load the same as an attribute load: CPython
    picks between them from what the whole module imports, which a function compiled alone
    does not know."""
    if (a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars) != \
            (b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars) or \
            _instructions(a) != _instructions(b) or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not same_code(x, y):
                return False
        elif type(x) is not type(y) or (x != y and not (x != x and y != y)):
            return False
    return True


_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
_NEUTRAL = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "PRECALL"})


def _instructions(code: types.CodeType) -> list[tuple[str, Any]]:
    out = []
    for ins in dis.get_instructions(code):
        if ins.opname in _NEUTRAL:
            continue
        name = "LOAD_ATTR" if ins.opname == "LOAD_METHOD" else ins.opname
        value = None if ins.opcode in _JUMPS or isinstance(ins.argval, types.CodeType) else \
            ins.argval
        out.append((name, value))
    return out


def _function_code(code: types.CodeType, name: str) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    return None


def mangled(tree: ast.AST) -> bool:
    """Private names (``self.__x``) are mangled by the class they are compiled in: not here."""
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else \
            node.attr if isinstance(node, ast.Attribute) else None
        if name and name.startswith("__") and not name.endswith("__"):
            return True
    return False
