"""Draws from a np.random.Generator argument are side effects (issue 10, stress strategies
``dead_draws`` and ``draw_order``): every draw of the program runs on every call, in program order,
whether or not its value is used, so the caller's generator ends in eager NumPy's state and every
draw gives eager's values. Each function compiles natively (``strict_native``) and runs several
calls: the call that compiles and the calls of the compiled version."""

from __future__ import annotations

import numpy as np
import pytest

import stax.runtime as stax

CALLS = 3


def same_as_eager(fn, *arrays, generators=1, same_generator=False, backend="stax"):
    """Call ``fn`` compiled and eagerly on generators seeded alike; compare results and states."""
    cf = stax.compile(fn, strict_native=True, backend=backend)
    for seed in range(CALLS):
        eager = [np.random.default_rng(seed) for _ in range(generators)]
        compiled = [np.random.default_rng(seed) for _ in range(generators)]
        if same_generator:
            eager, compiled = eager[:1] * generators, compiled[:1] * generators
        want, got = fn(*arrays, *eager), cf(*arrays, *compiled)
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        for g, w in zip(compiled, eager):
            assert g.bit_generator.state == w.bit_generator.state, f"call {seed}: generator state"
    assert cf.cache_info().versions == 1
    return cf


def steps_of(cf):
    artifact = cf.versions()[0].artifact
    return [(e.buffer, e.target) for e in artifact.externs], artifact.steps


def test_a_dead_draw_still_advances_the_generator():
    def f(x, rng):
        rng.standard_normal(3)
        return x + 1

    cf = same_as_eager(f, np.arange(4.0))
    externs, steps = steps_of(cf)
    assert [t for _, t in externs] == ["standard_normal"] and externs[0][0] in steps


def test_a_dead_draw_before_a_live_one_keeps_the_live_values():
    def f(x, rng):
        rng.random((5, 2))          # dead: its numbers come out of the stream first
        noise = rng.standard_normal(x.shape)
        rng.integers(0, 7, 3)       # dead, after the live draw
        return x * noise

    same_as_eager(f, np.arange(1.0, 7.0))


def test_a_dead_draw_in_a_function_that_returns_its_argument():
    def f(x, rng):
        rng.normal(size=(2, 3))
        return x

    same_as_eager(f, np.arange(4.0))


def test_identical_draws_are_not_merged():
    def f(x, rng):
        a = rng.standard_normal(x.shape)
        b = rng.standard_normal(x.shape)
        c = rng.standard_normal(x.shape)  # dead, and the same call as a and b
        del c
        return a - b + x

    same_as_eager(f, np.zeros(5))


def test_draws_of_decreasing_size_run_in_program_order():
    """The memory plan runs the step that allocates least first: the smaller, later draw ran
    before the larger one."""
    def f(x, rng):
        a = rng.standard_normal((2, 2))
        b = rng.standard_normal(3)
        return x[:3] + b, a.max() + x

    cf = same_as_eager(f, np.arange(4.0))
    externs, steps = steps_of(cf)
    draws = [name for name, target in externs if target == "standard_normal"]
    assert [s for s in steps if s in draws] == draws


def test_many_draws_of_mixed_sizes_and_liveness():
    def f(x, rng):
        big = rng.random((6, 8))
        rng.standard_normal(2)                    # dead
        small = rng.integers(0, 100, 3)
        mid = rng.uniform(-1.0, 1.0, (4, 4))
        rng.exponential(size=40)                  # dead, large
        tiny = rng.standard_normal(1)
        return big[0, :3] + x, small * 2, mid.T + tiny

    same_as_eager(f, np.arange(3.0))


def test_a_draw_fed_by_a_kernel_stays_before_a_later_draw():
    """draw1 reads a kernel's result (k1 = x * 2), a later kernel reads draw2: fusing the two
    kernels would need draw2 before draw1 (the ordering edge forbids the fusion)."""
    def f(x, rng):
        k1 = x * 2.0
        d1 = rng.normal(k1)                 # loc from a kernel
        d2 = rng.standard_normal(x.shape)
        return d2 + x, d1

    same_as_eager(f, np.arange(8.0))


def test_two_generators_and_one_generator_passed_twice():
    def f(x, r1, r2):
        a = r1.standard_normal((3, 3))
        r2.random(2)                        # dead
        b = r2.standard_normal(3)
        r1.random(1)                        # dead
        return a.max(0) + b + x

    same_as_eager(f, np.zeros(3), generators=2)
    same_as_eager(f, np.zeros(3), generators=2, same_generator=True)


@pytest.mark.parametrize("backend", ["stax", "eager"])
def test_both_backends_run_every_draw(backend):
    """The capture's own interpreter (the ``eager`` backend) runs every draw too."""
    def f(x, rng):
        a = rng.standard_normal((3, 2))
        rng.standard_normal(4)              # dead
        b = rng.standard_normal(2)
        return x + b, a

    same_as_eager(f, np.ones(2), backend=backend)
