"""Which results share an argument's memory, as NumPy decides it (found by an indexing probe,
each a wrong value before):

- an identity step (``* 1``, ``+ 0``) on a value that shares an argument's memory without a view
  relation to its operand (``np.split(x, 2)[0]``, ``x.view(np.int64)``: capture's ``aliases``
  meta) is kept where the result is returned: NumPy's result is fresh, a later update of ``x``
  must not show in it;
- ``x[i]`` of a 1-D array is a NumPy scalar, a copy: a NumPy step reading it (``np.atleast_1d``,
  ``[...]``) gets a copy, not a view of ``x``'s memory;
- an argument whose elements share memory (a broadcast row, ``as_strided``) updated in place
  runs eagerly: a whole final value written back left the last element's old value in the
  shared cell;
- a first call that cannot compile returns the caller's array where the function returns its
  argument (updated in place or not), not the capture's copy."""

import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import stax.runtime as stax


def _split_copy(x):
    a = np.split(x, 2)[0] * 1
    x[0] = 100
    return a


def _bits_copy(x):
    b = x.view(np.int64) + 0
    x[:] = 0
    return b


def _scalar_row(x):
    s = np.atleast_1d(x[1])
    x[1] = 100.0
    return s


def _scalar_fresh(x):
    return x[0][...]


@pytest.mark.parametrize("fn, dtype", [(_split_copy, np.int64), (_bits_copy, np.float64),
                                       (_scalar_row, np.float64), (_scalar_fresh, np.float64)])
def test_results_numpy_makes_fresh_do_not_share_the_argument(fn, dtype):
    compiled = stax.compile(fn)
    for k in range(3):
        want_x, got_x = np.arange(4).astype(dtype) + k, np.arange(4).astype(dtype) + k
        want, got = fn(want_x), compiled(got_x)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_x, want_x)
        assert not np.shares_memory(got, got_x)


def _write_one(x):
    x[1] = 5.0
    return x


def _write_corner(x):
    x[0, 0] = -1.0
    return x


def test_an_argument_whose_elements_share_memory_is_updated_as_numpy_does():
    compiled, corner = stax.compile(_write_one), stax.compile(_write_corner)
    for k in range(2):
        want, got = np.arange(3.0) + k, np.arange(3.0) + k
        _write_one(as_strided(want, (4,), (0,)))
        compiled(as_strided(got, (4,), (0,)))
        np.testing.assert_array_equal(got, want)
        want, got = np.arange(3.0) + k, np.arange(3.0) + k
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's FutureWarning on writing broadcast arrays
            _write_corner(np.broadcast_arrays(want, np.zeros((2, 1)))[0])
            corner(np.broadcast_arrays(got, np.zeros((2, 1)))[0])
        np.testing.assert_array_equal(got, want)


def test_a_first_call_that_falls_back_returns_the_callers_argument():
    def update(x):
        x[x] = 1 + 2j  # runs as NumPy (a complex value into a bool array)
        return x
    compiled = stax.compile(update)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            x = np.array([True, False, True])
            assert compiled(x) is x


def test_returned_parts_of_a_complex_argument_are_numpys_views():
    """``z.real``/``z.imag`` returned were copies: writing through them did not reach ``z``;
    ``np.imag`` of a real array is NumPy's read-only zeros (found by a probe)."""
    def parts(z):
        return z.real, z.imag, np.real(z + 1)

    compiled = stax.compile(parts)
    for k in range(3):
        eager_z = np.array([1 + 2j, 3 - 4j], dtype=np.complex64) * (k + 1)
        z = eager_z.copy()
        expected, got = parts(eager_z), compiled(z)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e)
            assert np.shares_memory(g, z) == np.shares_memory(e, eager_z)
        got[1][:] = 0
        expected[1][:] = 0
        np.testing.assert_array_equal(z, eager_z)
    imag = stax.compile(lambda x: np.imag(x))(np.arange(3.0))
    assert not imag.flags.writeable and not imag.any()
