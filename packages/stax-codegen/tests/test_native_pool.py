"""The native thread pool (``cpu/native_pool.py``): chunks over any range give the one-thread result,
launches from several Python threads take turns, a forked child starts its own workers, and
``STAX_THREADS=python`` keeps the Python pool."""

import multiprocessing
import threading

import numpy as np
import pytest

from stax.codegen import Executable, generate
from stax.codegen.cpu import native_pool as native
from stax.codegen.cpu.jit import kernel_function
from stax.loop import lower_opgraph

pytestmark = pytest.mark.skipif(native.native_pool(2) is None,
                                reason="no native pool on this platform")


def exp_kernel(build, n):
    x = np.random.default_rng(n).standard_normal(n)
    b = build(x=x)
    ex = Executable(generate(lower_opgraph(b.program(b("exp", b.inputs["x"])))))
    kernel = next(k for k in ex.artifact.kernels if k.outer_range == n)
    return ex, kernel, x


def events():
    """The kernel's last argument: its floating-point events (``cpu/fpevents.py``)."""
    return np.zeros(1, np.int32)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 1 << 20])
def test_chunks_cover_the_range_once(build, n):
    ex, kernel, x = exp_kernel(build, n)
    pool = native.native_pool(2)
    got, want = np.full_like(x, np.nan), np.empty_like(x)
    pool.parallel_for(ex.module.address(kernel.name), (x, got, events()), n)
    kernel_function(ex.module, kernel.name, 3)(x, want, events(), 0, n)
    np.testing.assert_array_equal(got, want)


def test_launches_from_several_threads_take_turns(build):
    ex, kernel, x = exp_kernel(build, 1 << 16)
    pool, address = native.native_pool(2), ex.module.address(kernel.name)
    want, errors = np.exp(x), []

    def work():
        for _ in range(50):
            out = np.empty_like(x)
            pool.parallel_for(address, (x, out, events()), x.size)
            if not np.allclose(out, want, rtol=1e-15):
                errors.append("wrong")
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _child(queue):
    x = np.linspace(-3, 3, 1 << 18)
    from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, TensorMeta, tree_flatten
    graph = Graph("op")
    p = graph.placeholder("x", {"tensor": TensorMeta.of(x)})
    y = graph.call_function("exp", (p,), {}, meta={"tensor": TensorMeta.of(x)})
    graph.output((y,))
    _, tree = tree_flatten(((x,), {}))
    program = GraphProgram(OPGRAPH_SCHEMA, "t", graph, ["x"], tree, tree_flatten((y,))[1])
    ex = Executable(generate(lower_opgraph(program)))
    kernel = ex.artifact.kernels[0]
    out = np.empty_like(x)
    native.native_pool(2).parallel_for(ex.module.address(kernel.name),
                                       (x, out, np.zeros(1, np.int32)), x.size)
    queue.put(bool(np.allclose(out, np.exp(x))))


def test_a_forked_child_starts_its_own_workers(build):
    ex, kernel, x = exp_kernel(build, 1 << 16)
    native.native_pool(2).parallel_for(ex.module.address(kernel.name),
                                       (x, np.empty_like(x), events()), x.size)  # workers exist
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and queue.get(timeout=5)


def test_python_pool_when_asked(monkeypatch):
    monkeypatch.setenv("STAX_THREADS", "python")
    assert not native.native_available()
    monkeypatch.delenv("STAX_THREADS")
    assert native.native_available()


def test_a_launch_before_numpy_leaves_the_workers_resting(build):
    """``rest``: a launch followed by a NumPy step (a BLAS call on its own threads) leaves the
    ``resting`` word set, so idle workers sleep rather than spin; the next launch clears it and
    still uses every worker."""
    import ctypes

    ex, kernel, x = exp_kernel(build, 1 << 16)
    pool, address = native.native_pool(2), ex.module.address(kernel.name)
    resting = ctypes.c_int32.from_address(pool._module.global_address("resting"))
    out = np.empty_like(x)
    pool.parallel_for(address, (x, out, events()), x.size, True)
    assert resting.value == 1
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-15)
    for _ in range(20):  # workers asleep: woken by each launch, results whole
        out = np.full_like(x, np.nan)
        pool.parallel_for(address, (x, out, events()), x.size)
        assert resting.value == 0
        np.testing.assert_allclose(out, np.exp(x), rtol=1e-15)
        pool.parallel_for(address, (x, out, events()), x.size, True)
