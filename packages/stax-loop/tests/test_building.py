"""The loop lowerings of the array-building ops (``stax.loop.building``: concatenate, stack,
constant pad, roll, setitem, tril/triu, full, arange, eye, reshape, take, take_const) through
the loop interpreter: element-wise maps over the result's index, computed in loops, NumPy's
values and dtypes; pieces that cover part of the result read only where they lie (the
interpreter refuses a read outside a buffer); a gather checks its indices."""

import numpy as np
import pytest

from stax.loop import ComputedBuffer, Load, Pointwise, Reduction, loop_extents, postorder

RNG = np.random.default_rng(8)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def span(shape, strides):
    """The lowest and highest element offset of a layout, relative to element 0."""
    if 0 in shape:
        return 0, -1
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
    return low, high


def assert_affine_reads_inside(loop):
    """Every read at an affine index that no guard protects stays inside its buffer over the
    loop ranges (guarded loads may leave it where their guard is false; gathers clamp)."""
    layouts = {b.name: (b.shape, b.strides) for b in (*loop.inputs, *loop.buffers)}
    for buffer in loop.buffers:
        if not isinstance(buffer, ComputedBuffer):
            continue
        extents = loop_extents(buffer)
        if 0 in extents.values():
            continue
        for e in postorder(buffer.data.body):
            if type(e) is Load:
                low, high = e.index.bounds(extents)
                inside = span(*layouts[e.buffer])
                assert inside[0] <= low and high <= inside[1], (buffer.name, e.buffer, str(e.index))


def check(build, lowered, fn, *arrays, native=True):
    """``fn(b, *inputs)`` built over ``arrays``, lowered and interpreted: NumPy's values (the
    ops' references, and ``fn`` applied to the arrays with NumPy where it is given as a pair)."""
    b = build(**{f"a{k}": a for k, a in enumerate(arrays)})
    outputs = fn(b, *b.inputs.values())
    result = lowered(b, *(outputs if isinstance(outputs, tuple) else (outputs,)))
    assert result.native is native
    result.assert_numpys()
    assert_affine_reads_inside(result.loop)
    return result


