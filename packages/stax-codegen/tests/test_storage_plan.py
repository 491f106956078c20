"""Step order and storage (spec §7.5): buffers with disjoint lives share a block, an element-wise
kernel writes over an input that dies there, NumPy views keep their operand's block alive — and
every plan computes what the op graph computes."""

import numpy as np

from stax.codegen.scheduler import Group
from stax.codegen.storage_plan import StoragePlan, order_steps
from stax.loop import lower_opgraph


def cumsum(b, node):
    return b("extern", node, fn="numpy.cumsum", method=False, call_kwargs={"axis": 0})


def x86():
    return np.random.default_rng(3).standard_normal((8, 6))


def test_intermediates_with_disjoint_lives_share_a_block(build, run):
    b = build(x=x86())
    y1 = b("mul", b.inputs["x"], 2.0)          # read by the first cumsum only
    e1 = cumsum(b, y1)
    y2 = b("add", e1, 1.0)                     # made after y1 died (cumsum makes new memory)
    e2 = cumsum(b, y2)
    out = b("mul", e2, 3.0)
    (got,), artifact = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0])
    st = artifact.storage
    assert st.storage["buf0"] == st.storage["buf2"] == st.storage["buf4"]
    assert st.peak_bytes < st.unshared_bytes
    assert "storage block" in str(artifact)


def test_an_elementwise_kernel_writes_over_an_input_that_dies_there(build, run):
    b = build(x=x86())
    y = b("mul", b.inputs["x"], 2.0)           # kernel 1
    e = cumsum(b, y)                           # NumPy between the two kernels
    z = b("add", b("exp", y), e)               # kernel 2: y's last reader, at the same index
    w = cumsum(b, z)
    (got,), artifact = run(b, w)
    np.testing.assert_allclose(got, b.expected(w)[0])
    st = artifact.storage
    (out, over), = st.in_place.items()
    assert st.storage[out] == st.storage[over]


def test_a_numpy_view_keeps_its_operands_block_alive(build, run):
    b = build(x=x86())
    y1 = b("mul", b.inputs["x"], 2.0)
    view = b("extern", y1, slice(None), fn="operator.getitem", method=False, call_kwargs={})
    total = b("extern", view, fn="numpy.sum", method=False, call_kwargs={})
    y2 = b("add", b("mul", b.inputs["x"], 3.0), total)   # same size as y1, made after the view
    out = b("add", view, y2)
    (got,), artifact = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0])
    st = artifact.storage
    assert len(set(st.storage.values())) == len(st.storage)  # nothing shared with y1's block


def test_storage_round_trips_through_the_document(build, run):
    from stax.codegen import KernelArtifact

    b = build(x=x86())
    y1 = b("mul", b.inputs["x"], 2.0)
    out = b("mul", cumsum(b, b("add", cumsum(b, y1), 1.0)), 3.0)
    _, artifact = run(b, out)
    again = KernelArtifact.from_json(artifact.to_json())
    assert isinstance(again.storage, StoragePlan) and again.storage == artifact.storage


def test_steps_are_ordered_to_lower_peak_memory(build, run):
    """Written as A1, B1, A2, B2: run as A1, A2, B1, B2, so A1 is gone before B1 is made."""
    rng = np.random.default_rng(0)
    b = build(x=rng.standard_normal((64, 32)), y=rng.standard_normal((32, 64)))
    a1 = b("mul", b.inputs["x"], 2.0)
    b1 = b("mul", b.inputs["y"], 3.0)
    a2 = b("extern", a1, fn="numpy.sum", method=False, call_kwargs={})
    b2 = b("extern", b1, fn="numpy.sum", method=False, call_kwargs={})
    out = b("add", a2, b2)
    (got,), artifact = run(b, out)
    np.testing.assert_allclose(got, b.expected(out)[0])
    assert artifact.storage.peak_bytes < 2 * 64 * 32 * 8
    # the order itself, from the program order written out
    program = lower_opgraph(b.program(out))
    by_name = {g.label: g for g in (Group.of(n) for n in program.buffers)}
    written = [by_name[n] for n in ("buf0", "buf2", "buf1", "buf3", "buf4")]
    sizes = {n.name: int(np.prod(n.shape)) * 8 for n in (*program.inputs, *program.buffers)}
    ordered = [g.label for g in order_steps(written, sizes, {"buf4"})]
    assert ordered == ["buf0", "buf1", "buf2", "buf3", "buf4"]
