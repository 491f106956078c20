"""A version compiled for a writable argument it updates in place never writes into a read-only
array of the same layout (the key holds no flags): such a call runs eagerly and NumPy raises.
It wrote into immutable ``bytes`` and crashed on a read-only mapping (found by a probe)."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax


def add_one(x):
    x += 1
    return x


def relu(x):
    x[x < 0] = 0
    return x.sum()


@pytest.mark.parametrize("fn", [add_one, relu])
def test_a_read_only_argument_after_a_writable_one(fn, tmp_path):
    compiled = stax.compile(fn)
    compiled(np.arange(4.0) - 2)
    frozen = np.arange(4.0) - 2
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        compiled(frozen)
    np.testing.assert_array_equal(frozen, np.arange(4.0) - 2)
    data = (np.arange(4.0) - 2).tobytes()
    with pytest.raises(ValueError, match="read-only"):
        compiled(np.frombuffer(data))
    assert data == (np.arange(4.0) - 2).tobytes()
    np.save(tmp_path / "x.npy", np.arange(4.0) - 2)
    mapped = np.asarray(np.load(tmp_path / "x.npy", mmap_mode="r"))
    with pytest.raises(ValueError, match="read-only"):
        compiled(mapped)
    writable = np.arange(4.0) - 2
    eager = writable.copy()
    np.testing.assert_array_equal(compiled(writable), fn(eager))
    np.testing.assert_array_equal(writable, eager)
