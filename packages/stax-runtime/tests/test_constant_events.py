"""Events of values capture computes itself, from scalar arguments and constants (no traced
array): a compiled version holds such a value as a constant and no kernel computes it again.
A lifted loop's body is captured inside the outer capture's recorded step: its constants are
its own (``stax.trace.source.holding_warnings`` starts a capture outside any traced value).

- A NumPy scalar's Python operator with a scalar argument (``t += dt``, ``t`` an ``np.int16``)
  reaches the argument's stand-in as a ufunc call (``np.add``); eagerly it is NumPy's scalar
  math, which reports integer overflow ("overflow encountered in scalar add") where the ufunc
  wraps silently. Capture runs the operator unless the code calls the ufunc itself
  (``stax.trace.traced_sizes.scalar_operator``), so
  the overflow is seen and the function runs eagerly for that key, as for any constant's event.
- A constant that underflows (``x * np.exp(-s)``, ``term *= x / k`` of float32 scalars) is
  ignored by NumPy's default state; the version then declines calls whose state heeds underflow
  (``info["constant_underflow"]``, ``LoopProgram.constant_underflow``, the artifact's
  ``underflow_unseen``) and NumPy warns or raises as eagerly; under the default it stays native.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import generate, load_artifact
from stax.ir import load_capture, load_opgraph, lower_capture
from stax.loop import LoopProgram, load_loopir, lower_opgraph

STATES = [dict(), dict(under="warn"), dict(all="raise"), dict(all="ignore"), dict(under="raise")]


def observe(fn, *args):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result, error = fn(*args), None
        except FloatingPointError as exc:
            result, error = None, str(exc)
    return result, error, [(str(w.message), w.lineno) for w in seen]


def assert_like_eager(compiled, fn, *args):
    want, got = observe(fn, *args), observe(compiled, *args)
    assert got[1:] == want[1:], f"(error, warnings): compiled {got[1:]}, eager {want[1:]}"
    assert type(got[0]) is type(want[0]) and np.array_equal(got[0], want[0]), (got[0], want[0])


def ticks(x, dt, n):
    t = dt
    for _ in range(n):
        t += dt
    return x * t


def ticks_rebound(x, dt, n):
    t = dt
    for _ in range(n):
        t = t + dt
    return x * t


def decayed(x, s):
    return x * np.exp(-s)


def series(x, n):
    term = np.float32(1.0)
    for k in range(1, n):
        term *= x / k
    return term


def divided_in_a_loop(x, dt, n):  # a lifted body's constant: the step's scalar input, keyed
    y = x.copy()
    for _ in range(n):
        y = y * 0.5 + 1.0 / dt
    return y


def squared_in_a_loop(x, dt, n):
    h = dt * 2
    y = x.copy()
    for _ in range(n):
        y = y * 0.5 + h * h
    return y


@pytest.mark.parametrize("fn, args", [
    (divided_in_a_loop, (np.ones(4), np.float64(0.0), 1200)),  # a probe's finds: 1200 warnings
    (divided_in_a_loop, (np.ones(4), np.float64(2.0), 1200)),  # (none were given, and no
    (squared_in_a_loop, (np.ones(4, np.float32), np.float32(1e20), 1200)),  # raise)
    (squared_in_a_loop, (np.ones(4, np.float32), np.float32(1e-30), 1200)),  # underflow
    (ticks, (np.ones(3), np.int16(1000), 100)),  # wraps twice: two scalar-add overflows
    (ticks, (np.ones(3), np.uint8(7), 40)),
    (ticks, (np.ones(3), np.int16(3), 100)),  # no overflow
    (ticks_rebound, (np.ones(3), np.float64(1e307), 100)),  # "in scalar add", not "in add"
    (decayed, (np.ones(3), 800.0)),
    (decayed, (np.ones(3), 1.0)),
    (series, (np.float32(0.5), 200)),
], ids=["loop-divide", "loop-quiet", "loop-over", "loop-under", "int16", "uint8", "int16-quiet",
        "float64", "exp-under", "exp-quiet", "series"])
def test_constants_report_as_eager(fn, args):
    compiled = stax.compile(fn)
    for state in STATES:
        for _ in range(2):  # the compiling call, then the version's
            with np.errstate(**state):
                assert_like_eager(compiled, fn, *args)


def test_a_scalar_operator_is_the_scalar_math_and_a_ufunc_call_the_ufunc():
    """``t + dt`` of NumPy scalars is scalar math (overflow reported); ``np.add(t, dt)`` is the
    ufunc (silent): both as eagerly, through the argument's stand-in."""
    def by_operator(x, dt):
        t = np.int16(32000)
        return x * (t + dt)

    def by_ufunc(x, dt):
        t = np.int16(32000)
        return x * np.add(t, dt)

    for fn, reported in ((by_operator, 1), (by_ufunc, 0)):
        compiled = stax.compile(fn)
        assert len(observe(fn, np.ones(2), np.int16(1000))[2]) == reported
        assert_like_eager(compiled, fn, np.ones(2), np.int16(1000))
        assert_like_eager(compiled, fn, np.ones(2), np.int16(1000))


