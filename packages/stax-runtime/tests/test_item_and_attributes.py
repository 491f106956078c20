"""``x.item(...)`` reads as NumPy reads (a flat index in C order, a tuple index, NumPy's own
error), and setting an ndarray attribute of a traced array (``y.shape = ...``, ``z.imag = ...``)
runs the function eagerly instead of failing with "'Proxy' object has no attribute" (an
indexing probe found both)."""

import numpy as np
import pytest

import stax.runtime as stax


@pytest.mark.parametrize("fn", [lambda x: x.item(3), lambda x: x.item(-1),
                                lambda x: x.item((1, 2)), lambda x: x.item(1, 0),
                                lambda x: x[1].item(2)],
                         ids=["flat", "negative", "tuple", "two_ints", "row"])
def test_item_indexes_as_numpy(fn):
    compiled = stax.compile(fn)
    for k in range(3):
        x = np.arange(6.0).reshape(2, 3) + k
        for _ in range(2):  # a compiling call (each value its own version), then the cached one
            got, want = compiled(x), fn(x)
            assert got == want and type(got) is type(want)


def test_item_out_of_bounds_is_numpys_error():
    compiled = stax.compile(lambda x: x.item(7))
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(IndexError) as want:
        x.item(7)
    with pytest.raises(IndexError) as got:
        compiled(x)
    assert str(got.value) == str(want.value)


def _reshaped(x):
    y = x * 2
    y.shape = (3, 2)
    return y


def _imag_set(z):
    z.imag = z.real
    return z


@pytest.mark.parametrize("fn, make", [(_reshaped, lambda: np.arange(6.0)),
                                      (_imag_set, lambda: np.ones(3, complex) * (2 + 1j))],
                         ids=["shape", "imag"])
def test_setting_an_array_attribute_runs_eagerly(fn, make):
    compiled = stax.compile(fn)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(make()), fn(make()))
    assert compiled.cache_info().fallbacks >= 1
