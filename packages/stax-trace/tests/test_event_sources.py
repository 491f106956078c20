"""Which recorded operation names each floating-point event category (``event_sources.py``):
the tables against NumPy itself, and the attribution on small programs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stax.trace import trace
from stax.trace.event_sources import INTEGER_RAISES, RAISES, SILENT_UFUNCS

NAMES = {"divide by zero": "divide", "overflow": "over", "invalid value": "invalid"}


def special(dtype):
    info = np.finfo(dtype)
    with np.errstate(all="ignore"):
        return np.array([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, info.max, -info.max, info.max / 2,
                         np.inf, -np.inf, np.nan, info.tiny / 4, info.tiny, 89.0, 710.0, -710.0,
                         1e30, -1e30, 1000.0, -1000.0, 1e-30, 1e300, -1e300], dtype)


def raised(ufunc, dtype):
    """The categories (underflow aside) NumPy raises computing ``ufunc`` on every special value
    or pair of them."""
    values = special(dtype) if np.dtype(dtype).kind == "f" else \
        np.array([0, 1, -1, 2, np.iinfo(dtype).min, np.iinfo(dtype).max], dtype)
    seen = set()
    for combo in itertools.product(values, repeat=ufunc.nin):
        with np.errstate(all="call", call=lambda kind, flag: seen.add(kind)):
            ufunc(*[np.array([v], dtype) for v in combo])
    return {NAMES[k] for k in seen if k in NAMES}


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_silent_ufuncs_raise_nothing(dtype):
    for name in sorted(SILENT_UFUNCS):
        ufunc = getattr(np, name)
        if np.dtype(dtype).char * ufunc.nin + "->" in "".join(ufunc.types):
            assert not raised(ufunc, dtype), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_ufunc_raises_no_category_its_entry_leaves_out(dtype):
    for name, categories in sorted(RAISES.items()):
        assert raised(getattr(np, name), dtype) <= set(categories), name


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_ufuncs(dtype):
    for name, categories in sorted(INTEGER_RAISES.items()):
        assert raised(getattr(np, name), dtype) <= set(categories), name
    for name in ("add", "subtract", "multiply"):  # wrap silently: not listed
        assert not raised(getattr(np, name), dtype)


def sources(fn, *args):
    return trace(fn, args).info.get("event_sources", {})


def test_attribution():
    x = np.ones(4)
    found = sources(lambda a, d: np.where(d != 0, a / d, 0.0), x, x)
    assert {k: v[0] for k, v in found.items()} == dict.fromkeys(("divide", "over", "invalid"),
                                                                  "divide")
    # invalid: log's or the product's; divide only log's; overflow only the product's
    found = sources(lambda a, w: np.where(a > 0, np.log(a), 0.0) * w, x, x)
    assert {k: v[0] for k, v in found.items()} == {"divide": "log", "over": "multiply"}
    assert found["divide"][3] < found["over"][3]  # the order eager ran them in


def test_operations_named_in_no_ufunc_words_attribute_nothing():
    x = np.ones(4)
    assert sources(lambda a: np.sqrt(a).sum(), x) == {}  # a reduction reports "in reduce"
    assert sources(lambda a: a.astype(np.float32) / 2, x) == {}  # a narrowing cast
    assert sources(lambda a: a ** 3, x) == {}  # power: the kernels' events are wider
    assert sources(lambda a: a.sum() / a, x) == {}  # a NumPy scalar's arithmetic


def test_a_function_under_its_own_error_state_attributes_nothing():
    def quiet(a):
        with np.errstate(divide="ignore"):
            return np.log(a)

    def deep(a):
        return quiet(a) + 1.0
    captured = trace(deep, (np.ones(4),))
    assert captured.info.get("sets_errstate") and "event_sources" not in captured.info
    assert captured.info.get("heeds_underflow") is not True  # (its code tells: "unclear")


@pytest.mark.parametrize("block", [{"under": "raise"}, {"all": "warn"}, {"under": "call"}])
def test_a_block_heeding_underflow_is_noted(block):
    """The caller's default state ignores underflow, which kernels do not always report: a
    block of the function's own that heeds it is noted for the runtime (``heeds_underflow``),
    however deep, and whatever it sets underflow to."""
    def inner(a):
        with np.errstate(**block):
            return a * 2.0

    captured = trace(lambda a: inner(a) + 1.0, (np.ones(4),))
    assert captured.info.get("sets_errstate") and captured.info.get("heeds_underflow")
