"""A lifted loop's count from a scalar argument (``for k in range(nsteps)``) is a run-time input:
one version serves every count that lifts the loop (``stax.trace.loop_ranges``), each call
running its own number of items; counts too small to lift, loops whose target is read after
them, other steps and traced starts key the count as before. Results against eager NumPy."""

import numpy as np
import pytest

import stax.runtime as stax


def euler(y, dt, nsteps):
    for _ in range(nsteps):
        y = y + dt * (0.1 - 0.5 * y + 0.01 * y * y * y)  # exact arithmetic: NumPy's bits
    return y


def indexed(x, n):  # the item as an index: its arithmetic checked on every count allowed
    out = np.zeros_like(x)
    for i in range(1, n):
        out[i % 7] += x[i % 5] * 0.5 + out[(i - 1) % 7]
    return out


def reads_target_after(y, n):
    for i in range(n):  # noqa: B007 (read after the loop)
        y = y * 0.999 + 0.001
    return y + i  # the last item: the count is keyed


def stepped(y, n):
    for _ in range(0, n, 2):
        y = y * 0.999 + 0.001
    return y


CASES = [
    (euler, lambda n: (np.random.default_rng(n).standard_normal(100), 0.01, n),
     [2000, 2001, 3500, 2002]),
    (indexed, lambda n: (np.random.default_rng(n).standard_normal(16), n), [900, 1000, 1400]),
]


@pytest.mark.parametrize("fn, make, counts", CASES, ids=[c[0].__name__ for c in CASES])
def test_one_version_for_every_count(fn, make, counts):
    compiled = stax.compile(fn)
    for n in counts:
        got, want = compiled(*make(n)), fn(*make(n))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # the first count's own version, then one for every count
    assert compiled.cache_info().versions == 2
    assert compiled.cache_info().fallbacks == 0


def test_counts_too_small_to_lift_are_keyed():
    compiled = stax.compile(euler)
    for n in (2000, 2001, 3, 0, 1, -5, 2002, 2):
        args = (np.random.default_rng(abs(n)).standard_normal(100), 0.01, n)
        np.testing.assert_array_equal(compiled(*args), euler(*args))
    # 2000; the generic one; 3, 0, 1, -5, 2 unroll (their counts keyed); 2002 is the generic's
    assert compiled.cache_info().versions == 7


def heat(u, r, nsteps):
    for _ in range(nsteps):
        u = u + r * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


@pytest.mark.parametrize("count", [int, np.int64, np.int32])
def test_small_counts_that_keep_changing_lift_the_loop(count):
    """Counts from 1 up (a sweep): each too few items to lift unrolled into a version of its
    own, and the 8-version limit then ran every later count eagerly. With two versions left
    under the limit the loop lifts with the count a run-time input: one version for every
    further count; the counts before keep their unrolled versions, which the generic one's
    key entry leaves to them. A NumPy integer count (``np.ceil(t / dt).astype(int)``) too:
    it reached the limit, every later count eager."""
    compiled = stax.compile(heat)
    u = np.random.default_rng(0).random(256)
    for n in map(count, [*range(1, 13), 100, 3, 1000, 5, 5]):
        got, want = compiled(u, 0.1, n), heat(u, 0.1, n)
        np.testing.assert_array_equal(got, want)
    info = compiled.cache_info()
    assert info.versions == 7 and info.fallbacks == 0
    assert all(v.native for v in compiled.versions())
    generic = compiled._versions[6]
    assert generic.generic is not None and generic.entry is not None
    hits = compiled._versions[4].entry.hits  # count 5's unrolled version
    compiled(u, 0.1, count(5))
    assert compiled._versions[4].entry.hits == hits + 1 or compiled._versions[4].entry is None


def test_a_few_counts_in_turn_keep_their_unrolled_versions():
    compiled = stax.compile(heat)
    u = np.random.default_rng(1).random(256)
    for n in [3, 7, 100] * 4:
        np.testing.assert_array_equal(compiled(u, 0.1, n), heat(u, 0.1, n))
    assert compiled.cache_info().versions == 3
    assert all(v.generic is None for v in compiled._versions)


@pytest.mark.parametrize("fn", [reads_target_after, stepped])
def test_a_count_the_function_reads_is_keyed(fn):
    compiled = stax.compile(fn)
    for n in (3000, 3001, 3002):
        y = np.random.default_rng(n).standard_normal(10)
        np.testing.assert_array_equal(compiled(y.copy(), n), fn(y.copy(), n))
    assert compiled.cache_info().versions == 3


def test_a_count_as_a_keyword_and_an_int_subclass():
    compiled = stax.compile(euler)
    y = np.random.default_rng(0).standard_normal(50)
    for n in (1500, 1600, np.int64(1700), True):
        np.testing.assert_array_equal(compiled(y, 0.02, nsteps=n), euler(y, 0.02, n))


START = 2 ** 24 + 1


def float32_times_item(x, n):  # a weak Python int against a strong int64: checked per item
    for i in range(START, n):
        x = x + np.float32(0.1) * (x * 0 + 1) * i
    return x


def past_exact_ints(out, n):  # exact in Python, an int64 division past 2^53 is not
    for i in range(1000, n):
        out[0] = (i * 2 ** 29 + 1) / 3
    return out


