import logging

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import CacheInfo, UnsupportedError


def test_decorator_forms_and_wrapping():
    @stax.compile
    def f(x):
        """doc"""
        return x * 2

    @stax.compile(strict_native=True)
    def g(x):
        return x + 1

    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x), x * 2)
    np.testing.assert_array_equal(g(x), x + 1)
    assert f.__name__ == "f" and f.__doc__ == "doc"


def test_versions_per_signature_and_cache_info():
    cf = stax.compile(lambda x, k: x * k, strict_native=True)
    x = np.arange(6.0).reshape(2, 3)
    for _ in range(3):
        cf(x, 3)
    cf(x, 4)             # a scalar is specialized by value (example 2.1)
    cf(x.T, 3)           # strides enter the key
    cf(x.astype(np.float32), 3)
    info = cf.cache_info()
    assert isinstance(info, CacheInfo)
    assert info.versions == 4 and info.compiles == 4 and info.misses == 4
    assert sum(info.hits.values()) == 2 and info.fallbacks == 0
    np.testing.assert_array_equal(cf(x.T, 4), x.T * 4)


def test_signed_zero_scalars_are_different_keys():
    cf = stax.compile(lambda x, k: x * k, strict_native=True)
    x = np.ones(3)
    assert not np.signbit(cf(x, 0.0)).any()
    assert np.signbit(cf(x, -0.0)).all()


def test_pytree_arguments_and_results():
    cf = stax.compile(lambda p, scale=1.0: {"s": p[0] + p[1] * scale, "n": p[0]},
                      strict_native=True)
    a, b = np.arange(3.0), np.ones(3)
    for _ in range(2):  # the compiling call, then the cached version's
        out = cf((a, b), scale=2.0)
        np.testing.assert_array_equal(out["s"], a + b * 2.0)
        assert out["n"] is a  # returning an input returns the same object, as eager does


def test_fallback_logs_one_line_and_matches_eager(caplog):
    def f(x):
        return np.fft.fft(x.astype(np.longdouble)).real + 1  # complex256: not supported

    cf = stax.compile(f)
    x = np.linspace(0, 1, 5)
    with caplog.at_level(logging.WARNING, logger="stax"):
        got = cf(x)
        cf(x)
    np.testing.assert_array_equal(got, f(x))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "falls back to eager NumPy" in lines[0]
    assert "returned an array of dtype float128" in lines[0]
    assert __file__ in lines[0]
    assert cf.cache_info().fallbacks == 2


def test_strict_native_raises_typed_error_with_source_line():
    def f(x):
        return (x.astype(np.longdouble) + 1).astype(np.float64)

    with pytest.raises(UnsupportedError) as info:
        stax.compile(f, strict_native=True)(np.ones(3))
    assert "float128" in str(info.value) and __file__ in info.value.source


def test_data_dependent_shapes_are_gated():
    def f(x, m):
        return x[m] * 2, np.unique(np.round(x)), np.nonzero(m)[0]

    cf = stax.compile(f, strict_native=True)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.standard_normal(8)
        m = x > 0
        for got, want in zip(cf(x, m), f(x, m)):
            np.testing.assert_array_equal(got, want)
    kinds = cf.versions()[0].gates.kinds
    assert kinds == ["shape", "shape", "shapes"]
    x = np.arange(8.0)
    cf(x, x > 3)
    cf(x[::-1].copy(), x > 3)  # same mask count, same unique count: no new version
    assert cf.explain(x, x > 3)[-1].matches


def test_numpy_calls_without_native_rules_run_as_extern_steps():
    def f(x, w):
        h = np.sort(x @ w)           # extern, extern (BLAS, NumPy's sort)
        return (h * 2 + 1).sum(-1), h.T[::-1]  # a fused kernel; views stay views

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((8, 5)), rng.standard_normal((5, 3))
    cf = stax.compile(f, strict_native=True)
    want = f(x, w)
    for _ in range(2):  # the compiling call, then the cached version's
        got = cf(x, w)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].strides == want[1].strides
    artifact = cf.versions()[0].artifact
    assert [e.target for e in artifact.externs] == ["operator.matmul", "numpy.sort",
                                                    "numpy.transpose", "operator.getitem"]
    assert len(artifact.kernels) == 1


