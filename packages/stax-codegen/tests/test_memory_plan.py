"""Memory the plan takes: blocks placed in one arena by their lives (``arena.py``), NumPy
products written into the plan's storage (``extern_results.py``), values a row kernel holds a
row at a time (``row_scratch.py``), row kernels over every row axis (``nesting.row_axes``) and
writing over an input they read only within the row — each checked against NumPy."""

import numpy as np
import pytest

from stax.codegen import Executable, generate
from stax.codegen.arena import ALIGN, place_blocks
from stax.codegen.cpu.costs import keep_in_memory
from stax.codegen.nesting import row_axes
from stax.codegen.program_plan import plan_program
from stax.loop import lower_opgraph


def _matmul(b, x, y):
    return b("extern", x, y, fn="operator.matmul", method=False, call_kwargs={})


def _softmax(b, x, axis):
    e = b("exp", b("sub", x, b("max", x, axis=(axis,), keepdims=True)))
    return b("truediv", e, b("sum", e, axis=(axis,), keepdims=True, dtype=str(x.tensor.dtype)))


@pytest.mark.parametrize("seed", range(20))
def test_blocks_live_at_one_step_never_share_a_byte(seed):
    rng = np.random.default_rng(seed)
    sizes = [int(n) for n in rng.integers(1, 5000, 12)]
    lives = {}
    for block in range(12):
        lives[block] = []
        for _ in range(rng.integers(1, 3)):
            first = int(rng.integers(0, 30))
            lives[block].append((first, first + int(rng.integers(0, 6))))
    offsets, nbytes = place_blocks(sizes, lives)
    assert nbytes <= sum(-(-n // ALIGN) * ALIGN for n in sizes)
    for a in lives:
        assert offsets[a] % ALIGN == 0 and offsets[a] + sizes[a] <= nbytes
        for b in lives:
            meet = any(f1 <= l2 and f2 <= l1 for f1, l1 in lives[a] for f2, l2 in lives[b])
            apart = offsets[a] + sizes[a] <= offsets[b] or offsets[b] + sizes[b] <= offsets[a]
            assert a == b or not meet or apart


def test_blocks_of_other_sizes_take_the_bytes_of_dead_ones(build, run):
    """A large value that dies early leaves its bytes to two smaller later ones (a block of
    the same size was the only reuse before): the arena is smaller than the blocks alone, and
    the results are NumPy's."""
    x = np.random.default_rng(0).standard_normal((64, 64))
    b = build(x=x)
    big = b("extern", b("exp", b.inputs["x"]), fn="numpy.cumsum", method=False,
            call_kwargs={"axis": 0})
    half = b("extern", b("sub", big, 1.0), slice(None, 32), fn="operator.getitem", method=False,
             call_kwargs={})
    small = b("extern", b("mul", half, 2.0), fn="numpy.cumsum", method=False,
              call_kwargs={"axis": 1})
    out = b("add", b("sum", small, axis=(0,), keepdims=False, dtype="float64"), 1.0)
    (got,), artifact = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0])
    st = artifact.storage
    assert st.offsets and st.arena_bytes < sum(st.sizes[k] for k in st.offsets)
    assert f"arena {st.arena_bytes} B" in str(artifact)


def test_a_product_writes_into_the_plans_storage(build):
    """A matrix product between kernels is a block of the plan, passed as ``out=``: the result is
    NumPy's own product bit for bit, and a kernel may write over it once it dies."""
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((48, 32)), rng.standard_normal((32, 40))
    b = build(a=a, w=w)
    product = _matmul(b, b("mul", b.inputs["a"], 2.0), b.inputs["w"])
    out = b("mul", product, 0.5)
    artifact = generate(lower_opgraph(b.program(out)))
    (extern,) = artifact.externs
    assert extern.buffer in artifact.storage.storage
    got, = Executable(artifact)(a, w)
    np.testing.assert_array_equal(got, ((a * 2.0) @ w) * 0.5)


