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
