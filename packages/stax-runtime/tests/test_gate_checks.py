"""Data gates checked by the compiled program (``gate_checks.py``, issue 14): the kernels compute
the gate values once, the runner compares them, a mismatch finds the other branch's version;
gates whose value the kernels may round otherwise (a float sum) are replayed in NumPy."""

import threading
import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.runtime import gate_checks
from stax.runtime.gates import GateReplay


def stencil_normalize(x):
    s = x[1:-1, 1:-1] * 4 - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]
    y = np.abs(s)
    return y / (max(1.0, y.max()) + 1e-9)


def stencil_branch(x):
    s = x[1:-1, 1:-1] * 4 - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]
    y = np.abs(s)
    if y.max() > 1.0:
        return y / y.max()
    return y


def branch_on_mean(x):
    return x * 2.0 if x.mean() > 0 else x - 1.0


def no_replay(monkeypatch):
    """Replaying a gate before a call fails the test: the program checks them."""
    def refuse(self, leaves):
        raise AssertionError("a gate checked in the program was replayed")
    monkeypatch.setattr(GateReplay, "matches", refuse)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_branches_taken_by_the_kernels_values(monkeypatch, dtype):
    f = stax.compile(stencil_branch, strict_native=True)
    rng = np.random.default_rng(0)
    big = rng.standard_normal((40, 50)).astype(dtype)
    small = (big * 1e-3).astype(dtype)
    np.testing.assert_array_equal(f(big), stencil_branch(big))
    assert f.versions()[0].gates_in_program
    no_replay(monkeypatch)
    for x in (small, big, small, small, big, np.asfortranarray(small)):
        np.testing.assert_array_equal(f(x), stencil_branch(x))
    # one per branch (each tried first when it last held), and the other layout's
    assert len(f.versions()) == 3
    assert all(v.gates_in_program for v in f.versions())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float_mean_gate_takes_eagers_branch_at_a_tie(monkeypatch, dtype):
    """A float mean rounds otherwise in the kernels than in NumPy (pairwise): in the gate's
    slice it runs as NumPy's own call, so near a tie the branch is always eager's."""
    f = stax.compile(branch_on_mean, strict_native=True)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(5000).astype(dtype)
    np.testing.assert_array_equal(f(x), branch_on_mean(x))
    assert f.versions()[0].gates_in_program
    no_replay(monkeypatch)
    taken = set()
    for _ in range(40):  # means within a few ulps of zero: the sign is the rounding's
        y = rng.standard_normal(5000).astype(dtype)
        y = (y - y.mean(dtype=np.float64)).astype(dtype)
        taken.add(bool(y.mean() > 0))
        np.testing.assert_array_equal(f(y), branch_on_mean(y))
    assert taken == {True, False}


def test_gates_replayed_where_numpy_would_round_otherwise():
    """A transcendental in the slice, or a float sum of an array NumPy lays out otherwise
    (``x.T * 2`` is F-ordered in eager NumPy) keeps the replay, and the branch is eager's."""
    def exp_gate(x):
        return x * 2.0 if np.exp(x).sum() > 3.0 * x.size else x - 1.0

    def transposed_gate(x):
        return x * 2.0 if (x.T * 2.0).sum() > 0 else x - 1.0

    rng = np.random.default_rng(4)
    for fn in (exp_gate, transposed_gate):
        f = stax.compile(fn, strict_native=True)
        for _ in range(6):
            x = rng.standard_normal((30, 20)) + rng.choice([-0.2, 0.2, 1.2])
            np.testing.assert_array_equal(f(x), fn(x))
        assert not any(v.gates_in_program for v in f.versions())


