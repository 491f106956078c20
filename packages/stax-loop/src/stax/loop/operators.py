"""The loop-IR operators (the ``op`` of a ``Unary``, ``Binary`` or ``Ternary`` node), each declared once
(STYLE.md habit 2): its operand and result dtypes, the NumPy function that defines it (the
reference interpreter calls it), the dtype kinds it computes in, and what NumPy reports computing
it (its floating-point events), as facts every backend needs alike.

Everything else is derived from ``OPERATORS``: ``expr.BINARY_OPS``/``UNARY_OPS``/``COMPARISON_OPS``,
the interpreter's tables, the loop lowering of each element-wise op named as an operator (one
operator node, ``elementwise.lower_operator``, unless a rule of its own lowers it) and the CPU
emitter's event tables (``stax.codegen.cpu.fpevents``). A target registers its emitter per
operator by name; completeness tests in each layer fail for an operator one of them lacks.

Adding an operator: declare the op in ``stax.ir.ops`` (its capture target), one ``_declare`` here,
its emitter in each target, a test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stax.ir import comparison_ops, get_op
from stax.ir.libm import python_pow_reference

# NumPy's floating-point status bits (npy_get_floatstatus): the categories of np.errstate
DIVIDE, OVERFLOW, UNDERFLOW, INVALID = 1, 2, 4, 8


@dataclass(frozen=True)
class Events:
    """What an operation with a float result may report. ``inf``: the categories of an infinite
    result from finite operands (``"divisor"``: divide by zero where operand ``zero_operand`` is
    zero, else ``otherwise``); ``nan``: a NaN result from non-NaN operands is invalid (``"any"``:
    every NaN result is, as NumPy's logaddexp reports); ``finite_operands``: the operands whose
    finiteness the infinite case requires (``pow``: only the base, ``0 ** -inf`` divides);
    ``difference``: overflow where ``a - b`` overflows (NumPy's logaddexp subtracts first, and
    reports it even though its result is finite)."""

    inf: int = 0
    nan: bool | str = False
    zero_operand: int | None = None
    otherwise: int = OVERFLOW
    finite_operands: tuple[int, ...] | None = None
    difference: bool = False


@dataclass(frozen=True)
class LoopOperator:
    """One loop operator.

    ``signature``: operand and result dtypes, ``"T,T->T"``: ``T`` is the operator's dtype (of one
    of ``kinds``: ``b`` bool, ``i`` signed, ``u`` unsigned integers, ``f`` floats), a dtype name
    is that dtype, ``U`` another dtype of ``T``'s width (``bitcast``). ``reference``: the NumPy
    function of the operand values (and of the result dtype where it is ``U``), which defines the
    operator. ``events``: the floating-point events its float result may report (None: none);
    ``preserves``: the operands whose non-finite value always gives a non-finite result
    (``x / inf`` is 0, ``exp(-inf)`` is 0: those lose it); ``exact``: its float result is exact,
    never tiny and inexact, so it cannot underflow."""

    name: str
    signature: str
    reference: Callable[..., Any]
    kinds: str
    doc: str = ""
    events: Events | None = None
    preserves: tuple[int, ...] = ()
    exact: bool = False

    @property
    def operands(self) -> tuple[str, ...]:
        return tuple(self.signature.split("->")[0].split(","))

    @property
    def result(self) -> str:
        return self.signature.split("->")[1]

    @property
    def arity(self) -> int:
        return len(self.operands)

    @property
    def comparison(self) -> bool:
        """Two operands of one dtype, a bool result (``lt``, ``eq``...)."""
        return self.signature == "T,T->bool"

    @property
    def uniform(self) -> bool:
        """Every operand of the operator's dtype and the result too, or bool: the operator of an
        element-wise op of the same name, over that op's operands in one dtype."""
        return set(self.operands) == {"T"} and self.result in ("T", "bool")


OPERATORS: dict[str, LoopOperator] = {}


