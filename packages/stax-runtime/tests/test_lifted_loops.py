"""Lifted loops (issue 13 item 2): a long ``for`` loop is captured as one step running its body,
compiled once, per item; what it computes is eager NumPy's, and a loop whose body would not
keep eager semantics unrolls as before."""

import logging
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import LIFTED_LOOP
from stax.trace import loops


@pytest.fixture(autouse=True)
def small_limit(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 30)  # lift loops of tests' sizes
    monkeypatch.setenv("STAX_CACHE_DIR", "off")


def _pendulum(y, g):
    return np.array([y[1], -g * np.sin(y[0])])


def rk4(y0, g, dt, steps):
    y = y0.copy()
    for _ in range(steps):
        k1 = _pendulum(y, g)
        k2 = _pendulum(y + dt / 2 * k1, g)
        k3 = _pendulum(y + dt / 2 * k2, g)
        k4 = _pendulum(y + dt * k3, g)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def euler_sir(y0, beta, gamma, dt, steps):
    traj = np.zeros((steps + 1, 3))
    traj[0] = y0
    for k in range(steps):
        s, i, r = traj[k]
        n = s + i + r
        traj[k + 1] = traj[k] + dt * np.array([-beta * s * i / n, beta * s * i / n - gamma * i,
                                               gamma * i])
    return traj


def distances(A, B, W):
    D = np.zeros((A.shape[1], B.shape[1]))
    for i in range(A.shape[1]):
        for j in range(B.shape[1]):
            D[i][j] = np.sqrt((((A[:, i] - B[:, j]) / W[:, i]) ** 2).sum())
    return D


def lifted_steps(fn, *args):
    """Whether the compiled version of ``fn`` for ``args`` runs a lifted loop."""
    compiled = stax.compile(fn)
    compiled(*args)
    version = compiled._versions[-1]
    assert version.native, version.reason
    return compiled, LIFTED_LOOP in str(version.artifact)


def test_a_recurrence_lifts_and_matches_numpy(caplog):
    args = (np.array([1.0, 0.0]), 9.81, 0.01, 60)
    with caplog.at_level(logging.INFO, logger="stax"):
        compiled, lifted = lifted_steps(rk4, *args)
    assert lifted
    for y0 in (np.array([0.3, -0.2]), np.array([2.0, 1.0])):
        got, want = compiled(y0, 9.81, 0.01, 60), rk4(y0, 9.81, 0.01, 60)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)  # sin within 1 ulp


def lorenz_rk4(state, sigma, rho, beta, dt, n):
    def f(s):  # a local function reading the scalar arguments from its closure
        x, y, z = s[..., 0], s[..., 1], s[..., 2]
        return np.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z], axis=-1)
    s = state.copy()
    for _ in range(n):
        k1 = f(s)
        k2 = f(s + 0.5 * dt * k1)
        k3 = f(s + 0.5 * dt * k2)
        k4 = f(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s


def test_a_loop_calling_a_local_function_lifts():
    """The local function is a constant of the body, its closure's scalars their values (the
    version is exact in them): it unrolled before (200 steps: 3001 buffers, then eager)."""
    state = np.random.default_rng(0).standard_normal((50, 3))
    compiled, lifted = lifted_steps(lorenz_rk4, state, 10.0, 28.0, 8 / 3, 0.01, 60)
    assert lifted
    for args in ((10.0, 28.0, 8 / 3, 0.01, 60), (11.0, 28.0, 2.0, 0.02, 60)):
        np.testing.assert_allclose(compiled(state, *args), lorenz_rk4(state, *args), rtol=1e-12)


def test_a_local_function_closing_over_an_array_keeps_the_loop_unrolled(caplog, monkeypatch):
    def shifted(x, n):
        w = x * 2
        def g(v):
            return v + w  # a traced array from the function around it
        y = x.copy()
        for _ in range(n):
            y = g(y) * 0.5
        return y

    monkeypatch.setenv("STAX_LOGS", "loops")
    x = np.arange(5.0)
    with caplog.at_level(logging.INFO, logger="stax"):
        compiled = stax.compile(shifted)
        compiled(x, 40)
    assert "holds a function that reads 'w'" in caplog.text
    np.testing.assert_allclose(compiled(x, 40), shifted(x, 40), rtol=1e-15)


def test_a_trajectory_filled_row_by_row_is_exact():
    compiled, lifted = lifted_steps(euler_sir, np.array([0.99, 0.01, 0.0]), 0.3, 0.1, 0.1, 40)
    assert lifted
    y0 = np.array([0.9, 0.1, 0.0])
    np.testing.assert_array_equal(compiled(y0, 0.3, 0.1, 0.1, 40), euler_sir(y0, 0.3, 0.1, 0.1, 40))


@pytest.mark.parametrize("layout", ["c", "transposed"])
def test_nested_loops_with_chained_assignment(layout):
    rng = np.random.default_rng(1)
    A, B, W = (rng.random((6, 9)) for _ in range(3))
    if layout == "transposed":
        A, B, W = (np.ascontiguousarray(m.T).T for m in (A, B, W))
    compiled, lifted = lifted_steps(distances, A, B, W + 1)
    assert lifted
    np.testing.assert_allclose(compiled(B, A, W + 2), distances(B, A, W + 2), rtol=1e-14)


def test_a_body_using_its_index_as_a_number_runs_in_numpy(caplog):
    def weighted(x):
        acc = np.zeros_like(x)
        for i in range(40):
            acc = acc + x * i  # a Python int is weak: float32 stays float32
        return acc

    x = np.linspace(0, 1, 8, dtype=np.float32)
    with caplog.at_level(logging.INFO, logger="stax"):
        with stax_logs("loops"):
            compiled, lifted = lifted_steps(weighted, x)
    assert lifted  # one step, the loop's own code run by NumPy
    assert "body run by NumPy" in caplog.text and "a Python int and an int64 differ" in caplog.text
    got = compiled(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, weighted(x))


def phases(x):  # a hand-written DFT's twiddles: a Python complex times the item
    n = np.arange(x.shape[0])
    acc = np.zeros(x.shape[0], np.complex128)
    for k in range(40):
        acc = acc + x * np.exp(-2j * np.pi * k * n / 40) + (1 + 0.5j) * k
    return acc


def complex_by_complex(x):  # (1 + 2j) * k and then times another complex: rounded otherwise
    acc = np.zeros(x.shape[0], np.complex128)
    for k in range(40):
        acc = acc + x * ((1 + 2j) * k * (0.5 - 1j))
    return acc


def test_a_complex_constant_times_the_item_compiles(caplog):
    """``-2j * np.pi * k``: Python's complex product with a real factor rounds as the kernels'
    (the imaginary part of ``k`` is zero: fused or not, one rounding), so the body compiles
    (it ran in NumPy: "with a non-int constant"); a product of two complex numbers does not."""
    x = np.random.default_rng(8).standard_normal(33)
    with caplog.at_level(logging.INFO, logger="stax"):
        with stax_logs("loops"):
            compiled, lifted = lifted_steps(phases, x)
    assert lifted and "body compiled once" in caplog.text and "differ" not in caplog.text
    np.testing.assert_allclose(compiled(x), phases(x), rtol=1e-13, atol=1e-13)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="stax"):
        with stax_logs("loops"):
            compiled, lifted = lifted_steps(complex_by_complex, x)
    assert "a product of two complex numbers" in caplog.text, caplog.text
    np.testing.assert_array_equal(compiled(x), complex_by_complex(x))


