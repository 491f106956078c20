"""A result that is also summed is computed and summed in one pass: the loop layer gives it the
split reduction's (chunks, chunk) loops (``stax.loop.split_producers``) and the scheduler makes
the two phases of one row kernel, each chunk summed while it is in cache."""

import numpy as np

from stax.codegen import Executable, generate
from stax.codegen.cpu.costs import keep_in_memory
from stax.loop import lower_opgraph


def test_a_stored_result_and_its_sum_share_one_kernel(build):
    x = np.random.default_rng(0).standard_normal(200_000).astype(np.float32)
    b = build(x=x)
    y = b("mul", b("sqrt", b("abs", b.inputs["x"])), 2.0)
    total = b("sum", y, axis=(0,), keepdims=False, dtype="float32")
    artifact = generate(lower_opgraph(b.program(y, total), materialize=keep_in_memory))
    first = artifact.kernels[0]
    assert first.nest.kind == "rows" and len(first.nest.phases) == 2 and len(first.computes) == 2
    got_y, got_total = Executable(artifact)(x)
    want_y, want_total = b.expected(y, total)
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_allclose(got_total, want_total, rtol=1e-5)


def test_a_float_to_int_cast_and_its_range_check_share_one_pass(build):
    """``x.astype(np.int32)`` checks every value fits (NaN or out of range: the call runs as
    NumPy); the check (a split reduction) and the cast (its sibling, reading the same elements)
    run as phases of one row kernel: ``x`` read from memory once."""
    x = (np.random.default_rng(1).standard_normal(400_000) * 1000).astype(np.float32)
    b = build(x=x)
    y = b("cast", b.inputs["x"], dtype="int32")
    artifact = generate(lower_opgraph(b.program(y), materialize=keep_in_memory))
    reading = [k for k in artifact.kernels if "x" in k.args]
    assert len(reading) == 1 and len(reading[0].computes) == 2, artifact
    (got,) = Executable(artifact)(x)
    np.testing.assert_array_equal(got, x.astype(np.int32))
