"""The block pool behind large results: a block is reused only after every view of the result
that held it is gone, and the pool keeps no more than its limit."""

import gc

import numpy as np

from stax.codegen.block_pool import BlockPool


def test_a_freed_result_gives_its_block_to_the_next():
    pool = BlockPool()
    a = pool.empty((1024, 512), np.dtype(np.float32))
    address = a.ctypes.data
    del a
    gc.collect()
    b = pool.empty((512, 1024), np.dtype(np.float32))
    assert b.ctypes.data == address and pool.reused == 1
    assert b.flags.writeable and b.flags.c_contiguous


def test_a_live_view_keeps_the_block():
    pool = BlockPool()
    a = pool.empty((1000, 300), np.dtype(np.float64))
    a[:] = 7.0
    view = a[10:20].T
    del a
    gc.collect()
    b = pool.empty((1000, 300), np.dtype(np.float64))
    b[:] = -1.0
    assert pool.reused == 0
    assert (view == 7.0).all()
    del view, b
    gc.collect()
    assert pool.free_bytes == 2 * 1000 * 300 * 8


def test_the_limit_bounds_what_the_pool_keeps():
    pool = BlockPool(limit=3 << 20)
    arrays = [pool.empty((1 << 20,), np.dtype(np.uint8)) for _ in range(5)]
    del arrays
    gc.collect()
    assert pool.free_bytes == 3 << 20
    pool.clear()
    assert pool.free_bytes == 0


def test_strided_layouts():
    pool = BlockPool()
    a = pool.empty((300, 1000), np.dtype(np.float32), strides=(4, 1200))  # column-major
    assert a.flags.f_contiguous and a.strides == (4, 1200)
