"""The stax backend compiles for a ``Target`` (issue 11 item 1): the target's basis decides the
op-level decomposition and its policy what is materialized; the runtime selects it by device."""

from dataclasses import replace

import numpy as np
import pytest

import stax.runtime as stax
from stax.codegen import cpu_target
from stax.runtime import nn
from stax.runtime.backends import stax_backend


def compiled_with(name, **backend_options):
    """A function compiled by the stax backend with ``backend_options``; its log lines."""
    lines = []

    def backend(capture, example_inputs, **options):
        return stax_backend(capture, example_inputs, log=lambda _, text: lines.append(text),
                            **backend_options)

    stax.register_backend(name, backend)
    return lambda fn: stax.compile(fn, backend=name), lines


def test_the_decomposition_basis_is_the_targets():
    """mse_loss is outside the CPU's basis, so it is decomposed into ops the CPU emits; a target
    that claims it keeps it whole, and the loop layer, which cannot lower it, declines it."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 7)), rng.standard_normal((5, 7))
    plain, plain_log = compiled_with("target-default")
    wide, wide_log = compiled_with(
        "target-wide-basis", target=replace(cpu_target(), basis=cpu_target().basis | {"mse_loss"}))
    f, g = plain(nn.mse_loss), wide(nn.mse_loss)
    for compiled in (f, g):
        np.testing.assert_allclose(compiled(x, y), nn.mse_loss(x, y), rtol=1e-13)
    assert any("op-level decomposition: mse_loss" in line for line in plain_log)
    assert f.cache_info().fallbacks == 0
    assert not any("decomposition" in line for line in wide_log)
    assert g.cache_info().fallbacks == 1


def test_an_op_outside_the_basis_runs_as_numpy():
    """A target whose kernels lack hypot (and hypot has no decomposition) runs it as a NumPy
    step between its kernels, not as a failed compile."""
    x, y = np.linspace(-3, 3, 64), np.linspace(1, 2, 64)
    narrow, _ = compiled_with("target-no-hypot",
                              target=replace(cpu_target(), basis=cpu_target().basis - {"hypot"}))
    full, _ = compiled_with("target-with-hypot")
    fns = [compile_(lambda a, b: np.hypot(a, b) * 2 + 1) for compile_ in (narrow, full)]
    for fn in fns:
        np.testing.assert_array_equal(fn(x, y), np.hypot(x, y) * 2 + 1)
        assert fn.cache_info().fallbacks == 0
    externs = [[s.target for s in fn.versions()[0].artifact.externs] for fn in fns]
    assert externs == [["numpy.hypot"], []]


def test_the_materialization_policy_is_the_targets():
    x = np.linspace(-1, 1, 4096)

    def f(x):
        y = x * 3 + 1
        return y * y + y

    lean, _ = compiled_with("target-default-policy")
    kept, _ = compiled_with("target-keep-all", target=replace(cpu_target(), materialize=lambda r: True))
    results = []
    for compile_ in (lean, kept):
        cf = compile_(f)
        np.testing.assert_allclose(cf(x), f(x), rtol=1e-15)
        results.append(cf.versions()[0].artifact)
    # keeping every value computes y as a value of its own (held, not stored: its only reader
    # is in its kernel, ``transient.py``); the default policy recomputes it inline
    computed = [sum(len(k.computes) for k in artifact.kernels) for artifact in results]
    assert computed[0] < computed[1]


def test_an_unknown_device_has_no_target():
    with pytest.raises(ValueError, match="no target for device 'tpu'"):
        stax_backend(None, [], device="tpu")
