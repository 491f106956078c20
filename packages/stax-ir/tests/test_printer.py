from stax.ir import Graph, TensorMeta, format_graph


def meta(*shape):
    return {"tensor": TensorMeta(shape, "float32", (1,) * len(shape))}


def test_listing_3_1():
    """Spec listing 3.1 (with Stax's target name for relu)."""
    g = Graph("capture")
    x = g.placeholder("x", meta(64, 128))
    w = g.placeholder("w", meta(64, 128))
    add = g.call_function("operator.add", (x, w), meta=meta(64, 128))
    relu = g.call_function("stax.nn.relu", (add,), meta=meta(64, 128))
    mul = g.call_function("operator.mul", (relu, 2), meta=meta(64, 128))
    s = g.call_method("sum", (mul, -1), meta=meta(64))
    g.output((s,))
    assert format_graph(g) == """\
graph(
    %x : [num_users=1] = placeholder[target=x]
    %w : [num_users=1] = placeholder[target=w]
    %add shape=(64, 128) : [num_users=1] = call_function[target=operator.add](args = (%x, %w), kwargs = {})
    %relu shape=(64, 128) : [num_users=1] = call_function[target=stax.nn.relu](args = (%add,), kwargs = {})
    %mul shape=(64, 128) : [num_users=1] = call_function[target=operator.mul](args = (%relu, 2), kwargs = {})
    %sum_0 shape=(64,) : [num_users=1] = call_method[target=sum](args = (%mul, -1), kwargs = {})
    return sum_0
)"""
