"""Index-width choice (spec §6.8): int32 element indices when every index a node computes
provably fits over its loop ranges, int64 otherwise."""

from stax.loop import Affine, ComputedBuffer, Load, Pointwise, Reduction, index_width, rvar, xvar


def node(ranges, load_index, store_index, reduction_ranges=()):
    body = Load("x", load_index, "float32")
    data = Reduction(ranges, reduction_ranges, "sum", body) if reduction_ranges else \
        Pointwise(ranges, body)
    return ComputedBuffer("out", tuple(ranges), "float32", (1,) * len(ranges), store_index, data)


def test_small_indices_are_32_bit():
    x0, x1 = Affine.var(xvar(0)), Affine.var(xvar(1))
    assert index_width(node((4096, 4096), x0 * 4096 + x1, x0 * 4096 + x1)) == 32


def test_the_bound_is_exact_at_the_edge():
    x0 = Affine.var(xvar(0))
    assert index_width(node((2 ** 31,), x0, x0)) == 32          # largest index 2^31 - 1
    assert index_width(node((2 ** 31 + 1,), x0, x0)) == 64
    assert index_width(node((2,), x0 * (2 ** 31), x0)) == 64    # a huge stride


def test_negative_strides_and_offsets_count():
    x0 = Affine.var(xvar(0))
    assert index_width(node((1000,), x0 * -3 + 2999, x0)) == 32
    assert index_width(node((1000,), x0 * -(2 ** 22) + 2 ** 31, x0)) == 64


def test_reduction_variables_count():
    x0, r0 = Affine.var(xvar(0)), Affine.var(rvar(0))
    assert index_width(node((8,), x0 + r0 * 8, x0, reduction_ranges=(1 << 20,))) == 32
    assert index_width(node((8,), x0 + r0 * 8, x0, reduction_ranges=(1 << 29,))) == 64


def test_an_index_value_counts():
    """A review's finding: ``np.arange(2**31, 2**31 + 4) + x`` gave -2.147e9: the value of an
    ``Index`` expression is computed in the kernel's index type, which ignored it."""
    from stax.loop import Binary, Cast, Index

    x0 = Affine.var(xvar(0))
    for start, bits in ((0, 32), (2 ** 31 - 4, 32), (2 ** 31, 64), (-(2 ** 31) - 1, 64)):
        value = Cast(Index(x0 + start, "int64"), "float32")
        body = Binary("add", Load("x", x0, "float32"), value, "float32")
        out = ComputedBuffer("out", (4,), "float32", (1,), x0, Pointwise((4,), body))
        assert index_width(out) == bits, start
