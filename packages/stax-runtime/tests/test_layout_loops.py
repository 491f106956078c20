"""Loop order follows memory: an F-ordered result is written along its columns (loops in the
buffer's memory order), and element-wise work that reads an operand across its memory order
(``x.T + y``) runs in tiles. Same values and layouts as NumPy on partial tiles and batches."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen.nesting import TILE


@pytest.mark.parametrize("shape", [(2 * TILE, 2 * TILE), (2 * TILE + 1, 5 * TILE + 3), (97, 45),
                                   (3, 2 * TILE + 5, 3 * TILE - 1)])
def test_transposed_operands(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape[:-2] + shape[-2:][::-1]).astype(np.float32)
    fn = lambda x, y: np.swapaxes(x, -1, -2) * 2 + y  # noqa: E731
    compiled, want = stax.compile(fn, strict_native=True), fn(x, y)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(x, y)
        np.testing.assert_array_equal(got, want)
        assert got.strides == want.strides


def test_fortran_results_are_written_in_memory_order():
    x = np.asfortranarray(np.random.default_rng(1).standard_normal((300, 200)))
    compiled = stax.compile(lambda x: np.exp(x) + 1, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(x)
        assert got.flags.f_contiguous
        np.testing.assert_allclose(got, np.exp(x) + 1, rtol=1e-15)
    (node,) = [b for b in compiled.versions()[0].artifact.buffers if b.role == "output"]
    program = compiled.versions()[0]
    assert program.native and node.strides == (1, 300)
