"""``stax.ir.meta.fresh_strides``: the layout NumPy gives a fresh element-wise result, against
NumPy itself on random layouts (reversed, stepped, transposed, broadcast, length-1 axes)."""

import numpy as np

from stax.ir.meta import dense_strides, fresh_strides


def _random_view(rng):
    ndim = int(rng.integers(1, 5))
    shape = tuple(int(s) for s in rng.integers(1, 5, ndim))
    base = np.zeros(tuple(2 * s for s in shape))
    view = base[tuple(slice(None, None, int(rng.choice([1, 2, -1, -2]))) for _ in shape)]
    view = view[tuple(slice(0, s) for s in shape)].transpose(rng.permutation(ndim))
    if rng.random() < 0.3:  # one axis broadcast
        axis = int(rng.integers(ndim))
        key = [slice(None)] * ndim
        key[axis] = slice(0, 1)
        view = np.broadcast_to(view[tuple(key)], view.shape)
    return view


def test_fresh_strides_are_numpys_on_random_layouts():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        view = _random_view(rng)
        result = np.isnan(view)
        want = tuple(s // result.itemsize for s in result.strides)
        got = fresh_strides(view.shape, tuple(s // view.itemsize for s in view.strides))
        significant = [d for d, n in enumerate(view.shape) if n != 1]
        assert [got[d] for d in significant] == [want[d] for d in significant], \
            (view.shape, view.strides)


def test_dense_strides_keep_a_dense_layout_and_its_length_one_strides():
    assert dense_strides((4, 1, 6), (1, 24, 4)) == (1, 24, 4)  # F-ordered, keepdims
    assert dense_strides((3, 4), (1, 3)) == (1, 3)
    assert dense_strides((3, 4), (8, 2)) == (4, 1)  # not dense: row-major


def test_an_empty_layout_has_no_elements_to_share():
    from stax.ir.meta import elements_overlap

    assert elements_overlap((3, 7), (0, 4), 4)  # a broadcast row
    assert not elements_overlap((0, 7), (0, 0), 4)  # np.ones((0, 7)): NumPy's zero strides
    assert not elements_overlap((7, 0), (0, 0), 4)


def _shares_elements(a):
    """Brute force: whether two elements of ``a`` start at one address."""
    starts = set()
    base = a.__array_interface__["data"][0]
    for at in np.ndindex(a.shape):
        address = base + sum(i * s for i, s in zip(at, a.strides))
        if address in starts:
            return True
        starts.add(address)
    return False


def test_elements_overlap_only_where_two_elements_share_memory():
    """A probe's finding: ``a = x[:, ::2]`` of an odd-width (8, 9) float32 array (strides
    (36, 8)) was taken for self-overlapping, so ``a *= 2.0`` ran eagerly with a false reason:
    an axis spans ``stride * (n - 1)`` beyond the axes inside it, not ``stride * n``. Checked
    against the elements' addresses on stepped, transposed and reversed views (no false
    answer either way for these, which never interleave) and on as_strided overlaps."""
    from numpy.lib.stride_tricks import as_strided

    from stax.ir.meta import elements_overlap

    rng = np.random.default_rng(3)
    for _ in range(300):
        rows, cols = rng.integers(1, 9, size=2)
        x = np.zeros((rows, cols), dtype=rng.choice([np.float32, np.float64, np.int8]))
        step = tuple(rng.integers(1, 4, size=2) * rng.choice([-1, 1], size=2))
        views = [x[::step[0], ::step[1]], x.T[::step[1]]]
        for view in views:
            assert elements_overlap(view.shape, view.strides, view.itemsize) is False, \
                (view.shape, view.strides)
    x = np.zeros(40, dtype=np.float32)
    for shape, strides in (((8, 5), (4, 8)), ((3, 4), (8, 4)), ((4, 4), (12, 4)),
                           ((5, 3), (0, 4)), ((2, 2, 3), (24, 4, 8))):
        view = as_strided(x, shape, strides)
        assert elements_overlap(shape, strides, 4) is _shares_elements(view), (shape, strides)
    a = np.arange(72, dtype=np.float32).reshape(8, 9)[:, ::2]
    assert not elements_overlap(a.shape, a.strides, a.itemsize)
