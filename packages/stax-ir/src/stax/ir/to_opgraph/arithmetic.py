"""Capture rules for element-wise calls composed of several ops or with forms of their own:
divmod, modf, frexp, fmod, powers, where, rad2deg, relu, astype, copy, conjugate, round (one call that
is one op needs no rule here: ``OpDef.captures`` and ``standard``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from ..meta import TensorMeta
from ..scalar_inputs import FAST_EXPONENTS
from .arguments import bind, operand, result_metas
from .context import LoweringContext, dense_meta
from .registry import NotNative, rule


@rule("numpy.divmod", emits=("floordiv", "mod"))
def _divmod(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> tuple[Node, Node]:
    """(x // y, x % y) as two native ops (the getitem users pick them)."""
    if len(args) != 2 or kwargs:
        raise NotNative
    quotient, remainder = result_metas(node)
    x, y = (operand(a) for a in args)
    return (ctx.emit("floordiv", (x, y), meta=quotient), ctx.emit("mod", (x, y), meta=remainder))


@rule("numpy.modf", emits=("trunc", "sub", "isinf", "where", "copysign"))
def _modf(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> tuple[Node, Node]:
    """(fraction, integral part), both with the sign of x: x - trunc(x) is exact; an infinite x
    has fraction +-0.0, a NaN gives NaN twice."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Node):
        raise NotNative
    fraction_meta, integral_meta = result_metas(node)
    if np.dtype(integral_meta.dtype).kind != "f":
        raise NotNative
    x = args[0]
    integral = ctx.emit("trunc", (x,), meta=integral_meta)
    rest = ctx.emit("sub", (x, integral), meta=fraction_meta)
    infinite = ctx.emit("isinf", (x,),
                        meta=TensorMeta(fraction_meta.shape, "bool", fraction_meta.strides))
    rest = ctx.emit("where", (infinite, 0.0, rest), meta=fraction_meta)
    return (ctx.emit("copysign", (rest, x), meta=fraction_meta), integral)


@rule("numpy.frexp", emits=("frexp_mantissa", "frexp_exponent"))
def _frexp(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> tuple[Node, Node]:
    """(mantissa, exponent) from the float's bits (stax.loop.bits)."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Node):
        raise NotNative
    mantissa, exponent = result_metas(node)
    return (ctx.emit("frexp_mantissa", (args[0],), meta=mantissa),
            ctx.emit("frexp_exponent", (args[0],), meta=exponent))


@rule("numpy.fmod", emits=("abs", "mod", "copysign"))
def _fmod(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """C's fmod for floats: the remainder of |x| by |y| (floored and truncated agree on
    non-negative operands) with the sign of x; inf, NaN and zero divisors as NumPy's (NaN, or x
    for an infinite divisor). Integer fmod runs as NumPy."""
    if len(args) != 2 or kwargs or np.dtype(node.tensor.dtype).kind != "f":
        raise NotNative
    x, y = (operand(a) for a in args)
    magnitudes = [ctx.emit("abs", (v,)) if isinstance(v, Node) else abs(v) for v in (x, y)]
    remainder = ctx.emit("mod", tuple(magnitudes))
    return ctx.emit("copysign", (remainder, x))


@rule("numpy.where", emits=("where",))
def _where(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    if len(args) != 3 or kwargs:
        raise NotNative
    return ctx.emit("where", tuple(operand(a) for a in args))


@rule("operator.pow", "numpy.power", "numpy.pow",
      emits=("pow", "mul", "sqrt", "truediv", "cast", "eq", "logical_or", "where"))
def _power(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """Constant exponents NumPy computes without pow(): 2 (a square), 0.5 (sqrt), -1 (a
    reciprocal) — bit-exact; integer exponents 3 and 4 of integers by multiplication (exact,
    wrapping as NumPy's); any float power by the kernels' ``pow`` (float64 within 1 ulp of the
    exact result, as NumPy's libm call; float32 ``x ** 3`` and ``x ** 4`` the loop layer
    computes from an exact square, within 0.5 ulp + 2^-23: ``stax.loop.elementwise``)."""
    if len(args) != 2 or kwargs:
        raise NotNative
    dtype = node.tensor.dtype
    if np.dtype(dtype).kind == "c":
        # ``z ** 2`` with a Python int is NumPy's square (z * z); np.power(z, 2), ``z ** 2.0``
        # and other exponents go through npy_cpow, whose products are another formula
        if node.target == "operator.pow" and type(args[1]) is int and args[1] == 2 and \
                isinstance(args[0], Node):
            return ctx.emit("mul", (args[0], args[0]))
        raise NotNative
    if _scalar_exponent(node, args) and not node.meta.get("exponent_not_fast"):
        return _power_by_exponent(ctx, node, args[0], args[1])
    if not isinstance(args[0], Node) or \
            not isinstance(args[1], (int, float, np.integer, np.floating)) or \
            isinstance(args[1], (bool, np.bool_)):
        if dtype in ("float32", "float64"):
            return ctx.emit("pow", tuple(operand(a) for a in args))
        raise NotNative
    x, e = args[0], float(args[1])
    floating = np.dtype(dtype).kind == "f"
    if e == 2.0:
        return ctx.emit("mul", (x, x))
    if e == 0.5 and floating:
        return ctx.emit("sqrt", (x,))
    if e == -1.0 and floating:
        return ctx.emit("truediv", (1, x))
    if e in (3.0, 4.0) and not floating:
        square = ctx.emit("mul", (x, x))
        return ctx.emit("mul", (square, x if e == 3.0 else square))
    if dtype in ("float32", "float64"):
        return ctx.emit("pow", (x, args[1]))
    raise NotNative


def _scalar_exponent(node: Node, args: tuple[Any, ...]) -> bool:
    """Whether ``x ** p`` raises a float array to a 0-d exponent of its dtype (a scalar argument
    taken as a run-time input, a reduction's value): NumPy's loop over a scalar exponent takes
    the fast paths of its value then."""
    x, p = args
    dtype = node.tensor.dtype
    return dtype in ("float32", "float64") and isinstance(x, Node) and isinstance(p, Node) and \
        x.tensor.dtype == dtype and p.tensor.dtype == dtype and p.tensor.shape == () and \
        x.tensor.shape != ()


def _power_by_exponent(ctx: LoweringContext, node: Node, x: Node, p: Node) -> Node:
    """``x ** p`` for a 0-d ``p`` known only when the call runs: NumPy's loop over a scalar
    exponent squares for 2, takes sqrt for 0.5 and the reciprocal for -1 (bit-exact), and calls
    pow otherwise. Each form is computed on ``x`` where its exponent is the call's and on 1.0
    elsewhere, so a form not taken reports no event (``1 / 0`` of a zero ``x`` when ``p`` is 2)."""
    flag = TensorMeta((), "bool", ())
    result = node.tensor
    tests = [ctx.emit("eq", (p, value), meta=flag) for value in FAST_EXPONENTS]  # (2, 0.5, -1)
    special = ctx.emit("logical_or", (tests[0], ctx.emit("logical_or", tests[1:], meta=flag)),
                       meta=flag)

    def where(test: Node, taken: Any, other: Any) -> Node:
        return ctx.emit("where", (test, taken, other), meta=result)
    square_base = where(tests[0], x, 1.0)
    forms = [ctx.emit("mul", (square_base, square_base)),
             ctx.emit("sqrt", (where(tests[1], x, 1.0),)),
             ctx.emit("truediv", (1.0, where(tests[2], x, 1.0)))]
    value = ctx.emit("pow", (where(special, 1.0, x), p))
    for test, form in reversed(list(zip(tests, forms))):
        value = where(test, form, value)
    return value


@rule("numpy.float_power", emits=("cast", "pow"))
def _float_power(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """float_power: pow in float64 (complex results run as NumPy)."""
    if len(args) != 2 or kwargs or node.tensor.dtype != "float64":
        raise NotNative
    operands = []
    for a in args:
        if isinstance(a, Node) and a.tensor.dtype != "float64":
            a = ctx.emit("cast", (a,), {"dtype": "float64"},
                         meta=TensorMeta(a.tensor.shape, "float64", a.tensor.strides))
        operands.append(operand(a))
    return ctx.emit("pow", tuple(operands))


@rule("method:astype", emits=("cast",))
def _astype(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    if len(args) != 2 or kwargs or not isinstance(args[0], Node):
        raise NotNative  # order=, casting=, copy=... run as NumPy
    return ctx.emit("cast", (args[0],), {"dtype": node.tensor.dtype})


@rule("numpy.rad2deg", "numpy.degrees", emits=("mul",))
def _rad2deg(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Node:
    """float64: NumPy's loop is one multiplication by 180/pi (bit-exact so); its float32 loop
    rounds otherwise and runs as NumPy."""
    if len(args) != 1 or kwargs or node.tensor.dtype != "float64":
        raise NotNative
    return ctx.emit("mul", (operand(args[0]), 180.0 / np.pi))


@rule("numpy.angle", emits=("real", "imag", "arctan2", "mul"))
def _angle(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """np.angle of a complex array: ``arctan2(z.imag, z.real)``, times ``180/pi`` for degrees,
    as NumPy's Python function computes it (real arrays run as NumPy)."""
    params = bind(lambda z, deg=False: None, args, kwargs)
    z, deg = params["z"], params.get("deg", False)
    if not isinstance(z, Node) or z.tensor is None or np.dtype(z.tensor.dtype).kind != "c" or \
            not isinstance(deg, bool):
        raise NotNative
    part = dense_meta(z.tensor.shape, node.tensor.dtype)
    real, imag = ctx.emit("real", (z,), meta=part), ctx.emit("imag", (z,), meta=part)
    if not deg:
        return ctx.emit("arctan2", (imag, real))
    return ctx.emit("mul", (ctx.emit("arctan2", (imag, real), meta=part), 180 / np.pi))


@rule("stax.nn.relu", emits=("maximum",))
def _relu(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    (x,) = args
    return ctx.emit("maximum", (operand(x), 0))


@rule("method:copy", "numpy.copy", emits=("cast",))
def _copy(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """A new array with the same values (its layout is the one NumPy gave, measured at capture)."""
    if len(args) != 1 or set(kwargs) - {"order"} or not isinstance(args[0], Node):
        raise NotNative
    return ctx.emit("cast", (args[0],), {"dtype": node.tensor.dtype})


@rule("numpy.conjugate", "numpy.conj", "method:conjugate", "method:conj",
      emits=("cast", "conjugate"))
def _conjugate(ctx: LoweringContext, node: Node, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Node:
    """The conjugate of a complex array; of a real one, a copy of it."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Node) or args[0].tensor is None:
        raise NotNative
    if np.dtype(args[0].tensor.dtype).kind == "c":
        return ctx.emit("conjugate", (args[0],))
    return ctx.emit("cast", (args[0],), {"dtype": node.tensor.dtype})


def _power_of_ten(n: int) -> float:
    """10**n as NumPy's rounding computes it: exact up to 1e8, then multiplied by 10 in double
    steps (not the correctly rounded 10**n from 1e23 on)."""
    if n < 9:
        return float(10 ** n)
    value = 1e9
    for _ in range(n - 9):
        value *= 10.0
    return value


@rule("numpy.round", "numpy.around", "method:round", emits=("rint", "mul", "truediv"))
def _round(ctx: LoweringContext, node: Node, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Node:
    """np.round(x, decimals) of floats as NumPy computes it: rint(x * 10**d) / 10**d, or for
    negative d rint(x / 10**-d) * 10**-d, with 10**d a scalar of x's dtype (bit for bit NumPy's,
    events included). Integer and complex arrays, and ``out=``, run as NumPy."""
    if len(args) not in (1, 2) or set(kwargs) - {"decimals"} or not isinstance(args[0], Node):
        raise NotNative
    decimals = args[1] if len(args) == 2 else kwargs.get("decimals", 0)
    if type(decimals) is not int or np.dtype(args[0].tensor.dtype).kind != "f" or \
            node.tensor.dtype != args[0].tensor.dtype:
        raise NotNative
    x = args[0]
    if decimals == 0:
        return ctx.emit("rint", (x,))
    scale = _power_of_ten(abs(decimals))
    apply, undo = ("mul", "truediv") if decimals > 0 else ("truediv", "mul")
    return ctx.emit(undo, (ctx.emit("rint", (ctx.emit(apply, (x, scale)),)), scale))
