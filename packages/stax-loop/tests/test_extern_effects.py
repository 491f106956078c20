"""Extern calls with an effect (``ExternCall.effect``): a random draw of the op graph becomes a
NumPy call naming the generator it advances, whether or not its result is read, and the draws
form one chain in program order (``effect_order``) that the document keeps."""

import numpy as np

from stax.ir import OPGRAPH_SCHEMA, Graph, GraphProgram, TensorMeta, tree_flatten
from stax.loop import ExternCall, LoopProgram, effect_order, lower_opgraph
from stax.loop.interpreter import run_loop_program


def program_with_draws():
    """x + 1 with three draws from ``rng``: (2, 2) read by nothing, (3,) returned, (4,) dead."""
    graph = Graph("op")
    x = graph.placeholder("x", {"tensor": TensorMeta.of(np.zeros(3))})
    rng = graph.placeholder("rng", {"object": "numpy.random.Generator"})

    def draw(shape, name):
        return graph.call_function("extern", (rng, shape), {
            "fn": "standard_normal", "method": True, "call_kwargs": {}}, name=name,
            meta={"tensor": TensorMeta.of(np.zeros(shape)), "random": True})
    draw((2, 2), "first")
    live = draw((3,), "second")
    draw((4,), "third")
    total = graph.call_function("add", (x, live), {}, meta={"tensor": TensorMeta.of(np.zeros(3))})
    graph.output((total,))
    _, tree = tree_flatten(((np.zeros(3), None), {}))
    return GraphProgram(OPGRAPH_SCHEMA, "draws", graph, ["x", "rng"], tree,
                        tree_flatten(np.zeros(3))[1])


def test_every_draw_becomes_an_extern_call_with_its_generator_as_effect():
    loop = lower_opgraph(program_with_draws())
    calls = [b for b in loop.buffers if isinstance(b, ExternCall)]
    assert [(c.target, c.shape, c.effect) for c in calls] == [
        ("standard_normal", (2, 2), "rng"), ("standard_normal", (3,), "rng"),
        ("standard_normal", (4,), "rng")]
    names = [c.name for c in calls]
    assert effect_order(loop.buffers) == {names[1]: names[0], names[2]: names[1]}
    assert f"{names[0]}: float64[2, 2] strides=(2, 1) = extern .standard_normal(" in str(loop)
    assert "effect=rng" in str(loop)


def test_the_effect_survives_the_document():
    loop = lower_opgraph(program_with_draws())
    again = LoopProgram.from_json(loop.to_json())
    assert [getattr(b, "effect", None) for b in again.buffers] == \
        [getattr(b, "effect", None) for b in loop.buffers]
    plain = [b for b in loop.to_json()["buffers"] if "extern" not in b]
    assert plain and all("effect" not in b for b in plain)  # only calls with an effect say so


def test_the_loop_interpreter_draws_as_eager_numpy():
    loop = lower_opgraph(program_with_draws())
    x = np.arange(3.0)
    got_rng, want_rng = np.random.default_rng(7), np.random.default_rng(7)
    (got,) = run_loop_program(loop, [x, got_rng])
    want_rng.standard_normal((2, 2))
    want = x + want_rng.standard_normal(3)
    want_rng.standard_normal(4)
    np.testing.assert_array_equal(got, want)
    assert got_rng.bit_generator.state == want_rng.bit_generator.state


def test_an_extern_keeps_its_source_line_through_the_document():
    """The op node's ``file:line in function`` reaches the call (``ExternCall.source``, for the
    warnings NumPy gives from it); diagnostic only: equal calls from two lines compare equal."""
    program = program_with_draws()
    for node in program.graph.nodes:
        node.meta["source"] = f"/home/user/model.py:{len(node.name)} in step"
    loop = lower_opgraph(program)
    calls = [b for b in loop.buffers if isinstance(b, ExternCall)]
    assert [c.source for c in calls] == ["/home/user/model.py:5 in step",
                                         "/home/user/model.py:6 in step",
                                         "/home/user/model.py:5 in step"]
    again = LoopProgram.from_json(loop.to_json())
    assert [b.source for b in again.buffers if isinstance(b, ExternCall)] == \
        [c.source for c in calls]
    assert calls[0] == ExternCall(**{**calls[0].__dict__, "source": None})
