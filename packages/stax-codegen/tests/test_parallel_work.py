"""The work from which a kernel is split over the thread pool (``cpu/parallel_work.py``):
measured once per machine and recorded, never measured on a busy machine or without a place to
record it, overridden by ``STAX_PARALLEL_WORK``; it reaches the plan (``KernelPlan.parallel``),
the target's cache key and the plan's header."""

import numpy as np
import pytest

from stax.codegen import CodegenOptions, generate
from stax.codegen.cpu import parallel_work
from stax.codegen.cpu.native_pool import native_available
from stax.codegen.cpu.target import cpu_target, describe_host, parallel_choice

US = 1e-6


def test_the_threshold_is_where_the_pool_starts_winning_for_good():
    units = parallel_work.probe_units()
    # one thread / pool seconds per probe size: the pool wins from 2**14 elements on
    best = {1 << 10: [1 * US, 3 * US], 1 << 12: [4 * US, 5 * US], 1 << 14: [15 * US, 9 * US],
            1 << 16: [60 * US, 31 * US], 1 << 18: [240 * US, 121 * US]}
    record = parallel_work.decide(best)
    assert record["work"] & (record["work"] - 1) == 0  # a power of two, the nearest
    assert (1 << 14) * units / 1.5 < record["work"] < (1 << 14) * units * 1.5
    assert "16384: 15.0/9.0 us" in record["why"]
    # a win at one size that a larger one takes back is noise: from the larger on
    best[1 << 16] = [60 * US, 58 * US]
    assert parallel_work.decide(best)["work"] > (1 << 18) * units / 1.5
    # never 15% faster: nothing is split below NEVER
    never = {size: [t, t * 0.9] for size, (t, _) in best.items()}
    assert parallel_work.decide(never)["work"] == parallel_work.NEVER


def test_what_decides_without_a_measurement(monkeypatch, tmp_path):
    monkeypatch.setenv(parallel_work.ENVIRONMENT, "4096")
    assert parallel_work.threshold(tmp_path) == (4096, "STAX_PARALLEL_WORK=4096")
    monkeypatch.setenv(parallel_work.ENVIRONMENT, "never")
    assert parallel_work.threshold(tmp_path)[0] == parallel_work.NEVER
    monkeypatch.delenv(parallel_work.ENVIRONMENT)
    if native_available():
        assert parallel_work.threshold(None) == \
            (parallel_work.DEFAULT_WORK, "the default: no cache directory to record a "
                                         "measurement in")
    assert not (tmp_path / "host").exists()


