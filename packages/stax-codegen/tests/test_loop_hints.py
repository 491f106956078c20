"""Innermost loops of heavy element-wise work get LLVM's interleave hint (``loop_hints.py``),
light or short ones do not; and a float max/min reduction steps with one ``maxnum`` a vector
beside a NaN flag (``accumulators._extreme_step``), NaN and infinities still NumPy's."""

import re

import numpy as np
import pytest

from stax.codegen import Executable
from stax.codegen.cpu.loop_hints import HEAVY_WORK, INTERLEAVE, MIN_ITERATIONS, interleave_count


def _hints(artifact) -> list[str]:
    return re.findall(r'!"llvm\.loop\.interleave\.count", i32 (\d+)', artifact.llvm_ir)


def test_the_hint_follows_the_work_and_the_length():
    assert interleave_count(HEAVY_WORK, MIN_ITERATIONS) == INTERLEAVE
    assert interleave_count(HEAVY_WORK - 1, 1 << 20) == 1
    assert interleave_count(1000, MIN_ITERATIONS - 1) == 1
    assert interleave_count(-1, 1 << 20) == 1  # a loop holding another loop
    assert interleave_count(None, 1 << 20) == 1


@pytest.mark.parametrize("n, heavy, hinted", [(4096, True, True), (4096, False, False),
                                              (100, True, False)])
def test_a_tanh_loop_is_interleaved_where_long(build, run, n, heavy, hinted):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    b = build(x=x)
    out = b("tanh", b.inputs["x"]) if heavy else b("add", b.inputs["x"], 1.0)
    (got,), artifact = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=3e-7, atol=0)
    assert _hints(artifact) == ([str(INTERLEAVE)] * len(_hints(artifact)) if hinted else [])
    assert bool(_hints(artifact)) == hinted
    if hinted:  # the hint reaches LLVM as a loop ID (a self-referencing distinct node)
        assert re.search(r"!(\d+) = distinct !\{ !\1, !\d+ \}", artifact.llvm_ir)
        Executable(artifact)  # and the module verifies and compiles


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_float_extremes_are_one_maxnum_a_vector_and_keep_numpys_specials(build, run, kind,
                                                                          dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 1000)).astype(dtype)
    x[1, 500] = np.nan  # a NaN wins its row
    x[2, :] = np.nan
    x[3, 7] = np.inf
    x[4, 9] = -np.inf
    x[5, :] = -np.inf if kind == "max" else np.inf  # all the identity
    b = build(x=x)
    out = b(kind, b.inputs["x"], axis=(1,), keepdims=False)
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])
    ir_text = artifact.llvm_ir
    assert f"llvm.{kind}num" in ir_text and f"llvm.{kind}imum" not in ir_text
    assert "nnan nsz" in ir_text


def _loops(artifact) -> list[str]:
    return re.findall(r'^"?(\w+_loop(?:\.\d+)?)"?:', artifact.llvm_ir, re.M)


@pytest.mark.parametrize("layout", ["contiguous", "reversed", "3-d", "empty"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_a_contiguous_elementwise_nest_is_one_loop(build, run, layout, dtype):
    """Every index moves in C order (``nests._merged_extent``): one loop over all elements,
    bound to the last variable, the same values as NumPy's."""
    rng = np.random.default_rng(2)
    shape = {"contiguous": (300, 32), "reversed": (300, 32), "3-d": (7, 5, 3), "empty": (0, 8)}
    x = (rng.standard_normal(shape[layout]) * 10).astype(dtype)
    y = (rng.standard_normal(shape[layout]) * 10).astype(dtype)
    if layout == "reversed":
        x, y = x[::-1, ::-1], y[::-1, ::-1]
    b = build(x=x, y=y)
    out = b("mul", b("add", b.inputs["x"], 3), b.inputs["y"])
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, (x + 3) * y)
    assert _loops(artifact) == [f"x{len(x.shape) - 1}_loop"]


def _rolled(artifact, var: str) -> bool:
    """Whether the back edge of ``var``'s loop asks LLVM not to unroll it."""
    ir_text = artifact.llvm_ir
    found = re.search(rf'label %"{var}_loop", label %"{var}_done", !llvm\.loop !(\d+)', ir_text)
    if found is None:
        return False
    node = re.search(rf"!{found.group(1)} = distinct !\{{ !{found.group(1)}, (.*) \}}", ir_text)
    hints = re.findall(r"!(\d+)", node.group(1))
    return any(re.search(rf'^!{h} = !\{{ !"llvm\.loop\.unroll\.disable" \}}', ir_text, re.M)
               for h in hints)


@pytest.mark.parametrize("operand", ["row", "column", "transposed"])
def test_a_nest_that_does_not_move_in_c_order_keeps_its_loops(build, run, operand):
    """A broadcast row or column, or a transposed operand: the loops stay, and a row of a vector
    or more is kept rolled (``loop_hints.in_row_vectors``) for LLVM to vectorize along it."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((500, 32))
    other = {"row": rng.standard_normal(32), "column": rng.standard_normal((500, 1)),
             "transposed": rng.standard_normal((32, 500)).T}[operand]
    b = build(x=x, w=other)
    out = b("mul", b.inputs["x"], b.inputs["w"])
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, x * other)
    if operand == "transposed":  # tiled: blocks of each, then the loops inside a block
        assert _loops(artifact) == ["x0_block_loop", "x1_block_loop", "x0_loop", "x1_loop"]
    else:
        assert _loops(artifact) == ["x0_loop", "x1_loop"]
        assert _rolled(artifact, "x1")


def test_rows_of_at_least_a_vector_stay_rolled():
    from stax.codegen.cpu.loop_hints import MIN_ITERATIONS, in_row_vectors

    assert in_row_vectors(32, 2000, 8) and in_row_vectors(8, 2000, 8)
    assert in_row_vectors(32, 2000, 8, reduction=True)
    assert not in_row_vectors(8, 2000, 8, reduction=True)  # one vector: summed across rows
    assert not in_row_vectors(3, 2000, 8)  # shorter than a vector: LLVM's to unroll
    assert not in_row_vectors(MIN_ITERATIONS - 1, 2000, 8)  # long: LLVM's as ever
    assert not in_row_vectors(32, 0, 8)  # an outermost loop
