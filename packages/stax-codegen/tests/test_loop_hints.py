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
