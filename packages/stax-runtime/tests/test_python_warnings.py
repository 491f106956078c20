"""NumPy's warnings from Python code ("All-NaN slice encountered", "Degrees of freedom <= 0")
come once per call, as eager NumPy gives them: capture holds them (``source.HeldWarnings``), the
compiled version declines such a call (a check) and its eager run warns; a warning of another
category from the user's code is shown by the capture that runs it."""

import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import stax.runtime as stax


def _messages(fn, *args):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(w.category, str(w.message)) for w in seen]


def _with_nan_column():
    x = np.random.default_rng(0).standard_normal((5, 6))
    x[:, 2] = np.nan
    x[1, 4] = np.nan
    return x


@pytest.mark.parametrize("fn", [lambda x: np.nanmax(x, axis=0), lambda x: np.nanmin(x, axis=0),
                                lambda x: np.nanmax(x.T, axis=1, keepdims=True)],
                         ids=["nanmax", "nanmin", "nanmax_rows"])
def test_an_all_nan_slice_warns_once_per_call(fn):
    compiled = stax.compile(fn)
    x = _with_nan_column()
    want, eager = _messages(fn, x)
    assert eager == [(RuntimeWarning, "All-NaN slice encountered")]
    for _ in range(3):
        got, seen = _messages(compiled, x)
        assert seen == eager
        np.testing.assert_array_equal(got, want)
    clean = np.nan_to_num(x)
    got, seen = _messages(compiled, clean)
    assert seen == []
    np.testing.assert_array_equal(got, fn(clean))
    assert compiled.cache_info().versions == 1


def test_a_users_own_warning_is_shown_by_the_capture():
    def f(x):
        warnings.warn("from the user", UserWarning, stacklevel=1)
        return x * 2

    compiled = stax.compile(f)
    _, seen = _messages(compiled, np.arange(3.0))
    assert seen == [(UserWarning, "from the user")]


def test_capture_in_one_thread_holds_only_its_own_warnings():
    """The warnings machinery is the process's: a RuntimeWarning another thread gives while a
    capture runs is shown, not held."""
    started, release = threading.Event(), threading.Event()

    def slow(x):
        started.set()
        release.wait(5)
        return np.nanmax(x, axis=0)

    compiled = stax.compile(slow)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        worker = threading.Thread(target=compiled, args=(np.ones((3, 3)),))
        worker.start()
        started.wait(5)
        warnings.warn("from another thread", RuntimeWarning, stacklevel=1)
        release.set()
        worker.join(10)
    assert [str(w.message) for w in seen] == ["from another thread"]
    assert warnings.showwarning.__name__ != "show"  # the capture's hook is gone


def _variance_past_its_count(x):
    return np.var(x, ddof=10) + x.sum()  # a NumPy step that warns, then divides by zero


def _median_of_nans(x):
    return np.nanmedian(x) * 2  # a NumPy step that warns; the call stands


@pytest.mark.parametrize("fn", [_variance_past_its_count, _median_of_nans])
def test_a_numpy_steps_warning_comes_once_per_call(fn):
    """A NumPy step's own warning is held while the call runs: given when the call stands,
    dropped when it declines (its eager run gives it)."""
    compiled = stax.compile(fn)
    x = np.full(5, np.nan) if fn is _median_of_nans else np.arange(5.0)
    want, eager = _messages(fn, x)
    assert eager
    for _ in range(3):
        got, seen = _messages(compiled, x)
        assert seen == eager
        np.testing.assert_array_equal(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):
            fn(x)
        with pytest.raises(RuntimeWarning):
            compiled(x)


def test_a_warning_shows_under_pythons_default_filter(tmp_path):
    """Under Python's "default" filter a line warns once: capture held NumPy's "Degrees of
    freedom <= 0 for slice" (it went through the filters, marking the line's registry) and
    dropped it, so the eager run of the declined first call never showed it (a probe found it
    in a plain script)."""
    script = tmp_path / "ddof.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import stax.runtime as stax

        def f(x):
            return np.var(x, ddof=5)

        g = stax.compile(f)
        for _ in range(3):
            g(np.ones(5))
    """))
    env = {**os.environ, "STAX_CACHE_DIR": "off", "PYTHONWARNINGS": "default"}
    run = subprocess.run([sys.executable, "-W", "default", str(script)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("Degrees of freedom <= 0 for slice") == 1, run.stderr
    assert run.stderr.count("invalid value encountered") == 1, run.stderr


_STEPS_THAT_WARN = """
    import sys
    import warnings

    import numpy as np
    import stax.runtime as stax

    warnings.simplefilter(sys.argv[1])

    def f(x):
        y = x * 2
        m = np.nanmedian(y, axis=0)  # a NumPy step: "All-NaN slice encountered"
        return m + np.log(y).mean()  # a kernel: "divide by zero" where x has a zero

    g = stax.compile(f) if sys.argv[2] == "compiled" else f
    zero, one = np.full((3, 4), np.nan), np.full((3, 4), np.nan)
    zero[0, 0], one[0, 0] = 0.0, 1.0
    for x in (zero, one, zero, one):  # declined (the kernel's event), standing, ...
        g(x)
    for x in (zero, one):  # the same line run eagerly afterwards
        f(x)
"""


@pytest.mark.parametrize("action", ["default", "always", "once", "module", "ignore"])
def test_a_numpy_steps_warning_names_the_users_line_under_every_filter(tmp_path, action):
    """A NumPy step runs from the user's own line (``stax.codegen.call_sites``): its warning
    names that line, not ``<stax call>``, and lands in the user module's registry, so Python's
    filters show exactly what an eager run shows, in every mode; a held warning that is dropped
    (the fast run superseded by the precise one, a declined call) leaves no mark behind."""
    script = tmp_path / "steps.py"
    script.write_text(textwrap.dedent(_STEPS_THAT_WARN))
    env = {**os.environ, "STAX_CACHE_DIR": "off"}
    runs = {how: subprocess.run([sys.executable, str(script), action, how], capture_output=True,
                                text=True, env=env, timeout=120)
            for how in ("eager", "compiled")}
    assert all(run.returncode == 0 for run in runs.values()), runs["compiled"].stderr
    assert runs["compiled"].stderr == runs["eager"].stderr
    if action != "ignore":
        assert f"{script}:12: RuntimeWarning: All-NaN slice encountered" in runs["eager"].stderr
    assert "<stax call" not in runs["compiled"].stderr


@pytest.mark.parametrize("state", ["warn", "ignore"])
@pytest.mark.parametrize("fn", [lambda x: np.nanmean(x, axis=0), lambda x: np.nanmean(x.T, 1)],
                         ids=["columns", "rows"])
def test_nanmean_of_a_slice_of_only_nans_says_mean_of_empty_slice(fn, state):
    """NumPy's "Mean of empty slice" is ``warnings.warn``, given whatever the error state says
    about 0 / 0 (which it only decides for the invalid event): the native mean declines a call
    with a slice of only NaNs (``decline_if``), so NumPy warns; under ``invalid="ignore"`` the
    kernels' event was ignored and the call stood, silent (found by a probe)."""
    compiled = stax.compile(fn)
    x = _with_nan_column()
    with np.errstate(invalid=state):
        want, eager = _messages(fn, x)
        for _ in range(2):
            got, seen = _messages(compiled, x)
            assert seen == eager
            np.testing.assert_array_equal(got, want)
    assert (RuntimeWarning, "Mean of empty slice") in eager
    clean = np.nan_to_num(x, nan=1.0)
    np.testing.assert_array_equal(compiled(clean), fn(clean))