def test_which_slices_are_exact():
    from stax.trace.tracer import trace

    def capture(fn, *args):
        return trace(fn, args, {}, name=fn.__name__,
                     arg_names=[f"a{i}" for i in range(len(args))])

    x = np.arange(12.0).reshape(3, 4)
    n = np.arange(12).reshape(3, 4)
    assert gate_checks.inexact_node(capture(stencil_normalize, np.ones((5, 5), np.float32))) \
        is None
    assert gate_checks.inexact_node(capture(lambda a: a * 2 if n.sum() > 3 else a, x)) is None
    assert gate_checks.inexact_node(
        capture(lambda a, b: a if (a[b.max() % 3] > 2).any() else -a, x, n)) is None
    # local arrays, assignments, arrays built from traced values, running extremes, order
    # statistics (NumPy's own calls): a solver's convergence test, a stretch by percentiles
    def relax(a):
        u = np.zeros_like(a)
        for _ in range(3):
            un = u.copy()
            un[1:-1] = 0.5 * (u[2:] + u[:-2]) - a[1:-1]
            err, u = np.abs(un - u).max(), un
            if err < 1e-3:
                break
        return u

    assert gate_checks.inexact_node(capture(relax, x[0])) is None
    # an integer count (a probe's branch on ``np.count_nonzero(x > 1.5)`` was replayed, its
    # log saying the count "may round otherwise")
    counted = capture(lambda a: a * 2 if np.count_nonzero(a > 1.5) > 3 else a, x)
    assert gate_checks.inexact_node(counted) is None
    built = capture(lambda a: a if np.array([a[0, 0] * 2, a[1, 1]]).min() < 1 else -a, x)
    assert gate_checks.inexact_node(built) is None
    running = capture(lambda a: a if np.maximum.accumulate(a[0])[-1] < 1 else -a, x)
    assert gate_checks.inexact_node(running) is None
    # np.round with decimals: rint(x * 10**d) / 10**d as NumPy computes it (a fixed point
    # stopped by ``np.array_equal`` of rounded steps replayed its slice in NumPy: 441 us a call
    # for NumPy's 150, then eager)
    rounded = capture(lambda a: a if np.array_equal(np.round(0.5 * a, 3), a) else -a, x)
    assert gate_checks.inexact_node(rounded) is None
    stretched = capture(lambda a: a - np.percentile(a, 2) if np.percentile(a, 98) > 3 else a, x)
    inexact, numpy_calls = gate_checks.exactness(stretched)
    assert inexact is None and numpy_calls  # the percentile the gate reads
    # float reductions of arrays laid out as eager's: NumPy's own calls in the program
    summed = capture(lambda a: a * 2 if (a * 3).sum() + a.var() > 3 else a, x)
    inexact, numpy_calls = gate_checks.exactness(summed)
    assert inexact is None and len(numpy_calls) == 2
    for fn in (lambda a: a * 2 if (a.T * 3).sum() > 3 else a,  # F-ordered in eager NumPy
               lambda a: a * 2 if np.exp(a).max() > 3 else a,  # within 1 ulp, not exact
               lambda a: a * 2 if np.signbit(a.max()) else a,  # max([0.0, -0.0]): -0.0
               lambda a: a * 2 if a.argmax() > 3 else a,  # exact, but a serial kernel
               lambda a: a * float(np.linalg.norm(a))):
        assert gate_checks.inexact_node(capture(fn, x)) is not None
    # a gate whose value is a whole list is replayed too
    listed = capture(lambda a: a + sum(a[0].tolist()), x)
    assert listed.gates and gate_checks.inexact_node(listed) is not None


def test_an_argument_is_written_only_by_the_branch_that_holds(monkeypatch):
    def update(x):
        x *= 2
        if x.max() > 4:
            x[0] = -1.0
        else:
            x += 1
        return x.min()

    f = stax.compile(update, strict_native=True)
    rng = np.random.default_rng(1)
    for scale in (1.0, 10.0, 1.0, 0.1, 10.0):
        x = rng.random(64) * scale
        mine, eager = x.copy(), x.copy()
        assert f(mine) == update(eager)
        np.testing.assert_array_equal(mine, eager)
    assert len(f.versions()) == 2 and all(v.gates_in_program for v in f.versions())


