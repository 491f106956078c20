"""x * 1 is x (spec table 4.1), but not when a view of it is returned and x is then updated in
place: eager's x * 1 is a new array, so its view keeps the old values (found by the stress
suite: ``v0 = x * int(x.max() > 0); v1 = v0.T; x += ...; return v1``)."""

import numpy as np
import pytest

import stax.runtime as stax


def times_one_then_update(x):
    v = x * 1
    t = v.T
    x += np.abs(v)
    return t


def plus_zero_view_then_update(x):
    v = x - 0.0
    r = v[1:]
    x *= 3
    return r, x


def times_one_returned_view_of_argument(x):
    return (x * 1).T


@pytest.mark.parametrize("fn", [times_one_then_update, plus_zero_view_then_update,
                                times_one_returned_view_of_argument])
def test_an_identity_is_not_applied_where_a_returned_view_would_alias_an_argument(fn):
    rng = np.random.default_rng(0)
    compiled = stax.compile(fn)
    for _ in range(3):
        x = rng.standard_normal((4, 5))
        x_eager = x.copy()
        want = fn(x_eager)
        got = compiled(x)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(x, x_eager)
    result = compiled(x)
    first = result[0] if isinstance(result, tuple) else result
    assert not np.shares_memory(first, x)  # eager's is a new array: the caller may write x


def test_an_unused_mask_assignment_raises_as_numpys():
    """``v[mask] = values`` whose value is never used still raises NumPy's ValueError when the
    mask's count of True differs from the values' (found by the stress suite: it was dropped as
    dead code, so the compiled call returned where eager raised)."""
    def prog(x, v):
        w = np.abs(x)
        unused = w.copy()
        unused[w > 0] = v
        return x + 1

    compiled = stax.compile(prog)
    good = (np.arange(8.0) - 2, np.arange(7.0))
    np.testing.assert_array_equal(compiled(*good), prog(*good))
    bad = (np.arange(8.0) + 1, np.arange(7.0))
    with pytest.raises(ValueError, match="boolean array indexing assignment"):
        prog(*bad)
    with pytest.raises(ValueError, match="boolean array indexing assignment"):
        compiled(*bad)


@pytest.mark.parametrize("fn", [lambda x: x[1] * 1, lambda x: x.T * 1, lambda x: x[::-1] / 1,
                                lambda x: x.reshape(-1) * 1, lambda x: np.negative(-x[1])])
def test_an_identity_of_a_view_of_an_argument_is_a_new_array(fn):
    """``x[1] * 1`` is a new array in NumPy; rewritten to ``x[1]`` it came back as a view of the
    caller's array (writing into the result wrote into the argument; found by a probe)."""
    compiled = stax.compile(fn, strict_native=True)
    x = np.arange(12.0).reshape(3, 4)
    for _ in range(2):  # the compiling call, then the cached version's
        got, want = compiled(x), fn(x)
        np.testing.assert_array_equal(got, want)
        assert not np.shares_memory(got, x)
        assert got.flags.writeable
