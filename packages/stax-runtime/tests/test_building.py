"""Array-building functions compiled natively (concatenate, stack, constant pad, tril/triu,
zeros/ones/full and *_like, arange, linspace, eye): NumPy's values, dtypes and shapes, fused with
their producers and consumers into one kernel, on odd shapes, mixed dtypes and every layout."""

import numpy as np
import pytest

import stax.runtime as stax

RNG = np.random.default_rng(8)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def check(fn, *args, kernels=None, rtol=0.0):
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's (its machine-code entry)
        got, want = compiled(*args), fn(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple)
                        else (want,)):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=rtol) if rtol else \
                np.testing.assert_array_equal(g, w)
    artifact = compiled.versions()[0].artifact
    assert not artifact.externs  # computed in kernels, not by NumPy
    if kernels is not None:
        assert len(artifact.kernels) == kernels
    return compiled


PROGRAMS = {
    "concatenate axis 0": (lambda x, y: np.concatenate([x, y, x * 2], axis=0), (f32(3, 5), f32(4, 5))),
    "concatenate axis -1, mixed dtypes": (lambda x, y: np.concatenate((x, y), -1),
                                          (f32(3, 2), np.arange(9, dtype=np.int16).reshape(3, 3))),
    "concatenate with an empty piece": (lambda x, y: np.concatenate([x, y], 0), (f32(0, 4), f32(2, 4))),
    "concatenate transposed views": (lambda x, y: np.concatenate([x.T, y[::-1].T], 1),
                                     (f32(7, 3), f32(5, 3))),
    "stack": (lambda x, y: np.stack([x, y, x - y], axis=1), (f32(4, 6), f32(4, 6))),
    "stack last axis": (lambda x, y: np.stack((x, y), -1) + 1, (f32(17), f32(17))),
    "pad": (lambda x, y: np.pad(x, ((1, 2), (0, 3))) + y.sum(), (f32(4, 5), f32(3))),
    "pad scalar width, value": (lambda x, y: np.pad(x * 2, 2, constant_values=-7.5), (f32(3, 3), f32(1))),
    "pad integers": (lambda x, y: np.pad(x, (1, 1), constant_values=9),
                     (np.arange(10, dtype=np.int32).reshape(2, 5), f32(1))),
    "tril/triu": (lambda x, y: np.tril(x, -1) + np.triu(y, 2), (f32(5, 7), f32(5, 7))),
    "tril of a batch": (lambda x, y: np.tril(x), (f32(2, 4, 4), f32(1))),
    "creation": (lambda x, y: x + np.zeros(5) + np.ones((4, 5), np.float32) + np.full((4, 5), 2.5)
                 + np.zeros_like(x) + np.ones_like(x, dtype=np.int8) + np.full_like(x, 3),
                 (f32(4, 5), f32(1))),
    "arange": (lambda x, y: x + np.arange(5) + np.arange(2, 12, 2) + np.arange(10, 0, -2),
               (f32(3, 5), f32(1))),
    "eye": (lambda x, y: x + np.eye(4, 6) + np.eye(4, 6, k=2, dtype=np.int32) + np.eye(4, 6, k=-9),
            (f32(4, 6), f32(1))),
    "bool fill": (lambda x, y: (x > 0) | np.full(x.shape, True), (f32(3, 3), f32(1))),
    "roll without an axis": (lambda x, y: (np.roll(x, 3), np.roll(x.T * 2, -7), np.roll(y, 40)),
                             (f32(4, 5), f32(2, 3, 4)[:, ::2])),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_building_functions_match_numpy(name):
    fn, args = PROGRAMS[name]
    check(fn, *args)


def test_a_concatenation_fuses_into_one_kernel():
    check(lambda x, y: np.concatenate([np.exp(x), y * 2], axis=1).sum(1), f32(64, 30),
          f32(64, 50), kernels=1, rtol=1e-5)  # exp within its ulp bound, the sum reordered


def test_other_forms_run_as_numpy():
    x = f32(3, 4)
    for fn in (lambda x: np.concatenate([x, x], axis=None), lambda x: np.pad(x, 1, mode="edge"),
               lambda x: np.linspace(x[0, :2], 3.0, 4) + 1):
        compiled = stax.compile(fn)
        np.testing.assert_array_equal(compiled(x), fn(x))
        assert compiled.versions()[0].artifact.externs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_arange_and_linspace_are_numpys_own_values(dtype):
    """Float arange by NumPy's fill loop (a[0], a[1] = start + step, then start + i * delta in
    the dtype) and linspace by its float64 formula with the exact endpoint: bit-equal over
    random ends, steps, counts and endpoints."""
    rng = np.random.default_rng(12)
    for _ in range(40):
        start = float(rng.uniform(-100, 100))
        step = float(rng.uniform(1e-3, 3)) * float(rng.choice([-1, 1]))
        stop = start + step * int(rng.integers(2, 300))
        num, endpoint = int(rng.integers(0, 200)), bool(rng.integers(0, 2))

        def fn(x, start=start, stop=stop, step=step, num=num, endpoint=endpoint):
            return (np.arange(start, stop, step, dtype=dtype) + x[:1] * 0,
                    np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype) - x[:1] * 0)
        check(fn, np.ones(2, dtype))


def test_linspace_edges():
    check(lambda x: (np.linspace(0, 1, 5) + x, np.linspace(2, 2, 1) + x[:1],
                     np.linspace(0, 1e-320, 7) + x[:1] * 0, np.linspace(1, 0, 0) + x[:1] * 0,
                     np.arange(3.0) + x[:1], np.arange(0.5, 3) + x[:1]), np.zeros(5))


@pytest.mark.parametrize("ends", [(np.float32(0), np.float32(1)), (np.float32(0.3), np.float32(1.7)),
                                  (np.float32(-2.5), 3.25), (2.0, np.float32(-1.1)),
                                  (np.float32(1e-45), np.float32(3e-45)),
                                  (np.float64(0.1), np.float32(0.9)), (1, 10)])
def test_linspace_computes_in_the_ends_float_type(ends):
    """NumPy's linspace computes in its ends' result type (NEP 50: float32 ends, or a float32
    end and a Python number, in float32), then casts to ``dtype``: float32 ends were computed in
    float64 (1 ulp off at some points)."""
    for num in (2, 7, 50, 101):
        for endpoint in (True, False):
            for dtype in (None, np.float32, np.int32):
                check(lambda x, num=num, endpoint=endpoint, dtype=dtype:
                      np.linspace(*ends, num, endpoint=endpoint, dtype=dtype) + x[0],
                      np.zeros(1, np.float32))
