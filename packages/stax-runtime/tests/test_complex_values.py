"""Complex numbers (issue 13): complex64/complex128 values computed in kernels as pairs of floats
(``stax.loop.complex_values``), bit for bit NumPy's, special values included; what has no rule
runs as NumPy's call on the complex buffers, never a wrong result."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import stax.runtime as stax

SPECIAL = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-310, 1.7e308]


def _random(shape, dtype, rng):
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return z.astype(dtype)


def _specials(dtype):
    """Every pair of special parts, as one 1-D array."""
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    z = np.empty(len(pairs), dtype)
    with np.errstate(over="ignore"):  # 1.7e308 is inf in complex64
        z.real = [p[0] for p in pairs]
        z.imag = [p[1] for p in pairs]
    return z


def _layouts(z):
    """The array, transposed, sliced with a step, and broadcast (2-D inputs)."""
    yield z
    yield z.T
    yield z[::2, ::-1]
    yield np.broadcast_to(z[:1], z.shape)


def _same(got, want):
    """Bit for bit, but for the sign and payload of a NaN (which NumPy does not define: an
    operation on two NaNs returns either)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "c":
        for part in ("real", "imag"):
            _same(getattr(got, part), getattr(want, part))
        return
    if got.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(want)
        got, want = np.where(both_nan, 0.0, got), np.where(both_nan, 0.0, want)
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                          np.ascontiguousarray(want).view(np.uint8)) \
        if got.dtype.kind == "f" else np.array_equal(got, want)