def test_the_item_arithmetic_is_checked_on_every_item_a_count_allows():
    """The body's item arithmetic is checked on the items any allowed count gives (from the
    start, 2^24 of them), not on those of this capture's count."""
    compiled = stax.compile(float32_times_item)
    x = np.zeros(4, np.float32)
    for n in (START + 2000, START + 2001):
        got, want = compiled(x, n), float32_times_item(x, n)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got, want)
    compiled = stax.compile(past_exact_ints)
    for n in (4000, 4001, 1000 + 2 ** 24):
        np.testing.assert_array_equal(compiled(np.zeros(1), n), past_exact_ints(np.zeros(1), n))


def reads_target_through_the_frame(y, n):
    import sys
    for i in range(n):  # noqa: B007 (read after the loop, through the frame)
        y = y * 0.999 + 0.001
    return y + sys._getframe().f_locals["i"]


def reads_target_through_an_alias(y, n):
    peek = locals
    for i in range(n):  # noqa: B007 (read after the loop, through locals)
        y = y * 0.999 + 0.001
    return y + peek()["i"]


@pytest.mark.parametrize("fn", [reads_target_through_the_frame, reads_target_through_an_alias])
def test_a_target_read_through_the_frame_keys_the_count(fn):
    """``sys._getframe().f_locals``, ``L = locals``: any local may be read, the loop's target
    after the loop too, so its count is keyed (it gave the capture's last item)."""
    compiled = stax.compile(fn)
    for n in (2000, 2001, 3500):
        y = np.zeros(2)
        np.testing.assert_array_equal(compiled(y, n), fn(y, n))


def nested_sums(a, n, m):
    s = np.zeros_like(a)
    for i in range(n):
        for j in range(m):
            s += a * (i - j)
    return s


def test_a_generic_nest_serves_every_inner_count():
    """The inner count changes: the generic version lifts the outer loop, whose items each bind
    the inner target ``j`` first (read nowhere after the loops: scratch), so one version serves
    every ``m``. (It once left ``j`` at ``m - 1``, another value for every other ``m``
    (``Unstable``): each call ran the loop to find that out, then ran eagerly, 8x NumPy.)"""
    compiled = stax.compile(nested_sums)
    a = np.random.default_rng(0).standard_normal(64)
    for m in [*range(1, 13), 20, 30]:
        assert compiled(a, 3, m).tobytes() == nested_sums(a, 3, m).tobytes()
    assert [v for v in compiled._versions if v.generic is not None]
    assert compiled.cache_info().fallbacks == 0
    before = compiled.cache_info().fallbacks
    for m in (40, 50, 60):
        assert compiled(a, 3, m).tobytes() == nested_sums(a, 3, m).tobytes()
    assert compiled.cache_info().fallbacks - before <= 3


def relax(x, k, dt, nsteps):
    for _ in range(nsteps):
        x = x + dt * (-k * x)
    return x


def test_a_count_the_loop_unrolls_beside_a_rate_that_changes():
    """Counts 50 and 100 in turn (each unrolled, so keyed), the rate ``k`` new at each call: a
    generic key with the count refused, each later count's miss tried it again and compiled an
    exact version (8 versions in 12 calls, then eager). The count a capture decided on is left
    out of later patterns: one version generic in the rate per count."""
    compiled = stax.compile(relax)
    x = np.random.default_rng(0).standard_normal(64)
    for i in range(12):
        k, n = 1.0 + 0.1 * i, (50, 100)[i % 2]
        np.testing.assert_array_equal(compiled(x, k, 0.01, n), relax(x, k, 0.01, n))
    info = compiled.cache_info()
    assert info.versions <= 4 and info.fallbacks == 0
    assert sum(v.generic is not None for v in compiled.versions()) == 2


def test_a_numpy_scalar_key_is_shown_as_the_number(monkeypatch, caplog):
    """``STAX_LOGS=recompiles`` named a NumPy integer by its key's bytes
    (``('int64', '<i8', b'\\x01...')``)."""
    import logging

    def scaled(x, k):
        return x * int(k)  # k read in Python: keyed by value

    monkeypatch.setenv("STAX_LOGS", "recompiles")
    compiled = stax.compile(scaled)
    x = np.arange(3.0)
    with caplog.at_level(logging.INFO, logger="stax"):
        compiled(x, np.int64(1))
        compiled(x, np.int64(2))
    assert "np.int64(1) (got np.int64(2))" in caplog.text


def test_a_buffer_argument_whose_format_is_no_dtype():
    """A ``memoryview`` key leaf has a NumPy scalar's form (its format, its bytes): a
    structured format (``T{d:a:}``) is no dtype, and reading it as one raised TypeError from
    the first call (the key entry's scalar test, the count-change test)."""
    def halve(x, n, buffer):
        for i in range(n):
            x = x * 0.5 + i
        return x

    compiled = stax.compile(halve)
    x = np.arange(4.0)
    for n in range(2, 12):
        record = np.zeros(1, dtype=[("a", "f8")])
        record["a"] = n
        view = memoryview(record)
        np.testing.assert_array_equal(compiled(x, n, view), halve(x, n, view))
