"""A scan through every document: loop IR text and JSON round trip, the reference interpreter,
the kernel plan (a scan runs alone), the compiled kernel."""

import numpy as np

from stax.codegen import Executable, KernelArtifact, generate
from stax.loop import LoopProgram, Scan, lower_opgraph
from stax.loop.interpreter import run_loop_program


def test_scan_round_trips_and_runs_everywhere(build):
    x = np.random.default_rng(0).standard_normal((6, 50))
    b = build(x=x)
    y = b("mul", b.inputs["x"], 2.0)
    out = b("add", b("cumsum", y, axis=0, dtype="float64"), b("cumprod", y, axis=1,
                                                                dtype="float64"))
    program = lower_opgraph(b.program(out))
    scans = [n for n in program.buffers if isinstance(n.data, Scan)]
    assert len(scans) == 2 and "Scan(sum" in str(program) and "Scan(prod" in str(program)
    again = LoopProgram.from_json(program.to_json())
    assert str(again) == str(program)
    want = b.expected(out)[0]
    np.testing.assert_array_equal(run_loop_program(again, [x])[0], want)
    artifact = KernelArtifact.from_json(generate(again).to_json())
    assert len(artifact.kernels) >= 3  # each scan alone, then the sum
    assert any("is a scan" in d["reason"] for d in artifact.fusion)
    np.testing.assert_array_equal(Executable(artifact)(x)[0], want)