def test_a_row_view_updated_through_stays_a_view():
    def fill(x):
        out = np.zeros((30, 4))
        for i in range(30):
            row = out[i]
            row[:] = x * i  # writes into out, as with a Python int index
            out[i, 0] += 1.0
        return out

    x = np.arange(4.0)
    compiled = stax.compile(fill)
    np.testing.assert_array_equal(compiled(x), fill(x))
    np.testing.assert_array_equal(compiled(x + 1), fill(x + 1))


def test_a_counter_in_the_body_unrolls_and_stays_right():
    def counted(x):
        count = 0
        for i in range(40):
            x = x * 0.5 + x[i % 4]
            count += 1
        return x * count

    x = np.arange(4.0)
    compiled = stax.compile(counted)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(x), counted(x))


def test_capture_of_a_long_loop_does_not_grow_with_its_count():
    def smooth(x, steps):
        y = x.copy()
        for _ in range(steps):
            y[1:-1] = 0.25 * y[:-2] + 0.5 * y[1:-1] + 0.25 * y[2:]
        return y

    x = np.random.default_rng(2).random(64)
    sizes = []
    for steps in (200, 2000):
        compiled = stax.compile(smooth)
        np.testing.assert_allclose(compiled(x, steps), smooth(x, steps), rtol=1e-12)
        sizes.append(str(compiled._versions[-1].artifact).count("\n"))
    assert sizes[0] == sizes[1]


def test_indexing_by_a_traced_integer_follows_the_data():
    """``A[x.argmax()]`` read a view at the capture's position on every call (a wrong result
    whenever the position moved); it is a gather now."""
    def row(A, x):
        return A[x.argmax()] * 2

    def column(A, x):
        return A[:, x.argmax()] + 1

    A = np.arange(12.0).reshape(3, 4)
    for fn, xs in [(row, [[0, 5, 1], [3, 0, 1], [0, 1, 7]]),
                   (column, [[0, 1, 9, 2], [5, 0, 0, 0], [0, 0, 0, 3]])]:
        compiled = stax.compile(fn)
        for x in xs:
            x = np.array(x, dtype=float)
            np.testing.assert_array_equal(compiled(A, x), fn(A, x))


class stax_logs:
    """STAX_LOGS for the block (settings are read per call)."""

    def __init__(self, categories):
        self.categories = categories

    def __enter__(self):
        self.patch = pytest.MonkeyPatch()
        self.patch.setenv("STAX_LOGS", self.categories)

    def __exit__(self, *exc):
        self.patch.undo()


def test_scatters_at_a_traced_row_reroll_into_one_kernel():
    """``D[i, j] = ...`` with ``i`` traced (a lifted loop's item) is a scatter per ``j``; the
    unrolled inner loop's scatters reroll into one ordered kernel, as region updates do."""
    def fill(D, i, v):
        D = D.copy()
        for j in range(12):
            D[i, j] = v[j] * 2.0 + j
        return D

    D, v = np.zeros((5, 12)), np.arange(12.0)
    compiled = stax.compile(fill)
    for i in (0, 3, -1):
        np.testing.assert_array_equal(compiled(D, np.array(i), v), fill(D, np.array(i), v))
    plan = str(compiled._versions[-1].artifact)
    steps = next(line for line in plan.splitlines() if line.startswith("steps:"))
    assert len(steps.split(",")) <= 8, steps  # 12 scatters and their checks: 25 unrerolled
    with pytest.raises(IndexError):
        compiled(D, np.array(7), v)  # out of bounds: NumPy's error, from the eager run


