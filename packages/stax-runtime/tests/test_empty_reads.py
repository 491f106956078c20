"""Steps that read no element of a value: an item assignment to an empty region, a step with an
empty result. NumPy computes the value in full and reports its events; a fused kernel computing
it only where it is read computed none of it (found by the stress suite:
``y1[1:] = np.arccos(v)`` with one row in ``y1`` lost "invalid value encountered in arccos")."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax


def assign_rows(x, y):
    y[1:] = np.arccos(x)
    return np.abs(y)


def assign_nothing(x, y):
    y[:, 3:3] = np.sqrt(x)[:, :0]
    return y * 2


def assign_reversed_empty(x, y):
    y[0:0] = np.log(x)
    return y


CASES = {
    "assign to no row": (assign_rows, True),
    "assign to an empty column range": (assign_nothing, True),
    "assign to an empty slice, returning the argument": (assign_reversed_empty, True),
    "broadcast against an empty array": (lambda x: np.sqrt(x) * np.ones((0, 1)), False),
    "empty slice of a value, summed": (lambda x: np.sqrt(x)[:, 6:].sum() + x, False),
    "empty slice of a value, concatenated": (
        lambda x: np.concatenate([np.arccos(x)[:, :0], x], axis=1), False),
    # a predicate answered by its integer operand's dtype reads none of it (found by the stress
    # suite: np.isfinite(x % x) on integers lost "divide by zero encountered in remainder")
    "isfinite of an integer remainder": (
        lambda x: np.isfinite(x.astype(np.int64) % x.astype(np.int64)), False),
    "isfinite of the abs of an integer remainder": (
        lambda x: np.isfinite(np.abs(np.abs(x.astype(np.int64) % x.astype(np.int64)))), False),
    "isfinite of a reduction to a NumPy scalar": (
        lambda x: np.isfinite((x.astype(np.int64) % x.astype(np.int64)).sum()), False),
    "isnan of an integer quotient by zero": (lambda x: np.isnan(x.astype(np.int32) // 0), False),
    "isinf of an integer quotient, combined": (
        lambda x: np.isinf(x.astype(np.int16) // x.astype(np.int16)) | (x > 0), False),
}
X = np.array([[-2.0, 0.5, 3.0, 0.25, -0.0, 1.0]])


def run(fn, with_y):
    args = (X.copy(), np.zeros((1, 6))) if with_y else (X.copy(),)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, args, sorted({str(w.message) for w in caught})


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_no_step_reads_still_warn(name):
    fn, with_y = CASES[name]
    want, want_args, want_messages = run(fn, with_y)
    assert want_messages, "the case must warn eagerly"
    compiled = stax.compile(fn, strict_native=True)
    for _ in range(2):
        got, got_args, got_messages = run(compiled, with_y)
        assert got_messages == want_messages
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.shape == want.shape
        for a, b in zip(got_args, want_args):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_no_step_reads_raise_under_errstate(name):
    fn, with_y = CASES[name]
    compiled = stax.compile(fn)
    args = (X.copy(), np.zeros((1, 6))) if with_y else (X.copy(),)
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        compiled(*args)
    args = (X.copy(), np.zeros((1, 6))) if with_y else (X.copy(),)
    with np.errstate(all="ignore"):
        compiled(*args)  # compiled (or run) quietly: the next call is the cached version's
    for _ in range(2):
        args = (X.copy(), np.zeros((1, 6))) if with_y else (X.copy(),)
        with np.errstate(all="raise"), pytest.raises(FloatingPointError):
            compiled(*args)


def test_an_assignment_returned_as_the_argument_is_the_argument():
    compiled = stax.compile(assign_reversed_empty, strict_native=True)
    y = np.zeros((1, 6))
    with np.errstate(all="ignore"):
        assert compiled(X.copy(), y) is y
        y = np.zeros((1, 6))
        assert compiled(X.copy(), y) is y  # the cached version's call


def test_an_empty_constant_concatenated_compiles():
    """The materialization policy divided by the element count of an empty value (an internal
    error, the call ran eagerly)."""
    compiled = stax.compile(lambda x: np.concatenate([np.zeros((0,)), x]), strict_native=True)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_array_equal(compiled(np.arange(3.0)), np.arange(3.0))


def test_a_predicate_of_a_numpy_scalar_stays_a_numpy_scalar():
    """np.isfinite of a full reduction is a NumPy scalar, also once answered by the dtype (found
    by the stress suite: ``np.isfinite(x.all(axis=None))`` came back as a 0-d array)."""
    x = X.copy()
    for fn in (lambda x: np.isfinite(x.all(axis=None)), lambda x: np.isnan((x > 0).sum())):
        compiled = stax.compile(fn, strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            got, want = compiled(x), fn(x)
            assert type(got) is type(want) and got == want


def test_a_numpy_call_writing_into_an_empty_argument_runs_as_numpy():
    """``np.nan_to_num(x, copy=False)`` writes into ``x``: capture refuses it (the function runs
    eagerly) also when ``x`` is empty, whose memory ``np.may_share_memory`` says no view shares
    (it raised NumPy's read-only error as if the user's code had)."""
    def clean(x):
        np.nan_to_num(x, copy=False)
        return x

    compiled = stax.compile(clean)
    for n in (3, 0, 0):
        x = np.array([1.0, np.nan, np.inf])[:n]
        np.testing.assert_array_equal(compiled(x.copy()), clean(x.copy()))


def test_an_array_of_no_elements_compiles():
    """``np.array([])`` (or of a list a loop filled with nothing): a stack of no operands was an
    internal compiler error (the function fell back). Found by a probe of the key."""
    def nothing(x):
        return np.array([]) + x[:0]

    def kept(x):
        out = []
        for v in x:
            if v > 0:
                out.append(v)
        return np.array(out)

    for fn in (nothing, kept):
        compiled = stax.compile(fn, strict_native=True)
        for _ in range(2):  # the compiling call, then the cached version's
            got, want = compiled(np.zeros(3)), fn(np.zeros(3))
            assert got.shape == want.shape and got.dtype == want.dtype
