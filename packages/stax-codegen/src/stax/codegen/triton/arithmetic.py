"""Emitters of the arithmetic loop operators: ``+ - * /``, negation, absolute value, maximum and
minimum with NumPy's NaN rule, copysign, and the correctly rounded IEEE operations. float32
division and square root are spelled ``div_rn``/``sqrt_rn``: Triton's ``/`` and ``tl.sqrt`` are
approximate in float32 (``div.full.f32``, ``sqrt.approx.f32``); float64 ones are IEEE. Kernels
are compiled without contracting ``a * b + c`` into an FMA (``executable.LAUNCH_OPTIONS``), so
every operation rounds once, as NumPy's."""

from __future__ import annotations

from stax.loop import Binary, Const, Ternary, Unary

from .registry import Writer, binary, ternary, unary
from .source import is_float, is_signed

SYMBOLS = {"add": "+", "sub": "-", "mul": "*"}


@binary("add", "sub", "mul")
def add_sub_mul(w: Writer, e: Binary, a: str, b: str) -> str:
    return f"{a} {SYMBOLS[e.op]} {b}"


@ternary("fma")
def fma(w: Writer, e: Ternary, a: str, b: str, c: str) -> str:
    """``a * b + c`` rounded once."""
    return f"tl.fma({a}, {b}, {c})"


@binary("truediv")
def truediv(w: Writer, e: Binary, a: str, b: str) -> str:
    """Float division (the loop layer casts integer operands of ``/`` to a float first)."""
    if e.dtype == "float32":
        return f"tl.math.div_rn({a}, {b})"
    if e.dtype == "float64":
        return f"{a} / {b}"
    raise NotImplementedError(f"no Triton emitter for truediv in {e.dtype}")


@binary("maximum", "minimum")
def maximum_minimum(w: Writer, e: Binary, a: str, b: str) -> str:
    """As NumPy (and the CPU emitter): NaN in ``a`` wins, then NaN in ``b``; ties give ``b``."""
    symbol = ">" if e.op == "maximum" else "<"
    if not is_float(e.dtype):
        return f"tl.where({a} {symbol} {b}, {a}, {b})"
    if isinstance(e.a, Const):  # NaN or not is known now (np.clip's bounds): no 0-d test
        if e.a.value == e.a.value:
            return f"tl.where({a} {symbol} {b}, {a}, {b})"
        return f"tl.where({b} == {b}, {a}, {a})"  # NaN wins: ``a`` in ``b``'s shape
    return f"tl.where(({a} {symbol} {b}) | ({a} != {a}), {a}, {b})"


@binary("copysign")
def copysign(w: Writer, e: Binary, a: str, b: str) -> str:
    return f"libdevice.copysign({a}, {b})"


@unary("neg")
def neg(w: Writer, e: Unary, x: str) -> str:
    """A float is negated as ``x * -1``, exact with every sign: Triton 3.6 compiles ``-x`` to
    ``0 - x``, +0.0 for +0.0 (measured on an H200; 3.9 and the interpreter flip the sign bit).
    An unsigned integer wraps."""
    if is_float(e.dtype):
        return f"{x} * {w.const(-1.0, e.dtype)}"
    return f"{w.const(0, e.dtype)} - {x}"


@unary("abs")
def absolute(w: Writer, e: Unary, x: str) -> str:
    if is_float(e.dtype):
        return f"tl.abs({x})"
    if not is_signed(e.dtype):
        return x
    return f"tl.where({x} < 0, {w.const(0, e.dtype)} - {x}, {x})"  # MIN wraps to MIN, as NumPy


@unary("sqrt")
def sqrt(w: Writer, e: Unary, x: str) -> str:
    return f"tl.sqrt_rn({x})" if e.dtype == "float32" else f"tl.sqrt({x})"


#: correctly rounded IEEE operations, by loop operator
ROUNDING = {"floor": "tl.floor", "ceil": "tl.ceil", "trunc": "libdevice.trunc",
            "rint": "libdevice.rint"}


@unary(*ROUNDING)
def rounding(w: Writer, e: Unary, x: str) -> str:
    return f"{ROUNDING[e.op]}({x})"
