"""``ItemLoopPlan.moves``: between two items of a lifted loop, every carried input takes the
buffer its next value was written to, and every buffer so written takes one that no input holds
any more — a permutation of the buffers, so nothing is copied and nothing leaks."""

import pytest

from stax.codegen.cpu.entry import EntryPlan
from stax.codegen.cpu.item_loop import ItemLoopPlan

LAYOUT = ((4,), (8,), "float64")
ITEM = ((), (), "int64")


def plan(nexts, inputs=3, allocs=2):
    slots = EntryPlan((ITEM,) + (LAYOUT,) * (inputs - 1), (LAYOUT,) * allocs, (), (), True)
    return ItemLoopPlan(slots, 0, tuple(nexts), settled=0)


def after(moves, buffers):
    """The buffer each slot holds after the moves (all read before any is written)."""
    out = dict(buffers)
    for source, target in moves:
        out[target] = buffers[source]
    return out


@pytest.mark.parametrize("nexts", [
    [(1, 3)],                 # y = f(y): y takes the new buffer, the buffer takes y's old one
    [(1, 3), (2, 4)],         # two carried values
    [(1, 2), (2, 3)],         # a, b = b, a + b: a takes b's buffer, b the new one
    [(1, 2), (2, 1)],         # a, b = b, a: a swap, nothing allocated
])
def test_moves_are_a_permutation_giving_each_input_its_next_value(nexts):
    p = plan(nexts)
    buffers = {slot: f"buffer{slot}" for slot in range(5)}
    moved = after(p.moves, buffers)
    for i, o in nexts:
        assert moved[i] == buffers[o]
    assert sorted(moved.values()) == sorted(buffers.values())
