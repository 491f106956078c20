"""Capture refuses to read a value two eager calls with equal arguments need not share (issue 10):
fresh entropy for a NumPy generator made without a seed, the clock, the OS's entropy. Each is
refused where it is read, by the user's code, naming it; reads by the standard library's own code,
and reads in other threads, go on as usual."""

import datetime
import logging
import os
import random
import threading
import time
from datetime import date

import numpy as np
import pytest

from stax.ir import UnsupportedError
from stax.trace import trace
from stax.trace.isolation import refusing_draws

X = np.arange(4.0)


def _refusal(fn):
    with pytest.raises(UnsupportedError) as caught:
        trace(fn, (X,))
    return str(caught.value)


def elapsed_helper():
    """A helper of the user's that reads the clock: its read is the user's."""
    return time.perf_counter()


@pytest.mark.parametrize("fn, name", [
    (lambda x: x * np.random.PCG64().random_raw(), "made without a seed"),
    (lambda x: x * np.random.Generator(np.random.Philox()).random(), "made without a seed"),
    (lambda x: x * np.random.SeedSequence().generate_state(1)[0], "made without a seed"),
    (lambda x: x * elapsed_helper(), "time.perf_counter()"),
    (lambda x: x * time.strftime("%S").count("1"), "time.strftime()"),
    (lambda x: x * time.localtime().tm_sec, "time.localtime()"),
    (lambda x: x * date.today().day, "datetime.date.today()"),
    (lambda x: x * datetime.datetime.utcnow().second, "datetime.datetime.utcnow()"),
    (lambda x: x * len(os.getrandom(2)), "os.getrandom()"),
], ids=["PCG64()", "Philox()", "SeedSequence()", "helper", "strftime", "localtime", "date.today",
        "utcnow", "getrandom"])
def test_a_value_that_changes_between_calls_is_refused_naming_it(fn, name):
    assert name in _refusal(fn)


def test_the_same_functions_with_a_fixed_argument_are_captured():
    trace(lambda x: x * time.strftime("%Y", time.gmtime(0)).count("9"), (X,))
    trace(lambda x: x * time.localtime(86400.0).tm_mday, (X,))
    trace(lambda x: x * np.random.Generator(np.random.PCG64(3)).random(), (X,))


def test_the_standard_librarys_own_reads_are_not_the_users():
    """logging stamps each record with time.time(): the function's values do not depend on it."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    log = logging.getLogger("stax-test-unrepeatable")
    log.addHandler(Keep())
    try:
        trace(lambda x: (log.warning("scaling"), x * 2.0)[1], (X,))
    finally:
        log.handlers.clear()
    assert [r.getMessage() for r in records] == ["scaling"]
    assert "time.time()" in _refusal(lambda x: x * time.time())


def test_a_refused_read_the_function_catches_still_fails_the_capture():
    def careful(x):
        try:
            stamp = time.time()
        except Exception:
            stamp = 0.0  # the capture would bake this in
        return x + stamp

    assert "time.time()" in _refusal(careful)


def test_a_standard_library_generator_is_named_for_what_happened():
    message = _refusal(lambda x: x * random.Random().random())
    assert "random.Random() or Random.seed() without a seed" in message
    assert "imported by name" not in message and __file__ in message  # the user's line
    assert "random.Random(seed)" in _refusal(lambda x: x * random.Random(4).random())


def test_other_threads_read_the_clock_and_entropy_while_a_capture_runs():
    got = []

    def other():
        got.extend([time.time(), os.urandom(2), np.random.Generator(np.random.PCG64()).random()])

    def f(x):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join(timeout=30)
        return x + 1

    trace(f, (X,))
    assert len(got) == 3


def test_the_clock_is_put_back_when_no_capture_runs():
    originals = (time.time, time.perf_counter, os.urandom, np.random.bit_generator.randbits)
    with refusing_draws():
        assert time.time is not originals[0]
    assert (time.time, time.perf_counter, os.urandom,
            np.random.bit_generator.randbits) == originals
