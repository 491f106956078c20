"""A compiled function returns what eager NumPy returns, type included: a NumPy scalar
(np.float64, np.float32, np.int64, np.bool_) stays that type, a Python float, int or bool stays
Python, a 0-d array stays an array, a NaN keeps its sign and payload — on the call that
compiles, on later calls, and from a capture loaded from the disk cache by another process
(STAX_CACHE_DIR).

Constants of a capture (its outputs, a NumPy scalar argument it was specialized on) travel as
JSON: np.float64 is a subclass of Python float, and was written as a plain number.

Run as a script, this file prints every case's eager and compiled results as JSON (the
subprocess half of the warm-cache test).
"""

import json
import math
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import stax.runtime as stax
from stax.ir import UnsupportedError
from stax.ir.serialize import decode_value, encode_value

NEG_NAN = struct.unpack(">d", bytes.fromhex("fff8000000000002"))[0]  # sign and payload set


def abs_of_scalar(x, s):
    return np.abs(s)


def abs_of_scalar_plus(x, s):
    return np.abs(s) + x.sum()


def float_times_true(x, s):
    return float(s) * np.True_


def float_of_max_times_true(x, s):
    return float(x.max()) * np.True_  # a data gate: such a capture is not stored


def clip_of_reduction(x, s):
    return np.clip(x.sum(), -1, 2)


def reductions(x, s):
    return x.sum(), x.astype(np.float32).max(), (x > 0.2).sum(), (x > 0.2).any()


def constants(x, s):
    return x.sum(), 2.0, 3, True, np.float32(2.5), np.int64(4), np.True_, np.float64(1.5)


def zero_d_arrays(x, s):
    return x.sum(keepdims=True).reshape(()), np.squeeze(x.max(keepdims=True)), x[0, 0, ...], x.sum() * 2


def nan_constants(x, s):
    return x.sum(), np.float64(np.nan), NEG_NAN, np.float32(NEG_NAN), np.float64(NEG_NAN)


def scaled_by_scalar(x, s):
    return x * s


NAN_ARG = np.float64(NEG_NAN)
GATED = {"float_of_max_times_true"}
CASES = {  # name: (function, the scalar argument)
    "abs_of_scalar": (abs_of_scalar, np.float64(-2.5)),
    "abs_of_float32_scalar": (abs_of_scalar, np.float32(-2.5)),
    "abs_of_int_scalar": (abs_of_scalar, np.int64(-3)),
    "abs_of_scalar_plus": (abs_of_scalar_plus, np.float64(-2.5)),
    "float_times_true": (float_times_true, np.float64(1.5)),
    "float_of_max_times_true": (float_of_max_times_true, 0.0),
    "clip_of_reduction": (clip_of_reduction, 0.0),
    "reductions": (reductions, 0.0),
    "constants": (constants, 0.0),
    "zero_d_arrays": (zero_d_arrays, 0.0),
    "nan_constants": (nan_constants, 0.0),
    "scaled_by_nan_scalar": (scaled_by_scalar, NAN_ARG),
    "scaled_by_float32_scalar": (scaled_by_scalar, np.float32(-0.0)),
}


def describe(value):
    """Type, dtype, shape and bits of a result (tuples item by item), as JSON."""
    if isinstance(value, tuple):
        return [describe(v) for v in value]
    if isinstance(value, (bool, int)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, float):
        return ["float", struct.pack(">d", value).hex()]
    a = np.asarray(value)
    return [type(value).__name__, a.dtype.str, list(a.shape), a.tobytes().hex()]


def run_cases():
    """Each case eagerly and compiled (twice); whether the capture came from the disk cache."""
    x = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    report = {}
    for name, (fn, s) in CASES.items():
        compiled = stax.compile(fn)
        got = [describe(compiled(x, s)) for _ in range(2)]
        version = compiled.versions()[0]
        report[name] = {"eager": describe(fn(x, s)), "compiled": got, "native": version.native,
                        "disk": "capture (disk cache)" in version.stats}
    return report


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_results_have_eager_types(name):
    fn, s = CASES[name]
    x = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    compiled = stax.compile(fn)
    want = describe(fn(x, s))
    assert describe(compiled(x, s)) == want
    assert describe(compiled(x, s)) == want
    assert compiled.versions()[0].native, compiled.versions()[0].reason


def _run_script(cache_dir):
    env = {**os.environ, "STAX_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_results_from_a_warm_disk_cache_have_eager_types(tmp_path):
    """Two processes, one cache directory: the second loads every capture from disk."""
    cold = _run_script(tmp_path)
    warm = _run_script(tmp_path)
    for name in CASES:
        for run, label in ((cold, "cold"), (warm, "warm")):
            case = run[name]
            assert case["native"], (label, name)
            assert case["compiled"] == [case["eager"]] * 2, (label, name, case)
        assert not cold[name]["disk"] and warm[name]["disk"] == (name not in GATED), name


@pytest.mark.parametrize("value", [np.float64(2.5), np.float32(-0.0), np.int64(-3), np.uint8(7),
                                   np.True_, np.float16(1.5), np.str_("ab"),
                                   np.float64(NEG_NAN), np.float32(NEG_NAN), NEG_NAN, 2.5,
                                   float("inf"), float("-inf"), -0.0, 3, True, "text"])
def test_constants_keep_type_and_bits_through_json(value):
    doc = json.loads(json.dumps(encode_value(value), allow_nan=False))
    back = decode_value(doc)
    assert type(back) is type(value)
    if isinstance(value, (float, np.floating)):
        assert np.asarray(back).tobytes() == np.asarray(value).tobytes()
    else:
        assert back == value


@pytest.mark.parametrize("value", [np.longdouble(1.5), np.datetime64("2020-01-01"), np.bytes_(b"ab")])
def test_scalars_json_cannot_hold_are_refused(value):
    with pytest.raises(UnsupportedError):
        encode_value(value)


def test_a_float_nan_decodes_from_documents_without_bits():
    """Documents written before NaN bits were kept still read (as the default NaN)."""
    assert math.isnan(decode_value({"float": "nan"}))


if __name__ == "__main__":
    print(json.dumps(run_cases()))


def test_nan_constants_of_either_sign_stay_apart():
    """CSE (and the kernel key) compare float constants by their bits: a -NaN fill is not the
    +NaN one."""
    negative_nan = -float("nan")

    def fills(x):
        return np.where(x > 0, x, np.nan), np.where(x > 0, x, negative_nan)
    x = np.array([-1.0, 2.0, -3.0])
    compiled = stax.compile(fills)
    for _ in range(2):  # the compiling call, then the cached version's
        for got, want in zip(compiled(x), fills(x)):
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