def test_a_value_gate_is_replayed():
    """A value read into Python takes many values, each a version: a call would run each
    program in turn to find its own, where the replay finds it at once."""
    def scale(x):
        return x * int(np.argmax(x))

    f = stax.compile(scale, strict_native=True)
    rng = np.random.default_rng(2)
    for _ in range(6):
        x = rng.random(5)
        np.testing.assert_array_equal(f(x), scale(x))
    assert len(f.versions()) == len({int(v.gates.expected[0]) for v in f.versions()})
    assert not any(v.gates_in_program for v in f.versions())


def test_a_program_that_disagrees_with_numpy_replays_its_gates(monkeypatch):
    """Were the kernels' gate value not NumPy's on the traced input (a defect: here max's
    sign of zero, made to look exact), the version would fail its own gate at every new
    compile: its gates are replayed instead, one version, eager's branch."""
    monkeypatch.setattr(gate_checks, "_EXACT_TARGETS",
                        gate_checks._EXACT_TARGETS | gate_checks._EXTREME_TARGETS)

    def sign_of_max(x):
        return x + 1.0 if np.signbit(x.max()) else x - 1.0

    f = stax.compile(sign_of_max)
    for x in (np.array([0.0, -0.0]), np.array([-0.0, -0.0]), np.array([0.0, -0.0])):
        np.testing.assert_array_equal(f(x), sign_of_max(x))
    assert len(f.versions()) <= 2 and f.cache_info().compiles == len(f.versions())


