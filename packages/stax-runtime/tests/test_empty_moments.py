"""mean, var and std of a slice with no element (or no more than ``ddof``): NumPy warns with a
Python warning whatever the error state ("Mean of empty slice", "Degrees of freedom <= 0 for
slice"); the compiled reduction returned NaN silently (found by the stress suite:
``x[1:].std(axis=None)`` on one row). Such calls are NumPy steps, which warn themselves."""

import warnings

import numpy as np
import pytest

import stax.runtime as stax

CASES = {
    "std of an empty slice": lambda x: x[1:].std(axis=None),
    "mean of an empty slice": lambda x: x[1:].mean(),
    "var with ddof equal to the count": lambda x: x.var(axis=0, ddof=1),
    "std of empty rows, plus one": lambda x: np.std(x[:, :0], axis=1) + 1,
    "std with ddof over the count": lambda x: x.std(ddof=6),
    "nanmean of an empty slice": lambda x: np.nanmean(x[1:]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_moments_of_too_few_elements_warn_as_numpy(name):
    fn = CASES[name]
    x = np.arange(6.0).reshape(1, 6)
    compiled = stax.compile(fn, strict_native=True)
    seen = []
    for call in (fn, compiled, compiled):
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
            warnings.simplefilter("always")
            result = call(x)
        seen.append(({str(w.message) for w in caught}, np.asarray(result).shape))
    assert seen[0][0] and seen[1] == seen[0] and seen[2] == seen[0]


def test_moments_of_enough_elements_stay_native():
    compiled = stax.compile(lambda x: x.std(axis=1, ddof=1) + x.mean(), strict_native=True)
    x = np.arange(12.0).reshape(2, 6)
    for _ in range(2):  # the compiling call, then the cached version's
        np.testing.assert_allclose(compiled(x), x.std(axis=1, ddof=1) + x.mean())
    assert not compiled.versions()[0].artifact.externs
