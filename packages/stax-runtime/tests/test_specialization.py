"""Spec §2–3 examples: keys, data gates, guards, recompile reasons, dispatch levels, lifting."""

import logging

import numpy as np
import pytest

import stax.runtime as stax


def f_3_1(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_example_3_2_three_versions_and_recompile_reasons(monkeypatch, caplog):
    monkeypatch.setenv("STAX_LOGS", "recompiles")
    cf = stax.compile(f_3_1, strict_native=True)
    with caplog.at_level(logging.INFO, logger="stax"):
        np.testing.assert_array_equal(cf(np.ones((4, 8))), np.full((4, 8), 2.0))
        np.testing.assert_array_equal(cf(-2 * np.ones((4, 8))), np.full((4, 8), -3.0))
        np.testing.assert_array_equal(cf(np.ones((6, 8))), np.full((6, 8), 2.0))
    assert cf.cache_info().versions == 3
    lines = [r.getMessage() for r in caplog.records if r.name == "stax.recompiles"]
    assert len(lines) == 2
    assert lines[0] == ("recompiling 'f_3_1': control-flow gate outcomes match the traced branch "
                        "(got [False]; traced [True])")
    assert lines[1] == ("recompiling 'f_3_1': inputs[0][0][2][0] == 4 (got 6); "
                        "inputs[0][0][2][0] == 4 (got 6); control-flow gate outcomes match the "
                        "traced branch (got [True]; traced [False])")
    # the replay subgraph holds only sum and the comparison (plus the input it reads)
    replay = cf.versions()[0].gates.graph
    assert [n.target for n in replay.nodes if n.op.value != "placeholder"] == [
        "sum", "operator.gt", "output"]


def test_versions_are_reused_after_the_three_calls():
    cf = stax.compile(f_3_1, strict_native=True)
    for _ in range(2):
        cf(np.ones((4, 8)))
        cf(-2 * np.ones((4, 8)))
        cf(np.ones((6, 8)))
    info = cf.cache_info()
    assert info.versions == 3 and info.compiles == 3 and sum(info.hits.values()) == 3


def test_explain_lists_the_failing_guards_per_version():
    cf = stax.compile(f_3_1, strict_native=True)
    cf(np.ones((4, 8)))
    cf(-2 * np.ones((4, 8)))
    reports = cf.explain(np.ones((6, 8)))
    assert [r.index for r in reports] == [0, 1]
    assert [f.condition for f in reports[0].failures] == ["inputs[0][0][2][0] == 4"]
    assert reports[0].failures[0].actual == 6
    assert [f.condition for f in reports[1].failures] == [
        "inputs[0][0][2][0] == 4", "control-flow gate outcomes match the traced branch"]
    assert cf.explain(np.ones((4, 8)))[0].matches


def test_example_3_3_int_is_a_gate_and_gate_keeps_an_array():
    def f1(x):
        n = int(x.sum())
        return x * n

    def f2(x):
        n = stax.gate(x.sum())
        return x * n

    c1, c2 = stax.compile(f1, strict_native=True), stax.compile(f2, strict_native=True)
    for cf in (c1, c2):
        assert cf(np.ones((2, 3)))[0, 0] == 6
        assert cf(2 * np.ones((2, 3)))[0, 0] == 24
    assert c1.cache_info().versions == 2
    assert c2.cache_info().versions == 1


def test_example_2_1_scalars_by_value_zero_d_arrays_by_metadata():
    cf = stax.compile(lambda x, k: x * k, strict_native=True)
    x = np.arange(4.0)
    cf(x, 3)
    cf(x, 4)
    assert cf.cache_info().versions == 2
    cz = stax.compile(lambda x, k: x * k, strict_native=True)
    np.testing.assert_array_equal(cz(x, np.array(3.0)), x * 3)
    np.testing.assert_array_equal(cz(x, np.array(4.0)), x * 4)
    assert cz.cache_info().versions == 1


scale = np.ones(8)


def uses_global(x):
    return x * scale


def test_example_2_2_lifted_global_sees_in_place_updates():
    global scale
    scale = np.ones(8)
    cf = stax.compile(uses_global, strict_native=True)
    x = np.arange(8.0)
    np.testing.assert_array_equal(cf(x), x)
    scale *= 2  # in place
    np.testing.assert_array_equal(cf(x), 2 * x)
    assert cf.cache_info().versions == 1
    scale = np.full(8, 5.0)  # rebinding, same layout: same version, new data
    np.testing.assert_array_equal(cf(x), 5 * x)
    scale = np.full(8, 5.0, dtype=np.float32)  # another layout: a new version
    np.testing.assert_array_equal(cf(x), 5 * x)
    assert cf.cache_info().versions == 2


def test_closure_arrays_are_lifted_too():
    bias = np.full(3, 1.5)

    def f(x):
        return x + bias

    cf = stax.compile(f, strict_native=True)
    x = np.zeros(3)
    np.testing.assert_array_equal(cf(x), bias)
    bias[:] = 7
    np.testing.assert_array_equal(cf(x), np.full(3, 7.0))
    assert cf.versions()[0].native


def test_dispatch_levels_are_counted():
    # exact versions only: a generic one (c's) keeps the last entry, so a's call is level 1
    cf = stax.compile(lambda x, w: x + w, strict_native=True, dynamic=False)
    a, b = np.ones(4), np.ones(4)
    c = np.ones(5)
    cf(a, b)              # miss, compile
    cf(a, b)              # same layouts as the last call: level 1
    cf(c, c)              # miss
    cf(a, b)              # known layouts, not the last call's: level 2
    cf(a, w=b)            # a keyword placed at its position: cf(a, b), level 1
    info = cf.cache_info()
    assert info.hits[1] == 2 and info.hits[2] == 1 and info.hits[3] == 0 and info.misses == 2
    loose = stax.compile(lambda x, **extra: x + extra["w"], strict_native=True)
    loose(a, w=b)         # keywords that have no position: the full signature
    loose(a, w=b)         # level 3
    assert loose.cache_info().hits[3] == 1 and loose.cache_info().misses == 1


def test_gated_versions_replay_at_every_level():
    cf = stax.compile(f_3_1, strict_native=True)
    x = np.ones((4, 8))
    cf(x)
    x[:] = -1  # in place: same object and layout, other branch
    np.testing.assert_array_equal(cf(x), np.full((4, 8), -2.0))
    np.testing.assert_array_equal(cf(np.ones((4, 8))), np.full((4, 8), 2.0))
    assert cf.cache_info().versions == 2


def test_limit_warns_once_naming_the_changing_component(caplog):
    cf = stax.CompiledFunction(lambda x, k: x * k, strict_native=True, dynamic=False,
                               limits=stax.Limits(max_versions=3))  # k in the key
    x = np.ones(2)
    with caplog.at_level(logging.WARNING, logger="stax"):
        for k in range(6):
            np.testing.assert_array_equal(cf(x, k), x * k)
    warnings = [r.getMessage() for r in caplog.records if "limit" in r.getMessage()]
    assert len(warnings) == 1 and "inputs[0][1]" in warnings[0]
    assert "a 0-d array argument" in warnings[0]
    info = cf.cache_info()
    assert info.versions == 3 and info.compiles == 3 and info.fallbacks == 3


@pytest.mark.parametrize("make, said", [
    (lambda k: np.ones(k + 2), "An array's sizes change"),
    (lambda k: [lambda a: a, np.transpose, np.flipud, np.fliplr][k](np.arange(16.0).reshape(4, 4)),
     "An array's layout changes"),
])
def test_the_limit_says_what_to_do_about_what_changes(caplog, make, said):
    """A probe's finding: varying sizes were blamed with advice about Python scalars."""
    cf = stax.CompiledFunction(lambda x: x.sum() + x.shape[0], dynamic=False,
                               limits=stax.Limits(max_versions=2))
    with caplog.at_level(logging.WARNING, logger="stax"):
        for k in range(4):
            x = make(k)
            assert cf(x) == x.sum() + x.shape[0]
    warnings = [r.getMessage() for r in caplog.records if "limit" in r.getMessage()]
    assert len(warnings) == 1 and said in warnings[0], warnings


def test_gate_on_a_value_that_differs_only_by_nan_matches_itself():
    cf = stax.compile(lambda x: x * float(x[0]), strict_native=True)
    x = np.array([np.nan, 1.0])
    cf(x)
    cf(x.copy())
    assert cf.cache_info().versions == 1


@pytest.mark.parametrize("values", [[np.nan, 1.0, 2.0], [-0.0, np.nan]])
def test_gate_on_a_list_holding_nan_matches_itself(values):
    """Found by the stress suite (threads): ``sum(x.tolist())`` with a NaN in ``x`` missed its own
    version on every call (list equality calls [nan] and [nan] different), compiling anew."""
    cf = stax.compile(lambda x: x * sum(x.tolist()), strict_native=True)
    x = np.array(values)
    for _ in range(3):
        np.testing.assert_array_equal(cf(x.copy()), x * sum(x.tolist()))
    info = cf.cache_info()
    assert info.versions == 1 and info.compiles == 1


def test_gate_on_a_list_tells_signed_zeros_apart():
    cf = stax.compile(lambda x: x / x.tolist()[0], strict_native=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(cf(np.array([0.0, 1.0])), np.array([np.nan, np.inf]))
        np.testing.assert_array_equal(cf(np.array([-0.0, 1.0])), np.array([np.nan, -np.inf]))
    assert cf.cache_info().versions == 2


def test_explain_checks_the_arguments_as_a_call_does():
    cf = stax.compile(f_3_1, strict_native=True)
    cf(np.ones((4, 8)))
    for args, kwargs in (((), {}), ((np.ones(3), np.ones(3)), {}), ((), {"y": np.ones(3)})):
        with pytest.raises(TypeError, match="f_3_1"):
            cf.explain(*args, **kwargs)


@pytest.mark.parametrize("x", [np.ones(3), np.zeros(3)])
def test_while_loops_unroll_per_gate_outcomes(x):
    def f(x):
        y = x
        while y.sum() < 10:
            y = y + 1
        return y

    cf = stax.compile(f, strict_native=True)
    np.testing.assert_array_equal(cf(x), f(x))
    np.testing.assert_array_equal(cf(x + 5), f(x + 5))


def test_module_attribute_arrays_are_lifted(test_module):
    config = test_module("lifted_config")
    namespace = {"lifted_config": config}
    exec("def f(x):\n    return x * lifted_config.scale\n", namespace)
    cf = stax.compile(namespace["f"], strict_native=True)
    x = np.arange(4.0)
    np.testing.assert_array_equal(cf(x), x)
    config.scale *= 3  # in place: seen without recompiling
    np.testing.assert_array_equal(cf(x), 3 * x)
    config.scale = np.full(4, 0.5)  # rebound: same layout, new data
    np.testing.assert_array_equal(cf(x), 0.5 * x)
    assert cf.cache_info().versions == 1
