"""Spec §2.2's dynamic signature of a layout (``stax.runtime.dynamic``): strides written in terms
of the sizes, so that one expression stands for every size of a layout and different layouts
stay apart (issue 15, item 1; the compile-once properties follow with size-generic kernels)."""

import numpy as np

from stax.runtime.dynamic import dynamic_layout, stride_expressions


def expressions(a):
    return stride_expressions(a.shape, [s // a.itemsize for s in a.strides])


def test_the_examples_of_section_2_2():
    for n, m in ((4, 6), (8, 10), (3, 1000)):
        x = np.zeros((n, m))
        assert expressions(x) == ("s1*1", "1")  # row-major: (size_1 * 1, 1)
        assert expressions(x.T) == ("1", "s0*1")  # its transpose: (1, size_0 * 1)
        assert expressions(np.broadcast_to(np.zeros(m), (n, m))) == ("0", "1")  # expand: 0
    assert expressions(np.zeros((5, 8))[:, ::2]) == ("s1*2", "2")  # a step of 2 stays a number
    assert expressions(np.zeros((5, 9))[:, ::2]) == ("9", "2")


def test_higher_ranks_and_orders():
    assert expressions(np.zeros((3, 4, 5))) == ("s1*s2*1", "s2*1", "1")
    assert expressions(np.zeros((3, 4, 5), order="F")) == ("1", "s0*1", "s1*s0*1")
    assert expressions(np.zeros((3, 4, 5)).transpose(1, 0, 2)) == ("s2*1", "s0*s2*1", "1")
    assert expressions(np.zeros((6, 4))[::-1]) == ("-4", "1")


def test_sizes_0_and_1_are_specialized():
    assert expressions(np.zeros((1, 7))) == ("=1", "1")
    assert expressions(np.zeros((7, 1))) == ("1", "=1")
    assert expressions(np.zeros((0, 3))) == ("=0", "*")  # empty: NumPy's strides (0, 0)
    # NumPy leaves a length-1 axis's stride arbitrary: it is not looked at
    row = np.zeros((4, 7))[1:2]
    assert expressions(row) == expressions(np.zeros((1, 7)))


def test_square_matrices_of_any_size_and_their_transposes_make_two_layouts():
    """Spec §2.2: in dynamic mode square matrices of sizes 4, 6 and 8 and their transposes
    give exactly two signatures (two artifacts once kernels are size-generic)."""
    layouts = set()
    for n in (4, 6, 8):
        x = np.zeros((n, n), np.float32)
        layouts |= {dynamic_layout(x.shape, [s // 4 for s in x.strides]),
                    dynamic_layout(x.T.shape, [s // 4 for s in x.T.strides])}
    assert len(layouts) == 2
