"""The fixed-point pipeline: spec example 4.2 round by round, the termination measure of
proposition 4.1, pipeline strings and the command line."""

import numpy as np
import pytest

from stax.ir import run_program
from stax.ir.passes import DEFAULT_PIPELINE, measure, parse_pipeline, run_pipeline


def example_4_2(capture):
    x = np.linspace(-2, 2, 9)
    b = capture(x=x)
    y = b("operator.mul", b.inputs["x"], 3)
    first = b("stax.nn.selu", y)
    second = b("stax.nn.selu", b("operator.mul", y, 1))
    out = b("operator.add", first, b("operator.mul", second, 2))
    b.output(out)
    return b, x


def test_example_4_2_round_by_round(capture):
    b, x = example_4_2(capture)
    program = b.program()
    before = run_program(program, (x,), {})
    log = run_pipeline(b.graph, verify=True)
    passes = [line.split(":")[0] for line in log.lines]
    assert passes == ["[round 1] NormalizeOperators", "[round 1] DecomposePass",
                      "[round 1] CSEPass", "[round 1] PointwiseFusionHint",
                      "[round 2] NormalizeOperators", "[round 3] no change"]
    assert log.rounds == 3
    assert "expanded" in log.lines[1] and "merged" in log.lines[2]
    targets = [n.target for n in b.graph.nodes]
    assert targets.count("numpy.exp") == 1 and "stax.nn.selu" not in targets  # one chain left
    consts = [n.args for n in b.graph.nodes if n.target == "operator.mul"]
    assert (1.6732632423543772 in (a[1] for a in consts)) and all(
        not isinstance(a[0], float) for a in consts)  # constants on the right after round 2
    np.testing.assert_array_equal(run_program(program, (x,), {}), before)


def test_measure_decreases_with_every_structural_change(capture):
    b, _ = example_4_2(capture)
    log = run_pipeline(b.graph)
    for name, _, before, after, changed in log.measures:
        if changed and name != "PointwiseFusionHint":
            assert after < before, (name, before, after)
        if not changed:
            assert after == before
    assert measure(b.graph)[0] == 0  # no composite operator is left


def test_pipeline_strings():
    assert [p.name for p in parse_pipeline(DEFAULT_PIPELINE)] == [
        "NormalizeOperators", "ConstFold", "DecomposePass", "CSEPass", "DCE",
        "PointwiseFusionHint"]
    with pytest.raises(ValueError, match="unknown pass 'fuse'"):
        parse_pipeline("normalize,fuse")


def test_passes_run_on_op_graphs_and_from_the_command_line(capture_doc_path, tmp_path):
    import subprocess
    import sys

    from stax.ir import load_capture, load_opgraph, lower_capture, write_json

    opgraph = lower_capture(load_capture(capture_doc_path))
    mul = next(n for n in opgraph.graph.nodes if n.target == "mul")
    with opgraph.graph.inserting_after(mul):
        one = opgraph.graph.call_function("mul", (mul, 1), meta=dict(mul.meta))
    mul.replace_all_uses_with(one)
    one.set_args((mul, 1))
    path = tmp_path / "in.opgraph.json"
    write_json(path, opgraph.to_json())
    out = tmp_path / "out.opgraph.json"
    done = subprocess.run([sys.executable, "-m", "stax.ir", "passes", "--pipeline",
                           "normalize,cse,dce,pointwise_hint", str(path), str(out)],
                          capture_output=True, text=True, check=True)
    assert "NormalizeOperators: %mul_1 is %mul" in done.stderr
    result = load_opgraph(out)
    assert [n.target for n in result.graph.nodes] == ["x", "w", "add", "maximum", "mul", "sum",
                                                      "output"]
    assert [n.meta.get("region") for n in result.graph.nodes[2:6]] == [0, 0, 0, None]


@pytest.mark.parametrize("setting, caught", [("1", True), ("0", False)])
def test_the_environment_turns_the_verifier_on_after_every_pass(capture, monkeypatch, setting,
                                                               caught):
    """STAX_VERIFY_PASSES=1 (set by every nox test session): a pass that breaks an invariant is
    named at once instead of failing somewhere downstream."""
    from stax.ir import passes as pipeline
    from stax.ir.verify import VerificationError

    class Breaks:
        name = "Breaks"
        last_summary = "unlinked a use"

        def run(self, graph):
            node = next(n for n in graph.nodes if n.target == "operator.mul")
            node.users.clear()  # use-lists no longer match the arguments
            return False

    b, _ = example_4_2(capture)
    monkeypatch.setitem(pipeline.PASSES, "breaks", Breaks)
    monkeypatch.setenv("STAX_VERIFY_PASSES", setting)
    if caught:
        with pytest.raises(VerificationError):
            run_pipeline(b.graph, "breaks")
    else:
        run_pipeline(b.graph, "breaks")
