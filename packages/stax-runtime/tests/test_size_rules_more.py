"""Size rules for ``np.polyval`` and every ufunc's ``accumulate`` (a user probe's recompile
storms: one version per size, then the version limit and eager NumPy): a generic version from
the second size on, its results NumPy's at every size."""

from __future__ import annotations

import numpy as np

import stax.runtime as stax


def horner(c, x):
    return np.polyval(c, x) * 2.0


def horner_listed(x):
    return np.polyval([1.0, -2.0, 0.5], x)


def drawdown(prices):
    wealth = prices / prices[0]
    peak = np.maximum.accumulate(wealth, axis=0)
    return (wealth / peak - 1.0).min(axis=0), np.minimum.accumulate(wealth)


def test_one_generic_version_for_every_size():
    rng = np.random.default_rng(0)
    for fn, make in ((horner, lambda n: (rng.standard_normal(7), rng.uniform(-1, 1, n))),
                     (horner_listed, lambda n: (rng.uniform(-1, 1, n),)),
                     (drawdown, lambda n: (np.exp(rng.standard_normal((n, 3)).cumsum(0)),))):
        compiled = stax.compile(fn)
        for n in (100, 200, 300, 400, 500):
            args = make(n)
            got, want = compiled(*args), fn(*args)
            for g, w in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,)):
                np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
        assert compiled.cache_info().versions <= 2, (fn.__name__, compiled.cache_info())
