"""What Triton source Stax agrees to run: the form its generator writes, checked before a line of it
is imported (``load_source``).

A CUDA kernels document (``stax.kernels/1.5``) carries its kernels as Triton source, which is
Python text: loading it imports it, and under ``TRITON_INTERPRET=1`` the kernels themselves run
as Python. Issue 10's rule is that no text from a document runs as Python; so a document's
source is admitted only when its syntax tree has the generator's form, checked node by node
against an allow-list (nothing of it is compiled or executed before that):

- the module is the header's three imports (``triton``, ``triton.language as tl``,
  ``libdevice``) and ``@triton.jit`` functions, nothing else;
- a function takes plain parameters (annotated ``tl.constexpr`` at most: no defaults, no
  ``*args``), and its body holds assignments, ``if``/``for``/``while``, ``return``, calls as
  statements and docstrings; no ``import``, ``def``, ``class``, ``lambda``, ``with``, ``try``,
  ``global``, comprehension or ``del``;
- a name read is a parameter, a name the function assigns, a function of the module, ``tl``,
  ``libdevice``, ``float`` or ``range``; those last five and the module's functions are never
  assigned; no name starts with ``__``;
- an attribute is one of an allow-list of ``tl`` functions and dtypes (``tl.load``, ``tl.where``,
  ``tl.math.div_rn``...), of the libdevice functions the interpreter provides (``interpret.py``),
  or ``.to`` / ``.dtype`` of a value; nothing else (no underscores, no module reached through
  another);
- values are numbers, strings, ``True``/``False``/``None``, arithmetic, comparisons, subscripts,
  slices, tuples, lists, conditional expressions and calls of the above (no ``*``/``**``
  arguments).

The text must also be read the same way by everyone: no coding cookie other than UTF-8 (the
module is imported from a UTF-8 file, and ``# coding: utf-7`` would make the import read code the
check never saw), no control characters or Unicode line separators, no ``_``-prefixed keyword
arguments (Triton's own ``_semantic``/``_builder``). So a document can neither import a module nor
call a Python function: ``import os`` or ``os.system(...)`` anywhere is refused
(``UntrustedSourceError`` naming the line), and nothing is written to disk or imported. What
passes is kernel code, and kernel code is code by nature, as the LLVM IR of a CPU document is:
through its pointers a kernel reads and writes memory (the GPU's; the process's under the
interpreter). Load documents only from sources you trust.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from .interpret import FUNCTIONS

HEADER_IMPORTS = ("import triton", "import triton.language as tl",
                  "from triton.language.extra import libdevice")

#: ``tl`` functions and types a kernel may use: what the emitters write, and Triton's other
#: computational functions (no inline assembly, no extern calls, no printing)
TL_NAMES = frozenset({
    # types
    "constexpr", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "bfloat16", "float32", "float64",
    # program, memory
    "program_id", "num_programs", "arange", "full", "zeros", "zeros_like", "load", "store",
    "atomic_add", "atomic_xchg", "atomic_cas", "atomic_max", "atomic_min", "atomic_and",
    "atomic_or", "atomic_xor", "debug_barrier", "multiple_of", "max_contiguous", "max_constancy",
    "range", "static_range", "cast",
    # values
    "where", "broadcast_to", "reshape", "expand_dims", "view", "trans", "permute", "join",
    "split", "abs", "floor", "ceil", "sqrt", "sqrt_rn", "exp", "exp2", "log", "log2", "sin",
    "cos", "rsqrt", "fma", "fdiv", "div_rn", "maximum", "minimum", "clamp", "umulhi",
    # reductions, scans
    "sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "cumsum", "cumprod",
    "associative_scan", "sort",
    "math",
})
#: ``tl.math`` functions a kernel may use
TL_MATH_NAMES = frozenset({"div_rn", "sqrt_rn", "fma", "rsqrt", "floor", "ceil", "abs"})
#: libdevice functions: those the interpreter can run (``interpret.FUNCTIONS``), which are the
#: ones the emitters call
LIBDEVICE_NAMES = frozenset(FUNCTIONS)
#: attributes of a value (``x.to(tl.float64)``, ``x.dtype``)
VALUE_ATTRIBUTES = frozenset({"to", "dtype"})
#: module-level names a kernel reads besides its own and the module's functions
GLOBALS = frozenset({"tl", "libdevice", "float", "range"})

#: the node kinds a kernel's body may hold (each checked further where it names something)
_ALLOWED = frozenset({
    ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While, ast.Return, ast.Pass,
    ast.Break, ast.Continue,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Attribute, ast.Name,
    ast.Constant, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.IfExp, ast.keyword,
    ast.Load, ast.Store,
    *(c for base in (ast.operator, ast.unaryop, ast.boolop, ast.cmpop) for c in base.__subclasses__()),
})


#: characters that some reader of the text could take for a line break where the parser does not
#: (the Unicode line separators, form feeds, lone carriage returns) or that no kernel needs
_ODD_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")

#: sources checked already in this process
_ADMITTED: dict[str, dict[str, tuple[str, ...]]] = {}


class UntrustedSourceError(ValueError):
    """Triton source not of the generator's form: refused before any of it runs."""