def test_a_guarded_branch_is_not_declined_for_the_other_ones_data():
    """Checks and events come after the gates: the finite branch's cast of a NaN, or its
    division by zero, is the other branch's call, which compiles."""
    def to_int(x):
        if np.isfinite(x).all():
            return x.astype(np.int64)
        return np.where(np.isfinite(x), x, 0.0).astype(np.int64)

    def safe_ratio(x, d):
        return x / d if (d != 0).all() else x

    f, g = stax.compile(to_int, strict_native=True), stax.compile(safe_ratio, strict_native=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in (np.arange(4.0), np.array([1.0, np.nan, 3.0, np.inf]), np.arange(4.0)):
            np.testing.assert_array_equal(f(x), to_int(x))
        for d in (np.ones(4), np.array([1.0, 0.0, 2.0, 1.0]), np.ones(4)):
            np.testing.assert_array_equal(g(np.arange(4.0), d), safe_ratio(np.arange(4.0), d))
    for h in (f, g):
        assert len(h.versions()) == 2 and all(v.native for v in h.versions())
        assert h.cache_info().fallbacks == 0


def test_numpy_warnings_are_given_once_when_the_branch_changes():
    def f(x, y):
        v = np.nanmedian(y, axis=0)
        return (x + 1, v) if x.max() > 0 else (x - 1, v)

    k = stax.compile(f)
    y = np.array([[np.nan, 1.0], [np.nan, 2.0]])
    for x in (np.ones(2), -np.ones(2), np.ones(2), -np.ones(2)):
        with warnings.catch_warnings(record=True) as mine:
            warnings.simplefilter("always")
            k(x, y)
        with warnings.catch_warnings(record=True) as eager:
            warnings.simplefilter("always")
            f(x, y)
        assert [str(w.message) for w in mine] == [str(w.message) for w in eager]


def test_threads_taking_both_branches_compile_each_once():
    def f(x):
        return x * 2.0 if x.max() > 0.5 else x - 1.0

    k = stax.compile(f)
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        for _ in range(100):
            x = r.random(1000) * r.choice([0.4, 1.0])
            if not np.array_equal(k(x), f(x)):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(k.versions()) == 2
    assert sorted(v.index for v in k._by_sigma[k.versions()[0].sigma]) == [0, 1]


def test_a_branch_that_runs_eagerly_does_not_hide_the_compiled_one():
    def f(x):
        return x * 2.0 if x.max() > 0 else x + len(x.tobytes())

    k = stax.compile(f)
    pos, neg = np.ones(100), -np.ones(100)
    for x in (pos, neg, pos, pos, pos):
        np.testing.assert_array_equal(k(x), f(x))
    assert k.cache_info().fallbacks == 1  # the one call of the branch that runs eagerly


def test_draws_are_made_once_when_the_branch_changes():
    def noisy(x, rng):
        noise = rng.standard_normal(x.shape)
        return x + noise if x.max() > 0 else x - noise

    f = stax.compile(noisy)
    for sign in (1, -1, 1, -1):
        x = sign * np.abs(np.linspace(0.5, 1.0, 8))
        mine, eager = np.random.default_rng(5), np.random.default_rng(5)
        np.testing.assert_array_equal(f(x, mine), noisy(x, eager))
        assert mine.bit_generator.state == eager.bit_generator.state


def test_events_in_a_gates_slice_are_reported():
    def ratio(x, y):
        return x if (x / y).max() > 1 else -x

    f = stax.compile(ratio)
    x, y = np.ones(4), np.array([1.0, 2.0, 0.0, 4.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = f(x, y)
    np.testing.assert_array_equal(got, ratio(x, y))
    assert any("divide by zero" in str(w.message) for w in caught)


def count_positive(x):
    return len(x[x > 0]), np.count_nonzero(x > 1)


def scaled_by_count(y, w):
    picked = np.exp(y)[w > 0.5]  # what is selected is inexact; only the mask decides the shape
    return picked.shape, y * picked.shape[0]


def test_the_length_of_a_returned_mask_selection_is_the_masks_count_in_the_program():
    """``len(x[x > 0])`` returned is the program's count of the mask (``stax.trace.
    selection_counts``): no gate, no selection computed; another count runs the same version
    (it was a gate on the selection's shape, checked in the program: a version per count)."""
    f = stax.compile(count_positive)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000).astype(np.float32)
    assert f(x) == count_positive(x) and type(f(x)[0]) is int
    assert f.versions()[0].gate_check is None
    assert not f.versions()[0].artifact.externs  # the selection is never computed
    other = x.copy()
    other[np.flatnonzero(other > 0)[:5]] = -1.0
    assert f(other) == count_positive(other)
    assert f.cache_info().versions == 1


def test_a_selections_shape_over_more_dimensions(monkeypatch):
    f = stax.compile(scaled_by_count)
    rng = np.random.default_rng(6)
    y, w = rng.standard_normal((200, 3)), rng.random(200)
    for _ in range(2):
        got, want = f(y, w), scaled_by_count(y, w)
        assert got[0] == want[0] and got[0][1:] == (3,)
        np.testing.assert_array_equal(got[1], want[1])
        no_replay(monkeypatch)  # the second call: checked in the program, exp(y) not exact
    assert f.versions()[0].gate_check.passed == 2
    monkeypatch.undo()
    w2 = w.copy()
    w2[np.flatnonzero(w2 > 0.5)[:7]] = 0.0
    got, want = f(y, w2), scaled_by_count(y, w2)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def positions_doubled(x):
    return np.nonzero(x > 0.5)[0] * 2, np.flatnonzero(x < -0.5)


def test_the_shapes_of_positions_are_the_masks_count_in_the_program(monkeypatch):
    f = stax.compile(positions_doubled)
    x = np.random.default_rng(7).standard_normal(3000)
    for _ in range(2):
        for g, w in zip(f(x), positions_doubled(x)):
            np.testing.assert_array_equal(g, w)
        no_replay(monkeypatch)
    assert f.versions()[0].gate_check.passed == 2
    monkeypatch.undo()
    y = x.copy()
    y[np.flatnonzero(y > 0.5)[:3]] = 0.0
    for g, w in zip(f(y), positions_doubled(y)):
        np.testing.assert_array_equal(g, w)
    assert f.cache_info().versions == 2


def impute_column_means(X):
    X = X.copy()
    means = np.nanmean(X, axis=0)
    where = np.where(np.isnan(X))
    X[where] = np.take(means, where[1])
    return X


def test_one_gate_outcome_rules_out_every_version_that_replays_the_same_gates():
    """A NaN count as a gate (a StackOverflow idiom): each call on new data has its own count
    and compiles a version, up to the limit; then a call that no version takes ran every one of
    them to find that out (8 programs and replays: 75-125 ms against NumPy's 8). The first
    version's outcome (its program's, or its replay's) rules out all the versions that replay
    the same gates, so such a call runs one version before it runs eagerly."""
    import logging

    rng = np.random.default_rng(11)

    def data(k):
        X = rng.standard_normal((300, 6))
        X[rng.random(X.shape) < 0.05 + 0.01 * k] = np.nan
        return X

    f = stax.compile(impute_column_means)
    logging.disable(logging.WARNING)
    try:
        for k in range(10):
            X = data(k)
            np.testing.assert_array_equal(f(X), impute_column_means(X))
        versions = f.versions()
        assert len(versions) >= 2 and len({v.gates.fingerprint for v in versions}) == 1
        runs = []
        for v in versions:
            def counted(*a, _run=v.run, _v=v, **k):
                runs.append(_v.index)
                return _run(*a, **k)
            v.run, v.fast = counted, None
        X = data(20)
        np.testing.assert_array_equal(f(X), impute_column_means(X))
        assert len(runs) <= 1, runs  # none once the key runs eagerly (below)
    finally:
        logging.disable(logging.NOTSET)


def test_a_key_whose_gate_counts_keep_changing_runs_eagerly(caplog):
    """A number read from the data as a gate (the NaN count above) is new at almost every call
    on new data: after three versions for it the key runs eagerly at once (each further version
    cost a compile, and each call one version's program before the eager run: 13 ms against
    NumPy's 7). Branches on booleans still get a version per outcome."""
    import logging

    rng = np.random.default_rng(12)
    f = stax.compile(impute_column_means)
    with caplog.at_level(logging.WARNING, logger="stax"):
        for k in range(8):
            X = rng.standard_normal((200, 5))
            X[rng.random(X.shape) < 0.04 + 0.01 * k] = np.nan
            np.testing.assert_array_equal(f(X), impute_column_means(X))
    assert f.cache_info().compiles == 3
    assert "runs eagerly for this signature from now on" in caplog.text

    def two_branches(x):
        y = x * 2 if x.mean() > 0 else x - 1
        return y + 1 if x.max() > 2 else y
    g = stax.compile(two_branches)
    for shift, scale in ((1, 1), (-1, 1), (1, 0.1), (-1, 0.1), (1, 1), (-1, 0.1)):
        x = rng.standard_normal(100) * scale + shift * 0.5
        x[0] = 3.0 if scale == 1 else 0.0
        np.testing.assert_array_equal(g(x), two_branches(x))
    assert g.cache_info().compiles == 4 and g.cache_info().fallbacks == 0


def first_at_least(x):
    i = 0
    while i < len(x) and x[i] < 2.0:
        i += 1
    return i


def four_branches(x):
    y = x * 2 if x[0] > 0 else x - 1
    y = y + 1 if x[1] > 0 else y
    y = y * y if x[2] > 0 else -y
    return y / 2 if x[3] > 0 else y


def test_keys_whose_gates_keep_changing_in_number_or_outcomes_run_eagerly(caplog):
    """A probe's scan ``while i < len(x) and x[i] < 2.0`` has a gate per item it tests: each
    call on new data had gates of another number, so the key compiled eight versions, then
    replayed all eight's gates at every call (380 us a call for NumPy's 17). Gates of three
    different numbers, or six versions of branch outcomes, make the key eager; and past the
    version limit a key whose gates held for no version runs eagerly from then on."""
    import logging

    rng = np.random.default_rng(14)
    f = stax.compile(first_at_least)
    with caplog.at_level(logging.WARNING, logger="stax"):
        for _ in range(12):
            x = rng.standard_normal(300)
            assert f(x) == first_at_least(x)
    assert f.cache_info().compiles == 3
    assert "its data decide how many gates it has" in caplog.text
    g = stax.compile(four_branches)
    for _ in range(30):
        x = rng.standard_normal(6)
        np.testing.assert_array_equal(g(x), four_branches(x))
    assert g.cache_info().compiles == 6
    assert "its branches take new outcomes" in caplog.text
    h = stax.CompiledFunction(four_branches, limits=stax.Limits(max_versions=2))
    for _ in range(10):
        x = rng.standard_normal(6)
        np.testing.assert_array_equal(h(x), four_branches(x))
    assert h.cache_info().compiles == 2
    assert any(not v.native for v in h._by_sigma[next(iter(h._by_sigma))])


def doubled_large(x):
    out = []
    for i in range(len(x)):
        if x[i] > 1:
            out.append(x[i] * 2)
    return np.array(out)


def test_a_capture_stops_at_its_data_gate_budget(caplog):
    """A probe's list-building loop over 500 elements with a branch per element captured a
    gate per element (4.2 s) for a version new data never matched, then ran eagerly. Past
    ``MAX_GATES`` data gates the capture stops (after one more try with its loops lifted) and
    the key runs eagerly, naming the line that decided."""
    import logging
    import time

    from stax.trace.gate_budget import MAX_GATES

    rng = np.random.default_rng(15)
    f = stax.compile(doubled_large)
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="stax"):
        for _ in range(4):
            x = rng.standard_normal(500)
            np.testing.assert_array_equal(f(x), doubled_large(x))
    assert time.perf_counter() - start < 30  # (seconds before; a bound, not a benchmark)
    assert f.cache_info().compiles == 1 and not f.versions()[0].native
    assert f"Python decided something from the data {MAX_GATES} times" in caplog.text
    assert "test_gate_checks.py" in caplog.text  # the user's line
    short = rng.standard_normal(20)  # a few gates: a version as before
    np.testing.assert_array_equal(f(short), doubled_large(short))
    assert f.versions()[-1].native


def mean_branch(x):
    if x.mean() > 0:
        return x * 2.0 + 1.0
    return x * x - 1.0


def test_versions_whose_gates_the_program_checks_take_a_key_entry():
    """A branch on a reduction checked in the program went through the whole dispatch at every
    call (its gates kept it from a key entry): the key entry runs it now, and a call of the
    other branch goes on to that branch's version, whose entry takes the calls after it."""
    rng = np.random.default_rng(16)
    f = stax.compile(mean_branch)
    x = rng.standard_normal(500).astype(np.float32)
    for sign in (1, -1, 1, 1, -1, -1, 1):
        np.testing.assert_array_equal(f(sign * x), mean_branch(sign * x))
    assert all(v.gates_in_program and v.entry is not None for v in f.versions())
    info = f.cache_info()
    assert info.compiles == 2 and min(info.hits.values()) >= 0
    assert sum(info.hits.values()) == 7 - info.misses


LOG = []


def logged_doubles(x):
    LOG.append(1)  # an effect its caller sees: the capture may not stop midway
    out = []
    for v in x:
        if v > 0:
            out.append(v * 2)
    return np.array(out)


def test_a_function_with_an_outside_effect_is_not_stopped_at_the_gate_budget():
    """A review's finding: a capture stopped at the budget had run ``LOG.append(1)``, and the
    eager run after it ran it again (twice on the first call). The budget applies to functions
    whose source shows no effect a caller could see (appending to a list they made is none)."""
    from stax.trace.gate_budget import budgeted

    assert budgeted(doubled_large) and not budgeted(logged_doubles)
    x = np.random.default_rng(17).standard_normal(100)
    LOG.clear()
    np.testing.assert_array_equal(stax.compile(logged_doubles)(x), logged_doubles(x))
    assert len(LOG) == 2  # once compiled (its capture), once eagerly here


def kmeans_step(X, C):
    d = ((X[:, None, :] - C[None]) ** 2).sum(-1)
    labels = d.argmin(1)
    new = C.copy()
    for c in range(C.shape[0]):
        m = labels == c
        if m.any():
            new[c] = X[m].mean(0)
    return new, labels


def test_gates_of_one_kind_whose_graphs_differ_still_count_as_changing(caplog):
    """A k-means step: each selection's size is a gate and a constant of the gates after it,
    so every version's gate graph differs; versions with gates of the same kinds count alike,
    and after three the key runs eagerly (it compiled eight, then replayed all eight's gates at
    every call: 70x NumPy's time)."""
    import logging

    rng = np.random.default_rng(13)
    X, C = rng.standard_normal((400, 2)), rng.standard_normal((5, 2))
    f = stax.compile(kmeans_step)
    with caplog.at_level(logging.WARNING, logger="stax"):
        for _ in range(8):
            got, want = f(X, C), kmeans_step(X, C)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            C = want[0]
    assert f.cache_info().compiles == 3
    assert "runs eagerly for this signature from now on" in caplog.text


def jacobi_until(A, b, tol):
    D = np.diag(A)
    R = A - np.diag(D)
    x = np.zeros_like(b)
    it = 0
    while True:
        xn = (b - R @ x) / D
        it += 1
        if np.max(np.abs(xn - x)) < tol or it >= 50:
            return xn, it
        x = xn


def test_a_matrix_product_in_the_gates_slice_runs_as_numpys_call(monkeypatch):
    """``R @ x`` before a ``while`` test: BLAS's rounding is not the kernels', so in the gate's
    slice the product is NumPy's own call (as eager's operands are laid out): the branch is
    eager's, checked in the program (it was replayed: 0.65x NumPy)."""
    rng = np.random.default_rng(5)
    A = rng.random((40, 40))
    A += np.diag(A.sum(1) + 1)
    b = rng.random(40)
    f = stax.compile(jacobi_until, strict_native=True)
    f(A, b, 1e-10)
    assert f.versions()[0].gates_in_program
    no_replay(monkeypatch)
    for scale in (1.0, 1.0, 2.0):
        got, want = f(A, b * scale, 1e-10), jacobi_until(A, b * scale, 1e-10)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]


