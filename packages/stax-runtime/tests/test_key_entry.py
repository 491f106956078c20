"""Versions keyed by plain positional arguments cost a lookup per call (issue 13): after a
version's first run, calls with its key go through an entry that compares each argument with the
key and calls the function (a fallback) or the machine code on the arrays (a compiled version
whose scalars are constants); any other call still goes through the dispatcher."""

import numpy as np
import pytest

import stax.runtime as stax

Y = np.array([1.0, 2.0, 3.0])


def lorenz(y, sigma, rho, beta):
    return np.array([sigma * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1], y[0] * y[1] - beta * y[2]])


def lorenz_fallback(y, sigma, rho, beta):
    through_long = (y.astype(np.longdouble) * 1.0).astype(np.float64)  # float128: a fallback
    return lorenz(through_long, sigma, rho, beta)


@pytest.mark.parametrize("fn, native", [(lorenz_fallback, False), (lorenz, True)])
def test_calls_go_through_the_entry_and_match_eager(fn, native):
    f = stax.compile(fn)
    for _ in range(3):
        np.testing.assert_array_equal(f(Y, 10.0, 28.0, 8 / 3), lorenz(Y, 10.0, 28.0, 8 / 3))
    info = f.cache_info()
    assert info.versions == 1 and f.versions()[0].native == native
    assert info.fallbacks == (0 if native else 3)
    assert f.versions()[0].entry.hits == 2


def scaled_exp(x, scale):
    return np.exp(x * scale)


def test_floating_point_events_under_a_key_entry_are_settled_by_the_dispatcher():
    """The machine code's slow path (an overflow here) hands the whole call back: NumPy's warning
    is raised once, from the user's line, as eager."""
    f = stax.compile(scaled_exp)
    x = np.array([1.0, 2.0, 800.0])
    with pytest.warns(RuntimeWarning, match="overflow"):
        f(x, 1.0)
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="overflow"):
            np.testing.assert_array_equal(f(x, 1.0), np.exp(x))
    np.testing.assert_array_equal(f(x[:2], 1.0), np.exp(x[:2]))


@pytest.mark.parametrize("fn", [lorenz, lorenz_fallback])
@pytest.mark.parametrize("first, second", [
    ((Y, 10.0, 28.0, 1.0), (Y, 10.0, 28.0, 2.0)),     # another scalar value
    ((Y, 10.0, 28.0, 0.0), (Y, 10.0, 28.0, -0.0)),    # the sign of zero
    ((Y, 10.0, 28.0, 1.0), (Y, 10.0, 28.0, 1)),       # an int for a float
    ((Y, 10.0, 28.0, 1.0), (Y[::-1], 10.0, 28.0, 1.0)),  # another layout
    ((Y, 10.0, 28.0, 1.0), (Y.astype(np.float32), 10.0, 28.0, 1.0)),
    ((Y, 10.0, 28.0, np.nan), (Y, 10.0, 28.0, -np.nan)),  # NaN bits
])
def test_a_call_with_another_key_leaves_the_entry_for_the_dispatcher(fn, first, second):
    f = stax.compile(fn)
    for args in (first, first, second, second, first):
        np.testing.assert_array_equal(f(*args), lorenz(*args))
    assert f.cache_info().versions == 2


def test_keyword_calls_and_tuple_arguments_are_dispatched():
    f = stax.compile(lorenz_fallback)
    f(Y, 10.0, 28.0, 1.0)
    np.testing.assert_array_equal(f(Y, 10.0, 28.0, beta=1.0), lorenz(Y, 10.0, 28.0, 1.0))

    def packed(y, params):
        return lorenz_fallback(y, *params)
    g = stax.compile(packed)
    for _ in range(3):
        np.testing.assert_array_equal(g(Y, (10.0, 28.0, 1.0)), lorenz(Y, 10.0, 28.0, 1.0))
    assert g.versions()[0].entry.hits == 2  # a tuple's items compared by the entry too


@pytest.mark.parametrize("first, second", [
    ({"w": Y, "b": 2.0}, {"w": Y, "b": 3.0}),             # a value in the dict
    ({"w": Y, "b": 2.0}, {"b": 2.0, "w": Y}),             # the keys' order (a tree's)
    ({"w": Y, "b": 2.0}, {"w": Y[::-1], "b": 2.0}),       # an array's layout in it
    ({"w": Y, "b": 2.0}, {"w": Y, "b": 2.0, "c": None}),  # another key
    ([Y, 2.0], [Y, 2.0, 3.0]),                            # a list's length
    ([Y, 2.0], (Y, 2.0)),                                 # a tuple for a list
    ([Y, [Y, 1]], [Y, [Y, 2]]),                           # nested
])
def test_containers_of_arguments_are_compared_by_the_entry(first, second):
    """A fallback keyed by dicts and lists of arrays and numbers: its calls cost the entry's
    comparisons (a dict of arrays cost 21 us of keying a call before), and any other key goes
    to the dispatcher."""
    def total(params):
        leaves = params.values() if isinstance(params, dict) else params
        flat = [v for leaf in leaves for v in (leaf if isinstance(leaf, list) else [leaf])]
        return (np.sum([np.sum(np.asarray(v, dtype=np.longdouble)) for v in flat
                        if v is not None]) * 1).astype(np.float64)  # float128: a fallback

    f = stax.compile(total)
    for args in (first, first, first, second, second, first):
        assert f(args) == total(args)
    assert f.versions()[0].entry.hits >= 2
    assert f.cache_info().versions == 2


