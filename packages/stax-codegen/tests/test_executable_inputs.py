"""``Executable(...)`` checks its inputs against the plan (issue 10, item 14): kernels read memory
by the shapes, dtypes and strides the plan was made for, so any other input read out of bounds,
returned garbage or crashed. Each case below did one of those before the check."""

from pathlib import Path

import numpy as np
import pytest

from stax.codegen import Executable, InputMismatch, generate
from stax.loop import load_loopir, lower_opgraph


@pytest.fixture(scope="module")
def example():
    return Executable(generate(load_loopir(Path(__file__).parent / "fixtures" /
                                           "example_1_1.loopir.v0.1.0.json")))


def arrays(shape=(64, 128), dtype=np.float32):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(2)]


def reference(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def test_planned_inputs_run(example):
    x, w = arrays()
    np.testing.assert_allclose(example(x, w)[0], reference(x, w), rtol=1e-5, atol=1e-4)
    assert [layout[0] for layout in example.input_layouts] == [(64, 128), (64, 128)]


@pytest.mark.parametrize("call, words", [
    (lambda x, w: (x,), ["expected 2 input arrays", "got 1"]),
    (lambda x, w: (x, w, w), ["expected 2 input arrays", "got 3"]),
    (lambda x, w: (x, w.tolist()), ["input 1", "expected an np.ndarray", "got list"]),
    (lambda x, w: (x[:8], w), ["input 0", "expected float32[64, 128]", "got float32[8, 128]"]),
    (lambda x, w: (np.zeros((64, 4096), np.float32), w), ["got float32[64, 4096]"]),
    (lambda x, w: (x, w.astype(np.float64)), ["input 1", "got float64[64, 128]"]),
    (lambda x, w: (x, w.astype(">f4")), ["input 1", "got >f4[64, 128]"]),
    (lambda x, w: (x, w.view(np.matrix)), ["a subclass of np.ndarray", "np.asarray"]),
    (lambda x, w: (np.repeat(x, 2, axis=1)[:, ::2], w),
     ["input 0", "expected strides (512, 4)", "got (1024, 8)", "np.ascontiguousarray"]),
    (lambda x, w: (np.asfortranarray(x), w), ["input 0", "got (4, 256)"]),
])
def test_other_inputs_are_refused_by_name(example, call, words):
    with pytest.raises(InputMismatch) as info:
        example(*call(*arrays()))
    for word in words:
        assert word in str(info.value)
    assert isinstance(info.value, ValueError)


def test_strides_that_are_never_used_do_not_matter(build):
    """The stride of a length-1 axis is never read: a view with another one runs, correctly."""
    x = np.random.default_rng(1).standard_normal((1, 5))
    b = build(x=x)
    ex = Executable(generate(lower_opgraph(b.program(b("exp", b.inputs["x"])))))
    y = np.random.default_rng(2).standard_normal(9)[None, 2:7]  # (1, 5), strides (0, 8)
    assert y.shape == (1, 5) and y.strides[1] == 8 and y.strides != x.strides
    np.testing.assert_array_equal(ex(y)[0], ex(np.ascontiguousarray(y))[0])