def test_extern_result_that_changes_shape_runs_eagerly(caplog):
    def f(x, idx):
        return np.delete(x, idx) * 2  # how many go depends on duplicates in idx: the data

    x = np.arange(5.0)
    cf = stax.compile(f)
    np.testing.assert_array_equal(cf(x, np.array([0, 1])), f(x, np.array([0, 1])))
    with caplog.at_level(logging.WARNING, logger="stax"):
        got = cf(x, np.array([0, 0]))
    np.testing.assert_array_equal(got, f(x, np.array([0, 0])))
    assert "numpy.delete() returned ndarray float64[4]" in caplog.text
    assert cf.cache_info().fallbacks == 1


def test_in_place_updates_of_arguments_have_eager_side_effects():
    def f(x, y):
        x += y
        return x * 2, x

    cf = stax.compile(f, strict_native=True)
    x, y = np.zeros(3), np.arange(3.0)
    out, same = cf(x, y)
    np.testing.assert_array_equal(x, np.arange(3.0))  # mutated exactly once, as eager
    np.testing.assert_array_equal(out, 2 * np.arange(3.0))
    assert same is x
    cf(x, y)
    np.testing.assert_array_equal(x, 2 * np.arange(3.0))
    a = np.ones(3)
    with_alias = f(a.copy(), a.copy())
    got = cf(a, a)  # the argument overlaps another: this call runs eagerly
    np.testing.assert_array_equal(got[0], with_alias[0])
    assert cf.cache_info().fallbacks == 1


def test_user_errors_surface_unchanged():
    cf = stax.compile(lambda a, b: a + b)
    with pytest.raises(ValueError, match="could not be broadcast"):
        cf(np.ones(3), np.ones(4))


def test_eager_backend_runs_the_captured_graph():
    cf = stax.compile(lambda x: (x + 1).sum(-1), backend="eager")
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(cf(x), (x + 1).sum(-1))
    assert cf.cache_info().fallbacks == 0


def test_unknown_backend_and_device_are_clear_errors():
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        stax.compile(lambda x: x, backend="nope")
    with pytest.raises(stax.StaxError, match="device 'tpu'"):
        stax.compile(lambda x: x, device="tpu")


def test_internal_errors_fall_back_and_strict_reraises(monkeypatch, caplog):
    def broken(capture, examples, **options):
        raise RuntimeError("boom")

    monkeypatch.setitem(stax.BACKENDS, "broken", broken)
    cf = stax.compile(lambda x: x + 1, backend="broken")
    with caplog.at_level(logging.WARNING, logger="stax"):
        np.testing.assert_array_equal(cf(np.ones(2)), np.full(2, 2.0))
    assert "internal compiler error" in caplog.text and "boom" in caplog.text
    with pytest.raises(RuntimeError, match="boom"):
        stax.compile(lambda x: x + 1, backend="broken", strict_native=True)(np.ones(2))


def test_perf_and_kernel_logs(monkeypatch, caplog):
    monkeypatch.setenv("STAX_LOGS", "perf,kernels,graph")
    cf = stax.compile(lambda x: (x * 2).sum(-1))
    with caplog.at_level(logging.INFO, logger="stax"):
        cf(np.ones((4, 4)))
    text = caplog.text
    assert "compiled" in text and "capture" in text and "launch kernel_0" in text
    assert "call_method[target=sum]" in text


def test_ndarray_subclasses_run_eagerly():
    m = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    out = stax.compile(lambda x: x * 2)(m)
    assert isinstance(out, np.ma.MaskedArray) and out.mask[1]
    with pytest.raises(UnsupportedError, match="MaskedArray"):
        stax.compile(lambda x: x * 2, strict_native=True)(m)


