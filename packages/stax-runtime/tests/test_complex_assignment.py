"""Assignments into complex arrays compile (issue 13 items 1 and 5): ``out[k] = v``,
``out[i, 1:] = row * 2``, ``out[:, 0] = -1j`` are selects of the two parts, and ``X[k] = s`` at a
lifted loop's item a store of both parts (``stax.loop.updates``); they were NumPy's calls, so a
loop filling a complex array ran one call per item (a hand-written DFT: 1.0x NumPy, now ~7x).
Values convert as NumPy's assignment converts them, bit for bit: a real value's imaginary part
is +0.0, a complex128 value stored into complex64 is rounded part by part, NaN, infinite and
signed-zero parts kept."""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import pytest

import stax.runtime as stax


def _values(dtype, n=7, seed=0):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    z[:3] = [complex(math.inf, -0.0), complex(math.nan, 1.0), complex(-0.0, -0.0)]
    return z


def fill_rows(z):
    out = np.zeros((4, z.shape[0]), z.dtype)
    out[0] = z
    out[1, 1:] = z[:-1] * 2
    out[2, :3] = 1 + 2j
    out[3] = z.real  # a real value: imaginary parts +0.0
    out[:, 0] = -1j
    out[2, -1] = complex(-0.0, math.inf)
    return out


def into_complex64(z):  # complex128 values rounded part by part
    out = np.ones(z.shape[0] + 2, np.complex64)
    out[1:-1] = z * (1 / 3)
    out[0] = 0.1 + 0.7j
    return out


def reversed_rows(Z):  # a reversed slice of a whole axis, a select too
    out = np.zeros_like(Z)
    out[::-1] = Z * 1j
    out[0, ::-1] = Z[0]
    return out


def every_other(z):  # a strided key: NumPy's call, still right
    out = np.zeros(z.shape[0] * 2, z.dtype)
    out[::2] = z
    return out


@pytest.mark.parametrize("fn", [fill_rows, into_complex64, every_other])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_assignments_into_complex_arrays_as_eager(fn, dtype):
    compiled = stax.compile(fn)
    for seed in range(2):
        z = _values(dtype, seed=seed)
        got, want = compiled(z), fn(z)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (got, want)


def test_a_reversed_assignment_as_eager():
    Z = _values(np.complex128, 24).reshape(4, 6)
    got, want = stax.compile(reversed_rows)(Z), reversed_rows(Z)
    assert got.tobytes() == want.tobytes()


def test_assignments_into_complex_arrays_are_kernels():
    compiled = stax.compile(fill_rows, strict_native=True)
    compiled(_values(np.complex128))
    artifact = compiled.versions()[0].artifact
    assert all(b.role != "extern" for b in artifact.buffers), artifact


def dft(x):
    N = x.shape[0]
    n = np.arange(N)
    X = np.zeros(N, dtype=np.complex128)
    for k in range(N):
        X[k] = np.sum(x * np.exp(-2j * np.pi * k * n / N))
    return X


def rows_loop(Z):
    out = np.zeros_like(Z)
    for i in range(Z.shape[0]):
        out[i] = Z[i] * 2 - Z[i - 1]
    return out


def test_a_loop_storing_at_its_item_compiles(caplog, monkeypatch):
    """``out[i] = ...`` of a complex array at a lifted loop's item: the body compiles and its
    items run in one machine-code loop."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    Z = _values(np.complex128, 2000, seed=3)[3:-2].reshape(399, 5)  # (finite)
    compiled = stax.compile(rows_loop)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(2):
            got = compiled(Z)
    assert got.tobytes() == rows_loop(Z).tobytes()
    assert "items run in one machine-code loop" in caplog.text, caplog.text
    assert "NumPy steps" not in caplog.text, caplog.text


@pytest.mark.parametrize("n", [16, 140])
def test_a_hand_written_dft(n):
    """The DFT's twiddles ``-2j * np.pi * k * n / N`` and its store ``X[k] = ...``: compiled
    (complex ``exp`` within 3 ulp of NumPy's, docs/complex-semantics.md)."""
    x = np.random.default_rng(n).standard_normal(n)
    compiled = stax.compile(dft)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x), dft(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled(x), np.fft.fft(x), rtol=1e-9, atol=1e-9)


def test_a_complex_value_into_a_real_array_warns_as_numpy():
    def real_part(z):
        out = np.zeros(z.shape[0])
        out[1:] = z[1:] * 2
        return out

    z = _values(np.complex128)
    for fn in (real_part, stax.compile(real_part)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = fn(z)
        assert [w.category.__name__ for w in caught] == ["ComplexWarning"], caught
        np.testing.assert_array_equal(got, real_part(z) if fn is not real_part else got)


def gathered(z, idx):
    return z[idx] * 2 + z[idx[::-1]]


def test_gathers_of_complex_arrays_as_eager():
    """``z[idx]`` reads both parts at each position (negative ones from the end); a position
    out of bounds fails the check and NumPy raises its IndexError."""
    z = _values(np.complex64, 40, seed=4)
    compiled = stax.compile(gathered)
    for idx in (np.array([0, 5, -1, 39, -40, 7]), np.arange(40)[::-3]):
        with np.errstate(all="ignore"):
            got, want = compiled(z, idx), gathered(z, idx)
        assert got.tobytes() == want.tobytes()
    with pytest.raises(IndexError):
        compiled(z, np.array([0, 40, 1, 2, 3, 4]))


def _copied(real, z):
    np.copyto(real, z, casting="unsafe")
    return real


def _assigned(x, z):
    x[1:3] = z[1:3]
    return x


@pytest.mark.parametrize("fn", [_copied, _assigned])
def test_complex_to_real_warnings_name_the_users_line(fn):
    """``np.copyto(real, z, casting="unsafe")`` and ``x[1:3] = z[1:3]``: NumPy's ComplexWarning
    from the user's line on every call, under Python's default filter once per line as eager
    (it named Stax's ``ops.py`` line; copyto's own check copy warned a second time at capture,
    taken for a constant's warning: the function ran eagerly)."""
    z = _values(np.complex128)[:4]
    line = fn.__code__.co_firstlineno + 1
    compiled = stax.compile(fn, strict_native=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(np.zeros(4), z)
    for action, shown in (("always", 3), ("default", 1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            globals().get("__warningregistry__", {}).clear()
            for _ in range(3):
                np.testing.assert_array_equal(compiled(np.zeros(4), z), want)
        mine = [w for w in caught if w.category is np.exceptions.ComplexWarning]
        assert [(w.filename, w.lineno) for w in mine] == [(__file__, line)] * shown, \
            (action, [(w.filename, w.lineno) for w in mine])


def _assigned_then_raising(dst, z):
    dst[:] = z
    return dst + np.ones(3)  # a shape error: capture ends in the user's own error


def test_the_warning_of_a_capture_that_raises_names_the_users_line():
    """Capture ends in the user's error and gives the warnings it held: the ComplexWarning of
    ``dst[:] = z`` named ``warnings.py`` (a probe's find: the walk to the user's line started
    from the warnings module's frames, not from Stax's line)."""
    line = _assigned_then_raising.__code__.co_firstlineno + 1
    for fn in (_assigned_then_raising, stax.compile(_assigned_then_raising)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError):
                fn(np.zeros(4), np.arange(4) + 1j)
        assert [(w.category, w.filename, w.lineno) for w in caught] == \
            [(np.exceptions.ComplexWarning, __file__, line)]