def test_a_product_that_is_a_result_stays_numpys(build):
    rng = np.random.default_rng(2)
    a, w = rng.standard_normal((8, 5)), rng.standard_normal((5, 3))
    b = build(a=a, w=w)
    product = _matmul(b, b("mul", b.inputs["a"], 2.0), b.inputs["w"])
    artifact = generate(lower_opgraph(b.program(product)))
    assert artifact.externs[0].buffer not in artifact.storage.storage
    got, = Executable(artifact)(a, w)
    np.testing.assert_array_equal(got, (a * 2.0) @ w)


@pytest.mark.parametrize("shape", [(4, 6, 64), (2, 3, 5, 40), (1, 1, 300)])
def test_a_row_is_one_index_of_every_row_axis(build, shape):
    """A softmax over the last axis of a 3-D or 4-D array: its rows are the last axis's, so a
    phase reads back the row an earlier phase stored while it is in cache."""
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    b = build(x=x)
    out = _softmax(b, b.inputs["x"], len(shape) - 1)
    program = lower_opgraph(b.program(out), materialize=keep_in_memory)
    plan = plan_program(program, transient=True)
    (rows,) = [g for g in plan.groups if g.nest is not None and g.nest.kind == "rows"]
    assert row_axes(rows.nest) == len(shape) - 1
    got, = Executable(generate(program))(x)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=2e-6, atol=1e-7)


def test_a_phase_reading_another_row_keeps_rows_of_x0(build):
    """``x * s[:, None, :]`` with ``s = x.sum(-1)``: each element reads the row sum of another
    (x0, x1) row, so a row is x0's alone, as before."""
    x = np.random.default_rng(4).standard_normal((3, 6, 6))
    b = build(x=x)
    s = b("sum", b.inputs["x"], axis=(2,), keepdims=False, dtype="float64")
    spread = b("view", s, offset=0, strides=(6, 0, 1), shape=(3, 6, 6))
    out = b("mul", b.inputs["x"], spread)
    program = lower_opgraph(b.program(out))
    plan = plan_program(program, transient=True)
    kinds = [(g.nest.kind, row_axes(g.nest)) for g in plan.groups if g.nest is not None
             and g.nest.kind == "rows"]
    assert all(count == 1 for _, count in kinds)
    got, = Executable(generate(program))(x)
    np.testing.assert_allclose(got, b.expected(out)[0], rtol=1e-14)


def test_a_value_later_phases_read_is_held_one_row_at_a_time(build):
    """Softmax's backward: ``g = dp * p`` is read by the row's sum and by the result, both later
    phases of its row: held on the stack a row at a time (no buffer)."""
    rng = np.random.default_rng(5)
    p, dp = rng.random((6, 5, 96)), rng.standard_normal((6, 5, 96))
    b = build(p=p, dp=dp)
    dpn = b("exp", b.inputs["dp"])                       # costly: kept in memory, not recomputed
    g = b("mul", dpn, b.inputs["p"])
    total = b("sum", g, axis=(2,), keepdims=True, dtype="float64")
    out = b("sub", g, b("mul", b.inputs["p"], total))
    final = b("extern", out, fn="numpy.cumsum", method=False, call_kwargs={"axis": 0})
    program = lower_opgraph(b.program(final), materialize=keep_in_memory)
    plan = plan_program(program, transient=True)
    assert plan.row_scratch == {g.name: 96} or list(plan.row_scratch.values()) == [96]
    artifact = generate(program)
    assert all(name not in artifact.storage.storage for name in plan.row_scratch)
    got, = Executable(artifact)(p, dp)
    np.testing.assert_allclose(got, b.expected(final)[0], rtol=1e-13, atol=1e-13)


