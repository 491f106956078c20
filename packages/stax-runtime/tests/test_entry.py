"""The machine-code entry: the call f(array, ...) on the previous call's layouts runs without the
interpreter; every other call goes to the Python dispatcher with its arguments untouched."""

import threading

import numpy as np
import pytest

import stax.runtime as stax


def has_entry(cf):
    return cf._call != cf._dispatch  # bound methods: compare, not identity


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("fn, shape, dtype", [
    (lambda x: x + 1, (1,), np.float32),
    (lambda x: x * 3 - 1, (7, 5), np.int64),
    (lambda x: (np.maximum(x, 0) * 2).sum(-1), (64, 128), np.float32),
    (softmax, (17, 33), np.float64),
    (lambda x: x.sum(), (1023,), np.float64),  # a 0-d result comes back as a NumPy scalar
    (lambda x: x.max(), (5,), np.float32),
])
def test_entry_results_are_numpys(fn, shape, dtype):
    rng = np.random.default_rng(0)
    cf = stax.compile(fn, strict_native=True)
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    first = cf(x)
    assert has_entry(cf)
    for _ in range(3):
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        got, want = cf(x), fn(x)
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    assert first is not got  # a new result per call
    assert cf.cache_info().hits[1] >= 3


def test_other_calls_go_to_the_dispatcher():
    cf = stax.compile(lambda x, y: x * 2 + y)  # not strict: a byte-swapped array runs eagerly
    x = np.arange(12.0).reshape(3, 4)
    y = np.ones(4)
    np.testing.assert_array_equal(cf(x, y), x * 2 + y)
    for args, kwargs in [((x.T.copy().T, y), {}),            # another layout (Fortran order)
                         ((x[:, ::2], y[:2]), {}),           # other shapes, a sliced view
                         ((x.astype(np.float32), y), {}),    # another dtype
                         ((x.astype(">f8"), y), {}),         # an equal-sized byte-swapped dtype
                         ((np.asmatrix(x), y), {}),          # a subclass
                         ((x,), {"y": y}),                   # a keyword
                         ((x, 2.5), {})]:                    # a Python scalar
        want = args[0] * 2 + (kwargs or {"y": args[1]})["y"]
        got = cf(*args, **kwargs)
        np.testing.assert_array_equal(got, want)
        assert type(got) is type(want)
    np.testing.assert_array_equal(cf(x, y), x * 2 + y)  # and back
    with pytest.raises(TypeError):
        cf(x)  # the function's own error, from the dispatcher
    with pytest.raises(TypeError):
        cf(x, y, y)


def test_a_gated_version_has_no_machine_code_entry():
    """Its gates, checked in its program, need the version's run (another branch's version
    where they fail): its key entry hands the call to that run."""
    def gated(x):
        return x + 1 if x.sum() > 0 else x - 1

    cf = stax.compile(gated)
    cf(np.ones(4))
    entry = cf.versions()[0].entry
    assert entry is None or getattr(entry, "dispatches", False)
    np.testing.assert_array_equal(cf(-np.ones(4)), gated(-np.ones(4)))


def bump(x):
    x += 1
    return x


def clamp(x):
    x[x < 0] = 0  # returns None


def clamp_and_sum(x, y):
    x[x < 0] = 0
    y *= 2.0
    return x.sum(), x, y


def test_arguments_updated_in_place_take_the_machine_code_entry():
    """The entry writes over the arguments once the call stands, after its checks and events
    (spec §7's in-place reuse), and returns the caller's own arrays where the function returns
    them, and None where it returns nothing: 9-17 us through the dispatcher, 0.4 us here."""
    import gc
    import sys

    cf = stax.compile(bump)
    x = np.ones(4)
    assert cf(x) is x
    entry = cf.versions()[0].entry
    assert has_entry(cf) and not getattr(entry, "dispatches", False)
    gc.collect()
    before, hits = sys.getrefcount(x), entry.hits
    for _ in range(20):
        assert cf(x) is x
    np.testing.assert_array_equal(x, np.full(4, 22.0))
    assert entry.hits == hits + 20
    gc.collect()
    assert sys.getrefcount(x) == before

    cf = stax.compile(clamp)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.standard_normal(1000).astype(np.float32)
        want = np.maximum(x, 0)
        assert cf(x) is None
        np.testing.assert_array_equal(x, want)
    assert cf.versions()[0].entry.hits == 3

    cf = stax.compile(clamp_and_sum)
    for _ in range(4):
        x, y = rng.standard_normal(500), rng.standard_normal(300).astype(np.float32)
        x2, y2 = x.copy(), y.copy()
        total, same_x, same_y = cf(x, y)
        want = clamp_and_sum(x2, y2)
        assert same_x is x and same_y is y and type(total) is type(want[0])
        np.testing.assert_allclose(total, want[0], rtol=1e-12)
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)
    assert cf.versions()[0].entry.hits == 3


