"""Disk capture keys cover the state of every callable a function reads (issue 10 item 4).

A callable of NumPy or the standard library is keyed by its name only when it is exactly what that
name denotes; a partial, an itemgetter, a bound method carry state that the key must describe, or
the capture is not stored. The decisive test runs two fresh processes on one cache: the second,
with other bound values, must compute its own result, never the first one's capture.
"""

import functools
import json
import operator
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from stax.runtime.capture_cache import Uncacheable, capture_key

SCRIPT = textwrap.dedent("""
    import functools, json, operator, sys
    import numpy as np
    import stax.runtime as stax

    k, i = float(sys.argv[1]), int(sys.argv[2])
    scale = functools.partial(np.multiply, k)
    get = operator.itemgetter(i)
    total = operator.methodcaller("sum", axis=i)
    shape = operator.attrgetter("T" if i else "real")
    reduce = np.add.reduce if i == 0 else np.multiply.reduce

    def helper(x, factor):
        return x * factor

    bound = functools.partial(helper, factor=k)
    nested = functools.partial(functools.partial(np.add, k), k)  # add(k, k) + ...: k twice

    programs = {
        "partial": lambda x: scale(x) + 1,
        "itemgetter": lambda x: get(x) * 2,
        "methodcaller": lambda x: total(x) - 1,
        "attrgetter": lambda x: shape(x) + 0,
        "ufunc method": lambda x: reduce(x, axis=0),
        "partial of a helper": lambda x: bound(x) - 1,
        "partial of a partial": lambda x: x + nested(),
    }
    x = np.arange(1.0, 7.0).reshape(2, 3)
    out = {}
    for name, fn in programs.items():
        cf = stax.compile(fn)
        got = cf(x)
        want = fn(x)
        out[name] = {"ok": bool(np.array_equal(got, want)), "got": np.asarray(got).tolist(),
                     "want": np.asarray(want).tolist(),
                     "disk": "capture (disk cache)" in cf.versions()[0].stats}
    print(json.dumps(out))
""")


def _run(cache, k, i):
    env = {**os.environ, "STAX_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(k), str(i)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_a_new_process_with_other_bound_state_computes_its_own_result(tmp_path):
    first = _run(tmp_path, 2.0, 0)
    second = _run(tmp_path, 3.0, 1)   # same code, other k and i: a stale capture would show here
    third = _run(tmp_path, 3.0, 1)    # the same state again: served from the disk
    for name in first:
        assert first[name]["ok"] and not first[name]["disk"], (name, first[name])
        assert second[name]["ok"], (name, second[name])
        assert not second[name]["disk"], (name, "reused a capture made for other bound state")
        assert third[name]["ok"] and third[name]["disk"], (name, third[name])


def test_bound_state_is_in_the_key():
    def key(fn):
        return capture_key(fn, (), ["x"])

    def keys(make):
        return {key(make(v)) for v in (1, 2, 2)}

    def through(callable_):
        return lambda x: callable_(x)

    assert len(keys(lambda v: through(functools.partial(np.multiply, v)))) == 2
    assert len(keys(lambda v: through(functools.partial(np.multiply, k=v)))) == 2
    assert len(keys(lambda v: through(operator.itemgetter(v)))) == 2
    assert len(keys(lambda v: through(operator.attrgetter("T" if v == 1 else "real")))) == 2
    assert len(keys(lambda v: through(operator.methodcaller("sum", axis=v)))) == 2
    assert len(keys(lambda v: through(np.add.reduce if v == 1 else np.multiply.reduce))) == 2
    assert len(keys(lambda v: through(np.add if v == 1 else np.multiply))) == 2


class Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k

    def apply(self, x):
        return x * self.k


WEIGHTS = np.ones(3)


def reads_weights(x):
    return x * float(WEIGHTS.sum())


def test_what_has_state_the_key_cannot_see_is_uncacheable():
    rng = np.random.default_rng(0)
    stateful = [
        np.vectorize(lambda v: v + 1),      # holds a Python function the name does not cover
        Scaler(2.0).apply,                  # a bound method of a user instance
        rng.standard_normal,                # a bound method of a generator
        functools.partial(Scaler(2.0), 1),  # a partial over an instance
        functools.partial(np.multiply, np.ones(3)),  # an array bound into a partial
        np.random.normal,                   # a method of the global RandomState
    ]
    for value in stateful:
        with pytest.raises(Uncacheable):
            capture_key(lambda x, v=value: v(x), (), ["x"])
    with pytest.raises(Uncacheable, match="array"):
        capture_key(lambda x: reads_weights(x), (), ["x"])  # a helper's global array is not lifted


def test_functions_of_numpy_and_the_standard_library_are_keyed_by_name():
    described = capture_key(lambda x: np.sqrt(operator.neg(np.sum(x))), (), ["x"])
    assert described == capture_key(lambda x: np.sqrt(operator.neg(np.sum(x))), (), ["x"])

    def impostor(factor):
        def fn(x):  # claims to be numpy.sum, but is not what that name denotes
            return x * factor
        fn.__module__, fn.__qualname__ = "numpy", "sum"
        return fn

    def through(fn):
        return lambda x: fn(x)
    assert capture_key(through(impostor(3)), (), ["x"]) != capture_key(through(impostor(4)), (),
                                                                       ["x"])
