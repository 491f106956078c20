"""Emitters of the math functions through CUDA's libdevice (``triton.language.extra.libdevice``,
which Triton links for NVIDIA): exp, log, the trigonometric and hyperbolic functions and their
inverses, cbrt, arctan2, hypot, pow, ldexp, and NumPy's logaddexp/logaddexp2 composed from them.
libdevice's float64 functions are within 1-2 ulp, its float32 ones within 1-4 ulp (NVIDIA's CUDA
Math API tables); kernels run without flushing float32 subnormals in them
(``executable.LAUNCH_OPTIONS``). Under ``TRITON_INTERPRET=1`` these calls run NumPy's functions
(``interpret.py``): the interpreter tests the kernels' structure, not libdevice's accuracy."""

from __future__ import annotations

import math

from stax.loop import Binary, Unary

from .registry import Writer, binary, unary

#: loop operator -> libdevice function of one operand
UNARY_FUNCTIONS = {
    "exp": "exp", "log": "log", "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan",
    "log2": "log2", "log10": "log10", "log1p": "log1p", "expm1": "expm1", "exp2": "exp2",
    "sinh": "sinh", "cosh": "cosh", "cbrt": "cbrt", "arctan": "atan", "arcsin": "asin",
    "arccos": "acos", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
}
#: loop operator -> libdevice function of two operands
BINARY_FUNCTIONS = {"arctan2": "atan2", "hypot": "hypot", "pow": "pow",
                    "python_pow": "pow"}  # on the GPU within libdevice's bound, not C's pow


@unary(*UNARY_FUNCTIONS)
def unary_function(w: Writer, e: Unary, x: str) -> str:
    return f"libdevice.{UNARY_FUNCTIONS[e.op]}({x})"


@binary(*BINARY_FUNCTIONS)
def binary_function(w: Writer, e: Binary, a: str, b: str) -> str:
    return f"libdevice.{BINARY_FUNCTIONS[e.op]}({a}, {b})"


@binary("ldexp")
def ldexp(w: Writer, e: Binary, a: str, n: str) -> str:
    """``a * 2**n`` for an int64 ``n``; libdevice takes an int32, and beyond +-2**15 every
    finite float has overflowed or underflowed anyway."""
    clamped = w.assign(f"tl.minimum(tl.maximum({n}, {w.const(-32768, 'int64')}), "
                       f"{w.const(32768, 'int64')}).to(tl.int32)")
    return f"libdevice.ldexp({a}, {clamped})"


@binary("logaddexp", "logaddexp2")
def logaddexp(w: Writer, e: Binary, a: str, b: str) -> str:
    """NumPy's npy_logaddexp (and its base-2 form): equal operands give ``a + log(2)`` (so
    equal infinities stay infinite), else the larger plus ``log1p(exp(-|a - b|))``; a NaN
    difference (a NaN operand) is the result."""
    dtype = e.dtype
    two = e.op == "logaddexp2"
    d = w.assign(f"{a} - {b}")
    if two:
        tail = (f"libdevice.log1p(libdevice.exp2(-tl.abs({d}))) * "
                f"{w.const(1 / math.log(2), dtype)}")
        same = f"{a} + {w.const(1.0, dtype)}"
    else:
        tail = f"libdevice.log1p(libdevice.exp(-tl.abs({d})))"
        same = f"{a} + {w.const(math.log(2), dtype)}"
    larger = f"tl.where({d} > 0, {a}, {b})"
    result = w.assign(f"tl.where({d} != {d}, {d}, {larger} + {tail})")
    return f"tl.where({a} == {b}, {same}, {result})"