def test_an_argument_updated_in_place_by_a_lifted_loop_is_written_back():
    def bump(x):
        for i in range(40):
            x += x[i % 4] * 0.5
        return x.sum()

    x = np.arange(8.0)
    want_x = x.copy()
    want = bump(want_x)
    compiled = stax.compile(bump)
    np.testing.assert_allclose(compiled(x), want, rtol=1e-15)  # the sum's order aside
    assert LIFTED_LOOP in str(compiled._versions[-1].artifact)
    np.testing.assert_array_equal(x, want_x)
    x2, want2 = np.arange(8.0) + 1, np.arange(8.0) + 1
    np.testing.assert_allclose(compiled(x2), bump(want2), rtol=1e-15)  # the sum's order
    np.testing.assert_array_equal(x2, want2)


def test_a_view_updated_in_place_updates_its_base(caplog):
    """``u = U[1:-1, 1:-1]; u += ...``: the compiled body takes U and makes the view itself."""
    def heat(U0, dt, steps):
        U = U0.copy()
        u = U[1:-1, 1:-1]
        for _ in range(steps):
            u += dt * (U[2:, 1:-1] + U[:-2, 1:-1] + U[1:-1, 2:] + U[1:-1, :-2] - 4 * u)
        return U

    U0 = np.random.default_rng(3).standard_normal((12, 10))
    compiled = stax.compile(heat, strict_native=True)  # an internal error must not fall back
    with caplog.at_level(logging.INFO, logger="stax"), stax_logs("loops"):
        for _ in range(2):  # the capture's run, then the compiled version's
            np.testing.assert_array_equal(compiled(U0, 0.1, 40), heat(U0, 0.1, 40))
    assert "body compiled once" in caplog.text and "machine-code loop" in caplog.text
    V0 = np.random.default_rng(6).random((12, 9))
    np.testing.assert_array_equal(compiled(V0, 0.2, 40), heat(V0, 0.2, 40))


def test_the_view_a_lifted_loop_updated_assigned_back_shifted():
    """``U[2:, 1:-1] = u`` after the loop, ``u`` a view of U's interior that the loop updated:
    the loop's write-back of ``u`` into U is a region update reading the view where it writes,
    and the shifted assignment reads U one row up, staged before it writes. The write-back of a
    view a NumPy step made was an internal compiler error (a fallback) in session 26."""
    def shifted(U0, steps):
        U = U0.copy()
        u = U[1:-1, 1:-1]
        for _ in range(steps):
            u += 0.01 * (U[2:, 1:-1] + U[:-2, 1:-1] - 2 * u)
        U[2:, 1:-1] = u
        return U

    U0 = np.random.default_rng(8).standard_normal((14, 11))
    compiled = stax.compile(shifted, strict_native=True)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(U0, 40), shifted(U0, 40))
    assert LIFTED_LOOP in str(compiled.versions()[-1].artifact)


def _logs(x):
    out = np.zeros((x.shape[0], x.shape[1]))
    for i in range(x.shape[0]):
        out[i] = np.log(x[i]) * 2.0
    return out


@pytest.mark.parametrize("mode", ["compiled", "numpy"])
def test_a_lifted_loop_warns_and_raises_as_numpy(mode, monkeypatch):
    from stax.runtime import lifted_loops
    timing = (lambda self, arrays: None) if mode == "compiled" else (lambda self, arrays: 0.0)
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", timing)
    x = np.random.default_rng(0).random((50, 8)) + 0.1
    y = x.copy()
    y[30, 3] = -1.0
    compiled = stax.compile(_logs)
    for arr in (x, y, x, y):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            result = compiled(arr)
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            expected = _logs(arr)
        np.testing.assert_allclose(result, expected, rtol=3e-16)  # float64 log: within 1 ulp
        assert [str(w.message) for w in got] == [str(w.message) for w in want]
    assert LIFTED_LOOP in str(compiled._versions[-1].artifact)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        compiled(y)


def test_assignment_at_a_traced_column_is_a_native_scatter():
    """``D[:, i] = v`` and ``D[1, :, i] = v`` with a traced ``i``: a scatter over the other
    axes (its ``axes`` attribute), no NumPy step."""
    def column(D, i, v):
        D = D.copy()
        D[:, i] = v * 2
        return D

    def plane(D, i, v):
        D = D.copy()
        D[1, :, i] = v
        D[..., i] += 1.0
        return D

    for fn, D, v, positions in [(column, np.zeros((4, 5)), np.arange(4.0), (0, 3, -1)),
                                (plane, np.zeros((2, 3, 4)), np.arange(3.0), (0, 2, -4))]:
        compiled = stax.compile(fn)
        for i in positions:
            np.testing.assert_array_equal(compiled(D, np.array(i), v), fn(D, np.array(i), v))
        assert "extern" not in str(compiled._versions[-1].artifact)
        with pytest.raises(IndexError):
            compiled(D, np.array(9), v)


