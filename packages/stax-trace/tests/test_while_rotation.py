"""``while True: S1; if C: break; S2`` rotated into ``S1; while __stax_goes_on__(C): S2; S1``
(``while_loops.rotate_breaks``): the same statements in the same order on every path, and the
loops it must leave alone."""

import ast
import textwrap

import numpy as np
import pytest

from stax.trace.while_loops import goes_on, rotate_breaks


def rotated(source):
    function = ast.parse(textwrap.dedent(source)).body[0]
    rotate_breaks(function)
    return ast.unparse(function)


def test_a_break_midway_becomes_the_test():
    assert rotated("""
        def f(y):
            while True:
                yn = g(y)
                if done(yn, y):
                    break
                y = yn
            return yn
    """) == textwrap.dedent("""\
        def f(y):
            yn = g(y)
            while __stax_goes_on__(done(yn, y)):
                y = yn
                yn = g(y)
            return yn""")


def test_inner_loops_first_and_a_break_at_either_end():
    assert rotated("""
        def f(y):
            for k in range(3):
                while True:
                    if y > 1:
                        break
                    y = y * 2
            while True:
                y = y - 1
                if y < 0:
                    break
            return y
    """) == textwrap.dedent("""\
        def f(y):
            for k in range(3):
                while __stax_goes_on__(y > 1):
                    y = y * 2
            y = y - 1
            while __stax_goes_on__(y < 0):
                y = y - 1
            return y""")


@pytest.mark.parametrize("loop", [
    "while True:\n    y = g(y)\n    if y > 1:\n        break\n    if y < -1:\n        break",
    "while True:\n    y = g(y)\n    if y > 1:\n        break\nelse:\n    y = 0",
    "while True:\n    y = g(y)\n    if y > 1:\n        y = 2\n        break",
    "while True:\n    y = g(y)\n    if y > 1:\n        break\n    if y == 0:\n        continue",
    "while y:\n    y = g(y)\n    if y > 1:\n        break",
    "while True:\n    if (z := g(y)) > 1:\n        break\n    y = z",
    # a break or continue in an inner loop's ``else:`` is the outer loop's
    "while True:\n    for j in range(2):\n        y = g(y)\n    else:\n        if y > 5:\n"
    "            break\n    if y > 1:\n        break\n    y = y + 1",
    "while True:\n    if y > 1:\n        break\n    for j in range(2):\n        y = g(y)\n"
    "    else:\n        continue\n    y = y + 1",
])
def test_other_loops_are_left_as_written(loop):
    source = "def f(y):\n" + textwrap.indent(loop, "    ") + "\n    return y"
    assert rotated(source) == ast.unparse(ast.parse(source).body[0])


def test_nested_functions_are_other_scopes():
    source = "def f(y):\n    def h(y):\n        while True:\n            if y:\n                break\n" \
             "            y = g(y)\n        return y\n    return h(y)"
    assert rotated(source) == ast.unparse(ast.parse(source).body[0])


def g(y):
    return y * 0.5 + 1.0


def test_the_rotated_loop_runs_the_same_steps():
    calls = []

    def traced_g(y):
        calls.append(("g", y))
        return g(y)

    def done(a, b):
        calls.append(("test", a, b))
        return abs(a - b) < 1e-3

    source = textwrap.dedent("""
        def f(y):
            while True:
                yn = traced_g(y)
                if done(yn, y):
                    break
                y = yn
            return yn, y
    """)
    plain, turned = {}, {}
    exec(source, {"traced_g": traced_g, "done": done}, plain)
    function = ast.parse(source).body[0]
    rotate_breaks(function)
    exec(ast.unparse(function), {"traced_g": traced_g, "done": done,
                                 "__stax_goes_on__": goes_on}, turned)
    want = plain["f"](0.0), list(calls)
    calls.clear()
    assert (turned["f"](0.0), calls) == want


def test_any_of_is_pythons_or_for_python_values():
    """``loop_counters.any_of`` (a rotated loop's ``if A or c >= n: break``): the first truthy
    operand, later ones not evaluated; else the last operand."""
    from stax.trace.loop_counters import any_of

    seen = []

    def part(value):
        def evaluate():
            seen.append(value)
            return value
        return evaluate

    assert any_of(part(0), part(2), part(3)) == 2 and seen == [0, 2]
    assert any_of(part(False), part(0.0)) == 0.0
    assert any_of(part(np.bool_(True)), part(1)) is np.bool_(True)
