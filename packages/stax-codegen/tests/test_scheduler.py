import numpy as np

from stax.codegen import generate, schedule
from stax.loop import lower_opgraph


def test_reductions_over_one_domain_share_a_kernel(build, run):
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    b = build(x=x)
    s1 = b("sum", b.inputs["x"], axis=(1,), keepdims=False, dtype="float32")
    s2 = b("sum", b("mul", b.inputs["x"], b.inputs["x"]), axis=(1,), keepdims=False,
           dtype="float32")
    got, artifact = run(b, s1, s2)
    assert len(artifact.kernels) == 1 and artifact.kernels[0].computes == ("buf0", "buf1")
    assert artifact.fusion[0]["fused"] and artifact.fusion[0]["bytes_saved"] == x.nbytes
    for g, want in zip(got, b.expected(s1, s2)):
        np.testing.assert_allclose(g, want, rtol=1e-5)


def test_refusals_are_recorded_with_reasons(build, run):
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    b = build(x=x)
    rows = b("sum", b.inputs["x"], axis=(1,), keepdims=False, dtype="float32")
    cols = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float32")
    program = lower_opgraph(b.program(rows, cols))
    groups, decisions = schedule(program)
    assert len(groups) == 2
    assert not decisions[0].fused and "different iteration spaces" in decisions[0].reason
    artifact = generate(program)
    assert "not fused (different iteration spaces" in str(artifact)


def test_row_fusion_runs_dependent_reductions_as_phases_of_one_row(build, run):
    """x - rowsum(x), then its row sum: one kernel, whose rows run the first reduction, then
    the second (which reads the first's result for the same row) — spec §7, a row kept in cache."""
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    b = build(x=x)
    s = b("sum", b.inputs["x"], axis=(1,), keepdims=True, dtype="float32")
    centered = b("sub", b.inputs["x"], s)
    total = b("sum", centered, axis=(1,), keepdims=False, dtype="float32")
    scaled = b("mul", centered, 2)
    got, artifact = run(b, s, total, scaled)
    assert len(artifact.kernels) == 1
    for g, want in zip(got, b.expected(s, total, scaled)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-4)


def test_no_fusion_across_a_longer_dependency_path(build, run):
    """x+1 -> extern slice -> sum -> (sum + (x+1)): the two pointwise buffers share a loop nest
    but the path through the extern and the reduction forbids fusing them (found by hypothesis)."""
    x = np.arange(5.0)
    b = build(x=x)
    y = b("add", b.inputs["x"], 1)
    head = b("extern", y, slice(None, 2), fn="operator.getitem", method=False, call_kwargs={})
    total = b("sum", head, axis=(0,), keepdims=False, dtype="float64")
    out = b("add", total, y)
    (got,), artifact = run(b, out)
    np.testing.assert_array_equal(got, b.expected(out)[0])
    assert any("cycle through" in d["reason"] for d in artifact.fusion)


def test_reductions_walking_one_buffer_differently_stay_apart(build, run):
    """x.sum(0) and x.sum(1) share x and a loop nest shape, but fused one of them would stride
    through memory: refused with its reason, each runs along memory."""
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    b = build(x=x)
    e = b("exp", b.inputs["x"])
    columns = b("sum", e, axis=(0,), keepdims=False, dtype="float32")
    rows = b("sum", e, axis=(1,), keepdims=False, dtype="float32")
    got, artifact = run(b, columns, rows)
    assert len(artifact.kernels) == 2
    assert any("along different loops" in d["reason"] for d in artifact.fusion)
    for g, want in zip(got, b.expected(columns, rows)):
        np.testing.assert_allclose(g, want, rtol=1e-5)