@pytest.mark.skipif(not native_available(), reason="no native pool here")
def test_a_measurement_is_recorded_once_and_a_busy_machine_is_not_measured(monkeypatch,
                                                                             tmp_path):
    monkeypatch.delenv(parallel_work.ENVIRONMENT, raising=False)
    monkeypatch.setattr(parallel_work.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(parallel_work, "busy", lambda threads: "3% of the CPU time idle")
    work, why = parallel_work.threshold(tmp_path)
    assert work == parallel_work.DEFAULT_WORK and "busy (3% of the CPU time idle" in why
    assert not list((tmp_path / "host").rglob("*.json"))  # measured another time
    runs = []

    def measured(threads):
        runs.append(threads)
        return {"work": 1 << 23, "why": "measured (made up)"}, True

    monkeypatch.setattr(parallel_work, "_measure", measured)
    assert parallel_work.threshold(tmp_path) == (1 << 23, "measured (made up)")
    assert parallel_work.threshold(tmp_path) == (1 << 23, "measured (made up) (recorded)")
    assert runs == [2]
    (record,) = (tmp_path / "host").rglob("*.json")
    record.write_bytes(b'{"work": "many"}')  # not a record: discarded, measured again
    assert parallel_work.threshold(tmp_path) == (1 << 23, "measured (made up)")
    assert runs == [2, 2]


@pytest.mark.skipif(not native_available(), reason="no native pool here")
def test_the_probe_runs_on_both_ways():
    """The real probe: its kernel runs on the calling thread and on the pool and computes the
    same values both ways (a decision from wrong code would be worthless)."""
    x = np.linspace(-1, 1, 1 << 12, dtype=np.float32)
    y_alone, y_split = np.empty_like(x), np.empty_like(x)
    record, _ = parallel_work._measure(2) if parallel_work.busy(2) is None else \
        ({"work": parallel_work.DEFAULT_WORK, "why": "busy"}, False)
    assert record["work"] >= 1 and record["why"]
    _alive, serial, address = parallel_work._probe_kernel()
    serial(x, y_alone, 0, x.size)
    pool = parallel_work.native_pool(2)
    if pool is not None:
        pool.parallel_for(address, (x, y_split), x.size)
        np.testing.assert_array_equal(y_alone, y_split)
    h = x * np.float32(1 / 16)
    for _ in range(parallel_work._DEGREE):
        h = h * x + np.float32(1)
    np.testing.assert_allclose(y_alone, h + x, rtol=1e-6)


def _program(n):
    """``exp(x * x)`` over ``n`` float32 elements, as the loop layer lowers it."""
    from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, TensorMeta, tree_flatten
    from stax.loop import lower_opgraph

    x = np.ones(n, dtype=np.float32)
    g = Graph("op")
    node = g.placeholder("x", {"tensor": TensorMeta.of(x)})
    square = g.call_function("mul", (node, node), {}, meta={"tensor": TensorMeta.of(x)})
    out = g.call_function("exp", (square,), {}, meta={"tensor": TensorMeta.of(x)})
    g.output((out,))
    return lower_opgraph(GraphProgram(OPGRAPH_SCHEMA, "p", g, ["x"], tree_flatten(((x,), {}))[1],
                                      tree_flatten((out,))[1]))


def test_the_threshold_decides_the_split_and_is_said():
    program = _program(1 << 16)
    split = generate(program, CodegenOptions(parallel_threshold=1))
    alone = generate(program, CodegenOptions(parallel_threshold=1 << 40))
    assert [k.parallel for k in split.kernels] == [True]
    assert [k.parallel for k in alone.kernels] == [False]
    assert "kernels of 1 cost units and more split over the thread pool" in str(split)
    target = cpu_target()
    default = generate(program)
    assert default.target["parallel_work"] == target.parallel_work == parallel_choice()[0]
    assert f"parallel {target.parallel_work}" in target.cache_key
    assert "split over the thread pool" in describe_host()


def _stream(n, op="mul", dtype=np.float32):
    """``x op x`` over ``n`` elements: one operation per element, a stream of memory."""
    from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, TensorMeta, tree_flatten
    from stax.loop import lower_opgraph

    x = np.ones(n, dtype=dtype)
    g = Graph("op")
    node = g.placeholder("x", {"tensor": TensorMeta.of(x)})
    out = g.call_function(op, (node, node), {}, meta={"tensor": TensorMeta.of(x)})
    g.output((out,))
    return lower_opgraph(GraphProgram(OPGRAPH_SCHEMA, "p", g, ["x"], tree_flatten(((x,), {}))[1],
                                      tree_flatten((out,))[1]))


def test_loads_are_not_work_and_a_long_stream_is_split_by_its_bytes():
    """A kernel's loads along its loops are memory, not work (``costs.work``): a stream in the
    caller's cache stays on it, however many elements it loads; from ``SPLIT_BYTES`` moved it
    is split (two threads stream beyond a core's caches faster), and by work as before."""
    from stax.codegen.generate import SPLIT_BYTES, worth_splitting
    from stax.loop import Binary, Load
    from stax.loop.index import Affine

    x = Load("x", Affine((1,), 0), "float64")
    assert cpu_target().element_cost(Binary("sub", x, x, "float64")) == 2  # the subtraction
    threshold = 1 << 20
    options = CodegenOptions(parallel_threshold=threshold)
    small = SPLIT_BYTES // 8 - 1  # float32 in and out: just under SPLIT_BYTES, little work
    assert [k.parallel for k in generate(_stream(small), options).kernels] == [False]
    assert [k.parallel for k in generate(_stream(small + 1), options).kernels] == [True]
    assert [k.parallel for k in generate(_program(small // 2), options).kernels] == [True]  # exp
    assert not worth_splitting(threshold - 1, SPLIT_BYTES - 1, threshold)
    assert worth_splitting(threshold, 0, threshold)
    assert worth_splitting(0, SPLIT_BYTES, threshold)
    assert not worth_splitting(0, SPLIT_BYTES, parallel_work.NEVER)  # "never": nothing split