def transposed(b, x):
    """The transpose of ``x`` as the view op reads it (from its element 0, in its strides)."""
    value = b.values[x]
    strides = tuple(s // value.itemsize for s in value.strides)
    return b("view", x, offset=0, strides=strides[::-1], shape=value.shape[::-1])


def reversed_rows(b, x):
    n, m = b.values[x].shape
    return b("view", x, offset=(n - 1) * m, strides=(-m, 1), shape=(n, m))


PROGRAMS = {
    "concatenate axis 0": (lambda b, x, y: b("concatenate", x, y, b("mul", x, 2.0), axis=0),
                           (f32(3, 5), f32(4, 5))),
    "concatenate axis 1, mixed dtypes": (lambda b, x, y: b("concatenate", x, y, axis=1),
                                         (f32(3, 2), np.arange(9, dtype=np.int16).reshape(3, 3))),
    "concatenate with an empty piece": (lambda b, x, y: b("concatenate", x, y, axis=0),
                                        (f32(0, 4), f32(2, 4))),
    "concatenate transposed and reversed views": (
        lambda b, x, y: b("concatenate", transposed(b, x), transposed(b, reversed_rows(b, y)),
                          axis=1), (f32(7, 3), f32(5, 3))),
    # a reshape of a transposed view reads at a computed offset (an indirect load): outside its
    # piece that offset leaves the buffer (negative at the rows before it), so it is guarded too
    "concatenate a reshape of a transposed view": (
        lambda b, x, y: (b("concatenate", x, b("mul", b("reshape", transposed(b, x), shape=(6, 4)),
                                                 2.0), axis=0),
                         b("concatenate", b("reshape", transposed(b, y), shape=(4, 6)), y, y,
                           axis=1)),
        (f32(6, 4), f32(4, 6))),
    "pad and roll a reshape of a transposed view": (
        lambda b, x: (b("pad", b("reshape", transposed(b, x), shape=(3, 8)),
                        pad_width=((2, 1), (3, 0)), value=1.5),
                      b("roll", b("reshape", transposed(b, x), shape=(3, 8)), shift=5, axis=1)),
        (f32(6, 4),)),
    # NumPy 2 compares an integer array with a Python int its dtype cannot hold: a constant
    # answer (it was a refusal, and the function ran eagerly)
    "comparisons with ints beyond the dtype": (
        lambda b, x, y: (b("lt", x, 300), b("eq", x, 1000), b("gt", 300, x), b("ge", x, -5),
                         b("ne", y, -129), b("le", y, 200), b("lt", y, -1000)),
        (np.arange(0, 250, 25, dtype=np.uint8), np.arange(-100, 100, 20, dtype=np.int8))),
    "stack": (lambda b, x, y: b("stack", x, y, b("sub", x, y), axis=1), (f32(4, 6), f32(4, 6))),
    "stack last axis": (lambda b, x, y: b("stack", x, y, axis=1), (f32(17), f32(17))),
    "pad": (lambda b, x: b("pad", x, pad_width=((1, 2), (0, 3)), value=0.0), (f32(4, 5),)),
    "pad with a value": (lambda b, x: b("pad", b("mul", x, 2.0), pad_width=((2, 2), (2, 2)),
                                        value=-7.5), (f32(3, 3),)),
    "pad integers": (lambda b, x: b("pad", x, pad_width=((1, 1), (1, 1)), value=9),
                     (np.arange(10, dtype=np.int32).reshape(2, 5),)),
    "tril/triu": (lambda b, x, y: b("add", b("tril", x, k=-1), b("triu", y, k=2)),
                  (f32(5, 7), f32(5, 7))),
    "tril of a batch": (lambda b, x: b("tril", x, k=0), (f32(2, 4, 4),)),
    "full": (lambda b, x: (b("add", x, b("full", shape=(4, 5), value=2.5, dtype="float32")),
                           b("full", shape=(2, 3), value=True, dtype="bool"),
                           b("full", shape=(3,), value=255, dtype="uint8")), (f32(4, 5),)),
    "arange": (lambda b, x: (b("arange", start=0, step=1, n=5, dtype="int64"),
                             b("arange", start=10, step=-2, n=5, dtype="int32"),
                             b("add", x, b("arange", start=2, step=2, n=5, dtype="int64"))),
               (f32(3, 5),)),
    "eye": (lambda b, x: (b("eye", n=4, m=6, k=0, dtype="float64"),
                          b("eye", n=4, m=6, k=2, dtype="int32"),
                          b("eye", n=4, m=6, k=-9, dtype="bool")), (f32(1),)),
    "roll along an axis": (lambda b, x: (b("roll", x, shift=2, axis=1), b("roll", x, shift=-7, axis=0)),
                           (f32(4, 5),)),
    "roll without an axis": (lambda b, x, y: (b("roll", x, shift=3, axis=None),
                                              b("roll", transposed(b, b("mul", x, 2.0)), shift=-7,
                                                axis=None),
                                              b("roll", y, shift=40, axis=None)),
                             (f32(4, 5), f32(2, 3, 4)[:, ::2])),
    "reshape of a strided view": (lambda b, x: b("reshape", transposed(b, x), shape=(5, 4)),
                                  (f32(4, 5),)),
    "reshape of an expression": (lambda b, x: b("reshape", b("exp", x), shape=(20,)), (f32(4, 5),)),
    "take along each axis": (lambda b, x, i: (b("take", x, i, axis=0), b("take", x, i, axis=1)),
                             (f32(5, 5), np.array([[4, -1], [0, -5], [2, 2]]))),
    "take_const": (lambda b, x: b("take_const", x, axis=0, indices=(2, 0, 2, 1)), (f32(3, 4),)),
    "setitem of a region": (lambda b, x, v: b("setitem", x, v, key=(("int", 1), ("slice", 1, 4, 1)),
                                              scalar=None), (f32(3, 5), f32(3))),
    "setitem of a scalar": (lambda b, x: b("setitem", x, key=(("slice", 0, 2, 1), ("slice", 2, 0, -1)),
                                           scalar=4.0), (f32(3, 5),)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_building_ops_are_numpys(build, lowered, name):
    fn, arrays = PROGRAMS[name]
    check(build, lowered, fn, *arrays)


def test_setitem_of_a_reversed_axis_through_element_0(build, lowered):
    """``y[::-1] = v`` and ``y[2::-1] = 5``: capture's keys are ``slice.indices`` triples, whose
    stop -1 means "through element 0"."""
    x, v = f32(4), f32(4)
    b = build(x=x, v=v)
    # made with its value given: the op's reference reads (3, -1, -1) as an empty slice
    whole = b.node(x, "setitem", b.inputs["x"], b.inputs["v"], key=(("slice", 3, -1, -1),),
                   scalar=None)
    head = b.node(x, "setitem", b.inputs["x"], key=(("slice", 2, -1, -1),), scalar=5.0)
    result = lowered(b, whole, head)
    assert result.native and not result.run.failed_checks
    want_whole, want_head = x.copy(), x.copy()
    want_whole[::-1] = v
    want_head[2::-1] = 5.0
    np.testing.assert_array_equal(result.run.outputs[0], want_whole)
    np.testing.assert_array_equal(result.run.outputs[1], want_head)


def test_a_concatenation_fuses_into_one_reduction(build, lowered):
    """exp(x) and y * 2 joined and summed per row: one loop nest, no buffer in between."""
    x, y = f32(8, 3), f32(8, 5)
    b = build(x=x, y=y)
    joined = b("concatenate", b("exp", b.inputs["x"]), b("mul", b.inputs["y"], 2.0), axis=1)
    result = lowered(b, b("sum", joined, axis=(1,), keepdims=False, dtype="float32"))
    (buffer,) = result.loop.buffers
    assert isinstance(buffer.data, Reduction)
    np.testing.assert_allclose(result.run.outputs[0], result.expected[0], rtol=1e-6)


def test_an_index_out_of_bounds_fails_the_gather_check(build, lowered):
    """The read is clamped (nothing outside x is touched); the check sends the call to NumPy,
    which raises its IndexError."""
    for bad in (5, -6):
        b = build(x=f32(5), i=np.array([0, 2, 1]))
        out = b("take", b.inputs["x"], b.inputs["i"], axis=0)
        b.arrays["i"] = np.array([0, bad, 1])  # the same shape and dtype: the same program
        result = lowered(b, out)
        assert result.run.failed_checks == ["an index is out of bounds"]


def test_creation_ops_in_a_dtype_the_kernels_do_not_compute_are_numpy_calls(build, lowered):
    check(build, lowered, lambda b, x: (b("full", shape=(2, 2), value=1.5, dtype="float16"),
                                        b("eye", n=3, m=3, k=0, dtype="float16"),
                                        b("arange", start=1, step=2, n=4, dtype="float16")),
          f32(1), native=False)


def test_a_pointwise_piece_is_a_buffer_only_where_it_must_be(build, lowered):
    """Concatenating expressions keeps them inlined: the result is the only buffer."""
    x, y = f32(4, 3), f32(2, 3)
    result = check(build, lowered, lambda b, x, y: b("concatenate", b("exp", x), b("neg", y),
                                                     axis=0), x, y)
    assert [type(b.data) for b in result.loop.buffers] == [Pointwise]


def test_a_gather_inside_a_piece_reads_its_indices_only_where_the_piece_lies(build, lowered):
    """x[i] joined with y (or padded, rolled, stacked): outside the gather's piece its index
    array is not read (it is shorter than the result), like any other load of the piece."""
    x, i, y = f32(6), np.array([5, -1, 0]), f32(4)
    programs = [
        lambda b, x, i, y: b("concatenate", b("take", x, i, axis=0), y, axis=0),
        lambda b, x, i, y: b("concatenate", y, b("take", x, i, axis=0), axis=0),
        lambda b, x, i, y: b("pad", b("take", x, i, axis=0), pad_width=((2, 3),), value=1.0),
        lambda b, x, i, y: b("roll", b("take", x, i, axis=0), shift=1, axis=0),
    ]
    for fn in programs:
        check(build, lowered, fn, x, i, y)