def test_a_lifted_loop_filling_columns():
    def columns(x, w):
        out = np.zeros_like(x)
        for i in range(x.shape[1]):
            out[:, i] = x[:, i] * w[i] + 1.0
        return out

    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((6, 40)), rng.standard_normal(40)
    compiled, lifted = lifted_steps(columns, x, w)
    assert lifted
    np.testing.assert_array_equal(compiled(x * 2, w), columns(x * 2, w))


def test_a_lifted_loop_with_the_disk_cache_on(tmp_path, monkeypatch):
    """Compiling the body inside the function's capture writes cache files (temporary names
    drawn from ``random``): Stax's own work, which the capture must not refuse as a draw."""
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path))
    args = (np.array([1.0, 0.0]), 9.81, 0.01, 60)
    for _ in range(2):  # the second compiles from the disk cache
        compiled, lifted = lifted_steps(rk4, *args)
        assert lifted
        np.testing.assert_allclose(compiled(*args), rk4(*args), rtol=1e-13, atol=1e-15)


# -- what a probe of lifted loops found (each a wrong result before its fix) ----------------------

def _flag(x):
    out = np.zeros_like(x)
    flag, t = False, 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
        if x[i] > 1.5:
            flag = True
    for _ in range(x.shape[0]):
        t = t + 0.5
    return out, flag, t


def _target_rebound(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
        i = i + 1
    return out, i


def _scalar_state(x):
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc * 0.5 + x[i]
    return acc


def _int8_sum(x):
    acc = x[0] * 0
    for i in range(x.shape[0]):
        acc = acc + x[i]
    return acc


def _hashed(x):
    n = x.shape[0]
    out = np.zeros_like(x)
    for i in range(n):
        out[i] = x[(i * 6364136223846793005) % n] * 2.0
    return out


@pytest.mark.parametrize("mode", ["compiled", "numpy"])
def test_what_python_sees_after_a_lifted_loop_is_eager_numpys(mode, monkeypatch):
    """Python values the body changes (a flag set on the data, a float counter), the loop
    variable bound in the body, NumPy scalars carried (not 0-d arrays), int8 scalar overflow
    reports, and index arithmetic past int64 (a Python int there) are eager NumPy's."""
    from stax.runtime import lifted_loops
    timing = (lambda self, arrays: None) if mode == "compiled" else (lambda self, arrays: 0.0)
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", timing)
    rng = np.random.default_rng(5)
    floats = [rng.uniform(-1, 1, 60), rng.uniform(-2, 2, 60)]
    small = [rng.integers(-3, 3, 60).astype(np.int8), rng.integers(10, 100, 60).astype(np.int8)]
    for fn, inputs in [(_flag, floats), (_target_rebound, floats), (_scalar_state, floats),
                       (_int8_sum, small), (_hashed, floats)]:
        compiled = stax.compile(fn)
        for x in inputs * 2:
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                result = compiled(x)
            with warnings.catch_warnings(record=True) as want:
                warnings.simplefilter("always")
                expected = fn(x)
            for r, e in zip(result if isinstance(result, tuple) else (result,),
                            expected if isinstance(expected, tuple) else (expected,)):
                assert type(r) is type(e), (fn.__name__, r, e)
                np.testing.assert_array_equal(r, e)
            assert [str(w.message) for w in got] == [str(w.message) for w in want], fn.__name__
        with np.errstate(over="raise"):
            if fn is _int8_sum:
                with pytest.raises(FloatingPointError):
                    compiled(small[1])


def _scores(db, q):
    scores = np.zeros(db.shape[0])
    for idx, row in enumerate(db):
        scores[idx] = np.dot(row, q) / (np.linalg.norm(row) * np.linalg.norm(q))
    return scores, idx, row


def _row_sums(x):
    total = np.zeros(x.shape[1])
    for row in x:
        total = total + row * 2.0
    return total, row


def _row_fill(x):
    for row in x:
        row[0] = row.sum()  # writes into x: the loop unrolls
    return x


def test_loops_over_an_arrays_rows_lift():
    rng = np.random.default_rng(6)
    for fn, args in [(_scores, (rng.standard_normal((60, 16)), rng.standard_normal(16))),
                     (_row_sums, (rng.standard_normal((60, 5)),))]:
        compiled, lifted = lifted_steps(fn, *args)
        assert lifted, fn.__name__
        for scale in (1.0, -2.0):
            moved = tuple(a * scale for a in args)
            for got, want in zip(compiled(*moved), fn(*moved)):
                assert type(got) is type(want)
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)  # sum order
    x = rng.standard_normal((60, 5))
    np.testing.assert_array_equal(stax.compile(_row_fill)(x.copy()), _row_fill(x.copy()))


def _sum_of_squares(x):
    total = 0.0
    for i in range(len(x)):
        total += x[i] * x[i]
    return total


def _product_and_difference(x):
    p, m = 1.0, 0.0
    for i in range(len(x)):
        p *= 1.0 + x[i] * 1e-3
        m -= x[i]
    return p, m