def _check(fn, *args, native=True):
    compiled = stax.compile(fn, strict_native=native)
    with np.errstate(all="ignore"):
        want = fn(*args)
        calls = [compiled(*args) for _ in range(2)]  # the compiling call, then the cached one's
    for got in calls:
        for g, w in zip(got if isinstance(want, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _same(g, w)
    return compiled


EXACT = {
    "add": lambda z, w: z + w,
    "sub": lambda z, w: z - w,
    "real_operand": lambda z, w: (z + w.real) - 2.0,
    "neg_conj": lambda z, w: -np.conj(z) + w.conjugate(),
    "parts": lambda z, w: z.real * 2 + w.imag,
    "eq_ne": lambda z, w: (z == w) | (z != z),
    "predicates": lambda z, w: np.isnan(z) ^ np.isinf(w) ^ np.isfinite(z),
    "where": lambda z, w: np.where(z.real > 0, z, w),
    "constant": lambda z, w: z + (1.5 - 0.5j),
    "views": lambda z, w: z.T + w.T[::-1],
    # NumPy's vector loop: fma(a, c, -(b*d)), fma(a, d, b*c)
    "multiply": lambda z, w: z * w,
    "multiply_real": lambda z, w: z * w.real * 3.0,
    "square": lambda z, w: z ** 2 - np.square(w),
    # Smith's algorithm, every branch (zero, infinite and NaN divisors among the specials)
    "divide": lambda z, w: z / w,
    "divide_real": lambda z, w: z / w.imag + w.real / z,
    # NumPy's vector magnitude: l * sqrt(fma(r, r, 1)), not hypot
    "absolute": lambda z, w: np.abs(z) + abs(w),
    "mixed": lambda z, w: np.abs(z * w - z / (w + 1.0)) * z,
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_ops_on_layouts(name, dtype):
    rng = np.random.default_rng(0)
    fn = EXACT[name]
    for z in _layouts(_random((6, 6), dtype, rng)):
        compiled = _check(fn, z, _random(z.shape, dtype, rng))
        steps = compiled.versions()[0].artifact.steps
        # a reversed operand sends NumPy's magnitude (and complex64 products) to other loops,
        # which stay NumPy's calls (test_layouts_numpy_computes_otherwise_are_its_calls)
        if min(z.strides) > 0 or name not in ("multiply", "multiply_real", "square", "absolute",
                                               "mixed"):
            assert all(s.startswith("kernel") for s in steps), steps


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_ops_on_special_values(name, dtype):
    z = _specials(dtype)
    _check(EXACT[name], z, z[::-1].copy())


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_floating_point_warnings_are_numpy_s(dtype):
    """Special values make NumPy warn (division by zero, invalid, overflow): the compiled call
    reports the same warnings, from the same line."""
    import warnings

    def fn(z, w):
        return z / w + np.abs(z) * w

    z = _specials(dtype)
    w = z[::-1].copy()
    compiled = stax.compile(fn, strict_native=True)
    compiled(z[:3], w[:3])  # compile on data that warns about nothing
    for f in (fn, compiled):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(z, w)
        messages = sorted({str(c.message) for c in caught})
        if f is fn:
            want = messages
    assert messages == want and want


def test_layouts_numpy_computes_otherwise_are_its_calls():
    """complex64 products with a reversed operand and magnitudes of reversed arrays come from
    NumPy's plain loops (another formula): those stay NumPy's calls, exactly."""
    rng = np.random.default_rng(5)
    z, w = _random(33, np.complex64, rng), _random(33, np.complex64, rng)
    compiled = _check(lambda z, w: z[::-1] * w + np.abs(w[::-1]), z, w)
    assert any(not s.startswith("kernel") for s in compiled.versions()[0].artifact.steps)
    _check(lambda z, w: z[::-1].astype(np.complex128) * w, z, w)  # complex128: the FMA loop


def test_real_and_complex_mix_as_numpy_promotes():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(7).astype(np.float32)
    z = _random(7, np.complex64, rng)
    _check(lambda x, z: x + z, x, z)                           # complex64
    _check(lambda x, z: x.astype(np.float64) - z, x, z)        # complex128
    _check(lambda x, z: x + 2j, x, z)                          # float32 + Python complex
    _check(lambda x, z: z.astype(np.complex128) + x, x, z)
    _check(lambda x, z: np.zeros(x.shape, np.complex64) - z, x, z)
    # the imaginary part of a real operand is +0.0: -0.0 + 0.0 is +0.0, as in NumPy
    neg_zero = np.array([complex(1.0, -0.0)])
    _check(lambda z: z + 1.0, neg_zero)


def test_sum_of_parts():
    rng = np.random.default_rng(2)
    z = _random((9, 4), np.complex128, rng)
    compiled = stax.compile(lambda z: z.sum(axis=0), strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        got = compiled(z)
        np.testing.assert_allclose(got, z.sum(axis=0), rtol=1e-15)  # the order of a float sum
        assert got.dtype == np.complex128


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_sums_along_memory_reduce_each_part_with_whole_vectors(dtype):
    """A complex sum over the last axis (or everything) reduces each part on its own in one
    kernel, the parts' loads a stride-2 group read as whole vectors (64-bit indices: with 32-bit
    ones LLVM gathered each lane, 3x NumPy's time); down the columns of an array in memory, the
    float array of its parts is summed; special values and layouts as NumPy's."""
    from stax.codegen.cpu.jit import CompiledModule

    rng = np.random.default_rng(7)
    # within a reordered float sum's bound: n eps the sum of magnitudes (257 terms near 1)
    atol = 257 * 257 * np.finfo(dtype).eps
    z = _random((300, 257), dtype, rng)
    z[3, 5], z[7, 0] = complex(np.inf, 1.0), complex(np.nan, -0.0)
    for fn in (lambda z: z.sum(), lambda z: z.sum(axis=1), lambda z: z.sum(axis=-1,
                                                                           keepdims=True),
               lambda z: z[::2, 1:].sum(axis=1), lambda z: z.T.sum(axis=0),
               lambda z: (z * z[0]).sum(axis=1), lambda z: z.mean(),
               # down the columns: the float array of the parts, its rows twice as long
               lambda z: z.sum(axis=0), lambda z: z.sum(axis=0, keepdims=True),
               lambda z: z.reshape(30, 10, 257).sum(axis=(0, 1)), lambda z: z.T.sum(axis=1),
               lambda z: z[:, 1:].sum(axis=0), lambda z: (z * 2).sum(axis=0)):
        compiled = stax.compile(fn, strict_native=True)
        compiled(z)
        got, want = compiled(z), fn(z)
        assert got.dtype == want.dtype and got.shape == want.shape
        for part in ("real", "imag"):
            np.testing.assert_allclose(getattr(got, part), getattr(want, part), rtol=0,
                                       atol=atol)
    whole = stax.compile(lambda z: z.sum(), strict_native=True)
    whole(z[7:])
    (version,) = whole.versions()
    assert "gather" not in CompiledModule(version.artifact.llvm_ir).assembly()


def _within_ulps(got, want, ulps):
    """Each part within ``ulps`` of NumPy's where NumPy's is finite and non-zero; exactly
    NumPy's class elsewhere (NaN, infinity with its sign, zero with its sign)."""
    for part in (("real", "imag") if want.dtype.kind == "c" else (None,)):
        g = getattr(got, part) if part else got
        w = getattr(want, part) if part else want
        assert np.array_equal(np.isnan(g), np.isnan(w))
        normal = np.isfinite(w) & (w != 0)
        exact = ~normal & ~np.isnan(w)
        np.testing.assert_array_equal(g[exact], w[exact])
        np.testing.assert_array_equal(np.signbit(g[exact]), np.signbit(w[exact]))
        error = np.abs(g[normal] - w[normal]) / np.spacing(np.abs(w[normal]))
        assert error.max(initial=0) <= ulps, (part, error.max())


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_exp_is_glibc_s_algorithm_with_stax_s_functions(dtype):
    """np.exp(z) is glibc's cexp: exp(x) (cos y, sin y), scaled above 709 (88 in float32), with
    C99's special values; Stax's exp, sin and cos are within their bounds of glibc's."""
    rng = np.random.default_rng(6)
    grid = [0.0, -0.0, 2.0, -2.0, np.inf, -np.inf, np.nan, 1e-310, 700.0, 710.0, 750.0, 1500.0,
            -800.0, 1e-40, 88.5, 100.0, 180.0]
    pairs = list(itertools.product(grid, grid))
    z = np.empty(len(pairs), dtype)
    with np.errstate(all="ignore"):
        z.real, z.imag = [p[0] for p in pairs], [p[1] for p in pairs]
    random = (rng.standard_normal(5000) * 3 + 1j * rng.standard_normal(5000) * 10).astype(dtype)
    compiled = stax.compile(lambda z: np.exp(z), strict_native=True)
    for data in (z, z, random, random):  # each compiling call, then the cached version's
        with np.errstate(all="ignore"):
            _within_ulps(compiled(data), np.exp(data), 3)
    assert all(s.startswith("kernel") for s in compiled.versions()[0].artifact.steps)
    huge = np.array([1 + 1e10j, 2 + 3j], dtype)  # beyond the kernels' sin/cos reduction
    np.testing.assert_array_equal(compiled(huge), np.exp(huge))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_angle_is_arctan2_of_the_parts(dtype):
    rng = np.random.default_rng(7)
    z = _random(500, dtype, rng)
    z[:4] = [complex(0.0, -0.0), complex(-0.0, 0.0), complex(np.inf, np.nan), complex(-1, -0.0)]
    for fn in (lambda z: np.angle(z), lambda z: np.angle(z, deg=True)):
        compiled = stax.compile(fn, strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            _within_ulps(compiled(z), fn(z), 2)  # NumPy's own arctan2 is not correctly rounded


def test_ops_without_rules_run_as_numpy_steps():
    """npy_cpow powers are NumPy's calls on the complex buffers (for now), between kernels,
    fused around them (csqrt is native, bit for bit): the result is NumPy's exactly."""
    rng = np.random.default_rng(3)
    z, w = _random(8, np.complex128, rng), _random(8, np.complex128, rng)
    compiled = _check(lambda z, w: np.sqrt(z) / w + np.power(z, 2) + z ** 2.0, z, w)
    steps = compiled.versions()[0].artifact.steps
    assert any(not s.startswith("kernel") for s in steps)


def fir(x, h):
    """The corpus's complex64 FIR filter: one shifted product per tap."""
    n, k = x.shape[0], h.shape[0]
    y = np.zeros(n - k + 1, dtype=np.complex64)
    for j in range(k):
        y += h[j] * x[k - 1 - j:n - j]
    return y


def test_the_corpus_programs_run_with_complex_values():
    rng = np.random.default_rng(4)
    _check(fir, _random(64, np.complex64, rng), _random(5, np.complex64, rng), native=False)


# -- found by probing as a user (each failed before its fix) -------------------------------------

def test_numpy_complex_scalar_constants_are_not_folded_as_reals():
    import warnings
    x, y = np.array([1 + 1j, 2 + 0j]), np.array([1j, 3 + 0j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning from Stax itself either
        for fn in (lambda x, y: x + y * np.complex128(1 + 5j),
                   lambda x, y: x + y / np.complex128(1 + 5j),
                   lambda x, y: x + (y - np.complex128(5j)),
                   lambda x, y: (y * np.complex64(1 - 2j)).real):
            _check(fn, x, y, native=False)


def test_real_identities_do_not_apply_to_complex_values():
    """NumPy computes ``z * 1.0`` as ``z * (1+0j)``: inf and NaN parts make NaNs, ``z + 0.0``
    makes a -0.0 imaginary part +0.0; and a real ``x + 0.0`` turns -0.0 into 0.0."""
    z = np.array([complex(1, -np.inf), complex(-0.0, -2), complex(np.inf, -1),
                  complex(np.nan, -0.0)])
    for fn in (lambda z: np.conj(z) * 1.0, lambda z: np.conj(z) / 1, lambda z: np.conj(z) + 0.0,
               lambda z: np.conj(z) + (-0.0), lambda z: 0.0 + (-z.real)):
        _check(fn, z, native=False)


def test_products_and_magnitudes_of_numpy_scalars_are_numpy_s_scalar_math():
    rng = np.random.default_rng(12)
    compiled = stax.compile(lambda z, w: (z[0] * w[0], abs(z[1]), np.conj(z[0]) * w[1]))
    for _ in range(50):
        z, w = _random(2, np.complex128, rng), _random(2, np.complex128, rng)
        for got, want in zip(compiled(z, w), (z[0] * w[0], abs(z[1]), np.conj(z[0]) * w[1])):
            assert type(got) is type(want) and got == want


@pytest.mark.parametrize("fn,z", [
    (lambda z: z * 2.0, [complex(np.inf, 1), 1 + 1j]),          # invalid inside the FMA
    (lambda z: z * z, [complex(1e200, 0), 1 + 1j]),             # overflow inside the FMA
    (lambda z: 1 / z, [complex(np.nan, 1), 1 + 1j]),            # NaN divisor: invalid
    (lambda z: np.exp(z), [complex(np.nan, 1), 1 + 1j]),        # glibc's cexp reports invalid
    (lambda z: np.exp(z), [complex(1.0, np.nan), 1 + 1j]),
])
def test_floating_point_events_inside_complex_formulas(fn, z):
    import warnings
    z = np.array(z)
    compiled = stax.compile(fn, strict_native=True)
    compiled(np.array([1 + 1j, 2 + 2j]))  # compiled on quiet data
    caught = []
    for f in (fn, compiled):
        with warnings.catch_warnings(record=True) as found:
            warnings.simplefilter("always")
            f(z)
        caught.append(sorted({str(w.message) for w in found}))
    assert caught[0] == caught[1] and caught[0]
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        compiled(z)


def test_a_long_fused_complex_loop_vectorizes():
    """A 16-tap complex64 FIR filter is one kernel with 32 interleaved reads of x: each a
    no-wrap assumption of its 32-bit index the loop vectorizer checks at run time; past its
    default of 16 it left the loop scalar (``host.LLVM_OPTIONS``)."""
    from stax.codegen.cpu.jit import _optimized_module

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(3000) + 1j * rng.standard_normal(3000)).astype(np.complex64)
    h = x[:16] / 4
    f = stax.compile(fir, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(f(x, h), fir(x, h), rtol=1e-5, atol=1e-5)
    optimized = str(_optimized_module(f.versions()[0].artifact.llvm_ir, 3))
    assert "x float>" in optimized  # vector lanes of float32


def test_exp_of_data_with_zero_imaginary_parts_runs_its_kernels():
    """A twiddle matrix ``exp(-2j pi k n / N)`` has y = 0 in row 0: the x = +inf branch's
    ``inf * sin(y)``, unselected there, reported invalid in the fast kernel and every call ran
    eagerly (the NaN-constant fix had made the kernel a fast one). Its infinities now take
    c's and s's signs without a product."""
    n = np.arange(64)
    angles = -2j * np.pi * n.reshape(-1, 1) * n / 64
    f = stax.compile(lambda z: np.exp(z))
    for _ in range(2):  # the compiling call, then the cached version's
        got, want = f(angles), np.exp(angles)
        np.testing.assert_allclose(got, want, rtol=4e-16 * 4, atol=1e-15)
    assert f._fallbacks == 0
    special = np.array([complex(np.inf, 2.0), complex(np.inf, -3.0), complex(np.inf, 0.0),
                        complex(np.inf, 1e-310), complex(-np.inf, 2.0), 1 + 0j])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(f(special), np.exp(special))
