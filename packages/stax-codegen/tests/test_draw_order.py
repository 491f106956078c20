"""Random draws run in program order (``ExternCall.effect``, ``effect_order``): the step order
(which otherwise runs the step that allocates least first) and fusion (which may not join two
kernels when a draw between them would have to run out of order) honour the ordering edge from
each draw to the one before it."""

import numpy as np

from stax.codegen import Executable, generate, schedule
from stax.codegen.scheduler import Group
from stax.codegen.storage_plan import order_steps
from stax.loop import ExternCall, lower_opgraph


def with_generator(build, **arrays):
    b = build(**arrays)
    rng = b.graph.placeholder("rng", {"object": "numpy.random.Generator"})
    b.values[rng] = np.random.default_rng(0)
    b.arrays = {**arrays, "rng": b.values[rng]}
    return b, rng


def draw(b, rng, method, *args):
    node = b("extern", rng, *args, fn=method, method=True, call_kwargs={})
    node.meta["random"] = True
    return node


def run_both(b, program, eager):
    """The plan's results and generator state against ``eager(x, rng)`` on a fresh seed."""
    artifact = generate(program)
    arrays = [v for k, v in b.arrays.items() if k != "rng"]
    mine, theirs = np.random.default_rng(11), np.random.default_rng(11)
    got = Executable(artifact)(*arrays, mine)
    want = eager(*arrays, theirs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert mine.bit_generator.state == theirs.bit_generator.state
    return artifact


def draw_steps(artifact):
    draws = [e.buffer for e in artifact.externs]
    return [s for s in artifact.steps if s in draws], draws


def test_a_smaller_later_draw_waits_for_the_larger_one(build):
    b, rng = with_generator(build, x=np.arange(4.0))
    big = draw(b, rng, "standard_normal", (8, 8))
    small = draw(b, rng, "standard_normal", 3)
    out = b("add", b.inputs["x"], b("max", big, axis=(0, 1), keepdims=False))

    def eager(x, g):
        big = g.standard_normal((8, 8))
        return x + big.max(), g.standard_normal(3)
    artifact = run_both(b, lower_opgraph(b.program(out, small)), eager)
    ran, draws = draw_steps(artifact)
    assert ran == draws


def test_a_dead_draw_runs_in_its_place(build):
    b, rng = with_generator(build, x=np.arange(4.0))
    draw(b, rng, "standard_normal", (16, 16))        # read by nothing
    live = draw(b, rng, "random", 2)
    out = b("mul", b.inputs["x"], 2.0)

    def eager(x, g):
        g.standard_normal((16, 16))
        return x * 2.0, g.random(2)
    artifact = run_both(b, lower_opgraph(b.program(out, live)), eager)
    ran, draws = draw_steps(artifact)
    assert ran == draws and len(draws) == 2


def test_no_fusion_that_would_run_a_later_draw_first(build):
    """k1 feeds draw 1, draw 2 feeds k2: k1 and k2 share x, but one kernel for both would have to
    run after draw 2 and before draw 1."""
    b, rng = with_generator(build, x=np.arange(8.0))
    k1 = b("mul", b.inputs["x"], 2.0)
    d1 = draw(b, rng, "normal", k1)
    d2 = draw(b, rng, "standard_normal", 8)
    k2 = b("add", d2, b.inputs["x"])

    def eager(x, g):
        d1 = g.normal(x * 2.0)
        return g.standard_normal(8) + x, d1
    program = lower_opgraph(b.program(k2, d1))
    _, decisions = schedule(program)
    assert any(not d.fused and "cycle" in d.reason for d in decisions)
    artifact = run_both(b, program, eager)
    ran, draws = draw_steps(artifact)
    assert ran == draws and len(artifact.kernels) == 2


def test_order_steps_honours_an_ordering_edge():
    def call(name, shape, after=None):
        node = ExternCall(name, "standard_normal", True, (), {}, shape, "float64", (1,),
                          effect="rng")
        return Group.of(node, after)
    first, second = call("a", (100,)), call("b", (1,), after="a")
    sizes = {"a": 800, "b": 8}
    assert [g.nodes[0].name for g in order_steps([first, second], sizes, set())] == ["a", "b"]
    unordered = [call("a", (100,)), call("b", (1,))]  # the same steps without the edge
    assert [g.nodes[0].name for g in order_steps(unordered, sizes, set())] == ["b", "a"]
    assert isinstance(first.nodes[0], ExternCall) and second.needs == {"a"}