def test_an_input_a_later_phase_reads_is_not_written_over(build):
    """``y = exp(v - max(v))`` then ``sum(y * v)``: a phase after ``y``'s reads ``v`` again, so
    ``y`` may not take ``v``'s memory (the last phase's result may); the result is NumPy's."""
    x = np.random.default_rng(6).standard_normal((4, 3, 50))
    b = build(x=x)
    v = b("exp", b.inputs["x"])
    c = b("extern", v, fn="numpy.cumsum", method=False, call_kwargs={"axis": 2})
    y = b("exp", b("sub", v, b("max", v, axis=(2,), keepdims=True)))
    out = b("add", b("mul", y, b("sum", b("mul", y, v), axis=(2,), keepdims=True,
                                 dtype="float64")), c)
    final = b("extern", out, fn="numpy.cumsum", method=False, call_kwargs={"axis": 0})
    program = lower_opgraph(b.program(final, y), materialize=keep_in_memory)  # y stored
    artifact = generate(program)
    got = Executable(artifact)(x)
    for value, want in zip(got, b.expected(final, y)):
        np.testing.assert_allclose(value, want, rtol=1e-13)


def test_a_row_kernel_writes_over_an_input_it_reads_only_within_the_row(build):
    """``out = v * (c - sum(v * c, -1))``: ``v`` dies in the row kernel, read by its first phase
    within the row and by the last at the element written: ``out`` takes ``v``'s memory."""
    x = np.random.default_rng(7).standard_normal((5, 3, 70))
    b = build(x=x)
    v = b("exp", b.inputs["x"])
    c = b("extern", v, fn="numpy.cumsum", method=False, call_kwargs={"axis": 2})
    total = b("sum", b("mul", v, c), axis=(2,), keepdims=True, dtype="float64")
    out = b("mul", v, b("sub", c, total))
    final = b("extern", out, fn="numpy.cumsum", method=False, call_kwargs={"axis": 0})
    program = lower_opgraph(b.program(final), materialize=keep_in_memory)
    artifact = generate(program)
    (written, over), = artifact.storage.in_place.items()
    assert artifact.storage.storage[written] == artifact.storage.storage[over]
    got, = Executable(artifact)(x)
    np.testing.assert_allclose(got, b.expected(final)[0], rtol=1e-13)


@pytest.mark.parametrize("last", ["float64", "float32"])
def test_an_element_wise_kernel_writes_over_an_input_nodes_before_it_read(build, last):
    """``a = tanh(v) * c`` and ``b = sin(v) * c`` in one kernel, ``v`` dying there: ``b`` is
    computed after ``a``, which has read ``v`` at the element, so ``b`` takes ``v``'s memory;
    ``a`` may not (``b`` reads ``v`` after it). With ``b`` in float32, nothing does."""
    x = np.random.default_rng(9).standard_normal((40, 30))
    b = build(x=x)
    v = b("exp", b.inputs["x"])
    c = b("extern", v, fn="numpy.cumsum", method=False, call_kwargs={"axis": 0})
    first = b("mul", b("tanh", v), c)
    second = b("cast", b("mul", b("sin", v), c), dtype=last)
    program = lower_opgraph(b.program(first, second), materialize=keep_in_memory)
    artifact = generate(program)
    got = Executable(artifact)(x)
    for value, want in zip(got, b.expected(first, second)):
        np.testing.assert_allclose(value, want, rtol=1e-13 if last == "float64" else 1e-6)
    assert len(artifact.storage.in_place) == (last == "float64")


def test_a_large_product_the_program_returns_comes_from_the_block_pool(build):
    """A result of 8 MiB and more made by ``np.matmul``: written with ``out=`` into a block of
    the pool (its pages mapped by an earlier call), NumPy's product bit for bit."""
    from stax.codegen import default_block_pool

    rng = np.random.default_rng(3)
    a, w = rng.standard_normal((1024, 64)), rng.standard_normal((64, 1024))
    b = build(a=a, w=w)
    product = _matmul(b, b("mul", b.inputs["a"], 2.0), b.inputs["w"])
    run = Executable(generate(lower_opgraph(b.program(product))))
    pool = default_block_pool()
    first, = run(a, w)
    np.testing.assert_array_equal(first, (a * 2.0) @ w)
    assert not first.flags.owndata  # a view of a pool block
    del first
    reused = pool.reused
    second, = run(a, w)
    np.testing.assert_array_equal(second, (a * 2.0) @ w)
    assert pool.reused == reused + 1
