import pytest

from stax.ir import Graph, Opcode, TensorMeta, VerificationError, verify_graph

META = {"tensor": TensorMeta((4,), "float32", (1,))}


def small_graph() -> Graph:
    g = Graph("capture")
    x = g.placeholder("x", META)
    w = g.placeholder("w", META)
    add = g.call_function("operator.add", (x, w), meta=META)
    s = g.call_method("sum", (add, -1), meta=META)
    g.output((s,))
    return g


def test_use_lists_follow_arguments():
    g = small_graph()
    x, w, add, s, out = g.nodes
    assert list(x.users) == [add] and list(add.users) == [s] and list(s.users) == [out]
    add.set_args((x, x))
    assert w.users == {} and list(x.users) == [add]
    assert add.inputs == [x]


def test_names_avoid_builtins_and_repeats():
    g = small_graph()
    assert [n.name for n in g.nodes] == ["x", "w", "add", "sum_0", "output"]
    again = g.call_function("operator.add", (g.nodes[0], 1))
    assert again.name == "add_1"


def test_an_erased_name_is_given_out_again_first():
    g = Graph("capture")
    x = g.placeholder("x", META)
    adds = [g.call_function("operator.add", (x, i)) for i in range(4)]
    assert [a.name for a in adds] == ["add", "add_1", "add_2", "add_3"]
    g.erase_node(adds[1])
    assert g.call_function("operator.add", (x, 9)).name == "add_1"
    assert g.call_function("operator.add", (x, 9)).name == "add_4"
    g.placeholder("mul_1", META)  # a name taken out of order is skipped
    assert [g.call_function("operator.mul", (x, 2)).name for _ in range(3)] == ["mul", "mul_2", "mul_3"]


def test_naming_is_linear_in_the_number_of_nodes():
    """Each name was found by trying add_1, add_2, ... in turn: 73% of capturing a long loop."""
    import gc
    import time

    def build(n: int) -> float:
        g = Graph("capture")
        x = g.placeholder("x", META)
        gc.disable()  # the collector's passes over a growing heap are not naming's cost (CI flake)
        try:
            clock = time.perf_counter()
            for i in range(n):
                x = g.call_function("operator.add", (x, i))
            return time.perf_counter() - clock
        finally:
            gc.enable()

    build(2000)  # warm
    small, large = min(build(4000) for _ in range(5)), min(build(16000) for _ in range(5))
    assert large < 8 * small  # 4x the nodes: 4x the time when linear, 16x when quadratic


def test_insertion_points_and_replace_all_uses():
    g = small_graph()
    x, _w, add, s, _out = g.nodes
    with g.inserting_before(s):
        neg = g.call_function("operator.neg", (add,), meta=META)
    assert g.nodes.index(neg) == g.nodes.index(s) - 1
    add.replace_all_uses_with(neg)
    neg.set_args((add,))
    assert s.args[0] is neg and list(add.users) == [neg]
    with g.inserting_after(x):
        extra = g.call_function("operator.mul", (x, 2), meta=META)
    assert g.nodes.index(extra) == 1
    g.erase_node(extra)
    verify_graph(g)


def test_erase_refuses_used_nodes():
    g = small_graph()
    with pytest.raises(ValueError, match="still used"):
        g.erase_node(g.nodes[2])


def test_verifier_rejects_use_before_definition():
    g = small_graph()
    add, s = g.nodes[2], g.nodes[3]
    g.nodes[2], g.nodes[3] = s, add
    with pytest.raises(VerificationError, match="not defined before"):
        verify_graph(g)


def test_verifier_rejects_missing_output_and_late_placeholder():
    g = Graph()
    g.placeholder("x")
    with pytest.raises(VerificationError, match="output"):
        verify_graph(g)
    g = small_graph()
    g.nodes.insert(3, g.nodes.pop(0))
    with pytest.raises(VerificationError):
        verify_graph(g)


def test_verifier_checks_op_graph_targets():
    g = Graph("op")
    x = g.placeholder("x", META)
    bad = g.call_function("frobnicate", (x,), meta=META)
    g.output((bad,))
    with pytest.raises(VerificationError, match="unknown op 'frobnicate'"):
        verify_graph(g)
    g = Graph("op")
    x = g.placeholder("x", META)
    add = g.call_function("add", (x,), meta=META)
    g.output((add,))
    with pytest.raises(VerificationError, match="takes 2 operands"):
        verify_graph(g)


def test_opcodes_are_the_six_of_table_3_1():
    assert {o.value for o in Opcode} == {"placeholder", "get_attr", "call_function",
                                         "call_method", "call_module", "output"}