@pytest.mark.parametrize("fn", [_sum_of_squares, _product_and_difference])
def test_an_augmented_assignment_to_a_scalar_accumulator_lifts(fn):
    """``total += x[i]`` on a scalar binds a new scalar (as ``total = total + x[i]``): such a
    loop lifts like that one, where it was unrolled as an update in place of a non-array
    (3000 items: 9 s to compile; a probe)."""
    x = np.random.default_rng(3).random(300)
    compiled, lifted = lifted_steps(fn, x)
    assert lifted
    for data in (x, x[::-1].copy()):
        got, want = compiled(data), fn(data)
        assert got == want and type(got) is type(want)


def _double_rows(x):
    for r in x:
        r *= 2
    return x


def _fill_rows(x):
    out = np.zeros_like(x)
    for i, row in enumerate(out):
        row[:] = x[i] * 2 + i
    return out


def _clear_small(x):
    for r in x:
        r[r < 0.5] = 0
    return r, x.sum()


@pytest.mark.parametrize("fn", [_double_rows, _fill_rows, _clear_small])
def test_rows_updated_in_place_while_iterating(fn):
    """``for r in x: r *= 2``: each item's row is bound afresh, so the previous row (a view of
    ``x``) is not alive while the next one updates ``x`` (``loops._step``); such loops ran
    eagerly ("an argument another value views")."""
    compiled = stax.compile(fn, strict_native=True)
    for seed in range(2):
        want_x = np.random.default_rng(seed).random((5, 4))
        got_x = want_x.copy()
        want, got = fn(want_x), compiled(got_x)
        for w, g in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        np.testing.assert_array_equal(got_x, want_x)


def test_a_loop_indexing_by_data_lifts_before_it_outgrows_the_kernel_limit(monkeypatch):
    """``h[v] += 1`` for each item ``v`` of an array: no rerolling or fusion joins such items,
    so unrolled, 150 of them were 451 kernels, refused after seconds of compiling. Past
    ``DATA_INDEXED_LIMIT`` operations such a loop is lifted whatever ``UNROLL_LIMIT`` says."""
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 1_000)

    def histogram(labels):
        h = np.zeros(10, dtype=np.int64)
        for v in labels:
            h[v] += 1
        return h

    rng = np.random.default_rng(8)
    for n in (20, 150):  # unrolled, then lifted: strict, a refused plan would raise
        f = stax.compile(histogram, strict_native=True)
        labels = rng.integers(0, 10, n)
        f(labels)
        for _ in range(2):
            labels = rng.integers(0, 10, n)
            np.testing.assert_array_equal(f(labels), histogram(labels))
    (version,) = f.versions()
    assert len(version.artifact.steps) < 10  # one step runs the items, not 451 kernels

    def gather(x, idx):  # no item reads what another wrote: rerolled into one kernel
        out = np.empty(idx.size)
        for i in range(idx.size):
            out[i] = x[idx[i]] * 2.0
        return out

    def scatter(x, idx, v):
        out = x.copy()
        for i in range(idx.size):
            out[idx[i]] = v[i]
        return out
    x, idx, v = rng.random(1000), rng.integers(0, 1000, 200), rng.random(200)
    for fn, args in ((gather, (x, idx)), (scatter, (x, idx, v))):
        g = stax.compile(fn, strict_native=True)
        g(*args)
        np.testing.assert_array_equal(g(*args), fn(*args))
        (version,) = g.versions()
        assert not version.artifact.externs  # no lifted step (a NumPy step of its own)


def diffuse(u0, steps):
    u = u0.copy()
    for _ in range(steps):
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + 0.1 * lap
    return u


def aliased(u0, steps):
    u = u0.copy()
    for _ in range(steps):
        lap = u  # not a new array: updating it updates u
        lap[1:-1] = lap[1:-1] * 0.5 + 1
        u = u + 1
    return u


def row_views(u0, steps):
    u = u0.copy()
    for _ in range(steps):
        lap = u[1:]
        lap *= 0.5
        u = u + 1
    return u


def test_a_scratch_array_made_and_updated_in_each_item_lifts(caplog):
    """``lap = np.zeros_like(u); lap[1:-1] = ...`` in a time loop: a new array each item,
    updated within it, neither taken nor returned by the step (it was refused, "updates 'lap'
    in place and binds it anew", and 500 steps unrolled into 501 kernels, refused in turn).
    Bound to an existing array or a view of one, the name stays what it was: unrolled, or the
    body's own capture sees the update of its argument."""
    u0 = np.random.default_rng(9).random(50)
    f = stax.compile(diffuse, strict_native=True)
    with caplog.at_level(logging.INFO, logger="stax"):
        for steps in (40, 40, 70):
            np.testing.assert_array_equal(f(u0, steps), diffuse(u0, steps))
    (version, *_) = f.versions()
    assert len(version.artifact.steps) < 10
    for fn in (aliased, row_views):
        g = stax.compile(fn)
        for steps in (40, 40):
            np.testing.assert_array_equal(g(u0, steps), fn(u0, steps))


def outer_plus(x, y):
    out = np.empty((x.size, y.size))
    for i, j in np.ndindex(out.shape):
        out[i, j] = x[i] * y[j] + 0.5 * j
    return out


def last_index(x):
    out = np.empty(x.shape)
    for i, j in np.ndindex(x.shape):
        out[i, j] = x[i, j] * i
    return out, i, j  # read after the loop: the names are the body's (unrolled)


def scaled_by_position(x):
    out = np.zeros_like(x)
    for pos in np.ndindex(*x.shape):
        out[pos] = x[pos] * (pos[0] - 2 * pos[-1])
    return out, pos


