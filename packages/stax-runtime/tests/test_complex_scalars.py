"""Complex scalar arguments as run-time inputs (issue 13 item 5, issue 14 item 3).

A Python ``complex`` (weak, NEP 50: ``x_f32 * 1j`` is complex64) or a NumPy complex64 /
complex128 scalar (strong) passed beside arrays was keyed by its value: every new value compiled
a version (a Julia set's ``c``, a filter's pole), and eager past the version limit; the exact
version had no machine-code entry. They are now inputs of a generic version, as floats are,
where the function uses them only as operands of arithmetic; the entry reads them itself.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import stax.runtime as stax


def affine(z, c):
    return z * c + 1


def quotient(z, c):
    return z / c - c


def reflected(z, c):
    return c * z - np.multiply(z, c) * 0.5


def branches_on(z, c):  # Python decides from the value: it stays in the key
    if c.real > 0:
        return z * c
    return z - c


def computed(z, c):  # Python arithmetic on it: not followed, the value keyed
    return z * (c * 2)


VALUES = [1 + 2j, 2 - 3j, -0.5 + 0.25j, complex(0.0, -0.0), complex(-0.0, 0.0),
          complex(math.inf, 1.0), complex(math.nan, 2.0), 1e300 + 1e300j, 3 + 0j]


def _arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    z = rng.standard_normal(257) + 1j * rng.standard_normal(257)
    z[:4] = [complex(math.inf, 0), complex(math.nan, 1), complex(-0.0, 0.0), 0]
    return {"complex128": z, "complex64": z.astype(np.complex64),
            "float32": rng.standard_normal((9, 31)).astype(np.float32),
            "float64": rng.standard_normal(100), "int32": np.arange(-50, 50, dtype=np.int32),
            "complex64 strided": z.astype(np.complex64)[::3]}


def _same(got, want) -> None:
    """Bit for bit, a NaN part any NaN (docs/complex-semantics.md: NaN sign and payload are not
    among complex arithmetic's claims)."""
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    parts = (lambda a: a.view(a.real.dtype)) if want.dtype.kind == "c" else (lambda a: a)
    g, w = parts(np.ascontiguousarray(got)), parts(np.ascontiguousarray(want))
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), (got, want)
    assert g[~nan].tobytes() == w[~nan].tobytes(), (got, want)


@pytest.mark.parametrize("fn", [affine, quotient, reflected, branches_on, computed])
@pytest.mark.parametrize("kind", ["complex128", "complex64", "float32", "float64", "int32",
                                  "complex64 strided"])
def test_complex_scalars_as_eager(fn, kind):
    z = _arrays(np.random.default_rng(3))[kind]
    compiled = stax.compile(fn)
    with np.errstate(all="ignore"):
        for c in [*VALUES, np.complex64(1 - 1j), np.complex128(-2 + 0.5j), *VALUES[:3]]:
            _same(compiled(z, c), fn(z, c))


@pytest.mark.parametrize("fn", [affine, quotient, reflected])
def test_a_new_complex_value_compiles_nothing(fn, caplog, monkeypatch):
    """After the second value, one generic version serves every further one, through the
    machine-code entry (level-1 hits)."""
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    z = _arrays(np.random.default_rng(4))["complex64"][4:]  # (finite: no event to report)
    compiled = stax.compile(fn)
    with caplog.at_level(logging.INFO, logger="stax"):
        compiled(z, 1 + 2j)
        compiled(z, 2 - 1j)
    assert "scalar arguments as run-time inputs" in caplog.text, caplog.text
    compiles = compiled.cache_info().compiles
    rng = np.random.default_rng(5)
    for _ in range(30):
        c = complex(*rng.standard_normal(2))
        _same(compiled(z, c), fn(z, c))
    info = compiled.cache_info()
    assert info.compiles == compiles and info.fallbacks == 0
    assert info.hits[1] >= 30, info


def test_numpy_complex_scalars_are_inputs_of_their_own_dtype():
    """A NumPy complex64 scalar is strong: ``z128 * np.complex64(c)`` is complex128,
    ``x32 * np.complex128(c)`` complex128; one generic version per scalar type."""
    compiled = stax.compile(affine)
    arrays = _arrays(np.random.default_rng(6))
    for t in (np.complex64, np.complex128):
        for name in ("complex128", "complex64", "float32"):
            before = compiled.cache_info().compiles
            for k in range(6):
                c = t(complex(k - 2.5, 1.5 - k))
                _same(compiled(arrays[name], c), affine(arrays[name], c))
            assert compiled.cache_info().compiles - before <= 2


def test_keyed_complex_uses_compile_per_value():
    """Where Python decides from the value (a branch), each value is its own version, and the
    branch goes as eagerly."""
    z = _arrays(np.random.default_rng(7))["complex128"]
    compiled = stax.compile(branches_on)
    for c in (1 + 1j, -1 + 1j, 2 + 1j):
        _same(compiled(z, c), branches_on(z, c))
    assert compiled.cache_info().compiles == 3


def left_literal(z):
    return np.complex128(6 - 2j) * z


def left_argument(z, c):
    return c * z


def test_a_complex_constant_on_the_left_keeps_its_place():
    """NumPy's complex product is not commutative bit for bit (``fma(a, d, b*c)``): ``c * z``
    stays ``c * z`` (the operator normalization moved constants to the right: the last bits of
    the imaginary parts differed; a review's find)."""
    z = np.random.default_rng(1).standard_normal(64) + 1j * np.random.default_rng(2).standard_normal(64)
    _same(stax.compile(left_literal)(z), left_literal(z))
    for c in (np.complex128(6 - 2j), np.complex64(6 - 2j), 6 - 2j):
        _same(stax.compile(left_argument)(z, c), left_argument(z, c))
