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


def _chain(build, n):
    """``n`` element-wise steps, each reading the one before and the input (a recurrence an
    unrolled Python loop records): one group grows by a node per fusion."""
    x = np.random.default_rng(0).standard_normal(8)
    b = build(x=x)
    mean, m2 = b.inputs["x"], b.inputs["x"]
    for k in range(1, n + 1):  # Welford's update: each value read by several later steps
        d = b("sub", b.inputs["x"], mean)
        mean = b("add", mean, b("truediv", d, float(k)))
        m2 = b("add", m2, b("mul", d, b("sub", b.inputs["x"], mean)))
    # every value in memory (the target's policy keeps values read several times there; an
    # inlined recurrence doubles its expression at each step)
    return lower_opgraph(b.program(mean, m2), materialize=lambda *_: True)


def test_pair_tests_do_not_walk_a_grown_group(build, monkeypatch):
    """Fusing an unrolled loop of 800 operations into one group spent 2 s in pair tests, each
    walking every node of both groups (``_nest`` per node, per pair): quadratic in the
    program. A group keeps what the tests read of its nodes (``Group.indexed``), so the
    walks grow about linearly: twice the steps, 2.6 times the calls (were 3.6)."""
    import stax.codegen.scheduler as scheduler

    calls = [0]
    nest = scheduler._nest

    def counted(node):
        calls[0] += 1
        return nest(node)
    monkeypatch.setattr(scheduler, "_nest", counted)
    counts = []
    for n in (30, 60):
        program = _chain(build, n)
        calls[0] = 0
        groups, _ = schedule(program)
        assert max(len(g.nodes) for g in groups) >= 2 * n  # the steps grew one group
        counts.append(calls[0])
    assert counts[1] <= 3 * counts[0], counts  # (quadratic: 3.6x; pairs grow a little faster)