def test_the_entry_hands_unsafe_updates_to_the_dispatcher():
    """A read-only argument, arguments sharing memory (``f(x, x)``, overlapping views) and a
    call whose floating-point events need settling go the dispatcher's way, which runs them as
    NumPy does; the entry never writes there."""
    def add_into(x, y):
        x += y
        return x

    cf = stax.compile(add_into)
    base = np.arange(12.0)
    x, y = base[:6].copy(), base[6:].copy()
    cf(x, y)
    entry = cf.versions()[0].entry
    hits = entry.hits
    frozen = np.arange(6.0)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        cf(frozen, y)
    np.testing.assert_array_equal(frozen, np.arange(6.0))
    both = np.arange(12.0)
    want = np.arange(12.0)
    add_into(want[:6], want[3:9])  # overlapping: NumPy's own buffering decides
    cf(both[:6], both[3:9])
    np.testing.assert_array_equal(both, want)
    twice, want = np.arange(6.0), np.arange(6.0)
    add_into(want, want)
    cf(twice, twice)
    np.testing.assert_array_equal(twice, want)
    assert entry.hits == hits  # all went the slow way
    ok = np.arange(6.0)
    cf(ok, np.ones(6))  # adjacent but apart: the entry's
    np.testing.assert_array_equal(ok, np.arange(1.0, 7.0))
    assert entry.hits == hits + 1

    def scale(x):
        x *= np.float32(1e30)
        return x

    cf = stax.compile(scale)
    x = np.ones(64, np.float32)
    cf(x)
    hits = cf.versions()[0].entry.hits
    big, want = np.full(64, 1e10, np.float32), np.full(64, 1e10, np.float32)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            scale(want)
        with pytest.raises(FloatingPointError):
            cf(big)
    np.testing.assert_array_equal(big, want)  # as NumPy left it: written, then raised
    big = np.full(64, 1e10, np.float32)
    with np.errstate(over="ignore"):
        cf(big)
    # an in-place multiply reports after it wrote, as NumPy's (``late_reports.py``): the
    # entry runs both calls itself and hands the overflow to NumPy to raise or ignore
    assert np.isinf(big).all() and cf.versions()[0].entry.hits == hits + 2
    cf(np.ones(64, np.float32))
    assert cf.versions()[0].entry.hits == hits + 3


def test_a_returned_view_of_an_update_has_no_entry():
    def tail(x):
        x -= x.mean()
        return x[1:]

    cf = stax.compile(tail)
    x = np.arange(5.0)
    got = cf(x)
    assert got.base is x
    assert cf.versions()[0].entry.dispatches  # the key entry: the dispatcher's write-back


def test_free_variables_are_read_by_the_entry():
    """A function reading arrays of its closure or globals gets an entry that reads them first
    and compares their layouts with the call's (it went through the dispatcher: 5 us a call, 25
    with a scalar argument); what they hold at each call is what the call computes with."""
    scale = np.array([2.0, 3.0, 4.0])

    def fn(x, k):
        return x * scale * k

    def rebind(new):
        nonlocal scale
        scale = new
    cf = stax.compile(fn)
    for k in (1.0, 2.0):
        cf(np.ones(3), k)
    assert has_entry(cf)
    for k in (3.0, -0.5):
        np.testing.assert_array_equal(cf(np.ones(3), k), fn(np.ones(3), k))
    scale[0] = 7.0
    np.testing.assert_array_equal(cf(np.ones(3), 2.5), fn(np.ones(3), 2.5))
    rebind(np.array([1.0, 2.0, 3.0], np.float32))  # another dtype: another version
    np.testing.assert_array_equal(cf(np.ones(3), 2.5), fn(np.ones(3), 2.5))
    rebind(np.arange(4.0))
    np.testing.assert_array_equal(cf(np.ones(4), 2.5), fn(np.ones(4), 2.5))


WEIGHTS = np.linspace(0, 1, 16)


def forced(x, t):
    return x * WEIGHTS + np.cos(t)  # a module attribute read too (np.cos): object lifting on


def test_free_variables_with_a_computed_scalar_take_the_entry():
    """A function whose code reads attributes (``np.cos``) lifts argument objects' arrays:
    its entries were refused with free arrays, every call through the dispatcher (20 us)."""
    cf = stax.compile(forced)
    x = np.ones(16)
    for t in (0.0, 0.1, 0.2, 0.3):
        np.testing.assert_allclose(cf(x, t), forced(x, t), rtol=1e-15)
    assert has_entry(cf) and cf.cache_info().hits[1] >= 1, cf.cache_info()


