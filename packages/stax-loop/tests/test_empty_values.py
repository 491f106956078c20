"""An empty value read several times is kept as an (empty) buffer under a materialization
policy: inlined into each read, a chain of such values builds an expression exponential in its
length (``np.searchsorted`` of 1000 points on an empty array: binary lifting's ten positions,
three reads each, took 25 s to compile)."""

import numpy as np

from stax.loop import ComputedBuffer, postorder


def _chain(build, x: np.ndarray, steps: int):
    b = build(x=x)
    pos = b.inputs["x"]
    for h in range(steps):
        inside = b("lt", b("add", pos, h), 50)
        pos = b("add", pos, b("where", inside, b("minimum", pos, 7), 0))
    return b, pos


def test_an_empty_chain_stays_linear(build, lowered):
    b, out = _chain(build, np.zeros((0,), np.int64), 12)
    result = lowered(b, out, materialize=lambda reuse: False)
    nodes = sum(len(list(postorder(buf.data.body))) for buf in result.loop.buffers
                if isinstance(buf, ComputedBuffer))
    assert nodes < 400  # 3 reads a step: 3^12 without the buffers
    result.assert_numpys()


def test_a_non_empty_chain_is_the_policys_to_decide(build, lowered):
    b, out = _chain(build, np.arange(6, dtype=np.int64), 3)
    result = lowered(b, out, materialize=lambda reuse: False)
    assert len([buf for buf in result.loop.buffers if isinstance(buf, ComputedBuffer)]) == 1
    result.assert_numpys()