def test_a_loop_over_ndindex_lifts_over_the_flat_index(caplog):
    """``for i, j in np.ndindex(shape)`` (and ``for pos in np.ndindex(...)``): a loop over the
    flat position, each item's tuple unravelled from it, so the indices are numbers the body
    may compute with (``0.5 * j`` made each unrolled item a constant of its own: 601 kernels,
    refused). After the loop its variables hold the last item's Python ints, as in NumPy."""
    rng = np.random.default_rng(10)
    f = stax.compile(outer_plus, strict_native=True)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(3):
            x, y = rng.random(30), rng.random(20)
            np.testing.assert_array_equal(f(x, y), outer_plus(x, y))
    (version,) = f.versions()
    assert len(version.artifact.steps) < 10
    h = stax.compile(last_index, strict_native=True)
    for _ in range(2):
        x = rng.random((3, 4))
        got, want = h(x), last_index(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] == (2, 3)
    g = stax.compile(scaled_by_position, strict_native=True)
    for shape in ((30, 40), (30, 40), (2, 3, 40)):
        x = rng.random(shape)
        got, want = g(x), scaled_by_position(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is tuple


def leaky_neurons(current):
    v = np.zeros(current.shape[1], np.float32)
    spikes = np.zeros(current.shape[1], np.int64)
    for t in range(current.shape[0]):
        v = v * np.float32(0.95) + current[t]
        s = v > 1.0
        spikes += s
        v[s] = 0.0
    return v, spikes


def updated_then_rebound(v0, steps):
    v = v0.copy()
    for t in range(steps):
        v[0] = t  # the incoming array: the order matters
        v = v * 0.5
    return v


def test_a_carried_array_rebound_then_updated_in_place_lifts(caplog, monkeypatch):
    """``v = v * 0.95 + I[t]; v[s] = 0.0``: the update is of the array the item made (the AST
    shows the rebinding first: ``loop_body.rebound_before_update``), so the loop lifts (it was
    refused as "updates 'v' in place and binds it anew" and unrolled: 300 steps, a first call of
    7.4 s). Updated before being rebound, a name stays what it was."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    rng = np.random.default_rng(12)
    f = stax.compile(leaky_neurons, strict_native=True)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(3):
            current = (rng.random((60, 50)) * 0.3).astype(np.float32)
            got, want = f(current), leaky_neurons(current)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
    assert "iterations lifted into one step (body compiled once" in caplog.text
    assert "binds it anew" not in caplog.text
    g = stax.compile(updated_then_rebound)
    for _ in range(2):
        v0 = rng.random(20)
        np.testing.assert_array_equal(g(v0, 40), updated_then_rebound(v0, 40))


def test_a_local_function_writing_a_nonlocal_keeps_the_loop_unrolled():
    def counted(x, n):
        count = 0

        def g(v):
            nonlocal count
            count += 1
            return v * 0.5
        y = x.copy()
        for _ in range(n):
            y = g(y) + 1.0
        return y, count

    x = np.arange(4.0)
    compiled = stax.compile(counted)
    for _ in range(4):
        got, want = compiled(x, 40), counted(x, 40)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] == 40


def row_stats(data):
    out = np.empty((data.shape[0], 3))
    for i, row in enumerate(data):
        out[i, 0] = row.mean()
        out[i, 1] = np.median(row)  # a NumPy step per row: no rerolling joins them
        out[i, 2] = row.max() - row.min()
    return out


def row_stats_printing(data):
    print("computing")
    return row_stats(data)


def test_unrolled_loops_with_too_many_steps_are_captured_again_lifted(monkeypatch, capsys):
    """A loop under the unroll limit whose iterations do not reroll (a NumPy step each) made a
    plan of more than 256 steps, and the function ran eagerly: it is captured again with its
    loops lifted. A function with a Python effect is not captured twice."""
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 1000)  # the real limit: these loops unroll
    data = np.random.default_rng(9).standard_normal((120, 5))
    f = stax.compile(row_stats, strict_native=True)
    for _ in range(2):
        np.testing.assert_allclose(f(data), row_stats(data), rtol=1e-14)
    assert LIFTED_LOOP in str(f.versions()[-1].artifact)
    g = stax.compile(row_stats_printing)
    np.testing.assert_allclose(g(data), row_stats(data), rtol=1e-14)
    assert capsys.readouterr().out.count("computing") == 1
    assert not g.versions()[-1].native


def leapfrog(u0, c2, steps):
    u_prev = u0.copy()
    u = u0.copy()
    for _ in range(steps):
        u_next = np.empty_like(u)  # the item's own array, updated in place, then rotated
        u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + c2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_next[0] = 0.0
        u_next[-1] = 0.0
        u_prev, u = u, u_next
    return u


def scratch_bound_to_an_input(u, n):
    for i in range(n):
        lap = u  # a scratch name bound to the carried array itself: updates u
        lap[i] = lap[i] * 2 + 1
    return u


def test_a_scratch_array_rotated_into_the_carried_state_lifts(caplog, monkeypatch):
    """The leapfrog scheme's ``u_next = np.empty_like(u)``, updated, then rotated into ``u``: it
    was refused as "bound to an array it did not make" (after the first item ``u_next`` is
    ``u``'s object), unrolled into 301 kernels and run eagerly. A scratch name bound to the
    carried array itself still updates it as eagerly (the body's inputs are read-only)."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    u0 = np.exp(-((np.linspace(0, 1, 60) - 0.5) ** 2) / 0.005)
    f = stax.compile(leapfrog)
    with caplog.at_level(logging.INFO, logger="stax"):
        for _ in range(2):
            np.testing.assert_array_equal(f(u0, 0.16, 80), leapfrog(u0, 0.16, 80))
    assert LIFTED_LOOP in str(f.versions()[-1].artifact)
    assert "body compiled once" in caplog.text
    g = stax.compile(scratch_bound_to_an_input)
    for _ in range(2):
        a, b = np.arange(60.0), np.arange(60.0)
        np.testing.assert_array_equal(g(a, 50), scratch_bound_to_an_input(b, 50))
        np.testing.assert_array_equal(a, b)


def _normalize_rows(P):
    for row in P:
        row /= row.sum()
    return P


def _shift_by_previous_row(P):
    for i, row in enumerate(P):
        row -= P[i - 1].mean()  # the row before, as the item before updated it (the last at 0)
    return P, row


@pytest.mark.parametrize("fn", [_double_rows, _clear_small, _normalize_rows,
                                _shift_by_previous_row])
def test_a_loop_updating_the_rows_it_iterates_lifts(fn, caplog, monkeypatch):
    """``for row in P: row /= row.sum()`` updates ``P`` through each row: it lifts with ``P``
    carried (each item's row read from ``P`` as the items before left it, as Python's iterator
    reads it), and ``P`` is written back; it unrolled into 601 kernels and ran eagerly."""
    from stax.runtime import lifted_loops
    monkeypatch.setattr(lifted_loops.Runner, "eager_seconds_per_item", lambda self, arrays: None)
    monkeypatch.setenv("STAX_LOGS", "loops")
    compiled = stax.compile(fn, strict_native=True)
    with caplog.at_level(logging.INFO, logger="stax"):
        for seed in range(3):
            want_x = np.random.default_rng(seed).random((60, 4)) + 0.1
            got_x = want_x.copy()
            want, got = fn(want_x), compiled(got_x)
            for w, g in zip(want if isinstance(want, tuple) else (want,),
                            got if isinstance(got, tuple) else (got,)):
                np.testing.assert_allclose(g, w, rtol=1e-14)
            np.testing.assert_allclose(got_x, want_x, rtol=1e-14)
    assert LIFTED_LOOP in str(compiled.versions()[-1].artifact)
    assert "body compiled once" in caplog.text


def test_unrolled_loops_past_the_kernel_budget_are_captured_again_lifted(monkeypatch, capsys):
    """100 rows normalized in place: under the unroll limit, 402 distinct kernels (each row's
    offsets its own) compiled in 2.7 s; past ``KERNEL_BUDGET`` distinct kernels the function is
    captured again with its loop lifted. With a Python effect it compiles unrolled, as before."""
    monkeypatch.setattr(loops, "UNROLL_LIMIT", 1000)

    def normalize_printing(P):
        print("normalizing")
        return _normalize_rows(P)

    P = np.random.default_rng(12).random((100, 5)) + 0.1
    f = stax.compile(_normalize_rows, strict_native=True)
    got, want = P.copy(), P.copy()
    np.testing.assert_allclose(f(got), _normalize_rows(want), rtol=1e-15)
    assert LIFTED_LOOP in str(f.versions()[-1].artifact)
    g = stax.compile(normalize_printing, strict_native=True)
    np.testing.assert_allclose(g(P.copy()), _normalize_rows(P.copy()), rtol=1e-15)
    assert LIFTED_LOOP not in str(g.versions()[-1].artifact)
    assert capsys.readouterr().out.count("normalizing") == 1


def relax(y, k, n):
    for _ in range(n):
        y = y + k * (np.roll(y, 1) - y)
    return y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_scalar_the_lifted_body_reads_is_a_run_time_input(dtype, caplog, monkeypatch):
    """A parameter sweep over a lifted loop (``relax(y, k, 2000)`` for twelve ``k``): the step
    held ``k`` as a constant, so each value compiled a version (0.1 s) and from the ninth on
    every call ran eagerly (13 ms for the compiled 85 us). ``k`` is an input of the step now:
    the generic version passes it on, the runner hands the body the Python float again (weak
    for float32 arrays, as eagerly), and the body's own generic version runs the items in one
    machine-code loop with ``k`` as a 0-d input; a loop made for one value is never run for
    another."""
    import logging

    monkeypatch.setenv("STAX_LOGS", "recompiles")
    f = stax.compile(relax)
    y = np.linspace(0, 1, 32).astype(dtype)
    with caplog.at_level(logging.INFO, logger="stax"):
        for k in [*np.linspace(0.01, 0.2, 12).tolist(), 0.05, 0.01]:
            got, want = f(y, k, 2000), relax(y, k, 2000)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert f.cache_info().compiles == 2
    assert "scalar arguments as run-time inputs" in caplog.text


def sweeps(A, b):
    x = np.zeros(len(b))
    for _sweep in range(6):
        for i in range(len(b)):  # lifted at each sweep: one compiled body for all of them
            x[i] = (b[i] - A[i] @ x + A[i, i] * x[i]) / A[i, i]
    return x


def test_an_inner_loop_lifted_at_each_outer_item_compiles_its_body_once(monkeypatch):
    from stax.runtime import lifted_loops

    """Gauss-Seidel's row loop, lifted at each sweep of an outer loop that unrolls, compiled
    its body again at every sweep (5.8 s for a first call); one capture shares it."""
    made = []
    original = lifted_loops.CompiledFunction

    def counting(*args, **kwargs):
        made.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(lifted_loops, "CompiledFunction", counting)
    rng = np.random.default_rng(6)
    n = 40
    M = rng.standard_normal((n, n))
    A, b = M @ M.T + n * np.eye(n), rng.standard_normal(n)
    f = stax.compile(sweeps)
    np.testing.assert_allclose(f(A, b), sweeps(A, b), rtol=1e-12)
    # the first sweep's row loop, then the sweep loop lifted too (an inner loop lifted in its
    # first iteration: ``FirstIteration.recorded``): its body, and the row loop's inside it
    assert len(made) <= 3


def powered(y, k):
    for _ in range(1201):
        y = y * k
    return y


def test_a_loop_made_for_one_zero_is_not_run_for_the_other():
    """A review's finding: a machine-code loop holding ``k = -0.0`` ran for ``k = 0.0`` (``-0.0
    != 0.0`` is False): the sign of every result flipped."""
    f = stax.compile(powered)
    y = np.ones(2)
    for k in (1.0, -0.0, 0.0, -0.0, float("nan"), 0.0):
        got, want = f(y, k), powered(y, k)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def heat_rebinding(u, steps, r):
    for _ in range(steps):
        u = u * 1.0  # a new array each step, then updated in place
        u[1:-1] += r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def heat_copying(u, steps, r):
    for _ in range(steps):
        u = u.copy()
        u[1:-1] += r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


@pytest.mark.parametrize("fn", [heat_rebinding, heat_copying])
def test_an_argument_rebound_before_its_update_is_not_written_back(fn, caplog, monkeypatch):
    """Each item binds ``u`` anew before updating it in place, so the argument is never updated:
    the lifted step's result was written back into it (a silent wrong result: the argument
    changed, and the result with it). ``u = u.copy()`` is such a rebinding too (it unrolled:
    20,000 operations, then eager)."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    f = stax.compile(fn)
    with caplog.at_level(logging.INFO, logger="stax"):
        for steps in (300, 301):
            u = np.random.default_rng(steps).random(200)
            before = u.copy()
            np.testing.assert_array_equal(f(u, steps, 0.2), fn(u.copy(), steps, 0.2))
            np.testing.assert_array_equal(u, before)
    assert "iterations lifted into one step" in caplog.text


def _relax_roll(u0, c, nt):
    u = u0.copy()
    for _ in range(nt):
        u = u - c * (u - np.roll(u, 1))  # bound anew from NumPy's new arrays of it
        u[u < 0] = 0.0
    return u


def _relax_abs(u0, c, nt):
    u = u0.copy()
    for _ in range(nt):
        u = u - c * (u - np.abs(u)) + 0.01
        u[u > 0.5] = 0.0
    return u


@pytest.mark.parametrize("fn", [_relax_roll, _relax_abs])
def test_a_local_bound_anew_through_numpy_functions_then_updated_lifts(fn, caplog, monkeypatch):
    """A probe's finding: ``u = u - c * (u - np.roll(u, 1)); u[u < 0] = 0`` unrolled ("updates
    'u' in place and binds it anew"), costing a capture of seconds per new ``c``: a NumPy
    function that returns a new array (no ``out=``) reads ``u`` and writes nothing."""
    monkeypatch.setenv("STAX_LOGS", "loops")
    u0 = np.random.default_rng(0).uniform(-0.2, 1.0, 128)
    compiled = stax.compile(fn)
    with caplog.at_level(logging.INFO, logger="stax"):
        for c in (0.1, 0.2, 0.3):
            np.testing.assert_array_equal(compiled(u0, c, 300), fn(u0, c, 300))
    assert "iterations lifted into one step" in caplog.text, caplog.text


def _add_into(u0, c, nt):
    u = u0.copy()
    w = u
    for _ in range(nt):
        u = np.add(u, c, u)  # ``out`` by position: the same object, which ``w`` sees
        u[u > 3] = 0.0
    return u, w


def test_a_numpy_function_writing_by_position_is_no_new_array():
    compiled = stax.compile(_add_into)
    u0 = np.random.default_rng(0).uniform(0, 1, 16)
    for c in (0.1, 0.2, 0.3):
        got, want = compiled(u0, c, 40), _add_into(u0, c, 40)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def _diff_none(u, nt):
    for _ in range(nt):
        u = np.diff(u, 0)  # ``u`` itself: its update is the argument's
        u[u < 0] = 0.0
    return u.sum()


def test_np_diff_of_order_zero_is_the_array_itself():
    """A review's finding: ``np.diff(u, 0)`` counted as a new array, so the lifted loop left the
    caller's array as it was, where eager zeroed its negatives."""
    base = np.random.default_rng(1).uniform(-0.2, 1.0, 64)
    compiled = stax.compile(_diff_none)
    for _ in range(3):
        mine, theirs = base.copy(), base.copy()
        np.testing.assert_allclose(compiled(mine, 40), _diff_none(theirs, 40), rtol=1e-14)
        np.testing.assert_array_equal(mine, theirs)
