"""The setitem op's NumPy reference (the semantics the op-graph interpreter and the eager backend
run): its key holds ``slice.indices()`` triples, which a reversed slice to the start ends at -1."""

import numpy as np
import pytest

from stax.ir.ops import get_op


@pytest.mark.parametrize("index", [slice(None, None, -1), slice(3, None, -1), slice(None, 2, -1),
                                   slice(1, 4, 1), slice(4, 0, -1)])
def test_setitem_reference_matches_numpy(index):
    x = np.arange(6.0)
    start, stop, step = index.indices(6)
    n = len(range(start, stop, step))
    value = -np.arange(1.0, n + 1)
    want = x.copy()
    want[index] = value
    got = get_op("setitem").reference(x, value, key=(("slice", start, stop, step),))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, np.arange(6.0))  # a copy