@pytest.mark.parametrize("first, second", [
    (np.float32(2.0), np.float32(3.0)),
    (np.float32(0.0), np.float32(-0.0)),
    (np.float64(2.0), np.float32(2.0)),    # the type is part of the key
    (np.float64(np.nan), -np.float64(np.nan)),
    (np.int64(3), np.int32(3)),
    (np.float64(2.0), 2.0),                # a NumPy scalar is not a Python float
])
def test_numpy_scalar_arguments_are_compared_by_type_and_bits(first, second):
    def scaled(x, k):
        return x * k + 1
    f = stax.compile(scaled, strict_native=True)
    for k in (first, first, second, second, first):
        got, want = f(Y, k), scaled(Y, k)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert f.cache_info().versions == 2
    assert f.cache_info().hits[1] >= 2


def matrix_step(A, k):
    result = np.eye(A.shape[0])
    for _ in range(k):
        result = result @ A
    return np.sqrt(result) + np.median(A)  # a NumPy step: the version has no machine-code entry


def test_a_compiled_version_without_machine_code_entry_gets_a_key_entry():
    """Its calls skip the signature and lookup; a call it declines (a NaN from sqrt of a negative
    entry: NumPy's warning) still runs eagerly, from the dispatcher's own code path."""
    f = stax.compile(matrix_step)
    A = np.abs(np.random.default_rng(0).standard_normal((6, 6)))
    for _ in range(3):
        np.testing.assert_array_equal(f(A, 3), matrix_step(A, 3))
    version = f.versions()[0]
    assert version.native and version.entry.dispatches and version.entry.hits == 2
    with pytest.warns(RuntimeWarning, match="invalid value"):
        got = f(-A, 3)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, matrix_step(-A, 3))
    np.testing.assert_array_equal(f(A, 4), matrix_step(A, 4))  # another key: the dispatcher
    assert f.cache_info().versions == 2


def scaled_pair(k, A, s):
    product = A @ A  # a NumPy step: no machine-code entry
    return product * s, {"k": k, "trace": np.trace(product)}


def test_a_version_with_scalar_arguments_runs_its_inputs_without_a_tree_walk():
    """Arguments all positional leaves, some scalars (constants of the code): the version's
    ``fast`` takes the inputs at their slots; results of any tree come back as eager's."""
    f = stax.compile(scaled_pair)
    A = np.random.default_rng(1).standard_normal((5, 5))
    for _ in range(3):
        got, want = f(7, A, 2.5), scaled_pair(7, A, 2.5)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1]["k"] == 7 and np.array_equal(got[1]["trace"], want[1]["trace"])
    version = f.versions()[0]
    assert version.fast is not None and version.entry.hits == 2
    B = A + 1
    np.testing.assert_array_equal(version.fast(7, B, 2.5)[0], scaled_pair(7, B, 2.5)[0])
    np.testing.assert_array_equal(f(7, A, 3.5)[0], scaled_pair(7, A, 3.5)[0])  # another key
    assert f.cache_info().versions == 2


def test_keyword_arguments_are_placed_at_their_positions():
    """``f(x, k=3.0)`` is ``f(x, 3.0)`` (``runners.keywords_as_positions``): one version for
    both spellings, the machine-code entry for either, and Python's own errors for a call that
    cannot be placed."""
    def scaled(x, k=2.0, b=1.0):
        return x * k + b
    compiled = stax.compile(scaled)
    x = np.arange(3.0)
    for kwargs in ({"k": 3.0}, {"b": 5.0}, {"b": 5.0, "k": 3.0}, {}):
        np.testing.assert_array_equal(compiled(x, **kwargs), scaled(x, **kwargs))
    np.testing.assert_array_equal(compiled(x, 3.0), scaled(x, k=3.0))
    assert compiled.cache_info().versions == 4  # (3.0, 1.0), (2.0, 5.0), (3.0, 5.0), ()
    for bad in ({"z": 1}, {"x": 1}):
        with pytest.raises(TypeError) as want:
            scaled(x, **bad)
        with pytest.raises(TypeError) as got:
            compiled(x, **bad)
        assert str(got.value) == str(want.value)


WEIGHTS = np.arange(4.0)


def gated_with_free_array(x, a):
    y = x * WEIGHTS
    if y.sum() > 0:
        return y * a
    return y - a


def test_an_entry_whose_gates_turn_to_replays_dispatches_the_calls_own_arguments():
    """A version's key entry runs the dispatcher once its gates are replayed (its program's
    gate values were found wrong): with the call's arguments, not the free arrays read before
    them (a TypeError from the function before)."""
    f = stax.compile(gated_with_free_array)
    x = np.ones(4)
    for a in (2.0, 3.0):
        np.testing.assert_array_equal(f(x, a), gated_with_free_array(x, a))
    for version in f._versions:
        assert version.gate_check is not None and version.entry is not None
        version.gate_check.active = False  # as ``_gates_failed`` does on such a defect
    for x_, a in ((x, 3.0), (-x, 3.0), (x, 2.0)):
        np.testing.assert_array_equal(f(x_, a), gated_with_free_array(x_, a))
