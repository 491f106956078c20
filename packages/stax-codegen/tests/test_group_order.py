"""``group_order.Closure``: the heap fusion's dependences kept up to date join by join, checked
against ``Reach`` rebuilt from scratch; and ``generate``'s kernel budget refusing a program
before any kernel is emitted."""

import importlib
import random
from dataclasses import dataclass, field

import numpy as np
import pytest

from stax.codegen import generate
from stax.codegen.group_order import Closure, Reach, path_through_others, topological
from stax.codegen.program_plan import TooManySteps, kernel_budget
from stax.loop import lower_opgraph


@dataclass(eq=False)
class _Group:
    label: str
    reads: set = field(default_factory=set)
    writes: set = field(default_factory=set)

    @property
    def needs(self):
        return self.reads


def _dag(rng, n):
    groups = []
    for i in range(n):
        reads = {f"b{j}" for j in rng.sample(range(i), min(i, rng.randint(0, 3)))}
        groups.append(_Group(f"g{i}", reads, {f"b{i}"}))
    return groups


def _ancestors(groups, reach, g):
    i = reach.position[id(g)]
    return {id(h) for k, h in enumerate(groups) if reach.ancestors[i] >> k & 1}


@pytest.mark.parametrize("seed", range(6))
def test_closure_after_joins_is_reach_rebuilt(seed):
    rng = random.Random(seed)
    groups = _dag(rng, 40)
    closure = Closure(groups)
    live = list(groups)
    joins = 0
    for _ in range(300):
        a, b = rng.sample(live, 2)
        if closure.first(b, a):
            a, b = b, a
        ordered = topological(closure.groups())
        # the acyclicity test agrees with the walk over the groups in order
        walked = path_through_others(a, b, ordered)
        through = closure.through(a, b)
        assert (walked is None) == (through is None)
        assert ordered.index(a) < ordered.index(b) or not closure.first(b, a)
        if through is not None:
            continue
        a.reads |= b.reads
        a.writes |= b.writes
        closure.join(a, b)
        live.remove(b)
        joins += 1
        ordered = topological(closure.groups())  # (no cycle: it would raise)
        reach = Reach(ordered)
        for g in ordered:
            i = closure.index[id(g)]
            mine = {id(h) for h in ordered if closure.ancestors[i] >> closure.index[id(h)] & 1}
            assert mine == _ancestors(ordered, reach, g) - {id(g)}
            below = {id(h) for h in ordered if closure.descendants[i] >> closure.index[id(h)] & 1}
            assert below == {id(h) for h in ordered if id(g) in _ancestors(ordered, reach, h)}
        if len(live) < 4:
            break
    assert joins >= 10


def test_the_kernel_budget_refuses_before_any_kernel_is_emitted(build, monkeypatch):
    """A program past ``kernel_budget`` was refused at its 65th distinct kernel, after LLVM IR
    for the first 64 was made (a DFT's 60 unrolled coefficients: a second)."""
    generate_module = importlib.import_module("stax.codegen.generate")
    emitted = []
    emit = generate_module.emit_kernel
    monkeypatch.setattr(generate_module, "emit_kernel",
                        lambda *a, **k: emitted.append(a[1].name) or emit(*a, **k))
    x = np.random.default_rng(0).standard_normal((8, 16))
    b = build(x=x)
    rows = b("sum", b.inputs["x"], axis=(1,), keepdims=False, dtype="float64")
    cols = b("sum", b.inputs["x"], axis=(0,), keepdims=False, dtype="float64")
    program = lower_opgraph(b.program(rows, cols))  # two kernels of their own
    with kernel_budget(1), pytest.raises(TooManySteps, match="more than 1 distinct kernels"):
        generate(program)
    assert emitted == []
    with kernel_budget(2):
        generate(program)
    assert len(emitted) == 4  # each kernel, and its precise twin