def _declare(name: str, signature: str, reference: Callable[..., Any], kinds: str, doc: str = "",
             **properties: Any) -> None:
    if name in OPERATORS:
        raise ValueError(f"loop operator {name!r} is declared twice")
    OPERATORS[name] = LoopOperator(name, signature, reference, kinds, doc, **properties)


_ARITHMETIC = Events(OVERFLOW, True)
_LOGARITHM = Events(DIVIDE, True)
_DOMAIN = Events(nan=True)
_GROWTH = Events(OVERFLOW)
BINARY, UNARY, TERNARY = "T,T->T", "T->T", "T,T,T->T"


def _fused_multiply_add(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` rounded once (IEEE fusedMultiplyAdd), exactly: finite operands by rational
    arithmetic, then one rounding to the dtype (float32 from float64 rounded to odd, which
    rounds correctly again: 53 >= 24 + 2 bits); special operands as the product and sum give
    them. The reference of ``fma``: slow, for the interpreter and tests."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v) for v in (a, b, c)))
    dtype = np.result_type(a, b, c)
    out = np.empty(a.shape, dtype)
    for at in np.ndindex(a.shape):
        out[at] = _fma_one(float(a[at]), float(b[at]), float(c[at]), dtype)
    return out


def _fma_one(a: float, b: float, c: float, dtype: np.dtype) -> Any:
    from fractions import Fraction
    if not (np.isfinite(a) and np.isfinite(b)):
        return dtype.type(a * b + c)          # an infinite or NaN product, as IEEE
    if not np.isfinite(c):
        return dtype.type(c)                  # a finite product does not change it
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:                            # the sign of an exact zero: IEEE's sum rule
        product_negative = (np.signbit(a) != np.signbit(b))
        negative = product_negative and np.signbit(c) if a * b == 0 else False
        return dtype.type(-0.0 if negative else 0.0)
    try:
        near = float(exact)                   # correctly rounded to float64
    except OverflowError:
        return dtype.type(np.copysign(np.inf, float(exact > 0) - 0.5))
    if dtype == np.float32 and Fraction(near) != exact:
        bits = np.float64(near).view(np.int64)
        if not bits & 1:                      # round to odd: the neighbour toward the exact value
            near = float(np.nextafter(near, np.inf if exact > Fraction(near) else -np.inf))
    with np.errstate(over="ignore"):
        return dtype.type(near)

_declare("add", BINARY, np.add, "iuf", events=_ARITHMETIC, preserves=(0, 1))
_declare("sub", BINARY, np.subtract, "iuf", events=_ARITHMETIC, preserves=(0, 1))
_declare("mul", BINARY, np.multiply, "iuf", events=_ARITHMETIC, preserves=(0, 1))
_declare("truediv", BINARY, np.true_divide, "f", events=Events(DIVIDE, True, zero_operand=1),
         preserves=(0,))
_declare("fma", TERNARY, _fused_multiply_add, "f", "a * b + c rounded once",
         events=_ARITHMETIC, preserves=(0, 1, 2))
_declare("maximum", BINARY, np.maximum, "iuf", exact=True)
_declare("minimum", BINARY, np.minimum, "iuf", exact=True)
_declare("or", BINARY, np.bitwise_or, "biu", "bitwise (logical on bool)")
_declare("and", BINARY, np.bitwise_and, "biu", "bitwise (logical on bool)")
_declare("xor", BINARY, np.bitwise_xor, "biu", "bitwise (logical on bool)")
_SHIFT_DOC = "NumPy's for counts outside [0, bits): 0, or -1 for a negative signed value shifted right"
_declare("shl", BINARY, np.left_shift, "iu", _SHIFT_DOC)
_declare("shr", BINARY, np.right_shift, "iu", _SHIFT_DOC)
_declare("copysign", BINARY, np.copysign, "f", exact=True, preserves=(0,))
_declare("floordiv", BINARY, np.floor_divide, "iu",
         "integer //: 0 for a zero divisor, MIN // -1 wraps (floats: py_floordiv)")
_declare("mod", BINARY, np.remainder, "iu", "integer %: 0 for a zero divisor (floats: py_mod)")
_declare("hypot", BINARY, np.hypot, "f", events=_GROWTH)
_declare("pow", BINARY, np.power, "f", events=Events(DIVIDE, True, zero_operand=0,
                                                     finite_operands=(0,)))
_declare("python_pow", BINARY, python_pow_reference, "f",
         "C's pow in double (Python's float **), rounded to the dtype",
         events=Events(DIVIDE, True, zero_operand=0, finite_operands=(0,)))
_declare("arctan2", BINARY, np.arctan2, "f")
_declare("logaddexp", BINARY, np.logaddexp, "f", events=Events(nan="any", difference=True))
_declare("logaddexp2", BINARY, np.logaddexp2, "f", events=Events(nan="any", difference=True))
_declare("ldexp", "T,int64->T", np.ldexp, "f", "x * 2**n", events=_GROWTH, preserves=(0,))
_declare("py_floordiv", BINARY, np.floor_divide, "f", "float // by NumPy's npy_divmod",
         events=Events(DIVIDE, True, zero_operand=1, otherwise=OVERFLOW | INVALID))
_declare("py_mod", BINARY, np.remainder, "f", "float % by NumPy's npy_divmod",
         events=_ARITHMETIC)
_declare("gcd", BINARY, np.gcd, "iu", "of the magnitudes (MIN's wraps to MIN), gcd(0, 0) = 0")
_declare("lcm", BINARY, np.lcm, "iu", "|a| // gcd(a, b) * |b|, wrapping; 0 when either is 0")
for _name in sorted(comparison_ops()):  # the ops declared comparisons: the operators of the name
    _declare(_name, "T,T->bool", get_op(_name).reference, "biuf")

_declare("neg", UNARY, np.negative, "iuf", exact=True, preserves=(0,))
_declare("abs", UNARY, np.absolute, "iuf", "wraps at MIN, as NumPy", exact=True, preserves=(0,))
_declare("sqrt", UNARY, np.sqrt, "f", events=_DOMAIN, preserves=(0,))
for _name in ("floor", "ceil", "trunc", "rint"):
    _declare(_name, UNARY, getattr(np, _name), "f", exact=True, preserves=(0,))
for _name, _events, _preserves in (
        ("exp", _GROWTH, False), ("log", _LOGARITHM, True), ("tanh", None, False),
        ("sin", _DOMAIN, True), ("cos", _DOMAIN, True), ("log2", _LOGARITHM, True),
        ("log10", _LOGARITHM, True), ("log1p", _LOGARITHM, True), ("expm1", _GROWTH, False),
        ("exp2", _GROWTH, False), ("sinh", _GROWTH, True), ("cosh", _GROWTH, True),
        ("cbrt", None, True), ("arctan", None, False), ("arcsin", _DOMAIN, True),
        ("arccos", _DOMAIN, True), ("arcsinh", None, True), ("arccosh", _DOMAIN, True),
        ("arctanh", _LOGARITHM, True), ("tan", _DOMAIN, True)):
    _declare(_name, UNARY, getattr(np, _name), "f", events=_events,
             preserves=(0,) if _preserves else ())
_declare("signbit", "T->bool", np.signbit, "f", exact=True)
_declare("popcount", "T->uint8", np.bitwise_count, "iu", "the set bits of |x|", exact=True)
# nextafter and spacing step the bits: past the largest float is NumPy's overflow
_declare("bitcast", "T->U", lambda x, dtype: np.asarray(x).view(dtype), "iuf",
         "the operand's bits read as the result dtype", events=_GROWTH, exact=True)


# -- queries: every list of operators elsewhere is one of these ---------------------------------


def get_operator(name: str) -> LoopOperator:
    try:
        return OPERATORS[name]
    except KeyError:
        raise KeyError(f"unknown loop operator {name!r}; known: {sorted(OPERATORS)}") from None


def operator_names(arity: int, comparison: bool = False) -> tuple[str, ...]:
    """The operators of ``arity`` operands that are comparisons, or are not, in declaration
    order."""
    return tuple(name for name, op in OPERATORS.items()
                 if op.arity == arity and op.comparison == comparison)
