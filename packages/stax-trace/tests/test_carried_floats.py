"""Which locals a ``for`` loop may carry as Python floats (``loop_counters.carried_floats``):
read after the loop only as returned results, or in a returned element that is ``+ - *``
arithmetic of such floats and numbers (``result_conversions.arithmetic_results``)."""

import ast
import textwrap

from stax.trace.loop_counters import carried_floats
from stax.trace.result_conversions import arithmetic_results, result_names


def _floats(source: str) -> frozenset[str]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    loop = next(n for n in ast.walk(function) if isinstance(n, ast.For))
    return carried_floats(function, loop, result_names(function), False,
                          arithmetic_results(function))


def test_returned_arithmetic_of_carried_floats():
    assert _floats("""
        def f(n):
            s, i, r = 0.9, 0.1, 0.0
            for k in range(n):
                s, i, r = s - i, i * 0.5, r + i
            return s + i + r, -(1.0 - s) * 2
        """) == {"s", "i", "r"}


def test_an_operand_not_carried_refuses_the_others_of_its_expression():
    """``s * x`` (an argument: maybe a float32 array, which a traced float64 would promote),
    ``s / i`` (Python raises on a zero where NumPy gives inf), a call, a comparison: none of
    their names is carried; a name read only as a result, or not at all after the loop, still
    is."""
    for expression, carried in (("s * x", {"i", "t"}), ("s / i", {"t"}), ("abs(s) + i", {"t"}),
                                ("s ** 2 + i", {"t"}), ("s + i > 1.0", {"t"})):
        assert _floats(f"""
            def f(n, x):
                s, i, t = 0.9, 0.1, 0.0
                for k in range(n):
                    s, i, t = s - i, i * 0.5, t + 1.0
                return {expression}, t
            """) == carried, expression


def test_a_read_elsewhere_after_the_loop_refuses_the_name():
    assert _floats("""
        def f(n):
            s, i, r = 0.9, 0.1, 0.0
            for k in range(n):
                s, i, r = s - i, i * 0.5, r + i
            total = s + i
            return total, i, r
        """) == {"r"}


def test_a_name_bound_again_after_the_loop_refuses_its_expression():
    """``s = np.float32(1)`` after the loop: ``s + i`` is NumPy's float32 arithmetic, not a
    traced float64's."""
    assert _floats("""
        def f(n):
            s, i, r = 0.9, 0.1, 0.0
            for k in range(n):
                s, i, r = s - i, i * 0.5, r + i
            s = np.float32(1)
            return s + i, r
        """) == {"r"}
