"""Loop lowerings of NumPy's exact element-wise functions on bits, truth values, predicates and
signs: bitwise and/or/xor/invert and shifts on integers (logical on bool), logical_*, isnan/isinf/
isfinite/signbit, sign, copysign, fmax/fmin, heaviside, positive, reciprocal (floats).

Most are compositions of existing expressions (a comparison, a select); ``xor``, the shifts,
``copysign`` and ``signbit`` are loop-IR operators. Each rule checks the dtypes it was written for
and leaves any other form to NumPy as an extern step — never a different result.
"""

from __future__ import annotations

import numpy as np

from stax.ir import Node

from .context import Lazy, LoopLowering, float_predicate, negation
from .expr import Binary, Cast, Const, Expr, Select, Unary
from .externs import op_as_extern
from .index import Affine
from .registry import LOWERINGS, Rule

_BITWISE = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor",
            "left_shift": "shl", "right_shift": "shr"}


def _kind(dtype: str) -> str:
    return np.dtype(dtype).kind


def _operand_dtype(node: Node, k: int) -> str:
    value = node.args[k]
    return value.tensor.dtype if isinstance(value, Node) else node.tensor.dtype


def _bitwise(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        kind = _kind(meta.dtype)
        if kind not in "iub" or (kind == "b" and op in ("left_shift", "right_shift")):
            return op_as_extern(ctx, node)
        a = ctx.operand(node.args[0], meta.shape, meta.dtype)
        b = ctx.operand(node.args[1], meta.shape, meta.dtype)
        return Lazy(meta.shape, meta.dtype, lambda i: Binary(_BITWISE[op], a(i), b(i), meta.dtype))
    return lower


def _invert(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    kind = _kind(meta.dtype)
    if kind not in "iub":
        return op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    ones = Const(True if kind == "b" else (-1 if kind == "i" else int(np.iinfo(meta.dtype).max)),
                 meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Binary("xor", x(i), ones, meta.dtype))


def _logical(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        operands = [ctx.operand(a, meta.shape, "bool") for a in node.args]  # x != 0, NaN is true
        if op == "logical_not":
            (x,) = operands
            return Lazy(meta.shape, "bool", lambda i: negation(x(i)))
        name = {"logical_and": "and", "logical_or": "or", "logical_xor": "xor"}[op]
        a, b = operands
        return Lazy(meta.shape, "bool", lambda i: Binary(name, a(i), b(i), "bool"))
    return lower


def _predicate(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        dtype = _operand_dtype(node, 0)
        if _kind(dtype) != "f":
            if _kind(dtype) not in "iub":
                return op_as_extern(ctx, node)
            answer = Const(op == "isfinite", "bool")  # integers: finite, never NaN/Inf/negative zero
            if op == "signbit" and _kind(dtype) == "i":
                x = ctx.operand(node.args[0], meta.shape, dtype)
                return Lazy(meta.shape, "bool",
                            lambda i: Binary("lt", x(i), Const(0, dtype), "bool"))
            return Lazy(meta.shape, "bool", lambda i: answer)
        x = ctx.operand(node.args[0], meta.shape, dtype)
        return Lazy(meta.shape, "bool", lambda i: float_predicate(op, x(i)))
    return lower


def _sign(ctx: LoopLowering, node: Node) -> Lazy:
    """1, -1 or 0 (+0.0 for either zero), NaN for NaN: the comparisons decide, the NaN falls
    through to itself."""
    meta = node.tensor
    if _kind(meta.dtype) not in "iuf":
        return op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    one, minus, zero = (Const(v, meta.dtype) for v in (1, -1 if _kind(meta.dtype) != "u" else 0, 0))

    def value(i: tuple[Affine, ...]) -> Expr:
        v = x(i)
        rest = Select(Binary("eq", v, zero, "bool"), zero, v, meta.dtype)
        rest = Select(Binary("lt", v, zero, "bool"), minus, rest, meta.dtype)
        return Select(Binary("gt", v, zero, "bool"), one, rest, meta.dtype)
    return Lazy(meta.shape, meta.dtype, value)


def fmax_select(op: str, x: Expr, y: Expr, dtype: str) -> Select:
    """NumPy's fmax/fmin of ``x`` and ``y``: NaN ignored, ``y`` on a tie, as NumPy's vector loops.

    A tie between different bits (0.0 against -0.0, or two NaNs that differ in sign or payload)
    has no rule in NumPy: its scalar loops (the last elements of a contiguous array, up to a
    vector's width; strided float64) call C's fmax with the operands in the order the C compiler
    chose for each unrolled copy, so the answer depends on the element's place, the array's
    length and layout, and the CPU's vector width. Kernels therefore report such a tie in their
    events word (``stax.codegen.cpu.fpevents.TIE``), in the same pass, and that call runs as
    NumPy. They find the selects to watch by this exact form (``fmax_operands``)."""
    keep = Binary("gt" if op == "fmax" else "lt", x, y, "bool")
    keep = Binary("or", keep, Binary("ne", y, y, "bool"), "bool")
    return Select(keep, x, y, dtype)


def fmax_operands(e: Expr) -> tuple[Expr, Expr] | None:
    """``(x, y)`` when ``e`` is an fmax/fmin select as ``fmax_select`` builds it and its operands
    can tie with different bits, else None. A constant other than zero or NaN cannot (every value
    equal to it has its bits)."""
    if not (isinstance(e, Select) and e.dtype in _FLOAT_BITS and isinstance(e.cond, Binary)
            and e.cond.op == "or"):
        return None
    order, nan = e.cond.a, e.cond.b
    x, y = e.a, e.b
    if not (isinstance(order, Binary) and order.op in ("gt", "lt") and order.a is x
            and order.b is y and isinstance(nan, Binary) and nan.op == "ne" and nan.a is y
            and nan.b is y):
        return None
    if any(isinstance(v, Const) and v.value != 0 and v.value == v.value for v in (x, y)):
        return None
    return x, y


def _float_binary(op: str) -> Rule:
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        if _kind(meta.dtype) != "f":
            return op_as_extern(ctx, node)
        a = ctx.operand(node.args[0], meta.shape, meta.dtype)
        b = ctx.operand(node.args[1], meta.shape, meta.dtype)
        dtype = meta.dtype

        def value(i: tuple[Affine, ...]) -> Expr:
            x, y = a(i), b(i)
            if op == "copysign":
                return Binary("copysign", x, y, dtype)
            if op in ("fmax", "fmin"):  # a tie of different bits runs the call as NumPy
                return fmax_select(op, x, y, dtype)
            zero = Const(0.0, dtype)  # heaviside(x, h): 0 below zero, h at either zero, 1 above
            # and NumPy's own NaN at a NaN (``NPY_NAN``: positive, whatever the sign of x's)
            at_zero = Select(Binary("eq", x, zero, "bool"), y, Const(float("nan"), dtype), dtype)
            below = Select(Binary("lt", x, zero, "bool"), zero, at_zero, dtype)
            return Select(Binary("gt", x, zero, "bool"), Const(1.0, dtype), below, dtype)
        return Lazy(meta.shape, dtype, value)
    return lower


def _positive(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if _kind(meta.dtype) not in "iuf":
        return op_as_extern(ctx, node)
    return Lazy(meta.shape, meta.dtype, ctx.operand(node.args[0], meta.shape, meta.dtype))


def _reciprocal(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if _kind(meta.dtype) != "f":  # NumPy's integer reciprocal is C division: left to NumPy
        return op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    one = Const(1.0, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Binary("truediv", one, x(i), meta.dtype))


for _op in _BITWISE:
    LOWERINGS[_op] = _bitwise(_op)
LOWERINGS["invert"] = _invert
for _op in ("logical_and", "logical_or", "logical_xor", "logical_not"):
    LOWERINGS[_op] = _logical(_op)
for _op in ("isnan", "isinf", "isfinite", "signbit"):
    LOWERINGS[_op] = _predicate(_op)
LOWERINGS["sign"] = _sign
for _op in ("copysign", "fmax", "fmin", "heaviside"):
    LOWERINGS[_op] = _float_binary(_op)
LOWERINGS["positive"] = _positive


def _bitwise_count(ctx: LoopLowering, node: Node) -> Lazy:
    """NumPy counts the set bits of |x| (so -1 counts one), as uint8."""
    meta = node.tensor
    dtype = _operand_dtype(node, 0)
    if _kind(dtype) not in "iu":
        return op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: Unary("popcount", x(i), meta.dtype))


def _ldexp(ctx: LoopLowering, node: Node) -> Lazy:
    """x * 2**n rounded once, as C's ldexp/ldexpf (float32: exact in double with the exponent
    clamped to +-300, past which float32 can only overflow or vanish; float64: by the bits)."""
    meta = node.tensor
    exponent = node.args[1]
    integral = isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool) if \
        not isinstance(exponent, Node) else _kind(exponent.tensor.dtype) in "iu"
    if meta.dtype not in ("float32", "float64") or not integral:
        return op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, meta.dtype)
    n = ctx.operand(node.args[1], meta.shape, "int64")
    return Lazy(meta.shape, meta.dtype, lambda i: Binary("ldexp", x(i), n(i), meta.dtype))


#: per float dtype: the integer of its width, the mantissa bits, the exponent field's mask, the
#: smallest normal and the smallest subnormal
_FLOAT_BITS = {"float32": ("int32", 23, 0xFF, 2.0 ** -126, 2.0 ** -149),
               "float64": ("int64", 52, 0x7FF, 2.0 ** -1022, 2.0 ** -1074)}


def _next_toward(x: Expr, y: Expr, dtype: str) -> Expr:
    """C's nextafter(x, y) from the bits: one step of the integer image away from zero or
    toward it; zero steps to the smallest subnormal with y's sign; x == y gives y; NaN in, NaN
    out."""
    it, _, _, _, tiny = _FLOAT_BITS[dtype]
    zero = Const(0.0, dtype)
    bits = Unary("bitcast", x, it)
    toward_zero = Binary("xor", Binary("gt", y, x, "bool"), Binary("gt", x, zero, "bool"), "bool")
    stepped = Select(toward_zero, Binary("sub", bits, Const(1, it), it),
                     Binary("add", bits, Const(1, it), it), it)
    value: Expr = Unary("bitcast", stepped, dtype)
    value = Select(Binary("eq", x, zero, "bool"), Binary("copysign", Const(tiny, dtype), y, dtype),
                   value, dtype)
    value = Select(Binary("eq", x, y, "bool"), y, value, dtype)
    nan = Binary("or", Binary("ne", x, x, "bool"), Binary("ne", y, y, "bool"), "bool")
    return Select(nan, Binary("add", x, y, dtype), value, dtype)


def _nextafter(ctx: LoopLowering, node: Node) -> Lazy:
    meta = node.tensor
    if meta.dtype not in _FLOAT_BITS:
        return op_as_extern(ctx, node)
    a = ctx.operand(node.args[0], meta.shape, meta.dtype)
    b = ctx.operand(node.args[1], meta.shape, meta.dtype)
    return Lazy(meta.shape, meta.dtype, lambda i: _next_toward(a(i), b(i), meta.dtype))


def _spacing(ctx: LoopLowering, node: Node) -> Lazy:
    """NumPy's spacing: the step to the next float away from zero (-0.0 counts as positive),
    as nextafter(x, +-inf) - x; NaN for infinities."""
    meta = node.tensor
    dtype = meta.dtype
    if dtype not in _FLOAT_BITS:
        return op_as_extern(ctx, node)
    x = ctx.operand(node.args[0], meta.shape, dtype)

    def value(i: tuple[Affine, ...]) -> Expr:
        v = x(i)
        inf = Const(float("inf"), dtype)
        direction = Select(Binary("lt", v, Const(0.0, dtype), "bool"), Const(float("-inf"), dtype),
                           inf, dtype)
        step = Binary("sub", _next_toward(v, direction, dtype), v, dtype)
        infinite = Binary("eq", Unary("abs", v, dtype), inf, "bool")
        return Select(infinite, Const(float("nan"), dtype), step, dtype)
    return Lazy(meta.shape, dtype, value)


def _frexp(part: str) -> Rule:
    """x = m 2^e with 0.5 <= |m| < 1 from the bits (a subnormal x scaled into the normal range
    first): e = the exponent field - (bias - 1), m = x's bits with that field set to bias - 1;
    zeros, infinities and NaN give (x, 0)."""
    def lower(ctx: LoopLowering, node: Node) -> Lazy:
        meta = node.tensor
        source = node.args[0].tensor.dtype
        if source not in _FLOAT_BITS:
            return op_as_extern(ctx, node)
        it, width, mask, smallest, _ = _FLOAT_BITS[source]
        scale = 54 if source == "float64" else 25
        x = ctx.operand(node.args[0], meta.shape, source)

        def value(i: tuple[Affine, ...]) -> Expr:
            v = x(i)
            magnitude = Unary("abs", v, source)
            subnormal = Binary("lt", magnitude, Const(smallest, source), "bool")
            scaled = Select(subnormal, Binary("mul", v, Const(2.0 ** scale, source), source), v,
                            source)
            bits = Unary("bitcast", scaled, it)
            field = Binary("and", Binary("shr", bits, Const(width, it), it), Const(mask, it), it)
            difference = Binary("sub", v, v, source)  # NaN for infinities and NaN
            ordinary = Binary("and", Binary("ne", v, Const(0.0, source), "bool"),
                              Binary("eq", difference, difference, "bool"), "bool")
            if part == "mantissa":
                kept = Binary("and", bits, Const(~(mask << width), it), it)
                m = Unary("bitcast", Binary("or", kept, Const((mask // 2 - 1) << width, it), it),
                          source)
                return Select(ordinary, m, v, source)
            e = Binary("sub", field, Select(subnormal, Const(mask // 2 - 1 + scale, it),
                                            Const(mask // 2 - 1, it), it), it)
            e = Select(ordinary, e, Const(0, it), it)
            return e if it == meta.dtype else Cast(e, meta.dtype)
        return Lazy(meta.shape, meta.dtype if part == "exponent" else source, value)
    return lower


LOWERINGS["nextafter"] = _nextafter
LOWERINGS["spacing"] = _spacing
LOWERINGS["frexp_mantissa"] = _frexp("mantissa")
LOWERINGS["frexp_exponent"] = _frexp("exponent")
LOWERINGS["bitwise_count"] = _bitwise_count
LOWERINGS["ldexp"] = _ldexp
LOWERINGS["reciprocal"] = _reciprocal