def clip_grad_norm(grads, max_norm):
    total = np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads))
    scale = min(1.0, max_norm / (total + 1e-6))  # Python's 1.0, or a float64: its dtype differs
    return [g * scale for g in grads], float(total)


def test_which_side_builtin_min_returned_is_checked_in_the_program(monkeypatch):
    """``min(1.0, t)``: which one it returned is an int gate of two values (``np.where(c, -1,
    0)``), checked in the program as a branch, through ``x ** 2`` (NumPy's square); it was
    replayed: 2.6x slower than NumPy."""
    rng = np.random.default_rng(2)
    grads = [rng.standard_normal((64, 64)).astype(np.float32),
             rng.standard_normal(64).astype(np.float32)]
    small = [g * 1e-3 for g in grads]
    f = stax.compile(clip_grad_norm, strict_native=True)
    f(grads, 1.0)
    assert f.versions()[0].gates_in_program
    no_replay(monkeypatch)
    for gs in (grads, small, grads, small):
        got, want = f(gs, 1.0), clip_grad_norm(gs, 1.0)
        assert [a.dtype for a in got[0]] == [a.dtype for a in want[0]]
        for a, b in zip(got[0], want[0]):
            np.testing.assert_array_equal(a, b)
        assert got[1] == want[1] and type(got[1]) is float
    assert len(f.versions()) == 2


def test_a_version_a_miss_made_takes_back_no_hit():
    """A version compiled by this call's miss whose gates then fail (its program's gate values
    not NumPy's on the very inputs it was traced on) counted no hit: none is taken back
    (``cache_info().hits[3]`` went to -1)."""
    def branchy(x):
        if x.sum() > 0:
            return x * 2.0
        return x - 1.0

    f = stax.compile(branchy)
    x = np.arange(1.0, 6.0)
    f(x)  # a miss: its version, run on this call
    (version,) = f.versions()
    f._other_branch(version, (-x,), {})  # as ``_gates_failed`` does when its gates fail
    assert min(f.cache_info().hits.values()) >= 0