def check_source(source: str, origin: str = "the Triton source") -> dict[str, tuple[str, ...]]:
    """Each function's parameter names; ``UntrustedSourceError`` unless ``source`` has the
    generator's form (module docstring). Nothing of ``source`` is compiled or executed here
    (about 4 ms for 7 KB of source, once per source and process)."""
    known = _ADMITTED.get(source)
    if known is not None:
        return known
    odd = _ODD_CHARACTERS.search(source)
    if odd is not None:
        line = source.count("\n", 0, odd.start()) + 1
        raise UntrustedSourceError(f"{origin}, line {line}: the character {odd.group()!r} (refused, "
                                   "nothing of it ran)")
    # the module is imported from a file: a coding cookie would make Python read other text
    # than the text checked here (``# coding: utf-7`` turns ``+AAo-`` into a line break)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source.encode()).readline)
    except SyntaxError as exc:  # an unknown or inconsistent cookie
        raise UntrustedSourceError(f"{origin}: {exc} (refused, nothing of it ran)") from None
    if encoding not in ("utf-8", "utf-8-sig"):
        raise UntrustedSourceError(f"{origin} declares the source encoding {encoding!r} "
                                   "(refused, nothing of it ran): Stax writes UTF-8")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UntrustedSourceError(f"{origin} is not Python Stax generated: "
                                   f"{type(exc).__name__}: {exc}") from None
    functions = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    for name in functions & (GLOBALS | {"triton"}) or [n for n in functions if n.startswith("__")]:
        raise UntrustedSourceError(f"{origin}: a function may not be named {name!r}")
    for i, statement in enumerate(tree.body):
        if i < len(HEADER_IMPORTS):
            if not isinstance(statement, (ast.Import, ast.ImportFrom)) or \
                    ast.unparse(statement) != HEADER_IMPORTS[i]:
                _refuse(origin, statement, f"expected the header line {HEADER_IMPORTS[i]!r}")
        elif isinstance(statement, ast.FunctionDef):
            _check_function(statement, functions, origin)
        else:
            _refuse(origin, statement, "only @triton.jit functions may follow the imports")
    if len(tree.body) < len(HEADER_IMPORTS):
        raise UntrustedSourceError(f"{origin} lacks the header's imports")
    signatures = {s.name: tuple(a.arg for a in s.args.args) for s in tree.body
                  if isinstance(s, ast.FunctionDef)}
    _ADMITTED[source] = signatures
    return signatures


def _refuse(origin: str, node: ast.AST, why: str) -> None:
    line = getattr(node, "lineno", "?")
    try:
        text = ast.unparse(node).splitlines()[0][:80]  # type: ignore[arg-type]
    except Exception:  # an AST node unparse cannot write: its kind says enough
        text = type(node).__name__
    raise UntrustedSourceError(f"{origin}, line {line}: {why} (refused, nothing of it ran): "
                               f"{text}")


def _check_function(fn: ast.FunctionDef, functions: set[str], origin: str) -> None:
    if len(fn.decorator_list) != 1 or not _is(fn.decorator_list[0], "triton", "jit"):
        _refuse(origin, fn, "a function must be decorated with exactly @triton.jit")
    args = fn.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults \
            or fn.returns is not None or getattr(fn, "type_params", None):
        _refuse(origin, fn, "a kernel takes plain parameters only")
    params = set()
    for a in args.args:
        if a.annotation is not None and not _is(a.annotation, "tl", "constexpr"):
            _refuse(origin, a, "a parameter may be annotated tl.constexpr only")
        params.add(a.arg)
    reserved = GLOBALS | functions | {"triton"}
    nodes = [node for statement in fn.body for node in ast.walk(statement)]
    assigned = {n.id for n in nodes if type(n) is ast.Name and type(n.ctx) is ast.Store}
    readable = params | assigned | GLOBALS | functions
    for name in params | assigned:
        if name in reserved or name.startswith("__"):
            _refuse(origin, fn, f"the name {name!r} may not be bound in a kernel")
    for node in nodes:
        if type(node) not in _ALLOWED:
            what = "statement" if isinstance(node, ast.stmt) else "construct"
            _refuse(origin, node, f"a {type(node).__name__} {what} is not kernel code")
        elif isinstance(node, ast.Name):
            if node.id not in readable or node.id.startswith("__"):
                _refuse(origin, node, f"the name {node.id!r} is neither a local, a parameter, a "
                                      "function of the module nor tl/libdevice")
        elif isinstance(node, ast.Constant):
            if not (node.value is None or type(node.value) in (bool, int, float, str)):
                _refuse(origin, node, f"a constant of type {type(node.value).__name__}")
        elif isinstance(node, ast.Attribute):
            _check_attribute(node, origin)
        elif isinstance(node, ast.keyword) and (node.arg is None or node.arg.startswith("_")):
            _refuse(origin, node, "a call with **arguments or a private keyword argument")
        elif isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call) and not (
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            _refuse(origin, node, "an expression statement must be a call or a docstring")


def _is(node: ast.expr, module: str, name: str) -> bool:
    """Whether ``node`` is the expression ``module.name``."""
    return isinstance(node, ast.Attribute) and node.attr == name and \
        isinstance(node.value, ast.Name) and node.value.id == module


def _check_attribute(e: ast.Attribute, origin: str) -> None:
    base = e.value
    if isinstance(base, ast.Name) and base.id == "tl":
        allowed = TL_NAMES
    elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) \
            and base.value.id == "tl" and base.attr == "math":
        allowed = TL_MATH_NAMES
    elif isinstance(base, ast.Name) and base.id == "libdevice":
        allowed = LIBDEVICE_NAMES
    else:
        allowed = VALUE_ATTRIBUTES  # of a value: its own node is checked on its own
    if e.attr not in allowed:
        _refuse(origin, e, f"the attribute {e.attr!r} is not among those kernels use")


__all__ = ["LIBDEVICE_NAMES", "TL_NAMES", "UntrustedSourceError", "check_source"]
