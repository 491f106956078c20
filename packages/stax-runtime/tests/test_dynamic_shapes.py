"""Dynamic shapes (issue 15): automatic dynamic compiles one size-generic version after the
first size change; it gives, at every size, what the exact version gives; the decisions it rests
on are shape guards; what it cannot make generic keeps exact versions, and says why."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import stax.runtime as st


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    v = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(v + 1e-5) * w + b


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def mlp(x, w1, b1, w2):
    h = x @ w1 + b1
    h = 0.5 * h * (1 + np.tanh(0.79788456 * (h + 0.044715 * h ** 3)))
    return h @ w2


RNG = np.random.default_rng(15)
WEIGHTS = {"w": RNG.standard_normal(48).astype(np.float32),
           "b": RNG.standard_normal(48).astype(np.float32),
           "w1": RNG.standard_normal((48, 96)).astype(np.float32) / 8,
           "b1": RNG.standard_normal(96).astype(np.float32),
           "w2": RNG.standard_normal((96, 8)).astype(np.float32) / 8}
PROGRAMS = {"softmax": (softmax, ()), "layer_norm": (layer_norm, ("w", "b")),
            "example_1_1": (example_1_1, ("x",)), "mlp": (mlp, ("w1", "b1", "w2"))}


def _arguments(name: str, rows: int, dtype=np.float32) -> tuple[np.ndarray, ...]:
    extra = PROGRAMS[name][1]
    x = RNG.standard_normal((rows, 48)).astype(dtype)
    x[0, :3] = [np.nan, np.inf, -0.0] if name != "mlp" else x[0, :3]
    return (x, *[RNG.standard_normal((rows, 48)).astype(dtype) if e == "x" else WEIGHTS[e]
                 for e in extra])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_stream_of_batch_sizes_compiles_twice_and_matches_numpy(name):
    fn = PROGRAMS[name][0]
    generic, exact = st.compile(fn), st.compile(fn, dynamic=False)
    sizes = [5, 300, 2, 17, 4096, 300, 63, 64, 65, 1000]
    for rows in sizes:
        args = _arguments(name, rows)
        got = generic(*args)
        # an exact version may take other speed decisions (a reduction's order: spec §13)
        np.testing.assert_allclose(got, exact(*args), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(got, fn(*args), rtol=2e-5, atol=2e-5)
    assert generic.cache_info().compiles == 2
    native = [v for v in generic.versions() if v.native]
    assert len(native) == 2


def test_the_generic_version_says_what_is_dynamic_and_its_guards(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")
    f = st.compile(example_1_1)
    f(*_arguments("example_1_1", 10))
    f(*_arguments("example_1_1", 20))
    err = caplog.text
    assert "size-generic version for dynamic inputs[0].shape[0], inputs[1].shape[0]" in err
    assert "s0 = inputs[0].shape[0]" in err and "shape guards:" in err
    # equal sizes are one symbol (duck sizing): a call must have them equal to use it
    assert "s1 =" not in err
    x, w = _arguments("example_1_1", 30)
    with pytest.raises(ValueError, match="broadcast"):
        f(x, w[:29])
    args = _arguments("example_1_1", 7)
    np.testing.assert_allclose(f(*args), example_1_1(*args), rtol=2e-6)
    assert f.cache_info().compiles == 2  # the failed call raised as NumPy does, in capture


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_batch_size_one_runs_the_generic_version(name):
    fn = PROGRAMS[name][0]
    f = st.compile(fn)
    for rows in (8, 9, 1, 10, 1):
        args = _arguments(name, rows)
        np.testing.assert_allclose(f(*args), fn(*args), rtol=2e-5, atol=2e-5)
    assert f.cache_info().compiles == 2  # 8, then the generic one (9, 1, 10)


def test_a_first_call_at_size_one_compiles_it_exact_then_generic():
    f = st.compile(softmax)
    for rows in (1, 2, 3, 1):
        x = _arguments("softmax", rows)[0]
        np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)
    assert f.cache_info().compiles == 2


def test_dynamic_false_keeps_one_version_per_size():
    f = st.compile(softmax, dynamic=False)
    for rows in (4, 5, 6):
        f(_arguments("softmax", rows)[0])
    assert f.cache_info().compiles == 3


def test_a_shape_read_in_python_keeps_exact_versions_and_says_why(caplog, monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")

    def scaled(x):
        return x * (1.0 / x.shape[0])  # the size becomes a constant of the code

    f = st.compile(scaled)
    for rows in (4, 5, 6):
        x = np.ones((rows, 3))
        np.testing.assert_array_equal(f(x), scaled(x))
    err = caplog.text
    assert "no size-generic version" in err and "reads its shape in Python" in err
    assert f.cache_info().compiles == 3


def test_a_data_gate_keeps_exact_versions():
    def branchy(x):
        return x * 2 if x.sum() > 0 else x - 1

    f = st.compile(branchy)
    for rows in (4, 5, 6, 7):
        x = RNG.standard_normal((rows, 3))
        np.testing.assert_array_equal(f(x), branchy(x))


def test_a_transposed_argument_has_its_own_generic_key():
    f = st.compile(softmax)
    for rows in (6, 7, 8):  # its row stride is the dynamic size: read by the kernel at entry
        x = RNG.standard_normal((48, rows)).astype(np.float32).T
        np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)
    assert f.cache_info().compiles == 2
    for rows in (6, 7, 8):
        x = _arguments("softmax", rows)[0]
        np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)
    assert f.cache_info().compiles == 4  # row-major: exact, then generic


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_dynamic_true_makes_every_dimension_generic_from_the_first_call(name, caplog,
                                                                        monkeypatch):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")
    fn = PROGRAMS[name][0]
    f = st.compile(fn, dynamic=True)
    for rows, width in ((4, 48), (9, 30), (1, 7), (33, 129)):
        x = RNG.standard_normal((rows, width)).astype(np.float32)
        if name == "example_1_1":
            args = (x, RNG.standard_normal((rows, width)).astype(np.float32))
        elif name == "layer_norm":
            args = (x, RNG.standard_normal(width).astype(np.float32),
                    RNG.standard_normal(width).astype(np.float32))
        elif name == "mlp":
            args = (x, RNG.standard_normal((width, 17)).astype(np.float32) / 8,
                    RNG.standard_normal(17).astype(np.float32),
                    RNG.standard_normal((17, 5)).astype(np.float32) / 8)
        else:
            args = (x,)
        np.testing.assert_allclose(f(*args), fn(*args), rtol=2e-5, atol=2e-5)
    assert "size-generic version for dynamic" in caplog.text
    # width 7 is under the traced 48: nothing decided from it but the index width
    assert f.cache_info().compiles == 1, caplog.text


def test_duck_sized_dimensions_that_differ_later_take_another_version():
    def sums(x, y):
        return x.sum(axis=1) * 2, y.sum(axis=1) + 1

    f = st.compile(sums)
    for rows_x, rows_y in ((4, 4), (5, 5), (6, 9), (7, 7), (3, 8)):
        x = RNG.standard_normal((rows_x, 5))
        y = RNG.standard_normal((rows_y, 5))
        for got, want in zip(f(x, y), sums(x, y)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_size_that_comes_back_runs_through_a_machine_code_entry():
    f = st.compile(softmax)
    for rows in (3, 4):
        f(_arguments("softmax", rows)[0])
    x = _arguments("softmax", 5)[0]
    for _ in range(5):
        np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)
    info = f.cache_info()
    assert info.compiles == 2 and info.hits[1] >= 3  # the entry of size 5 from its second call
    y = _arguments("softmax", 6)[0]  # another size: the entry hands it back to the dispatcher
    np.testing.assert_allclose(f(y), softmax(y), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)


def test_a_size_that_comes_back_on_the_thread_pool_runs_through_a_key_entry():
    """Kernels on the thread pool have no machine-code entry: a generic version's size that
    comes back gets a key entry of its own (an exact version's comparisons, then the run),
    not the dispatcher's signature and lookup each call."""
    f = st.compile(example_1_1)
    for rows in (4097, 4098):
        f(*_arguments("example_1_1", rows))
    x, w = _arguments("example_1_1", 4096)
    for _ in range(5):
        np.testing.assert_allclose(f(x, w), example_1_1(x, w), rtol=1e-5, atol=1e-5)
    generic = f.versions()[1]
    assert generic.generic is not None and f.cache_info().compiles == 2
    assert any(k.parallel for k in generic.artifact.kernels)
    assert generic.generic.entry_hits() >= 2  # once the size has come back
    y, v = _arguments("example_1_1", 4100)  # another size: handed back to the dispatcher
    np.testing.assert_allclose(f(y, v), example_1_1(y, v), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(f(x[::-1], w), example_1_1(x[::-1], w), rtol=1e-5, atol=1e-5)


def test_explain_prints_the_shape_guards_a_call_fails():
    f = st.compile(example_1_1)
    for rows in (10, 20):
        f(*_arguments("example_1_1", rows))
    generic = f.versions()[1]
    assert generic.generic is not None
    x, w = _arguments("example_1_1", 30)
    report = f.explain(x, w)[1]
    assert report.failures == []  # it would run: another size, the same version
    report = f.explain(x, w[:25])[1]
    condition, = [str(failure) for failure in report.failures]
    assert condition.startswith("shape guard inputs[1].shape == (s0, 48) where s0 = "
                                "inputs[0].shape[0]")
    assert "(got (25, 48))" in condition
    report = f.explain(x.astype(np.float64), w)[1]  # another dtype: the key's own path
    assert any("inputs[0][0]" in str(failure) for failure in report.failures)


def test_a_generic_compile_that_fails_compiles_the_exact_version(caplog, monkeypatch):
    """Whatever stops a size-generic compile (here the code generator failing on a size), the
    call compiles natively for its exact sizes: never an eager fallback."""
    from stax.codegen.cpu import emit

    def fails(self, n, typ=None):
        if isinstance(n, int):
            return emit.ir.Constant(typ or emit.I64, n)
        raise ValueError("no size for you")

    monkeypatch.setattr(emit.KernelEmitter, "size", fails)
    monkeypatch.setenv("STAX_CACHE_DIR", "off")  # no stored plan: the emitter runs
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    caplog.set_level(logging.INFO, logger="stax")
    f = st.compile(softmax, strict_native=True, dynamic=True)  # inner sizes: read by kernels
    for rows in (4, 5, 6):
        x = _arguments("softmax", rows)[0]
        np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)
    assert "no size-generic version" in caplog.text and "no size for you" in caplog.text
    assert all(v.native and v.generic is None for v in f.versions())


def test_spec_2_2_layouts_compile_once_each_and_then_hit():
    """Spec §2.2's two properties in dynamic mode: contiguous, transposed, broadcast and sliced
    layouts each compile once and every later size hits; square matrices of sizes 4, 6 and 8
    and their transposes give exactly two artifacts."""
    def affine(x):
        return x * 2.0 + 1.0

    f = st.compile(affine, dynamic=True)
    for n in (4, 6, 8):
        for x in (RNG.standard_normal((n, n)), RNG.standard_normal((n, n)).T):
            np.testing.assert_array_equal(f(x), affine(x))
    assert f.cache_info().compiles == 2
    assert sum(v.generic is not None for v in f.versions()) == 2

    layouts = {
        "contiguous": lambda n: RNG.standard_normal((n, n + 3)),
        "transposed": lambda n: RNG.standard_normal((n + 3, n)).T,
        "broadcast": lambda n: np.broadcast_to(RNG.standard_normal(n + 3), (n, n + 3)),
        "sliced": lambda n: RNG.standard_normal((n, 2 * (n + 3)))[:, ::2],
    }
    for name, make in layouts.items():
        g = st.compile(affine, dynamic=True)
        for n in (5, 7, 11, 2, 7):
            x = make(n)
            np.testing.assert_array_equal(g(x), affine(x))
        assert g.cache_info().compiles == 1, name


WARM = """
import sys, numpy as np, stax.runtime as st
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
f = st.compile(softmax)
for n in map(int, sys.argv[1:]):
    x = np.random.default_rng(n).standard_normal((n, 40)).astype(np.float32)
    np.testing.assert_allclose(f(x), softmax(x), rtol=2e-6, atol=1e-7)
v = f.versions()[-1]
print(v.generic is not None, sorted(v.stats), "compiles", f.cache_info().compiles)
"""


def test_a_warm_process_takes_the_generic_plan_from_the_disk_cache(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "STAX_CACHE_DIR": str(tmp_path / "cache")}
    run = lambda *sizes: subprocess.run(  # noqa: E731
        [sys.executable, "-c", WARM, *map(str, sizes)], env=env, check=True,
        capture_output=True, text=True).stdout
    cold = run(8, 9, 10)
    assert cold.startswith("True") and "plan (disk cache)" not in cold
    assert "compiles 2" in cold  # exact, then generic
    warm = run(3, 5, 7)  # other sizes: the generic plan is the same document
    assert warm.startswith("True") and "plan (disk cache)" in warm
    # the decision to go dynamic is remembered too: the warm process's first call is generic
    assert "compiles 1" in warm


def test_a_transpose_inside_the_function_is_generic():
    def column_sums(x):
        return (x.T * 2).sum(axis=0), x.T + 1

    f = st.compile(column_sums)
    for rows in (3, 4, 9, 2, 4):
        x = RNG.standard_normal((rows, 7))
        for got, want in zip(f(x), column_sums(x)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            assert got.shape == want.shape and got.flags.c_contiguous == want.flags.c_contiguous
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_size_one_view_of_a_wider_array_is_not_taken_for_a_contiguous_one(dynamic):
    """A probe's wrong result: ``X[:, :1]`` of a 2-column array (strides (16, 8)) had the
    generic key of a contiguous (n, 1) array, raised on its first calls and returned numbers
    read with the wrong row stride once its size had a machine-code entry."""
    def f(x):
        return x.max(-1, keepdims=True) + x

    def g(x):
        return x.sum(0)

    for fn in (f, g):
        cf = st.compile(fn, dynamic=dynamic)
        cf(RNG.standard_normal((4, 3)))
        cf(RNG.standard_normal((6, 5)))
        for x in ((np.arange(14.0) + 1).reshape(7, 2)[:, :1], np.ones((7, 1)),
                  np.ones((1, 7)), RNG.standard_normal((5, 3))[:, :1],
                  np.arange(40.0).reshape(4, 2, 5)[:, :1, :].reshape(4, 5)):
            for _ in range(4):  # through the dispatcher, then through a size's own entry
                # (a sum along a dynamic axis may round in another order than NumPy's: the
                # vector lanes of the host, 4 doubles with AVX2; a wrong stride is far off)
                np.testing.assert_allclose(cf(x), fn(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("fn", [lambda x: x.mean(), lambda x: x - x.mean(), lambda x: x.var(),
                                lambda x: x.std(ddof=1), lambda x: x.mean(axis=(0, 1))],
                         ids=["mean", "centered", "var", "std", "mean01"])
def test_whole_array_moments_are_generic(fn):
    """Their division by the count is a kernel of 0-d buffers: it reads the size from an
    input passed to it for that (a probe found them falling back to eager NumPy)."""
    f = st.compile(fn, strict_native=True)
    for rows in (4, 8, 5, 9, 11):
        x = RNG.standard_normal((rows, 6))
        np.testing.assert_allclose(f(x), fn(x), rtol=1e-12)
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None


def test_object_arrays_are_generic():
    class Layer:
        def __init__(self, n):
            self.w = np.arange(float(n))

        def forward(self, x):
            return x * self.w

    f = st.compile(Layer(8).forward, dynamic=True, strict_native=True)
    for rows in (4, 6, 3):
        x = RNG.standard_normal((rows, 8))
        np.testing.assert_array_equal(f(x), x * np.arange(8.0))
    assert f.cache_info().compiles == 1

    def scaled(layer, x):
        return x * layer.w

    g = st.compile(scaled, strict_native=True)
    for n in (4, 6, 3):
        x = RNG.standard_normal((2, n))
        np.testing.assert_array_equal(g(Layer(n), x), x * np.arange(float(n)))
    assert g.cache_info().compiles == 2


GUARDED = """
import sys, numpy as np, stax.runtime as st
def ln(x):
    return (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
f = st.compile(ln)
for n in map(int, sys.argv[1:]):
    x = np.random.default_rng(n).standard_normal((n, 3))
    np.testing.assert_allclose(f(x), ln(x), rtol=1e-12)
print([v.generic is not None for v in f.versions()])
"""


def test_a_stored_generic_plan_guarded_off_these_sizes_is_made_anew(tmp_path):
    """A probe's finding: another process's plan whose guards exclude the sizes traced here
    refused generic versions for the whole process; it is now compiled again for them."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "STAX_CACHE_DIR": str(tmp_path / "cache")}
    run = lambda *sizes: subprocess.run(  # noqa: E731
        [sys.executable, "-c", GUARDED, *map(str, sizes)], env=env, check=True,
        capture_output=True, text=True).stdout.strip()
    assert run(4, 5) == "[False, True]"
    # the stored decision makes the first call generic, and its plan (whose speed choices no
    # longer guard small sizes off: fusion and storage compare sizes as expressions) serves
    # every later size, 2 rows included
    assert run(9, 2, 4, 40, 64, 100) == "[True]"


def test_cache_info_while_threads_call_a_generic_version():
    import threading

    f = st.compile(lambda x: (x * 2.0).sum(1))
    f(np.ones((4, 3)))
    f(np.ones((5, 3)))
    errors = []

    def calls(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                x = np.ones((int(rng.integers(2, 200)), 3))
                np.testing.assert_array_equal(f(x), np.full(x.shape[0], 6.0))
                f(x)
        except Exception as exc:
            errors.append(exc)

    def infos():
        try:
            for _ in range(3000):
                f.cache_info()
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=calls, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=infos))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_generator_argument_beside_a_dynamic_array():
    """The stress programs' finding: a generic version's inputs include the object a NumPy
    step draws from (a ``Generator``), which has no shape."""
    def prog(x, rng):
        return np.abs(x)

    def draws(x, rng):
        return x + rng.standard_normal(x.shape[1])

    f, g = st.compile(prog), st.compile(draws)
    for shape in ((3, 4), (5, 7), (2, 4), (5, 7)):
        x = RNG.standard_normal(shape)
        np.testing.assert_array_equal(f(x, np.random.default_rng(0)), np.abs(x))
        np.testing.assert_array_equal(g(x, np.random.default_rng(1)),
                                      draws(x, np.random.default_rng(1)))


def test_the_order_of_steps_is_chosen_at_the_hints_without_a_guard():
    """The storage plan orders independent steps by the memory they add, a choice of memory,
    not of results: compared at the traced sizes, it guarded ``8*s0 != 64`` and sent 8 rows
    (and 7) to versions of their own."""
    fn = lambda x: np.subtract.outer(x[:, 0], x[:, 1])  # noqa: E731
    f = st.compile(fn, strict_native=True)
    for rows in (9, 13, 7, 8, 22, 30, 3):
        x = RNG.standard_normal((rows, 8))
        np.testing.assert_allclose(f(x), fn(x), rtol=1e-12, atol=1e-12)
    assert f.cache_info().compiles == 2


def test_an_arg_reduction_stays_size_generic():
    """``e.argmax()`` of a dynamic length: the split of a long arg reduction is decided on the
    traced size only in exact versions (its ``int()`` of the size made every length a new
    version, then eager past the limit)."""
    def scaled_and_argmax(e):
        return e * 2, e.argmax(), e.argmin()

    f = st.compile(scaled_and_argmax)
    for n in (1000, 1001, 5, 77, 30000, 1002):
        e = RNG.standard_normal(n)
        e[n // 3] = 9.0
        got, want = f(e), scaled_and_argmax(e)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and got[2] == want[2]
    assert f.cache_info().compiles == 2


def test_a_generic_kernel_traced_at_a_few_elements_is_built_for_any_size():
    """A size-generic version whose first calls had a few elements was built as their kernel
    would be: optimized for size (``minsize``, for at most 16 elements) and without the
    interleave of heavy loops (for fewer than 256): float32 ``np.abs(x) ** 3.25`` then ran
    100,000 elements in 2.95 ms (one scalar ``pow`` call each) for NumPy's 0.10. A symbolic
    count is not its traced hint."""
    def f(x):
        return np.abs(x) ** 3.25

    g = st.compile(f)
    for n in (5, 7, 9):
        x = np.linspace(-2, 2, n).astype(np.float32)
        np.testing.assert_allclose(g(x), f(x), rtol=3e-7, atol=0)
    version = g.versions()[-1]
    assert version.generic is not None
    ir_text = version.artifact.llvm_ir
    assert "minsize" not in ir_text and "optsize" not in ir_text
    assert '"llvm.loop.interleave.count", i32 4' in ir_text
    x = np.linspace(-2, 2, 100_000).astype(np.float32)
    np.testing.assert_allclose(g(x), f(x), rtol=3e-7, atol=0)


def test_a_loop_over_an_arrays_rows_keeps_its_count_in_a_generic_version():
    """A probe's find: ``for row in A`` unrolled at the traced row count was reused by the
    size-generic version for every larger count (a row count of 10 gave 4; a sum of rows
    summed the first four). Iterating the rows reads the length, as ``len(A)`` does: each
    count is its own version."""
    def count_rows(A):
        s = 0
        for row in A:  # noqa: B007 (the count of rows)
            s += 1
        return s

    def column_sums(A):
        acc = np.zeros(A.shape[1])
        for row in A:
            acc = acc + row
        return acc

    def total(x):
        s = 0.0
        for v in x:
            s = s + v
        return s

    for fn, shapes in ((count_rows, [(3, 2), (4, 2), (10, 2), (2, 2)]),
                       (column_sums, [(3, 2), (4, 2), (10, 2), (2, 2)]),
                       (total, [(3,), (4,), (10,)])):
        g = st.compile(fn)
        for shape in shapes:
            a = np.arange(np.prod(shape), dtype=float).reshape(shape)
            got, want = g(a), fn(a)
            assert type(got) is type(want)
            np.testing.assert_array_equal(got, want)


def test_a_generic_version_run_eagerly_keeps_an_entry_per_layout():
    """A probe's find: once a size-generic version was measured slower than NumPy, each call
    at a size other than its first made its key's eager entry anew (the entry compared the
    version's own sizes), compiling its source every call: ``x.T @ x`` 46 us a call for
    NumPy's 1. The skipped call's own signature keys the entry, kept on the version."""
    def gram(x):
        return x.T @ x

    g = st.compile(gram)
    rng = np.random.default_rng(0)
    for n in (5, 7, 9):
        x = rng.standard_normal((n, 4))
        np.testing.assert_array_equal(g(x), gram(x))
    for version in g.versions():
        version.slower = True  # as replay_costs decides where NumPy measured faster
    x = rng.standard_normal((37, 4))
    for _ in range(3):
        np.testing.assert_array_equal(g(x), gram(x))
    dispatched = g.cache_info().hits[3]
    for _ in range(20):
        np.testing.assert_array_equal(g(x), gram(x))
    assert g.cache_info().hits[3] == dispatched
    assert any(v.eager_entries for v in g.versions())


def _solved(A, b):
    return np.linalg.solve(A, b * 2.0) + 1.0


def _inverted(A):
    return np.linalg.inv(A * 2.0) @ A + np.linalg.det(A)


def _transposed_solve(A, B):
    return np.linalg.solve(A.T, B) * 0.5


@pytest.mark.parametrize("fn, make", [
    (_solved, lambda r, n: (r.standard_normal((n, n)) + 3 * np.eye(n), r.standard_normal(n))),
    (_inverted, lambda r, n: (r.standard_normal((n, n)) + 3 * np.eye(n),)),
    (_transposed_solve, lambda r, n: (r.standard_normal((n, n)) + 3 * np.eye(n),
                                      r.standard_normal((n, 3)))),
])
def test_linear_algebra_steps_over_sizes_compile_twice(fn, make):
    """``np.linalg.solve``, ``inv`` and ``det`` of one matrix have size rules: a solver called
    with a new size at each call compiled a version per size, then ran eagerly."""
    f = st.compile(fn)
    rng = np.random.default_rng(0)
    for n in (4, 5, 6, 7, 9, 12, 4, 7):
        args = make(rng, n)
        np.testing.assert_array_equal(f(*args), fn(*args))
    assert f.cache_info().compiles == 2 and f.versions()[1].generic is not None
    singular = (np.ones((6, 6)),) + make(rng, 6)[1:]
    with pytest.raises(np.linalg.LinAlgError):
        f(*singular)


def _legendre(x, deg):
    P = np.empty((x.shape[0], deg + 1), dtype=x.dtype)
    P[:, 0] = 1
    P[:, 1] = x
    for k in range(2, deg + 1):
        P[:, k] = ((2 * k - 1) * x * P[:, k - 1] - (k - 1) * P[:, k - 2]) / k
    return P


SHIFT = 1.5


def _shifted(x, deg):
    out = x * 1.0
    for _k in range(deg):
        out = out * 0.5 + SHIFT
    return out


def test_a_generic_version_reading_globals_keeps_an_entry_per_size():
    """``range`` is a global the function reads (a free value, guarded): the size-generic
    version of a function with a loop and an int argument got no entry per size, so every call
    at a size of its went through the dispatcher at eager NumPy's cost (21 us for 0.7; a
    probe). Its entries check the guard: a global rebound since is seen."""
    global SHIFT
    f = st.compile(_legendre)
    x = np.linspace(-1, 1, 1000)
    for n in (1000, 3, 500, 3, 7, 500, 3):
        np.testing.assert_array_equal(f(x[:n], 8), _legendre(x[:n], 8))
    before = f.cache_info().hits
    for _ in range(5):
        np.testing.assert_array_equal(f(x[:3], 8), _legendre(x[:3], 8))
    after = f.cache_info().hits
    assert after[1] - before[1] == 5 and after[3] == before[3]
    g = st.compile(_shifted)
    for n in (100, 50, 30, 50, 30):
        np.testing.assert_array_equal(g(x[:n], 6), _shifted(x[:n], 6))
    try:
        SHIFT = -2.0
        for n in (50, 30, 71):
            np.testing.assert_array_equal(g(x[:n], 6), _shifted(x[:n], 6))
    finally:
        SHIFT = 1.5


def _zip_rows(M, weights, offsets):
    out = np.zeros(M.shape, dtype=np.float64)
    for i, (row, w, o) in enumerate(zip(M, weights, offsets)):
        out[i] = (row - o) * w
        out[i][out[i] < 0] = 0.0
    return out


def test_a_size_made_exact_while_lowering_names_the_users_line(caplog, monkeypatch):
    """A size decision Stax's own lowering takes (a region's division by a size) is reported at
    the line of the user's operation being lowered, with Stax's own line after it (it named
    ``updates.py:267`` alone)."""
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    compiled = st.compile(_zip_rows)
    rng = np.random.default_rng(1)
    with caplog.at_level(logging.INFO, logger="stax"):
        for n in (5, 9, 17):
            M = rng.integers(-5, 5, (3, n)).astype(np.int32)
            w, o = rng.random(3), rng.integers(-2, 2, 3)
            np.testing.assert_array_equal(compiled(M, w, o), _zip_rows(M, w, o))
    exact = [line for line in caplog.text.splitlines() if "sizes made exact by" in line]
    assert exact, caplog.text
    line = _zip_rows.__code__.co_firstlineno
    assert all(f"{__file__}:" in m and "(lowered at " in m for m in exact), exact
    assert any(f":{line + k} " in m for m in exact for k in range(1, 6)), exact