def test_calls_from_several_threads():
    cf = stax.compile(lambda x: x * x + 1, strict_native=True)
    xs = [np.full((16,), float(i)) for i in range(8)]
    cf(xs[0])
    errors = []

    def work(x):
        for _ in range(500):
            if not np.array_equal(cf(x), x * x + 1):
                errors.append(x[0])
    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("fn, extra_refs", [
    (lambda x: x, 1),                          # the argument itself is the result
    (lambda x: (x, x + 1), 1),                 # a flat tuple of results
    (lambda x: (x + 1,), 0),                   # a one-element tuple stays a tuple
    (lambda x: (x * 2, x.sum(), x, x), 2),     # a NumPy scalar; the argument twice
    (lambda x: (x + 1, (x, (x * 2, x.max()))), 1),  # nested tuples (built by the entry)
    (lambda x: ((x,), (x, x - 1)), 2),         # the argument in two inner tuples
])
def test_results_and_references(fn, extra_refs):
    import gc
    import sys

    x = np.arange(5.0)
    compiled = stax.compile(fn)
    compiled(x)
    assert has_entry(compiled)
    gc.collect()  # the compile's own references to the example are gone
    before = sys.getrefcount(x)
    for _ in range(200):
        result = compiled(x)
    del result
    gc.collect()
    result = compiled(x)
    assert sys.getrefcount(x) - before == extra_refs  # no reference lost or leaked
    want = fn(x)

    def same(got, expected):
        assert type(got) is type(expected)
        if isinstance(expected, tuple):
            assert len(got) == len(expected)
            for g, e in zip(got, expected):
                same(g, e)
        else:
            np.testing.assert_array_equal(got, expected)
    same(result, want)


def test_checked_programs_keep_the_entry_and_a_failed_check_runs_as_numpy():
    """A check (an index bound, a sin argument beyond the fast reduction) is read by the entry
    after the kernels: a set flag releases the entry's buffers and hands the call to the
    dispatcher, which runs it as NumPy (its result, or its IndexError)."""
    import gc
    import sys

    def gather(x, i):
        return np.sin(x[i]) * 2

    x, i = np.linspace(-3.0, 3.0, 9), np.array([1, 2, 8])
    cf = stax.compile(gather)
    cf(x, i)
    assert has_entry(cf)
    entry = cf.versions()[0].entry
    gc.collect()
    before, hits = sys.getrefcount(x), entry.hits
    for _ in range(50):
        np.testing.assert_allclose(cf(x, i), gather(x, i), rtol=1e-15)
    assert entry.hits == hits + 50
    with pytest.raises(IndexError):
        cf(x, np.array([1, 2, 9]))
    large = x.copy()
    large[2] = 1e300  # sin's argument beyond 2^23 pi/2: NumPy's own answer
    np.testing.assert_array_equal(cf(large, i), gather(large, i))
    assert entry.hits == hits + 50  # both went the slow way
    np.testing.assert_allclose(cf(x, i), gather(x, i), rtol=1e-15)
    gc.collect()
    assert sys.getrefcount(x) == before


_SCALAR_TWICE = """
import numpy as np, stax.runtime as stax
def f(x):
    v = -x
    s = v.argmax(axis=None)
    return (s, v, s, x, s)
cf = stax.compile(f, strict_native=True)
for seed in range(20):
    x = np.random.default_rng(seed).integers(-5, 5, (8, 9))
    got, want = cf(x), f(x)
    assert cf._call != cf._dispatch, "no machine-code entry"
    assert [type(g) for g in got] == [type(w) for w in want]
    assert all(np.array_equal(g, w) for g, w in zip(got, want)), (got, want)
    assert got[3] is x
print("ok")
"""