def test_random_draws_advance_generators_exactly_as_eager():
    def f(x, rng):
        noise = rng.standard_normal(x.shape)
        return (x + noise).sum(), rng.integers(0, 10, 4)

    def g(x):
        return x * np.random.rand()

    x = np.zeros(3)
    eager_rng, compiled_rng = np.random.default_rng(5), np.random.default_rng(5)
    cf = stax.compile(f, strict_native=True)  # draws from a Generator argument are captured
    for _ in range(3):
        got, want = cf(x, compiled_rng), f(x, eager_rng)
        assert got[0] == want[0]
        np.testing.assert_array_equal(got[1], want[1])
    assert cf.cache_info().versions == 1
    assert compiled_rng.bit_generator.state == eager_rng.bit_generator.state
    np.random.seed(3)
    eager = [g(x) for _ in range(3)]
    np.random.seed(3)
    cg = stax.compile(g)
    compiled = [cg(x) for _ in range(3)]
    for a, b in zip(compiled, eager):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(UnsupportedError, match=r"random numbers from np\.random"):
        stax.compile(g, strict_native=True)(x)


def test_a_gate_on_a_random_draw_is_refused_and_runs_eagerly():
    def f(x, rng):
        return x + 1 if rng.random(1)[0] > 0.5 else x - 1

    a, b = np.random.default_rng(2), np.random.default_rng(2)
    cf = stax.compile(f)
    for _ in range(4):
        np.testing.assert_array_equal(cf(np.zeros(2), a), f(np.zeros(2), b))
    with pytest.raises(UnsupportedError, match="gate depends on a random draw"):
        stax.compile(f, strict_native=True)(np.zeros(2), np.random.default_rng(2))


def test_constant_powers():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(50_000) * 10, [np.nan, np.inf, -np.inf, -0.0, 0.0]])
    for dtype in (np.float32, np.float64):
        a = x.astype(dtype)
        for e in (2, 0.5, -1):  # NumPy's own fast paths: bit-exact
            with np.errstate(all="ignore"):
                power = stax.compile(lambda v, e=e: v ** e, strict_native=True)
                for _ in range(2):  # the compiling call, then the cached version's
                    np.testing.assert_array_equal(power(a), a ** e)
    a = x.astype(np.float32)
    with np.errstate(all="ignore"):
        cube = stax.compile(lambda v: v ** 3, strict_native=True)
        first, got, want = cube(a), cube(a), a ** 3  # the compiling call, the cached version's
    np.testing.assert_array_equal(first, got)
    assert not cube.versions()[0].artifact.externs
    exact = a.astype(np.float64) ** 3
    finite = np.isfinite(want)
    spacing = np.spacing(np.abs(want[finite])).astype(np.float64)
    assert (np.abs(got[finite] - exact[finite]) / spacing).max() <= 0.5 + 1e-6  # correctly rounded
    assert (np.abs(got[finite].astype(np.float64) - want[finite]) / spacing).max() <= 1.0
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    i = np.arange(-50, 50, dtype=np.int8)
    np.testing.assert_array_equal(stax.compile(lambda v: v ** 3, strict_native=True)(i), i ** 3)


def test_calls_from_several_threads_get_their_own_layouts_right():
    import threading

    cf = stax.compile(lambda x: x * 2 + 1, strict_native=True)
    arrays = [np.arange(n, dtype=np.float64) for n in (3, 5, 7, 11)]
    errors = []

    def work(x):
        for _ in range(300):
            got = cf(x)
            if got.shape != x.shape or not np.array_equal(got, x * 2 + 1):
                errors.append(x.shape)

    threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_python_function_in_a_traced_call_names_what_to_write_instead():
    """``np.piecewise`` with lambdas passes functions to a traced call: the message says that
    NumPy calls them per piece and points to ``np.where``/``np.select``."""
    def piecewise(x):
        return np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])

    with pytest.raises(stax.UnsupportedError, match=r"np\.where or np\.select"):
        stax.compile(piecewise, strict_native=True)(np.linspace(-1.0, 1.0, 5))
