"""``rows_apart``: whether an ordered update's iterations each touch rows no other point of its
inner loops touches (its loops may then run rows outermost). Sufficient, never wrong: every
case that says yes is checked against a brute-force dependence search over the points."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from stax.loop import (
    Affine,
    Binary,
    Cast,
    ComputedBuffer,
    Const,
    Index,
    IndirectLoad,
    Load,
    Pointwise,
    loads,
    rows_apart,
    xvar,
)


def _x(d):
    return Affine.var(xvar(d))


def _update(ranges, store, reads, ordered=True, shape=(64,)):
    body = Const(1.0, "float64")
    for index in reads:
        body = Binary("add", body, Load("old", index, "float64"), "float64")
    return ComputedBuffer("new", shape, "float64", (1,), store, Pointwise(ranges, body),
                          updates="old", ordered=ordered)


def _independent_rows(node):
    """Brute force: no two points with different inner coordinates touch one element."""
    ranges = node.ranges
    touched = {}
    indices = [node.store_index] + [r.index for r in _reads(node)]
    for point in itertools.product(*(range(n) for n in ranges)):
        grid = {xvar(d): v for d, v in enumerate(point)}
        for index in indices:
            at = index.const + sum(c * grid[v] for v, c in index.terms)
            row = point[1:]
            if touched.setdefault(at, row) != row:
                return False
    return True


def _reads(node):
    return [r for r in loads(node.data.body) if r.buffer == "old"]


CASES = {
    # V[i, k + 1] = V[i, k] * x: rerolled over k (x0), rows of 9
    "vandermonde": (_update((8, 5), _x(0) + _x(1) * 9 + 1, [_x(0) + _x(1) * 9]), True),
    "two_behind": (_update((6, 4), _x(0) + _x(1) * 8 + 2, [_x(0) + _x(1) * 8 + 1,
                                                          _x(0) + _x(1) * 8]), True),
    "backwards": (_update((6, 4), _x(0) * -1 + _x(1) * 8 + 6, [_x(0) * -1 + _x(1) * 8 + 7]),
                  True),
    "grid": (_update((5, 3, 2), _x(0) + _x(1) * 7 + _x(2) * 21 + 1,
                     [_x(0) + _x(1) * 7 + _x(2) * 21]), True),
    "same_element_overwritten": (_update((6, 9), _x(1) + 9, []), True),
    # out[i] = out[i - 1] + m[i], rerolled over i (x0): rows read each other (its columns do
    # not, but they run at a stride: not what the test looks for)
    "cumulative_rows": (_update((7, 8), _x(0) * 8 + _x(1) + 8, [_x(0) * 8 + _x(1)]), False),
    # the read moves otherwise than the store along the inner loop (a transposed read)
    "transposed_read": (_update((3, 4), _x(0) + _x(1) * 4 + 1, [_x(0) * 4 + _x(1)]), False),
    # rows too close: 9 apart, but the accesses of one row span 10
    "overlapping": (_update((9, 5), _x(0) + _x(1) * 9 + 1, [_x(0) + _x(1) * 9]), False),
    # an inner loop the store does not move along: points share elements
    "broadcast_inner": (_update((4, 3, 2), _x(0) + _x(1) * 5 + 1, [_x(0) + _x(1) * 5]), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rows_apart_says_what_a_brute_force_search_finds(name):
    node, expected = CASES[name]
    assert rows_apart(node) == expected
    if expected:
        assert _independent_rows(node)
    elif name in ("overlapping", "transposed_read"):  # (the others: rows it cannot prove apart,
        assert not _independent_rows(node)  # the cumulative one's columns are, but strided)


def test_only_ordered_affine_updates():
    node, _ = CASES["vandermonde"]
    assert not rows_apart(replace(node, ordered=False))
    assert not rows_apart(replace(node, updates=None))
    assert not rows_apart(replace(node, data=Pointwise((8,), node.data.body)))
    indirect = IndirectLoad("old", "float64", Cast(Index(_x(1), "int64"), "int64"))
    assert not rows_apart(replace(node, data=Pointwise((8, 5), indirect)))