def test_a_scalar_result_returned_twice_keeps_its_references():
    """(s, v, s): the first NumPy-scalar conversion consumed the 0-d array's only reference, and the
    second one used the freed array (a segfault found by the stress suite). Under the debug
    allocator freed memory is poisoned, so the use after free crashes every time."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONMALLOC="debug", STAX_CACHE_DIR="off")
    done = subprocess.run([sys.executable, "-c", _SCALAR_TWICE], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def spring_forces(x, v):
    f = np.zeros_like(x)
    f[1:] -= 4.0 * (x[1:] - x[:-1])
    f[:-1] += 4.0 * (x[1:] - x[:-1])
    f[0] -= 4.0 * x[0]
    return v, f / 0.5


def test_plans_whose_buffers_share_storage_keep_the_entry():
    """Intermediates in one storage block get one allocation (kernels read only its data
    pointer); a result's block is the result's own array. Such plans had no entry: 28 us a call
    where NumPy takes 6."""
    import gc
    import sys
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    cf = stax.compile(spring_forces, strict_native=True)
    cf(x, v)
    storage = cf.versions()[0].artifact.storage
    assert any(storage.shared(b.name) for b in cf.versions()[0].artifact.buffers)
    assert has_entry(cf)
    gc.collect()
    before = sys.getrefcount(x), sys.getrefcount(v)
    results = []
    for _ in range(20):
        x = rng.standard_normal(16).astype(np.float32)
        got, want = cf(x, v), spring_forces(x, v)
        assert got[0] is v and got[1].dtype == want[1].dtype
        np.testing.assert_array_equal(got[1], want[1])
        results.append(got[1])
    assert len({id(r) for r in results}) == 20  # a new result each call
    assert cf.cache_info().hits[1] >= 20
    del got, want  # both tuples hold v
    gc.collect()
    assert sys.getrefcount(v) == before[1]


def _normalize(x):
    x /= np.linalg.norm(x)
    return x


def test_kernels_on_the_native_pool_keep_the_entry():
    """A kernel split over the native pool is launched from the machine-code entry too
    (``native_pool.launch``); a launch that finds another in flight (another thread's call
    through the dispatcher, which releases the GIL) runs its kernel on its own thread."""
    from stax.codegen.cpu.entry import Entry
    from stax.codegen.cpu.native_pool import native_pool

    if native_pool(2) is None:
        pytest.skip("no native pool on this platform")
    rng = np.random.default_rng(3)
    y = rng.standard_normal(1 << 21).astype(np.float32)
    cf = stax.compile(_normalize)
    cf(y.copy())
    version = cf.versions()[0]
    assert any(k.parallel for k in version.artifact.kernels)  # 2M divisions: split
    assert isinstance(version.entry, Entry)
    hits, errors = version.entry.hits, []
    # another function of the same code on reversed views: its launches (through the
    # dispatcher, the GIL released) meet the entry's on the one pool
    reversed_ = stax.compile(_normalize)
    reversed_(y.copy()[::-1])

    def work(k):
        mine, run = (y.copy(), cf) if k % 2 else (y.copy()[::-1], reversed_)
        for _ in range(8):
            want = mine.copy()
            _normalize(want)
            if run(mine) is not mine or not np.allclose(mine, want, rtol=1e-5):  # sum orders
                errors.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert version.entry.hits == hits + 16
    # a forked child has no workers (``native_pool.launch`` runs the kernel on its own thread
    # until a dispatched launch starts them)
    import multiprocessing

    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_normalized_in_child, args=(cf, y, answers))
    child.start()
    child.join(120)
    assert child.exitcode == 0 and answers.get(timeout=5) == (True, 3)


def _normalized_in_child(cf, y, answers):  # forked: ``cf`` is the parent's, inherited
    mine, want = y.copy(), y.copy()
    hits = cf.versions()[0].entry.hits
    ok = True
    for _ in range(3):
        _normalize(want)
        ok = ok and cf(mine) is mine and np.allclose(mine, want, rtol=1e-5)
    answers.put((bool(ok), cf.versions()[0].entry.hits - hits))


def test_python_values_among_the_results_keep_the_entry():
    """A Python value returned with the arrays (``return x + 1, 0.0``, a dtype, a label, a
    shape in a nested tuple) is the constant capture found, returned by the machine-code
    entry as the same object each call, one reference each (such calls went to the
    dispatcher: 3-4 us more)."""
    import gc
    import sys

    label = "stax-entry-constant-" + "x" * 8  # an object of its own, not an interned one
    fns = [lambda x: (x + 1, 0.0), lambda x: (x + 1, x.dtype),
           lambda x: (x * 2, (x.shape, label, None))]
    x = np.arange(5.0)
    for fn in fns:
        compiled = stax.compile(fn)
        compiled(x)
        assert has_entry(compiled)
        got, want = compiled(x), fn(x)
        assert repr(got) == repr(want)
    compiled = stax.compile(fns[2])
    compiled(x)
    held = compiled(x)[1][1]  # the constant (capture's copy of the label)
    gc.collect()
    before = sys.getrefcount(held)
    for _ in range(300):
        result = compiled(x)
    assert result[1][1] is held and held == label
    del result
    gc.collect()
    assert sys.getrefcount(held) == before
