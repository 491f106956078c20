"""Dynamic shapes through NumPy's library calls (issue 15): trace, cross, sorting and selection,
roll along a dynamic axis, repetition, triangles, creation from a size, joins, statistics along
axes, tensor products, ``ufunc.outer``, searchsorted, interp, convolve, kron, cov/corrcoef,
insert/delete of one element and the views of ``moveaxis``, ``rot90``, the flips,
``atleast_*d`` and ``diagonal`` have size rules, so a stream of sizes compiles one generic
version; where NumPy's result depends on how sizes compare (a diagonal's length, a roll's
shift against the axis, ``kth`` within it) the comparison is a guard, and a size on its other
side takes another version — never a wrong result (so does which operand of a ``same``
convolution is longer, an insert or delete index against the axis, cov's one variable)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as st

RNG = np.random.default_rng(1529)
#: more rows than any number a program compares them with (its columns, 8; a diagonal's 7): a
#: size on the other side takes another version by a guard (tested below), not this stream
SIZES = (6, 10, 14, 22, 10, 30, 9, 13)

PROGRAMS = {
    "trace": lambda x: np.trace(x[:, :6]) + x,
    "trace_method": lambda x: x.T[:6].trace() * x,
    "trace_of_blocks": lambda x: np.trace(x.reshape(-1, 2, 4), axis1=1, axis2=2),
    "cross": lambda x: np.cross(x[:, :3], x[:, 3:6]),
    "cross_along_rows": lambda x: np.cross(x[:, :3].T, x[:, 5:].T, axis=0),
    "partition": lambda x: np.partition(x, 2, axis=1),
    "partition_rows": lambda x: np.partition(x, (1, 3), axis=0),
    "argsort": lambda x: np.argsort(x, axis=1),
    "argsort_rows": lambda x: np.argsort(x, axis=0, kind="stable"),
    "argsort_method": lambda x: x.argsort(0),
    "argsort_flat": lambda x: np.argsort(x, axis=None),
    "lexsort": lambda x: np.lexsort((x[:, 0], x[:, 1])),
    "lexsort_rows_of_keys": lambda x: np.lexsort(x.T[:3]),
    "roll_rows": lambda x: np.roll(x, 2, axis=0),
    "roll_rows_back": lambda x: np.roll(x, -3, axis=0) * 2,
    "roll_flat": lambda x: np.roll(x, 3),
    "roll_flat_transposed": lambda x: np.roll(x.T, -5) + 1,
    "repeat_rows": lambda x: np.repeat(x, 2, axis=0),
    "repeat_flat": lambda x: np.repeat(x[:, 0], 3),
    "repeat_method": lambda x: x.repeat(2, axis=1),
    "triu": lambda x: np.triu(x),
    "tril": lambda x: np.tril(x, -1),
    "triu_above": lambda x: np.triu(x, 2) * 2,
    "eye": lambda x: np.eye(x.shape[0]) @ x,
    "eye_rectangular": lambda x: np.eye(x.shape[0], 8, k=1) * x,
    "linspace": lambda x: x * np.linspace(0, 1, x.shape[0])[:, None],
    "linspace_open": lambda x: np.linspace(-1, 1, len(x), endpoint=False) + x[:, 0],
    "column_stack": lambda x: np.column_stack([x[:, 0], x[:, 1:3]]),
    "dstack": lambda x: np.dstack([x, x]).sum(2),
    "dstack_vectors": lambda x: np.dstack([x[:, 0], x[:, 1]]),
    "append_rows": lambda x: np.append(x, x[:1], axis=0),
    "append_flat": lambda x: np.append(x[:, 0], x[0]),
    "ptp": lambda x: np.ptp(x, axis=1),
    "average": lambda x: np.average(x, axis=0),
    "nanmean": lambda x: np.nanmean(x, axis=0),
    "nanstd": lambda x: np.nanstd(x, axis=0),
    "nanvar_ddof": lambda x: np.nanvar(x, axis=1, ddof=1),
    "nansum_kept": lambda x: np.nansum(x, axis=1, keepdims=True) - x,
    "nanmax": lambda x: np.nanmax(x, axis=0),
    "nanargmin": lambda x: np.nanargmin(x, axis=1),
    "nancumsum": lambda x: np.nancumsum(x, axis=0),
    "count_nonzero": lambda x: np.count_nonzero(x > 0, axis=0),
    "median": lambda x: np.median(x, axis=1),
    "median_rows": lambda x: np.median(x, axis=0),
    "nanmedian": lambda x: np.nanmedian(x, axis=0),
    "percentile": lambda x: np.percentile(x, 50, axis=0),
    "percentiles": lambda x: np.percentile(x, [10, 90], axis=1),
    "quantile_kept": lambda x: np.quantile(x, 0.25, axis=0, keepdims=True) + x,
    "inner": lambda x: np.inner(x, x),
    "tensordot": lambda x: np.tensordot(x, x, axes=([0], [0])),
    "tensordot_count": lambda x: np.tensordot(x, x.T, axes=1),
    "round": lambda x: np.round(x, 2),
    "round_method": lambda x: x.round(1) * 2,
    "subtract_outer": lambda x: np.subtract.outer(x[:, 0], x[:, 1]),
    "multiply_outer": lambda x: np.multiply.outer(x[:, 0], x[0]),
    "moveaxis": lambda x: np.moveaxis(x.reshape(-1, 2, 4), 0, 2) + 1,
    "rot90": lambda x: np.rot90(x) + 1,
    "rot90_twice": lambda x: np.rot90(x, 2) - x,
    "rot90_back": lambda x: np.rot90(x, -1) * 2,
    "fliplr": lambda x: np.fliplr(x) + 1,
    "flipud": lambda x: np.flipud(x) - x,
    "atleast_2d": lambda x: np.atleast_2d(x[:, 0]) + 1,
    "atleast_3d": lambda x: np.atleast_3d(x[:, 1]) * 2,
    "diagonal": lambda x: np.diagonal(x[:, :6]) + 1,
    "diagonal_method": lambda x: x.diagonal(1) * 2,
    "diag_of_a_square": lambda x: np.diag(x[:, :1] @ x[:, :1].T) + 1,
    "diag_of_a_vector": lambda x: np.diag(x[:, 0], -1),
    "searchsorted_method": lambda x: np.sort(x[:, 0]).searchsorted(x[:, 1:3], side="right"),
    "searchsorted_a_number": lambda x: np.searchsorted(np.sort(x[:, 0]), 0.25) + x,
    "searchsorted_rows_in_a_row": lambda x: np.searchsorted(np.sort(x[0]), x),
    "interp": lambda x: np.interp(x[:, 0], np.arange(8.0), x[0]),
    "interp_rows": lambda x: np.interp(x.T, np.arange(8.0), x[1], right=0) + 1,
    # sample points along the changing axis (their count a size in the search's loop IR)
    "interp_samples": lambda x: np.interp(x[:, 1], np.sort(x[:, 0]), x[:, 2]),
    "convolve": lambda x: np.convolve(x[:, 0], np.ones(3)),
    "convolve_same": lambda x: np.convolve(x[:, 0], np.ones(3), mode="same"),
    "convolve_valid": lambda x: np.convolve(x[:, 0], x[0, :3], mode="valid"),
    "convolve_same_short_first": lambda x: np.convolve(x[0, :3], x[:, 1], mode="same"),
    "kron": lambda x: np.kron(x[:2, :2], x),
    "kron_vectors": lambda x: np.kron(x[:, 0], x[0, :3]),
    "kron_ranks": lambda x: np.kron(x[:, 0], x),
    "cov": lambda x: np.cov(x.T),
    "cov_rows": lambda x: np.cov(x),
    "cov_columns": lambda x: np.cov(x, rowvar=False, bias=True),
    "cov_vector": lambda x: np.cov(x[:, 0], ddof=0) + x,
    "corrcoef": lambda x: np.corrcoef(x.T),
    "corrcoef_columns": lambda x: np.corrcoef(x, rowvar=False),
    "insert_row": lambda x: np.insert(x, 1, 0.0, axis=0),
    "insert_from_the_end": lambda x: np.insert(x, -2, 5.0, axis=0),
    "insert_column": lambda x: np.insert(x, 3, 1.0, axis=1),
    "insert_flat": lambda x: np.insert(x, 5, 0.0),
    "delete_row": lambda x: np.delete(x, 0, axis=0),
    "delete_last_row": lambda x: np.delete(x, -1, axis=0),
    "delete_flat": lambda x: np.delete(x, 7),
}
#: programs whose data holds NaNs (those of the ``nan*`` family, and sorting)
WITH_NANS = frozenset({"nanmean", "nanstd", "nanvar_ddof", "nansum_kept", "nanmax", "nanargmin", "nancumsum",
                       "nanmedian", "argsort", "argsort_flat"})


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_stream_of_sizes_through_library_calls_matches_numpy(name):
    fn = PROGRAMS[name]
    f = st.compile(fn, strict_native=True)
    for rows in SIZES:
        x = RNG.standard_normal((rows, 8))
        if name in WITH_NANS:
            x[1, 2] = x[rows - 1, 0] = np.nan
        want = fn(x)
        got = f(x)
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == 2, name
    assert any(v.generic is not None for v in f.versions()), f"{name}: no generic version"


def test_a_diagonal_whose_length_depends_on_the_smaller_size_is_guarded():
    """``np.diagonal(x[:, :6])`` has ``min(rows, 6)`` elements: traced at more rows than 6 the
    generic version holds for those; fewer rows take another version of their own length."""
    def diagonal(x):
        return np.diagonal(x[:, :6]) * 2

    f = st.compile(diagonal, strict_native=True)
    for rows in (10, 14, 22, 7):
        x = RNG.standard_normal((rows, 8))
        np.testing.assert_array_equal(f(x), diagonal(x))
    assert f.cache_info().compiles == 2
    for rows in (4, 3, 5):
        x = RNG.standard_normal((rows, 8))
        got = f(x)
        assert got.shape == (rows,)
        np.testing.assert_array_equal(got, diagonal(x))
    compiles = f.cache_info().compiles
    assert compiles > 2
    x = RNG.standard_normal((30, 8))  # the first generic version still serves the long ones
    np.testing.assert_array_equal(f(x), diagonal(x))
    assert f.cache_info().compiles == compiles


def test_a_trace_sums_a_diagonal_of_the_call_s_length():
    """``np.trace(x[:, :6])`` is a number whatever the sizes: one generic version serves rows
    on both sides of 6, each summing its own diagonal."""
    def traced(x):
        return np.trace(x[:, :6]) + x[0]

    f = st.compile(traced, strict_native=True)
    for rows in (8, 12, 3, 5, 30, 2):
        x = RNG.standard_normal((rows, 8))
        np.testing.assert_allclose(f(x), traced(x), rtol=1e-12)
    assert f.cache_info().compiles == 2


@pytest.mark.parametrize("shift", [3, -3])
def test_a_roll_by_as_many_rows_as_the_array_has_takes_another_version(shift):
    """A roll along a dynamic axis starts over at ``shift`` (or ``n + shift``) where the shift is
    shorter than the axis (a guard); a shorter axis takes another version."""
    def rolled(x):
        return np.roll(x, shift, axis=0) + 1

    f = st.compile(rolled, strict_native=True)
    for rows in (6, 10, 14, 22):
        x = RNG.standard_normal((rows, 4))
        np.testing.assert_array_equal(f(x), rolled(x))
    assert f.cache_info().compiles == 2
    for rows in (3, 2, 1):
        x = RNG.standard_normal((rows, 4))
        np.testing.assert_array_equal(f(x), rolled(x))
    assert f.cache_info().compiles > 2


def test_partition_past_the_axis_raises_numpy_s_error():
    """``kth`` within the axis is a guard: a shorter axis is captured again, where NumPy raises."""
    def partitioned(x):
        return np.partition(x, 4, axis=0)

    f = st.compile(partitioned)
    for rows in (8, 12, 20):
        x = RNG.standard_normal((rows, 3))
        np.testing.assert_array_equal(f(x), partitioned(x))
    assert f.cache_info().compiles == 2
    with pytest.raises(ValueError, match="out of bounds"):
        f(RNG.standard_normal((3, 3)))


def test_convolve_same_takes_the_longer_operand_s_length_by_a_guard():
    """``mode="same"`` has as many elements as the longer operand: traced with more rows than
    ``x[0]``'s 8 the generic version holds for more; fewer take another version, of length 8."""
    def convolved(x):
        return np.convolve(x[:, 0], x[0], mode="same")

    f = st.compile(convolved, strict_native=True)
    for rows in (10, 14, 22, 12):
        x = RNG.standard_normal((rows, 8))
        np.testing.assert_allclose(f(x), convolved(x), rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == 2
    for rows in (5, 3, 7):
        x = RNG.standard_normal((rows, 8))
        got = f(x)
        assert got.shape == (8,)
        np.testing.assert_allclose(got, convolved(x), rtol=1e-12, atol=1e-12)
    compiles = f.cache_info().compiles
    assert compiles > 2
    x = RNG.standard_normal((30, 8))  # the first generic version still serves the long ones
    np.testing.assert_allclose(f(x), convolved(x), rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == compiles


def test_cov_of_one_row_is_numpy_s_scalar():
    """``np.cov`` squeezes its result: one variable gives a number, not a 1x1 matrix, so the
    generic version holds where the rows are not 1 (a guard; one row is compiled exact)."""
    f = st.compile(np.cov)
    for rows in (4, 6, 9, 1):
        x = RNG.standard_normal((rows, 5))
        got, want = f(x), np.cov(x)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == 3
    assert [[str(g) for g in v.generic.guards] for v in f.versions()
            if v.generic is not None] == [["s0 - 1 != 0"]]


@pytest.mark.parametrize("fn, rows", [
    (lambda x: np.insert(x, 4, 0.0, axis=0), 3),
    (lambda x: np.insert(x, -5, 0.0, axis=0), 4),
    (lambda x: np.delete(x, 4, axis=0), 4),
    (lambda x: np.delete(x, -6, axis=0), 5),
])
def test_insert_and_delete_past_the_axis_raise_numpy_s_error(fn, rows):
    """The index within the axis (``-n <= k <= n`` to insert, ``-n <= k < n`` to delete) is a
    guard: a shorter axis is captured again, where NumPy raises."""
    f = st.compile(fn)
    for n in (8, 12, 20):
        x = RNG.standard_normal((n, 3))
        np.testing.assert_array_equal(f(x), fn(x))
    assert f.cache_info().compiles == 2
    with pytest.raises(IndexError, match="out of bounds"):
        f(RNG.standard_normal((rows, 3)))