def summed_by_c(x, dt):  # ``sum`` (C) applies the scalar's operator: scalar math eagerly
    return x * sum([dt, dt], np.int16(32000))


def added_by_operator_module(x, dt):
    import operator
    return x * operator.iadd(np.int16(32000), dt)


@pytest.mark.parametrize("fn", [summed_by_c, added_by_operator_module])
def test_operators_c_code_applies_are_the_scalar_math(fn):
    """A review's find: only the user's own operator was taken as one (by its instruction);
    now only a call of the ufunc itself is the ufunc."""
    compiled = stax.compile(fn)
    for state in STATES:
        for _ in range(2):
            with np.errstate(**state):
                assert_like_eager(compiled, fn, np.ones(2), np.int16(1000))


def test_an_underflowed_constant_stays_native_under_the_default_state():
    compiled = stax.compile(decayed)
    x = np.linspace(0, 1, 7)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x, 800.0), decayed(x, 800.0))
    (version,) = compiled.versions()
    assert version.native and compiled.cache_info().fallbacks == 0
    assert version.artifact.underflow_unseen
    with np.errstate(under="warn"), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled(x, 800.0)
    assert [str(w.message) for w in seen] == ["underflow encountered in exp"]
    assert compiled.cache_info().fallbacks == 1


def test_the_dumped_documents_declare_and_read_back_the_constant_underflow(tmp_path,
                                                                            monkeypatch):
    """Each layer's document carries it, and each layer continues from the one before."""
    monkeypatch.setenv("STAX_DUMP_DIR", str(tmp_path))
    compiled = stax.compile(decayed)
    compiled(np.ones(4), 800.0)
    compiled(np.ones(4), 1.0)  # another key: no underflow
    (stem, quiet_stem) = sorted({p.name.split(".")[1] for p in tmp_path.iterdir()})
    capture = load_capture(tmp_path / f"decayed.{stem}.capture.json")
    assert capture.info.get("constant_underflow") is True
    loop = lower_opgraph(lower_capture(capture))
    doc = load_loopir(tmp_path / f"decayed.{stem}.loopir.json").to_json()
    assert loop.to_json() == doc
    assert doc["schema"] == "stax.loopir/1.11" and doc["constant_underflow"] is True
    assert LoopProgram.from_json(doc).to_json() == doc and "a constant underflowed" in str(loop)
    assert generate(loop).underflow_unseen
    assert load_artifact(tmp_path / f"decayed.{stem}.kernels.json").underflow_unseen
    quiet = load_loopir(tmp_path / f"decayed.{quiet_stem}.loopir.json")
    assert not quiet.constant_underflow and "constant_underflow" not in quiet.to_json()
    assert not lower_opgraph(load_opgraph(tmp_path / f"decayed.{quiet_stem}.opgraph.json")
                             ).constant_underflow
