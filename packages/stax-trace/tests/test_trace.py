import numpy as np
import pytest

from stax.ir import NN_FUNCTIONS, UnsupportedError, load_capture, run_program, verify_graph
from stax.trace import Proxy, example_copy, leaf_function, trace

relu = leaf_function("stax.nn.relu")(NN_FUNCTIONS["stax.nn.relu"])


def f_numpy(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def f_relu(x, w):
    return (relu(x + w) * 2).sum(-1)


def example(shape=(64, 128), dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def test_listing_3_1_from_tracing():
    capture = trace(f_relu, example())
    verify_graph(capture.graph)
    assert str(capture.graph) == """\
graph(
    %x : [num_users=1] = placeholder[target=x]
    %w : [num_users=1] = placeholder[target=w]
    %add shape=(64, 128) : [num_users=1] = call_function[target=operator.add](args = (%x, %w), kwargs = {})
    %relu shape=(64, 128) : [num_users=1] = call_function[target=stax.nn.relu](args = (%add,), kwargs = {})
    %mul shape=(64, 128) : [num_users=1] = call_function[target=operator.mul](args = (%relu, 2), kwargs = {})
    %sum_0 shape=(64,) : [num_users=1] = call_method[target=sum](args = (%mul, -1), kwargs = {})
    return sum_0
)"""


def test_numpy_form_records_ufunc():
    capture = trace(f_numpy, example())
    assert [n.target for n in capture.graph.nodes][2:4] == ["operator.add", "numpy.maximum"]


@pytest.mark.parametrize("fn", [f_numpy, f_relu])
@pytest.mark.parametrize("shape", [(64, 128), (1, 7), (5, 1)])
def test_capture_interprets_like_eager(fn, shape):
    x, w = example(shape)
    capture = trace(fn, (x, w))
    np.testing.assert_array_equal(run_program(capture, (x, w), {}), fn(x, w))


def test_mixed_mode_metadata_is_eager_metadata():
    x, w = example((8, 4))
    capture = trace(lambda a, b: (a.T * 2.5, a.sum(), (a + b.astype(np.float64))), (x, w))
    t, s, mixed = (capture.graph.nodes[i].tensor for i in (3, 4, 6))
    assert t.shape == (4, 8) and t.strides == (1, 4) and t.dtype == "float32"
    assert s.scalar and s.shape == () and s.dtype == "float32"
    assert mixed.dtype == "float64"


def test_source_lines_point_at_user_code():
    capture = trace(f_numpy, example())
    add = capture.graph.nodes[2]
    assert add.source.startswith(__file__) and add.source.endswith("in f_numpy")


def test_traced_program_cannot_touch_caller_arrays():
    x, _w = example((4, 4))
    before = x.copy()

    def mutate(a):
        a.value[:] = 7  # reach through the proxy to the example value
        return a + 1

    trace(lambda a: mutate(a), (x,))
    np.testing.assert_array_equal(x, before)


def test_example_copy_keeps_layout():
    base = np.arange(60.0).reshape(6, 10)
    for view in (base, base.T, base[::2, 1::3], base[:, ::-1], np.broadcast_to(base[:1], (4, 10))):
        copy = example_copy(view)
        assert copy.strides == view.strides and copy.shape == view.shape
        np.testing.assert_array_equal(copy, view)
        assert not np.shares_memory(copy, view)


def test_constants_scalars_and_containers():
    x, w = example((3, 4))
    capture = trace(lambda pair, k, opts: pair[0] * k + pair[1] * opts["s"],
                    ((x, w), 3, {"s": 0.5}))
    assert capture.inputs == ["pair_0", "pair_1", None, None]
    np.testing.assert_array_equal(run_program(capture, ((x, w), 3, {"s": 0.5}), {}), x * 3 + w * 0.5)


def test_output_trees():
    x, w = example((3, 4))
    capture = trace(lambda a, b: {"s": a + b, "pair": (a, 2)}, (x, w))
    out = run_program(capture, (x, w), {})
    assert set(out) == {"s", "pair"} and out["pair"][0] is x and out["pair"][1] == 2


def test_capture_document_round_trip():
    capture = trace(f_relu, example())
    doc = capture.to_json()
    assert doc["schema"] == "stax.capture/1.0"
    assert load_capture(doc).to_json() == doc


@pytest.mark.parametrize("body, message", [
    (lambda a: a + 1 if a.sum() > 0 else a, "bool()"),
    (lambda a: int(a.sum()), "int()"),
    (lambda a: [r for r in a], "iteration"),
])
def test_data_reads_are_refused_with_source(body, message):
    x, _ = example((3, 4))
    with pytest.raises(UnsupportedError, match=message) as info:
        trace(body, (x,))
    assert __file__ in str(info.value)


def test_in_place_updates_are_refused_before_running():
    x, _ = example((3, 4))
    before = x.copy()

    def inplace(a):
        a += 1
        return a

    def setitem(a):
        a[0] = 1
        return a

    def out_kw(a):
        return np.add(a, 1, out=a)

    for fn in (inplace, setitem, out_kw):
        with pytest.raises(UnsupportedError, match="in-place"):
            trace(fn, (x,))
    np.testing.assert_array_equal(x, before)


def test_free_arrays_are_refused():
    x, w = example((3, 4))
    with pytest.raises(UnsupportedError, match="not an argument"):
        trace(lambda a: a + w, (x,))


def test_user_errors_surface_unchanged():
    x, _ = example((3, 4))
    y = np.ones((5,), np.float32)
    with pytest.raises(ValueError, match="could not be broadcast"):
        trace(lambda a, b: a + b, (x, y))


def test_leaf_function_runs_eagerly_on_arrays():
    x, _ = example((3, 4))
    np.testing.assert_array_equal(relu(x), np.maximum(x, 0))
    assert not isinstance(relu(x), Proxy)
