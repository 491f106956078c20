"""The corpus of ordinary NumPy programs (``benchmarks/corpus``, issue 13 item 7), timed for each
implementation: eager NumPy, Stax, Numba (``njit`` on the unmodified function, where it compiles)
and JAX (a faithful port, where one is written). Every result is checked against eager NumPy
before it is timed: a wrong Stax result fails the case; a peer's wrong result is recorded and not
timed. ``nox -s bench`` runs each implementation in a process of its own; the summary
(``conftest.py``, ``corpus/summary.py``) gives each program's ratios to NumPy and the totals:
native fraction, correct count, geomean against NumPy and against Numba."""

from __future__ import annotations

import time
import warnings

import corpus
import pytest
from corpus import runners
from corpus.summary import case_name

IMPLS = ["numpy", "stax", "numba", "jax"]
# ``-k <impl>`` selects an implementation's cases: no program name may contain one
assert not [n for n in corpus.PROGRAMS for impl in IMPLS if impl in n]


def rounds_for(run) -> tuple[int, int]:
    """(rounds, iterations): rounds of at least ~2 ms, about 0.3 s in all (at least 7 rounds)."""
    start = time.perf_counter()
    run()
    once = max(time.perf_counter() - start, 1e-7)
    iterations = max(1, int(2e-3 / once))
    return max(7, min(200, int(0.3 / (once * iterations)))), iterations


@pytest.mark.parametrize("name", list(corpus.PROGRAMS))
@pytest.mark.parametrize("impl", IMPLS)
def test_corpus(benchmark, record, status, impl, name):
    program = corpus.PROGRAMS[name]
    case = case_name(name)
    args = program.inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the programs' own NaN and overflow warnings
        want = program.fn(*runners.copies(args))
        run, how = runners.RUNNERS[impl](program, args)
        if run is None:
            status(case, impl, how)
            pytest.skip(f"{impl}: {how}")
        try:
            got = runners.to_numpy(run())
        except Exception as exc:  # only Stax gets here: the peers ran once while preparing
            status(case, impl, f"crash ({type(exc).__name__}: {exc})")
            raise
        if isinstance(run, runners.StaxRun):
            how = run.how()
        wrong = corpus.mismatch(program, got, want, exact_types=impl == "stax")
        if wrong is None and impl == "stax":  # the second call hits the cache
            wrong = corpus.mismatch(program, runners.to_numpy(run()), want)
        if wrong:
            status(case, impl, f"WRONG {wrong}")
            if impl == "stax":
                pytest.fail(f"stax gives a different result than eager NumPy: {wrong}")
            pytest.skip(f"{impl} gives a different result than eager NumPy: {wrong}")
        status(case, impl, how)
        benchmark.group = case
        rounds, iterations = rounds_for(run)
        benchmark.pedantic(run, rounds=rounds, iterations=iterations, warmup_rounds=1)
    record(case, impl, benchmark)
