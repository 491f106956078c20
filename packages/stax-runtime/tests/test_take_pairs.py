"""``x[rows, cols]``: one integer index array per axis (``logp[np.arange(n), y]``, a loss's
picked entries) compiles natively as one gather from x's elements in C order, each index
checked in its axis's bounds (``stax.ir.to_opgraph.native_forms._take_pairs``); it ran as a
NumPy step (a user probe: NLL loss 2x slower than NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def nll(logp, y):
    return -logp[np.arange(logp.shape[0]), y].mean()


def pick(x, r, c):
    return x[r, c] * 2.0


def pick3(x, a, b, c):
    return x[a, b, c] + 1.0


RNG = np.random.default_rng(0)
X = RNG.standard_normal((7, 5))


@pytest.mark.parametrize("x", [X, np.asfortranarray(X), X[:, ::-1], X.astype(np.float32)],
                         ids=["c", "f", "reversed", "float32"])
@pytest.mark.parametrize("index", ["int64", "int32", "uint8", "negative", "2-d"])
def test_picked_entries_as_numpy(x, index):
    compiled = stax.compile(pick, strict_native=True)
    if index == "negative":
        r, c = RNG.integers(-7, 7, 20), RNG.integers(-5, 5, 20)
    elif index == "2-d":
        r, c = RNG.integers(0, 7, (3, 4)), RNG.integers(0, 5, (3, 4))
    else:
        r, c = RNG.integers(0, 7, 20).astype(index), RNG.integers(0, 5, 20).astype(index)
    got = compiled(x, r, c)
    assert got.dtype == pick(x, r, c).dtype
    np.testing.assert_array_equal(got, pick(x, r, c))


def test_three_axes_and_a_loss():
    z = RNG.standard_normal((3, 4, 5))
    a, b, c = RNG.integers(0, 3, 9), RNG.integers(-4, 4, 9), RNG.integers(0, 5, 9)
    np.testing.assert_array_equal(stax.compile(pick3, strict_native=True)(z, a, b, c),
                                  pick3(z, a, b, c))
    logp = RNG.standard_normal((256, 10)).astype(np.float32)
    y = RNG.integers(0, 10, 256)
    np.testing.assert_allclose(stax.compile(nll, strict_native=True)(logp, y), nll(logp, y),
                               rtol=1e-6)


@pytest.mark.parametrize("r, c", [([7], [0]), ([0], [5]), ([-8], [0]), ([0], [-6])])
def test_an_index_out_of_bounds_raises_numpy_s_error(r, c):
    compiled = stax.compile(pick)
    compiled(X, np.array([0]), np.array([0]))
    r, c = np.array(r), np.array(c)
    with pytest.raises(IndexError) as eager:
        pick(X, r, c)
    with pytest.raises(IndexError) as got:
        compiled(X, r, c)
    assert str(got.value) == str(eager.value)


def test_a_boolean_index_beside_an_integer_one_is_a_mask_as_numpy():
    """A review's finding: a bool array among the keys was read as 0/1 positions (and a short
    one past its end)."""
    x = np.arange(8.0).reshape(4, 2)
    compiled = stax.compile(lambda x, r, c: x[r, c])
    for r, c in [(np.arange(4), np.array([False, True])), (np.array([0, 1, 2]),
                                                           np.array([True, True]))]:
        try:
            want = x[r, c]
        except IndexError:
            with pytest.raises(IndexError):
                compiled(x, r, c)
            continue
        np.testing.assert_array_equal(compiled(x, r, c), want)


def test_one_generic_version_over_batch_sizes():
    """A review's finding: the gather's sizes were read as numbers, so every batch size
    compiled a version of its own (the NLL loss: 8 versions, then eager)."""
    compiled = stax.compile(nll)
    for n in range(2, 12):
        logp = RNG.standard_normal((n, 10))
        y = RNG.integers(0, 10, n)
        np.testing.assert_allclose(compiled(logp, y), nll(logp, y), rtol=1e-14)
    assert compiled.cache_info().versions <= 2
