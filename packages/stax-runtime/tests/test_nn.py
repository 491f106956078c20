"""stax.runtime.nn: compiled like the eager functions, and compiled natively."""

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import nn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 8), (3, 5, 33), (1, 1024)])
def test_layer_norm_is_native_and_matches(dtype, shape):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    b = rng.standard_normal(shape[-1]).astype(dtype)
    for args, kwargs in (((x, (shape[-1],), w, b), {}), ((x, shape[-1]), {"eps": 1e-3}),
                         ((x, shape[-2:]), {}) if len(shape) == 3 else ((x, shape[-1]), {})):
        cf = stax.compile(lambda *a, **k: nn.layer_norm(*a, **k), strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            got, want = cf(*args, **kwargs), nn.layer_norm(*args, **kwargs)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=50 * np.finfo(dtype).eps,
                                       atol=50 * np.finfo(dtype).eps)
        assert not cf.versions()[0].artifact.externs


def test_nn_functions_compile_like_eager():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((6, 7)), rng.standard_normal((6, 7))
    for fn, args in ((nn.relu, (x,)), (nn.selu, (x,)), (nn.mse_loss, (x, y))):
        cf = stax.compile(fn, strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            np.testing.assert_allclose(cf(*args), fn(*args), rtol=1e-13)
    x[0, 0] = np.nan
    relu = stax.compile(nn.relu)
    for _ in range(2):
        assert np.isnan(relu(x)[0, 0])
